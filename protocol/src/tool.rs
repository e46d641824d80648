//! Tool descriptors (the stable half, B6), tool state (the volatile half, B7) and the
//! catalog envelope pieces.

use crate::json::{Map, Value};
use serde::{Deserialize, Serialize};

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

/// What the model gets to know about one browser-side capability (B6). The browser builds
/// the schema as a JSON object; a decoded request keeps it as the text it came in
/// (`RawSchema`, with the `server` feature).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WireToolDescriptor<S = Map<String, Value>> {
    pub wire_name: String,
    pub canonical_id: String,
    pub plane: Plane,
    pub description: String,
    /// A JSON Schema object, bound keys already removed.
    pub input_schema: S,
    pub effect: String,
    pub confirmation: Confirmation,
    /// v1 only: v2 carries availability in `frontendState`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub available: Option<bool>,
    /// v1 only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable_reason: Option<String>,
    /// The capability returns untrusted content (U1): its results reach the model fenced as
    /// data, and a call proposed beside them needs a person (U2). Written only when true, so
    /// a descriptor without the mark is the reference's bytes.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub untrusted: bool,
}

/// A JSON Schema object as a step request carried it: its text, checked to be a JSON
/// object, never parsed into a tree. The server does not read a frontend tool's schema; it
/// hands it to the model, and building and freeing a tree of maps for every schema of every
/// step was most of what decoding a request cost.
#[cfg(feature = "server")]
#[derive(Debug, Clone)]
pub struct RawSchema(Box<serde_json::value::RawValue>);

#[cfg(feature = "server")]
impl RawSchema {
    /// `raw` when it is a JSON object.
    pub(crate) fn object(raw: Box<serde_json::value::RawValue>) -> Option<Self> {
        raw.get().starts_with('{').then_some(Self(raw))
    }

    /// The schema's JSON text.
    pub fn get(&self) -> &str {
        self.0.get()
    }

    pub fn into_raw(self) -> Box<serde_json::value::RawValue> {
        self.0
    }

    /// The schema parsed, for a reader that inspects it.
    pub fn to_map(&self) -> Map<String, Value> {
        // The text was read as a JSON object.
        serde_json::from_str(self.get()).unwrap_or_default()
    }
}

#[cfg(feature = "server")]
impl From<&Map<String, Value>> for RawSchema {
    fn from(map: &Map<String, Value>) -> Self {
        // A map with string keys always serialises.
        Self(serde_json::value::to_raw_value(map).unwrap_or_default())
    }
}

/// The same text: schemas are compared as the request carried them.
#[cfg(feature = "server")]
impl PartialEq for RawSchema {
    fn eq(&self, other: &Self) -> bool {
        self.get() == other.get()
    }
}

#[cfg(feature = "server")]
impl Serialize for RawSchema {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
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
            .opt_field("untrusted", self.untrusted.then_some(&self.untrusted as _))
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
