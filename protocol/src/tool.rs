//! Tool descriptors (the stable half, B6), tool state (the volatile half, B7) and the
//! catalog envelope pieces.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::json::{ObjectWriter, WriteJson};

crate::wire_enum! {
    /// The plane a tool belongs to: a view action or a domain operation.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[serde(rename_all = "lowercase")]
    pub enum Plane {
        View = "view",
        Domain = "domain",
    }
}

crate::wire_enum! {
    /// How much confirmation a call needs before it runs.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
    #[serde(rename_all = "lowercase")]
    pub enum Confirmation {
        #[default]
        Never = "never",
        Optional = "optional",
        Required = "required",
    }
}

crate::wire_enum! {
    /// How the catalog reaches the model: every tool, or the meta tools.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
    #[serde(rename_all = "lowercase")]
    pub enum CatalogMode {
        #[default]
        Direct = "direct",
        Meta = "meta",
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

crate::wire_enum! {
    /// Why the browser withheld tools from the catalog.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(rename_all = "lowercase")]
    pub enum TruncationReason {
        Budget = "budget",
        Limit = "limit",
        Undecodable = "undecodable",
    }
}

/// What the browser withheld from the catalog, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Truncated {
    pub dropped: u64,
    pub reason: TruncationReason,
}

impl WriteJson for WireToolDescriptor {
    fn write_json(&self, out: &mut String) {
        ObjectWriter::new(out)
            .field("wireName", &self.wire_name)
            .field("canonicalId", &self.canonical_id)
            .field("plane", &self.plane)
            .field("description", &self.description)
            .field("inputSchema", &self.input_schema)
            .field("effect", &self.effect)
            .field("confirmation", &self.confirmation)
            .opt_field("available", self.available.as_ref().map(|v| v as _))
            .opt_field(
                "unavailableReason",
                self.unavailable_reason.as_ref().map(|v| v as _),
            )
            .end();
    }
}

impl WriteJson for WireToolState {
    fn write_json(&self, out: &mut String) {
        ObjectWriter::new(out)
            .field("wireName", &self.wire_name)
            .field("available", &self.available)
            .opt_field(
                "unavailableReason",
                self.unavailable_reason.as_ref().map(|v| v as _),
            )
            .opt_field("note", self.note.as_ref().map(|v| v as _))
            .end();
    }
}

impl WriteJson for Truncated {
    fn write_json(&self, out: &mut String) {
        ObjectWriter::new(out)
            .field("dropped", &self.dropped)
            .field("reason", &self.reason)
            .end();
    }
}
