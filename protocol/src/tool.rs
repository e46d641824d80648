//! Tool descriptors (the stable half, B6), tool state (the volatile half, B7) and the
//! catalog envelope pieces.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Plane {
    View,
    Domain,
}

impl Plane {
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::View => "view",
            Self::Domain => "domain",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Confirmation {
    #[default]
    Never,
    Optional,
    Required,
}

impl Confirmation {
    /// The wire spelling (`never`, `optional`, `required`).
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Never => "never",
            Self::Optional => "optional",
            Self::Required => "required",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CatalogMode {
    #[default]
    Direct,
    Meta,
}

impl CatalogMode {
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Direct => "direct",
            Self::Meta => "meta",
        }
    }
}

/// What the model gets to know about one browser-side capability (B6).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WireToolDescriptor {
    pub wire_name: String,
    pub canonical_id: String,
    pub plane: Plane,
    pub description: String,
    /// A JSON Schema object, bound keys already removed.
    pub input_schema: Map<String, Value>,
    pub effect: String,
    pub confirmation: Confirmation,
    /// v1 only: v2 carries availability in `frontendState`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub available: Option<bool>,
    /// v1 only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable_reason: Option<String>,
}

/// The volatile half of a descriptor (B7); never in the provider's tool block.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WireToolState {
    pub wire_name: String,
    pub available: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable_reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TruncationReason {
    Budget,
    Limit,
    Undecodable,
}

impl TruncationReason {
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Budget => "budget",
            Self::Limit => "limit",
            Self::Undecodable => "undecodable",
        }
    }
}

/// What the browser withheld from the catalog, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Truncated {
    pub dropped: u64,
    pub reason: TruncationReason,
}
