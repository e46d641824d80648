//! The DPAS host protocol: everything the server and the browser loop must agree on: frames
//! and their NDJSON codec ([`frame`], [`ndjson`]), step requests ([`request`]), model messages
//! and tool descriptors ([`message`], [`tool`], [`catalog`]), the error table ([`error`]), the
//! limits ([`limits`]), wire names ([`wire_name`]), scopes ([`scope`]), usage ([`usage`]), and
//! the JSON value both sides read ([`json`]). The types a caller names most are re-exported at
//! this root.
//!
//! Architecture Invariant: pure: no I/O, no runtime types. Builds for native targets and
//! `wasm32-unknown-unknown`.
//!
//! Architecture Invariant: [`json::Value`] changes type with a feature: serde_json's with
//! `serde-json-value` (the server), this crate's own `json::value` without it (the browser
//! build). The feature is not additive, so the tests run both ways (`scripts/test.sh`).
//!
//! Architecture Invariant (the size rule): this crate is part of the browser build, whose
//! gzip size has a budget (`scripts/build-wasm.sh`). Prefer loops to iterator adaptors, byte
//! searches to `char` searches ([`text`]), the hand-written sorts of [`sort`] to the standard
//! library's, and one async body to nested futures: each generic instance costs bytes. The
//! measurements are in `host-wasm/README.md`, "Size".

#![warn(unreachable_pub)]

pub mod catalog;
pub mod error;
pub mod frame;
pub mod json;
pub mod limits;
pub mod message;
pub mod ndjson;
pub mod request;
pub mod scope;
pub mod sort;
#[cfg(any(test, feature = "test-support"))]
pub mod test_support;
pub mod text;
pub mod tool;
pub mod usage;
pub mod vocab;
pub mod wire_name;

pub use error::{tool_results, HostError, HostErrorCode, LimitPlane, Retry};
pub use frame::{
    DomainToolInfo, ErrorBody, Executor, Frame, InspectorFrame, Lane, PendingToolCall, StepFinish,
    StepStart, ToolCallFrame, ToolResultFrame,
};
pub use message::{ContentPart, MessageContent, Role, WireModelMessage};
#[cfg(any(feature = "serde-json-value", feature = "test-support", test))]
pub use ndjson::{encode_frame, encode_frame_into};
pub use ndjson::{FrameDecoder, TrailingFragment};
#[cfg(feature = "server")]
pub use request::{decode_request, decode_request_value, ChatStepRequest};
pub use request::{CatalogV2, ProtocolVersion, StepRequestV1, StepRequestV2};
pub use scope::{resolve_scope, RouteFloors};
#[cfg(feature = "server")]
pub use tool::RawSchema;
pub use tool::{
    CatalogMode, Confirmation, Plane, Truncated, TruncationReason, WireToolDescriptor,
    WireToolState,
};
pub use usage::{Usage, UsageAccumulator, UsageReport};
