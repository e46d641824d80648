//! Frames the server streams to the browser (reference-behaviour F3), one JSON object per
//! NDJSON line. Field names are exact; `step-start` also carries `catalogMode`.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use crate::error::{HostError, HostErrorCode};
use crate::message::WireModelMessage;
use crate::tool::CatalogMode;
use crate::usage::Usage;

/// One frame. Unknown frame types decode to [`Frame::Unknown`] so a newer server never
/// breaks an older reader; a known type with malformed fields is a decode error.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum Frame {
    StepStart(StepStart),
    TextDelta {
        text: String,
    },
    ReasoningDelta {
        text: String,
    },
    ToolCall(ToolCallFrame),
    ToolResult(ToolResultFrame),
    Inspector(InspectorFrame),
    StepFinish(StepFinish),
    Error {
        error: ErrorBody,
    },
    #[serde(untagged)]
    Unknown(Map<String, Value>),
}

/// The known frame types, as they appear in `type`.
pub const FRAME_TYPES: [&str; 8] = [
    "step-start",
    "text-delta",
    "reasoning-delta",
    "tool-call",
    "tool-result",
    "inspector",
    "step-finish",
    "error",
];

/// Decoding dispatches on `type` by hand: the variants' structs decode from the object itself
/// (unknown keys, `type` among them, are ignored as usual). This is the same wire format as a
/// derived internally-tagged enum without its buffering machinery, which is a large share of
/// the browser build.
impl<'de> Deserialize<'de> for Frame {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mut map = Map::<String, Value>::deserialize(deserializer)?;
        let frame_type = match map.get("type") {
            Some(Value::String(t)) => t.clone(),
            _ => return Err(D::Error::custom("a frame needs a string `type`")),
        };
        fn text<E: serde::de::Error>(map: &mut Map<String, Value>) -> Result<String, E> {
            match map.remove("text") {
                Some(Value::String(text)) => Ok(text),
                _ => Err(E::custom("a delta frame needs a string `text`")),
            }
        }
        fn body<T: serde::de::DeserializeOwned, E: serde::de::Error>(value: Value) -> Result<T, E> {
            serde_json::from_value(value).map_err(E::custom)
        }
        Ok(match frame_type.as_str() {
            "step-start" => Frame::StepStart(body(Value::Object(map))?),
            "text-delta" => Frame::TextDelta {
                text: text(&mut map)?,
            },
            "reasoning-delta" => Frame::ReasoningDelta {
                text: text(&mut map)?,
            },
            "tool-call" => Frame::ToolCall(body(Value::Object(map))?),
            "tool-result" => Frame::ToolResult(body(Value::Object(map))?),
            "inspector" => Frame::Inspector(body(Value::Object(map))?),
            "step-finish" => Frame::StepFinish(body(Value::Object(map))?),
            "error" => Frame::Error {
                error: body(
                    map.remove("error")
                        .ok_or_else(|| D::Error::custom("missing `error`"))?,
                )?,
            },
            _ => Frame::Unknown(map),
        })
    }
}

impl Frame {
    /// An `error` frame for a host error.
    pub fn error(err: &HostError) -> Self {
        Frame::Error {
            error: ErrorBody {
                code: err.code.as_str().to_owned(),
                message: err.message.clone(),
            },
        }
    }

    /// The `type` of this frame.
    pub fn frame_type(&self) -> &str {
        match self {
            Self::StepStart(_) => "step-start",
            Self::TextDelta { .. } => "text-delta",
            Self::ReasoningDelta { .. } => "reasoning-delta",
            Self::ToolCall(_) => "tool-call",
            Self::ToolResult(_) => "tool-result",
            Self::Inspector(_) => "inspector",
            Self::StepFinish(_) => "step-finish",
            Self::Error { .. } => "error",
            Self::Unknown(map) => map.get("type").and_then(Value::as_str).unwrap_or(""),
        }
    }
}

/// One domain tool as reported on `step-start` (E2): diagnostics only, no schema.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DomainToolInfo {
    pub wire_name: String,
    pub canonical_id: String,
    pub description: String,
    pub requires_approval: bool,
    pub side_effect: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StepStart {
    pub step_id: String,
    pub turn_id: String,
    pub conversation_id: String,
    pub domain_tools: Vec<DomainToolInfo>,
    /// The effective scope; `[]` when unscoped.
    pub scope: Vec<String>,
    /// The effective catalog mode (the reference at HEAD omits it; we always send it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catalog_mode: Option<CatalogMode>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Executor {
    Server,
    Browser,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallFrame {
    pub tool_call_id: String,
    pub wire_name: String,
    pub canonical_id: String,
    pub executor: Executor,
    pub input: Value,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultFrame {
    pub tool_call_id: String,
    pub wire_name: String,
    pub canonical_id: String,
    pub ok: bool,
    pub result: Value,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Lane {
    Runtime,
    Domain,
    Host,
}

/// Correlated diagnostics (F3, G). `correlation` is a string map; the keys the host writes
/// are `conversationId`, `turnId`, `stepId`, then `invocationId` and `capabilityId`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InspectorFrame {
    pub lane: Lane,
    pub event_type: String,
    pub summary: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correlation: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingToolCall {
    pub tool_call_id: String,
    pub wire_name: String,
    pub canonical_id: String,
    pub input: Value,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StepFinish {
    pub step_id: String,
    pub finish_reason: String,
    pub response_messages: Vec<WireModelMessage>,
    pub pending_tool_calls: Vec<PendingToolCall>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
}

/// `{code, message}` of an `error` frame. The code is kept as a string so a reader never
/// fails on a code it does not know; [`ErrorBody::host_code`] types it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorBody {
    pub code: String,
    pub message: String,
}

impl ErrorBody {
    pub fn host_code(&self) -> Option<HostErrorCode> {
        HostErrorCode::parse(&self.code)
    }
}

/// The correlation map of host frames: `{conversationId, turnId, stepId}`.
pub fn step_correlation(conversation_id: &str, turn_id: &str, step_id: &str) -> Map<String, Value> {
    let mut map = Map::with_capacity(5);
    map.insert("conversationId".into(), Value::from(conversation_id));
    map.insert("turnId".into(), Value::from(turn_id));
    map.insert("stepId".into(), Value::from(step_id));
    map
}

/// Host-lane inspector frames with the exact summaries of G4 and F4.
pub mod host_inspector {
    use super::*;
    use crate::tool::Truncated;
    use serde_json::json;

    fn host(
        event_type: &str,
        summary: String,
        correlation: Map<String, Value>,
        data: Value,
    ) -> Frame {
        Frame::Inspector(InspectorFrame {
            lane: Lane::Host,
            event_type: event_type.to_owned(),
            summary,
            correlation: Some(correlation),
            data: Some(data),
        })
    }

    /// `catalog.collision`: `<n> duplicate path(s) dropped — kept the governed server tool`.
    pub fn collision(capability_ids: &[String], correlation: Map<String, Value>) -> Frame {
        host(
            "catalog.collision",
            format!(
                "{} duplicate path(s) dropped — kept the governed server tool",
                capability_ids.len()
            ),
            correlation,
            json!({ "capabilityIds": capability_ids }),
        )
    }

    /// `catalog.truncated`: `browser dropped <n> tool(s) — <reason>`.
    pub fn truncated(truncated: &Truncated, correlation: Map<String, Value>) -> Frame {
        host(
            "catalog.truncated",
            format!(
                "browser dropped {} tool(s) — {}",
                truncated.dropped,
                truncated.reason.as_str()
            ),
            correlation,
            json!({ "dropped": truncated.dropped, "reason": truncated.reason }),
        )
    }

    /// `catalog.undecodable` (decision 5: domain-side undecodables get a frame too).
    pub fn undecodable(wire_names: &[String], correlation: Map<String, Value>) -> Frame {
        host(
            "catalog.undecodable",
            format!(
                "{} tool(s) withheld — name cannot be mapped to a canonical id",
                wire_names.len()
            ),
            correlation,
            json!({ "wireNames": wire_names }),
        )
    }

    /// `tool.unknown`: `model called "<wireName>" — in neither plane; answered NO_SUCH_TOOL`.
    pub fn tool_unknown(wire_name: &str, correlation: Map<String, Value>) -> Frame {
        host(
            "tool.unknown",
            format!("model called \"{wire_name}\" — in neither plane; answered NO_SUCH_TOOL"),
            correlation,
            json!({ "wireName": wire_name }),
        )
    }

    /// `inspector.dropped`: `<n> audit entry dropped — reader fell behind` (`entries` if n≠1).
    pub fn dropped(count: u64, correlation: Map<String, Value>) -> Frame {
        let noun = if count == 1 { "entry" } else { "entries" };
        host(
            "inspector.dropped",
            format!("{count} audit {noun} dropped — reader fell behind"),
            correlation,
            json!({ "dropped": count }),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unknown_frame_types_are_kept_and_known_ones_are_checked() {
        let f: Frame = serde_json::from_value(json!({"type": "future-thing", "x": 1})).unwrap();
        assert_eq!(f.frame_type(), "future-thing");
        assert_eq!(
            serde_json::to_value(&f).unwrap(),
            json!({"type": "future-thing", "x": 1})
        );
        assert!(serde_json::from_value::<Frame>(json!({"type": "text-delta"})).is_err());
        assert!(serde_json::from_value::<Frame>(json!({"text": "x"})).is_err());
        assert!(serde_json::from_value::<Frame>(json!({"type": 3})).is_err());
    }

    #[test]
    fn error_frame_shape() {
        let f = Frame::error(&HostError::of(HostErrorCode::ModelError));
        assert_eq!(
            serde_json::to_string(&f).unwrap(),
            r#"{"type":"error","error":{"code":"MODEL_ERROR","message":"The model call failed."}}"#
        );
    }

    #[test]
    fn host_inspector_summaries_are_exact() {
        let c = step_correlation("c", "t", "s");
        let f = host_inspector::dropped(1, c.clone());
        let Frame::Inspector(i) = &f else {
            panic!("inspector")
        };
        assert_eq!(i.summary, "1 audit entry dropped — reader fell behind");
        let Frame::Inspector(i) = host_inspector::dropped(3, c.clone()) else {
            panic!()
        };
        assert_eq!(i.summary, "3 audit entries dropped — reader fell behind");
        let Frame::Inspector(i) = host_inspector::tool_unknown("view_nope", c) else {
            panic!()
        };
        assert_eq!(
            i.summary,
            "model called \"view_nope\" — in neither plane; answered NO_SUCH_TOOL"
        );
        assert_eq!(i.data, Some(json!({"wireName": "view_nope"})));
    }
}
