//! Frames the server streams to the browser (reference-behaviour F3), one JSON object per
//! NDJSON line. Field names are exact; `step-start` also carries `catalogMode`.

use crate::json::{Map, Value};
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};

use crate::error::{HostError, HostErrorCode};
use crate::message::{ContentPart, MessageContent, Role, WireModelMessage};
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

/// Decoding dispatches on `type` by hand and reads each variant's fields from the object
/// directly (the `decode` module below), with the derives' rules: required fields present
/// with the right JSON type, `Option`s absent or `null` as `None`, unknown keys ignored.
/// That is the same wire format as the derived internally-tagged enum without its generic
/// machinery, which was the largest share of the browser build. (Only the message list of
/// `step-finish` goes through its derive, which the host needs anyway.)
impl<'de> Deserialize<'de> for Frame {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let map = Map::<String, Value>::deserialize(deserializer)?;
        decode::frame(map).map_err(D::Error::custom)
    }
}

/// Decodes a frame from a parsed JSON value with exactly the rules of `Frame`'s
/// `Deserialize`; `None` when that would refuse it. The NDJSON reader parses each line as a
/// plain `Value` and comes here, so the browser build never instantiates serde_json's typed
/// deserializer paths (their type-mismatch errors format floats through `core::fmt`).
pub fn decode_frame(value: Value) -> Option<Frame> {
    match value {
        Value::Object(map) => decode::frame(map).ok(),
        _ => None,
    }
}

/// Decodes a usage object exactly as `step-finish.usage` is decoded (required counts present
/// and non-negative integers, subsets optional); `None` otherwise.
pub fn decode_usage(value: Value) -> Option<Usage> {
    decode::usage(value).ok()
}

/// Decodes a JSON array of model messages exactly as `Vec<WireModelMessage>`'s derive does,
/// without its generic machinery (the browser decodes histories with this); `None` when the
/// derive would refuse it.
pub fn decode_messages(value: Value) -> Option<Vec<WireModelMessage>> {
    decode::messages(value).ok()
}

mod decode {
    use super::*;

    /// Why a frame was refused (the reader reports every refusal as a malformed frame).
    pub(super) struct Refused(&'static str);

    impl std::fmt::Display for Refused {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(self.0)
        }
    }

    type Fields = Map<String, Value>;

    fn take(map: &mut Fields, key: &str) -> Result<Value, Refused> {
        map.remove(key)
            .ok_or(Refused("a required field is missing"))
    }

    /// Absent and `null` are both `None`.
    fn take_opt(map: &mut Fields, key: &str) -> Option<Value> {
        map.remove(key).filter(|v| !v.is_null())
    }

    fn string(value: Value) -> Result<String, Refused> {
        match value {
            Value::String(s) => Ok(s),
            _ => Err(Refused("a field is not a string")),
        }
    }

    fn boolean(value: Value) -> Result<bool, Refused> {
        value.as_bool().ok_or(Refused("a field is not a boolean"))
    }

    fn object(value: Value) -> Result<Fields, Refused> {
        match value {
            Value::Object(map) => Ok(map),
            _ => Err(Refused("a field is not an object")),
        }
    }

    fn list<T>(value: Value, item: fn(Value) -> Result<T, Refused>) -> Result<Vec<T>, Refused> {
        match value {
            Value::Array(items) => items_of(items, item),
            _ => Err(Refused("a field is not an array")),
        }
    }

    /// Each item read, or the first refusal. A loop, not `collect::<Result<…>>()`: that
    /// instantiated core's `GenericShunt` and its `try_fold` for every item type.
    fn items_of<T>(
        items: Vec<Value>,
        item: fn(Value) -> Result<T, Refused>,
    ) -> Result<Vec<T>, Refused> {
        let mut out = Vec::with_capacity(items.len());
        for value in items {
            out.push(item(value)?);
        }
        Ok(out)
    }

    fn count(value: Value) -> Result<u64, Refused> {
        value
            .as_u64()
            .ok_or(Refused("a count is not a non-negative integer"))
    }

    /// A unit variant: its name, or the `{"name": null}` form serde also accepts; `parse` is
    /// the vocabulary's table.
    fn variant<T>(value: Value, parse: fn(&str) -> Option<T>) -> Result<T, Refused> {
        let name = match value {
            Value::String(name) => name,
            Value::Object(map) if map.len() == 1 => match map.into_iter().next() {
                Some((name, Value::Null)) => name,
                _ => return Err(Refused("an unknown variant")),
            },
            _ => return Err(Refused("an unknown variant")),
        };
        parse(&name).ok_or(Refused("an unknown variant"))
    }

    fn text(map: &mut Fields, key: &str) -> Result<String, Refused> {
        string(take(map, key)?)
    }

    fn domain_tool(value: Value) -> Result<DomainToolInfo, Refused> {
        let mut m = object(value)?;
        Ok(DomainToolInfo {
            wire_name: text(&mut m, "wireName")?,
            canonical_id: text(&mut m, "canonicalId")?,
            description: text(&mut m, "description")?,
            requires_approval: boolean(take(&mut m, "requiresApproval")?)?,
            side_effect: text(&mut m, "sideEffect")?,
        })
    }

    fn pending_call(value: Value) -> Result<PendingToolCall, Refused> {
        let mut m = object(value)?;
        Ok(PendingToolCall {
            tool_call_id: text(&mut m, "toolCallId")?,
            wire_name: text(&mut m, "wireName")?,
            canonical_id: text(&mut m, "canonicalId")?,
            input: take(&mut m, "input")?,
        })
    }

    pub(super) fn usage(value: Value) -> Result<Usage, Refused> {
        let mut m = object(value)?;
        let mut opt = |key| take_opt(&mut m, key).map(count).transpose();
        let cached_input_tokens = opt("cachedInputTokens")?;
        let reasoning_tokens = opt("reasoningTokens")?;
        let cache_write_input_tokens = opt("cacheWriteInputTokens")?;
        Ok(Usage {
            input_tokens: count(take(&mut m, "inputTokens")?)?,
            output_tokens: count(take(&mut m, "outputTokens")?)?,
            total_tokens: count(take(&mut m, "totalTokens")?)?,
            cached_input_tokens,
            reasoning_tokens,
            cache_write_input_tokens,
            reported_steps: count(take(&mut m, "reportedSteps")?)?,
        })
    }

    fn part(value: Value) -> Result<ContentPart, Refused> {
        // ContentPart's own (map-based) decoding: unknown or odd parts are kept verbatim.
        // Called directly, not through `from_value`: that would rebuild the Value through
        // serde and link serde_json's typed-error machinery into the browser build.
        match value {
            Value::Object(map) => Ok(ContentPart::from_map(map)),
            _ => Err(Refused("a content part is not an object")),
        }
    }

    /// A model message, as its derive (with the untagged `content`) decodes it.
    pub(super) fn message(value: Value) -> Result<WireModelMessage, Refused> {
        let mut m = object(value)?;
        let role = variant(take(&mut m, "role")?, Role::parse)?;
        let content = match take(&mut m, "content")? {
            Value::String(text) => MessageContent::Text(text),
            Value::Array(parts) => MessageContent::Parts(items_of(parts, part)?),
            _ => return Err(Refused("a message's content is neither text nor parts")),
        };
        Ok(WireModelMessage { role, content })
    }

    pub(super) fn messages(value: Value) -> Result<Vec<WireModelMessage>, Refused> {
        list(value, message)
    }

    pub(super) fn frame(mut m: Fields) -> Result<Frame, Refused> {
        let frame_type = match m.get("type") {
            Some(Value::String(t)) => t.clone(),
            _ => return Err(Refused("a frame needs a string `type`")),
        };
        Ok(match frame_type.as_str() {
            "step-start" => Frame::StepStart(StepStart {
                step_id: text(&mut m, "stepId")?,
                turn_id: text(&mut m, "turnId")?,
                conversation_id: text(&mut m, "conversationId")?,
                domain_tools: list(take(&mut m, "domainTools")?, domain_tool)?,
                scope: list(take(&mut m, "scope")?, string)?,
                catalog_mode: take_opt(&mut m, "catalogMode")
                    .map(|v| variant(v, CatalogMode::parse))
                    .transpose()?,
            }),
            "text-delta" => Frame::TextDelta {
                text: text(&mut m, "text")?,
            },
            "reasoning-delta" => Frame::ReasoningDelta {
                text: text(&mut m, "text")?,
            },
            "tool-call" => Frame::ToolCall(ToolCallFrame {
                tool_call_id: text(&mut m, "toolCallId")?,
                wire_name: text(&mut m, "wireName")?,
                canonical_id: text(&mut m, "canonicalId")?,
                executor: variant(take(&mut m, "executor")?, Executor::parse)?,
                input: take(&mut m, "input")?,
            }),
            "tool-result" => Frame::ToolResult(ToolResultFrame {
                tool_call_id: text(&mut m, "toolCallId")?,
                wire_name: text(&mut m, "wireName")?,
                canonical_id: text(&mut m, "canonicalId")?,
                ok: boolean(take(&mut m, "ok")?)?,
                result: take(&mut m, "result")?,
            }),
            "inspector" => Frame::Inspector(InspectorFrame {
                lane: variant(take(&mut m, "lane")?, Lane::parse)?,
                event_type: text(&mut m, "eventType")?,
                summary: text(&mut m, "summary")?,
                correlation: take_opt(&mut m, "correlation").map(object).transpose()?,
                data: take_opt(&mut m, "data"),
            }),
            "step-finish" => Frame::StepFinish(StepFinish {
                step_id: text(&mut m, "stepId")?,
                finish_reason: text(&mut m, "finishReason")?,
                response_messages: messages(take(&mut m, "responseMessages")?)?,
                pending_tool_calls: list(take(&mut m, "pendingToolCalls")?, pending_call)?,
                usage: take_opt(&mut m, "usage").map(usage).transpose()?,
            }),
            "error" => {
                let mut e = object(take(&mut m, "error")?)?;
                Frame::Error {
                    error: ErrorBody {
                        code: text(&mut e, "code")?,
                        message: text(&mut e, "message")?,
                    },
                }
            }
            _ => Frame::Unknown(m),
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

crate::wire_enum! {
    /// Which half runs a tool call.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[serde(rename_all = "lowercase")]
    pub enum Executor {
        Server = "server",
        Browser = "browser",
    }
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

crate::wire_enum! {
    /// The inspector lane a diagnostic belongs to.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[serde(rename_all = "lowercase")]
    pub enum Lane {
        Runtime = "runtime",
        Domain = "domain",
        Host = "host",
    }
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

impl crate::json::WriteJson for ErrorBody {
    fn write_json(&self, out: &mut String) {
        crate::json::ObjectWriter::new(out)
            .field("code", &self.code)
            .field("message", &self.message)
            .end();
    }
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
    use crate::json::object;
    use crate::tool::Truncated;

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
            object([("capabilityIds", Value::from(capability_ids.to_vec()))]),
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
            object([
                ("dropped", Value::from(truncated.dropped)),
                ("reason", Value::from(truncated.reason.as_str())),
            ]),
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
            object([("wireNames", Value::from(wire_names.to_vec()))]),
        )
    }

    /// `tool.unknown`: `model called "<wireName>" — in neither plane; answered NO_SUCH_TOOL`.
    pub fn tool_unknown(wire_name: &str, correlation: Map<String, Value>) -> Frame {
        host(
            "tool.unknown",
            format!("model called \"{wire_name}\" — in neither plane; answered NO_SUCH_TOOL"),
            correlation,
            object([("wireName", Value::from(wire_name))]),
        )
    }

    /// `model.fallback`: the request named a model this server does not serve; the default ran.
    pub fn model_fallback(requested: &str, used: &str, correlation: Map<String, Value>) -> Frame {
        host(
            "model.fallback",
            format!("model \"{requested}\" is not served here — ran the default, \"{used}\""),
            correlation,
            object([
                ("requested", Value::from(requested)),
                ("used", Value::from(used)),
            ]),
        )
    }

    /// `inspector.dropped`: `<n> audit entry dropped — reader fell behind` (`entries` if n≠1).
    pub fn dropped(count: u64, correlation: Map<String, Value>) -> Frame {
        let noun = if count == 1 { "entry" } else { "entries" };
        host(
            "inspector.dropped",
            format!("{count} audit {noun} dropped — reader fell behind"),
            correlation,
            object([("dropped", Value::from(count))]),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_json as json;

    /// The frames as the derives decode them: the reference the hand decoder must match.
    fn derived(value: &Value) -> Option<Frame> {
        #[derive(Deserialize)]
        struct Text {
            text: String,
        }
        #[derive(Deserialize)]
        struct Error {
            error: ErrorBody,
        }
        fn de<T: serde::de::DeserializeOwned>(value: &Value) -> Option<T> {
            crate::test_support::from_value(value.clone()).ok()
        }
        Some(match value["type"].as_str()? {
            "step-start" => Frame::StepStart(de(value)?),
            "text-delta" => Frame::TextDelta {
                text: de::<Text>(value)?.text,
            },
            "reasoning-delta" => Frame::ReasoningDelta {
                text: de::<Text>(value)?.text,
            },
            "tool-call" => Frame::ToolCall(de(value)?),
            "tool-result" => Frame::ToolResult(de(value)?),
            "inspector" => Frame::Inspector(de(value)?),
            "step-finish" => Frame::StepFinish(de(value)?),
            "error" => Frame::Error {
                error: de::<Error>(value)?.error,
            },
            _ => Frame::Unknown(value.as_object()?.clone()),
        })
    }

    /// Every object key and array item below `value`, as pointer paths.
    fn paths(value: &Value, at: String, out: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                for (key, child) in map {
                    let path = format!("{at}/{key}");
                    out.push(path.clone());
                    paths(child, path, out);
                }
            }
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    let path = format!("{at}/{i}");
                    out.push(path.clone());
                    paths(item, path, out);
                }
            }
            _ => {}
        }
    }

    /// The sample, then for every path below it: the sample with that key or item removed,
    /// and with it replaced by each of `replacements`.
    fn mutations(sample: &Value, replacements: &[Value]) -> Vec<Value> {
        let mut all = Vec::new();
        paths(sample, String::new(), &mut all);
        let mut variants = vec![sample.clone()];
        for path in all.iter().filter(|p| *p != "/type") {
            let (parent, key) = path.rsplit_once('/').unwrap();
            let mut removed = sample.clone();
            match removed.pointer_mut(parent) {
                Some(Value::Object(map)) => {
                    map.remove(key);
                }
                Some(Value::Array(items)) => {
                    items.remove(key.parse::<usize>().unwrap());
                }
                _ => {}
            }
            variants.push(removed);
            for replacement in replacements {
                let mut changed = sample.clone();
                *changed.pointer_mut(path).unwrap() = replacement.clone();
                variants.push(changed);
            }
        }
        variants
    }

    #[test]
    fn lane_and_confirmation_spellings_are_their_serde_spellings() {
        for lane in [Lane::Runtime, Lane::Domain, Lane::Host] {
            assert_eq!(crate::test_support::to_value(lane).unwrap(), lane.as_str());
        }
        use crate::tool::Confirmation::*;
        for confirmation in [Never, Optional, Required] {
            assert_eq!(
                crate::test_support::to_value(confirmation).unwrap(),
                confirmation.as_str()
            );
        }
    }

    #[test]
    fn a_usage_object_decodes_as_step_finish_reads_it() {
        let stored = json!({"inputTokens": 48, "outputTokens": 48, "totalTokens": 96,
            "cachedInputTokens": 24, "reportedSteps": 3});
        let usage = decode_usage(stored).unwrap();
        assert_eq!(
            (usage.input_tokens, usage.total_tokens, usage.reported_steps),
            (48, 96, 3)
        );
        assert_eq!(usage.cached_input_tokens, Some(24));
        assert_eq!(usage.reasoning_tokens, None);
        // A required count missing, negative, or the whole thing not an object: no usage.
        assert_eq!(
            decode_usage(json!({"inputTokens": 1, "outputTokens": 2, "totalTokens": 3})),
            None
        );
        assert_eq!(
            decode_usage(
                json!({"inputTokens": -1, "outputTokens": 2, "totalTokens": 3, "reportedSteps": 1})
            ),
            None
        );
        assert_eq!(decode_usage(Value::Null), None);
    }

    #[test]
    fn messages_decode_exactly_as_their_derive_does() {
        let sample = json!([
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [
                {"type": "text", "text": "a", "providerOptions": {"x": 1}},
                {"type": "reasoning", "text": "r"},
                {"type": "tool-call", "toolCallId": "c", "toolName": "w", "input": {}},
                {"type": "image", "data": "…"}]},
            {"role": "tool", "content": [
                {"type": "tool-result", "toolCallId": "c", "toolName": "w", "output": {"type": "json", "value": 1}}]},
            {"role": "system", "content": "s", "extra": true}
        ]);
        let replacements = [
            Value::Null,
            json!(1),
            json!("s"),
            json!(true),
            json!([]),
            json!([1]),
            json!({}),
            json!({"user": null}),
            json!({"tool": 1}),
            json!("assistant"),
            json!("nobody"),
            json!([{"type": "text"}]),
            json!({"type": "text", "text": 1}),
        ];
        let mut variants = mutations(&sample, &replacements);
        for replacement in &replacements {
            variants.push(replacement.clone());
        }
        for variant in &variants {
            let derived =
                crate::test_support::from_value::<Vec<WireModelMessage>>(variant.clone()).ok();
            assert_eq!(decode_messages(variant.clone()), derived, "{variant}");
        }
        assert!(variants.len() > 300, "{}", variants.len());
    }

    #[test]
    fn hand_decoding_accepts_and_refuses_exactly_what_the_derives_do() {
        let samples = [
            json!({"type": "step-start", "stepId": "s", "turnId": "t", "conversationId": "c",
                "domainTools": [{"wireName": "domain_x", "canonicalId": "domain:x",
                    "description": "d", "requiresApproval": false, "sideEffect": "read"}],
                "scope": ["app"], "catalogMode": "meta"}),
            json!({"type": "text-delta", "text": "hi"}),
            json!({"type": "reasoning-delta", "text": "hm"}),
            json!({"type": "tool-call", "toolCallId": "c1", "wireName": "w", "canonicalId": "view:a.b.c",
                "executor": "browser", "input": {"a": 1}}),
            json!({"type": "tool-result", "toolCallId": "c1", "wireName": "w", "canonicalId": "k",
                "ok": true, "result": [1]}),
            json!({"type": "inspector", "lane": "host", "eventType": "e", "summary": "s",
                "correlation": {"turnId": "t"}, "data": {"x": 1}}),
            json!({"type": "step-finish", "stepId": "s", "finishReason": "tool-calls",
                "responseMessages": [{"role": "assistant", "content": [{"type": "text", "text": "a"}]}],
                "pendingToolCalls": [{"toolCallId": "c", "wireName": "w", "canonicalId": "k", "input": {}}],
                "usage": {"inputTokens": 1, "outputTokens": 2, "totalTokens": 3, "cachedInputTokens": 1,
                    "reasoningTokens": 1, "cacheWriteInputTokens": 0, "reportedSteps": 1}}),
            json!({"type": "error", "error": {"code": "MODEL_ERROR", "message": "m"}}),
        ];
        let replacements = [
            Value::Null,
            json!(1),
            json!(-1),
            json!(1.5),
            json!("s"),
            json!(true),
            json!([]),
            json!(["s"]),
            json!({}),
            json!({"server": null}),
            json!({"meta": null}),
            json!({"host": 1}),
            json!("browser"),
            json!("direct"),
            json!("runtime"),
        ];
        let mut checked = 0;
        for sample in samples {
            let variants = mutations(&sample, &replacements);
            for variant in variants {
                let hand = crate::test_support::from_value::<Frame>(variant.clone()).ok();
                assert_eq!(hand, derived(&variant), "{variant}");
                checked += 1;
            }
        }
        assert!(checked > 800, "{checked}");
    }

    #[test]
    fn unknown_frame_types_are_kept_and_known_ones_are_checked() {
        let f: Frame =
            crate::test_support::from_value(json!({"type": "future-thing", "x": 1})).unwrap();
        assert_eq!(f.frame_type(), "future-thing");
        assert_eq!(
            crate::test_support::to_value(&f).unwrap(),
            json!({"type": "future-thing", "x": 1})
        );
        assert!(crate::test_support::from_value::<Frame>(json!({"type": "text-delta"})).is_err());
        assert!(crate::test_support::from_value::<Frame>(json!({"text": "x"})).is_err());
        assert!(crate::test_support::from_value::<Frame>(json!({"type": 3})).is_err());
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
