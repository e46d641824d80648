//! Step requests, v2 (current) and v1 (served beside it), and (with the `server` feature) the
//! one decoding entry point from raw bytes to the normalised internal request
//! (`decode_request`, in `decode`).
//!
//! Precedence (reference-behaviour B12, DESIGN decision 1): a body naming a version that is
//! not the number 1 or 2 is 409 `PROTOCOL_VERSION_MISMATCH`; any other malformation is 400
//! `PROTOCOL_DECODE_ERROR`; a well-formed body with more frontend tools or messages than the
//! version allows is 413 `CATALOG_TOO_LARGE` naming plane, count and limit.

use serde::Serialize;

use crate::message::WireModelMessage;
use crate::tool::{CatalogMode, Truncated, WireToolDescriptor, WireToolState};

#[cfg(feature = "server")]
mod decode;
#[cfg(feature = "server")]
pub use decode::{decode_request, decode_request_value, ChatStepRequest};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProtocolVersion {
    V1,
    V2,
}

impl ProtocolVersion {
    pub const CURRENT: Self = Self::V2;

    pub const fn as_u8(self) -> u8 {
        match self {
            Self::V1 => 1,
            Self::V2 => 2,
        }
    }
}

/// The catalog envelope of a v2 request, as the browser builds it. It borrows: a step
/// request is written once per step from the loop's own history and projection, which are
/// not copied for it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CatalogV2<'a> {
    pub mode: CatalogMode,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<&'a [String]>,
    pub frontend_tools: &'a [WireToolDescriptor],
    pub frontend_state: &'a [WireToolState],
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncated: Option<Truncated>,
}

/// A v2 step request as the browser posts it (borrowing, like [`CatalogV2`]). Decoding goes
/// through [`decode_request`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StepRequestV2<'a> {
    pub protocol_version: u8,
    pub conversation_id: &'a str,
    pub turn_id: &'a str,
    pub step_index: u32,
    pub pathname: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_id: Option<&'a str>,
    pub messages: &'a [WireModelMessage],
    pub catalog: CatalogV2<'a>,
}

/// A v1 step request (deprecated; accepted for one minor release).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StepRequestV1 {
    pub protocol_version: u8,
    pub conversation_id: String,
    pub turn_id: String,
    pub step_index: u32,
    pub messages: Vec<WireModelMessage>,
    pub frontend_tools: Vec<WireToolDescriptor>,
}

impl StepRequestV2<'_> {
    /// The request body. Serialising these types cannot fail (string keys, no custom
    /// `Serialize`), but the error is handed back rather than unwrapped: an `expect` here
    /// would link serde_json's `Debug` error formatting into the browser build.
    pub fn to_json(&self) -> Result<Vec<u8>, serde_json::Error> {
        serde_json::to_vec(self)
    }
}
