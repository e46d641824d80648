//! The fields of a step request as the body carried them and the slot each key goes to:
//! what `read` (from the bytes) and `Fields::from_map` (from a parsed object) fill, and what
//! the decoder reads.

use serde_json::Value;

use crate::message::WireModelMessage;
use crate::tool::RawSchema;

/// A validation failure; becomes 400 `PROTOCOL_DECODE_ERROR` with the fixed message.
#[derive(Debug)]
pub(super) struct Malformed;

pub(super) type Check<T> = Result<T, Malformed>;

/// The fields of a step request the decoder reads, each as the body carried it (of a
/// repeated key, the last, as a parsed JSON object keeps it). Filled from the body's bytes
/// in one pass (`read`) or from an already parsed object (`Fields::from_map`); either way
/// `decode_fields` decides.
#[derive(Debug, Default)]
pub(super) struct Fields {
    pub(super) protocol_version: Option<Value>,
    pub(super) conversation_id: Option<Value>,
    pub(super) turn_id: Option<Value>,
    pub(super) step_index: Option<Value>,
    pub(super) pathname: Option<Value>,
    pub(super) model_id: Option<Value>,
    /// `Malformed` when it is not an array or any item is not a message.
    pub(super) messages: Option<Check<Vec<WireModelMessage>>>,
    /// v2's catalog envelope.
    pub(super) catalog: Option<Check<CatalogFields>>,
    /// v1's descriptors.
    pub(super) frontend_tools: Option<Check<Vec<DescriptorFields>>>,
}

#[derive(Debug, Default)]
pub(super) struct CatalogFields {
    pub(super) mode: Option<Value>,
    pub(super) scope: Option<Value>,
    pub(super) frontend_tools: Option<Check<Vec<DescriptorFields>>>,
    pub(super) frontend_state: Option<Check<Vec<StateFields>>>,
    pub(super) truncated: Option<Value>,
}

#[derive(Debug, Default)]
pub(super) struct StateFields {
    pub(super) wire_name: Option<Value>,
    pub(super) available: Option<Value>,
    pub(super) unavailable_reason: Option<Value>,
    pub(super) note: Option<Value>,
}

#[derive(Debug, Default)]
pub(super) struct DescriptorFields {
    pub(super) wire_name: Option<Value>,
    pub(super) canonical_id: Option<Value>,
    pub(super) plane: Option<Value>,
    pub(super) description: Option<Value>,
    /// `Malformed` when it is not an object.
    pub(super) input_schema: Option<Check<RawSchema>>,
    pub(super) effect: Option<Value>,
    pub(super) confirmation: Option<Value>,
    pub(super) available: Option<Value>,
    pub(super) unavailable_reason: Option<Value>,
    pub(super) untrusted: Option<Value>,
}

impl Fields {
    /// The slot of a key read as a plain JSON value.
    pub(super) fn slot(&mut self, key: &str) -> Option<&mut Option<Value>> {
        Some(match key {
            "protocolVersion" => &mut self.protocol_version,
            "conversationId" => &mut self.conversation_id,
            "turnId" => &mut self.turn_id,
            "stepIndex" => &mut self.step_index,
            "pathname" => &mut self.pathname,
            "modelId" => &mut self.model_id,
            _ => return None,
        })
    }
}

impl CatalogFields {
    pub(super) fn slot(&mut self, key: &str) -> Option<&mut Option<Value>> {
        Some(match key {
            "mode" => &mut self.mode,
            "scope" => &mut self.scope,
            "truncated" => &mut self.truncated,
            _ => return None,
        })
    }
}

impl StateFields {
    pub(super) fn slot(&mut self, key: &str) -> Option<&mut Option<Value>> {
        Some(match key {
            "wireName" => &mut self.wire_name,
            "available" => &mut self.available,
            "unavailableReason" => &mut self.unavailable_reason,
            "note" => &mut self.note,
            _ => return None,
        })
    }
}

impl DescriptorFields {
    pub(super) fn slot(&mut self, key: &str) -> Option<&mut Option<Value>> {
        Some(match key {
            "wireName" => &mut self.wire_name,
            "canonicalId" => &mut self.canonical_id,
            "plane" => &mut self.plane,
            "description" => &mut self.description,
            "effect" => &mut self.effect,
            "confirmation" => &mut self.confirmation,
            "available" => &mut self.available,
            "unavailableReason" => &mut self.unavailable_reason,
            "untrusted" => &mut self.untrusted,
            _ => return None,
        })
    }
}
