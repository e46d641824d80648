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

    /// Why a frame was refused (the reader reports every refusal as a malformed frame). A
    /// code, not its text: only `Frame`'s `Deserialize` writes the text, so a build that
    /// decodes frames without serde (the browser's) carries none of it.
    #[derive(Clone, Copy)]
    pub(super) enum Refused {
        Missing,
        NotAString,
        NotABoolean,
        NotAnObject,
        NotAnArray,
        NotACount,
        UnknownVariant,
        PartNotAnObject,
        ContentNeither,
        TypeNotAString,
    }

    impl std::fmt::Display for Refused {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(match self {
                Refused::Missing => "a required field is missing",
                Refused::NotAString => "a field is not a string",
                Refused::NotABoolean => "a field is not a boolean",
                Refused::NotAnObject => "a field is not an object",
                Refused::NotAnArray => "a field is not an array",
                Refused::NotACount => "a count is not a non-negative integer",
                Refused::UnknownVariant => "an unknown variant",
                Refused::PartNotAnObject => "a content part is not an object",
                Refused::ContentNeither => "a message's content is neither text nor parts",
                Refused::TypeNotAString => "a frame needs a string `type`",
            })
        }
    }

    /// The values of one object's known keys, taken out of it in one pass over its entries
    /// (other keys are ignored, as the derives ignore them), and the first refusal met in
    /// reading them. Every reader returns a value whatever happens (an empty one after a
    /// refusal) and [`Fields::done`] makes the result: one way out for every refusal, where
    /// a `?` per field had its own drops of the fields read before it and each field's map
    /// lookup was inlined.
    struct Fields {
        values: Vec<Option<Value>>,
        refused: Option<Refused>,
    }

    impl Fields {
        /// The values of `keys` in `value`, which must be an object.
        fn of(value: Value, keys: &[&str]) -> Fields {
            let mut fields = Fields {
                values: Vec::with_capacity(keys.len()),
                refused: None,
            };
            for _ in keys {
                fields.values.push(None);
            }
            match value {
                Value::Object(map) => {
                    for (key, value) in map {
                        if let Some(slot) = fields.values.get_mut(position(keys, &key)) {
                            *slot = Some(value);
                        }
                    }
                }
                _ => fields.refuse(Refused::NotAnObject),
            }
            fields
        }

        fn refuse(&mut self, why: Refused) {
            if self.refused.is_none() {
                self.refused = Some(why);
            }
        }

        /// `value`, or the first refusal.
        fn done<T>(self, value: T) -> Result<T, Refused> {
            match self.refused {
                None => Ok(value),
                Some(why) => Err(why),
            }
        }

        /// A required field (`null` is a value).
        fn any(&mut self, slot: usize) -> Value {
            self.opt_any(slot).unwrap_or_else(|| {
                self.refuse(Refused::Missing);
                Value::Null
            })
        }

        fn opt_any(&mut self, slot: usize) -> Option<Value> {
            self.values.get_mut(slot).and_then(Option::take)
        }

        /// An optional field: absent and `null` are both `None`.
        fn opt(&mut self, slot: usize) -> Option<Value> {
            self.opt_any(slot).filter(|v| !v.is_null())
        }

        /// `read`'s value, or `None` with its refusal kept.
        fn check<T>(&mut self, read: Result<T, Refused>) -> Option<T> {
            match read {
                Ok(value) => Some(value),
                Err(why) => {
                    self.refuse(why);
                    None
                }
            }
        }

        fn text(&mut self, slot: usize) -> String {
            let value = self.any(slot);
            self.check(string(value)).unwrap_or_default()
        }

        fn boolean(&mut self, slot: usize) -> bool {
            let value = self.any(slot);
            self.check(boolean(value)).unwrap_or_default()
        }

        fn count(&mut self, slot: usize) -> u64 {
            let value = self.any(slot);
            self.check(count(value)).unwrap_or_default()
        }

        fn opt_count(&mut self, slot: usize) -> Option<u64> {
            let value = self.opt(slot)?;
            self.check(count(value))
        }

        fn list<T>(&mut self, slot: usize, item: fn(Value) -> Result<T, Refused>) -> Vec<T> {
            let value = self.any(slot);
            self.check(list(value, item)).unwrap_or_default()
        }

        /// A unit variant (`None` once refused).
        fn variant<T>(&mut self, slot: usize, parse: fn(&str) -> Option<T>) -> Option<T> {
            let value = self.any(slot);
            self.check(variant(value, parse))
        }
    }

    /// Where `key` is in `keys` (`keys.len()` when it is not).
    fn position(keys: &[&str], key: &str) -> usize {
        crate::vocab::position(keys, key)
    }

    fn string(value: Value) -> Result<String, Refused> {
        match value {
            Value::String(s) => Ok(s),
            _ => Err(Refused::NotAString),
        }
    }

    fn boolean(value: Value) -> Result<bool, Refused> {
        value.as_bool().ok_or(Refused::NotABoolean)
    }

    fn object(value: Value) -> Result<Map<String, Value>, Refused> {
        match value {
            Value::Object(map) => Ok(map),
            _ => Err(Refused::NotAnObject),
        }
    }

    /// Each item read, or the first refusal. The loop over the array is [`each`], one
    /// function for every item type; a loop here (or `collect::<Result<…>>()`, which
    /// instantiated core's `GenericShunt` and its `try_fold`) was one copy per type.
    fn list<T>(value: Value, item: fn(Value) -> Result<T, Refused>) -> Result<Vec<T>, Refused> {
        let mut out = Vec::new();
        each(value, &mut |value| {
            out.push(item(value)?);
            Ok(())
        })?;
        Ok(out)
    }

    fn each(
        value: Value,
        item: &mut dyn FnMut(Value) -> Result<(), Refused>,
    ) -> Result<(), Refused> {
        match value {
            Value::Array(items) => {
                for value in items {
                    item(value)?;
                }
                Ok(())
            }
            _ => Err(Refused::NotAnArray),
        }
    }

    fn count(value: Value) -> Result<u64, Refused> {
        value.as_u64().ok_or(Refused::NotACount)
    }

    /// A unit variant: its name, or the `{"name": null}` form serde also accepts; `parse` is
    /// the vocabulary's table.
    fn variant<T>(value: Value, parse: fn(&str) -> Option<T>) -> Result<T, Refused> {
        parse(&variant_name(value)?).ok_or(Refused::UnknownVariant)
    }

    fn variant_name(value: Value) -> Result<String, Refused> {
        match value {
            Value::String(name) => Ok(name),
            Value::Object(map) if map.len() == 1 => match map.into_iter().next() {
                Some((name, Value::Null)) => Ok(name),
                _ => Err(Refused::UnknownVariant),
            },
            _ => Err(Refused::UnknownVariant),
        }
    }

    fn domain_tool(value: Value) -> Result<DomainToolInfo, Refused> {
        let mut f = Fields::of(
            value,
            &[
                "wireName",
                "canonicalId",
                "description",
                "requiresApproval",
                "sideEffect",
            ],
        );
        let tool = DomainToolInfo {
            wire_name: f.text(0),
            canonical_id: f.text(1),
            description: f.text(2),
            requires_approval: f.boolean(3),
            side_effect: f.text(4),
        };
        f.done(tool)
    }

    fn pending_call(value: Value) -> Result<PendingToolCall, Refused> {
        let mut f = Fields::of(value, &["toolCallId", "wireName", "canonicalId", "input"]);
        let call = PendingToolCall {
            tool_call_id: f.text(0),
            wire_name: f.text(1),
            canonical_id: f.text(2),
            input: f.any(3),
        };
        f.done(call)
    }

    pub(super) fn usage(value: Value) -> Result<Usage, Refused> {
        let mut f = Fields::of(
            value,
            &[
                "inputTokens",
                "outputTokens",
                "totalTokens",
                "cachedInputTokens",
                "reasoningTokens",
                "cacheWriteInputTokens",
                "reportedSteps",
            ],
        );
        let usage = Usage {
            input_tokens: f.count(0),
            output_tokens: f.count(1),
            total_tokens: f.count(2),
            cached_input_tokens: f.opt_count(3),
            reasoning_tokens: f.opt_count(4),
            cache_write_input_tokens: f.opt_count(5),
            reported_steps: f.count(6),
        };
        f.done(usage)
    }

    fn part(value: Value) -> Result<ContentPart, Refused> {
        // ContentPart's own (map-based) decoding: unknown or odd parts are kept verbatim.
        // Called directly, not through `from_value`: that would rebuild the Value through
        // serde and link serde_json's typed-error machinery into the browser build.
        match value {
            Value::Object(map) => Ok(ContentPart::from_map(map)),
            _ => Err(Refused::PartNotAnObject),
        }
    }

    /// A model message, as its derive (with the untagged `content`) decodes it.
    pub(super) fn message(value: Value) -> Result<WireModelMessage, Refused> {
        let mut f = Fields::of(value, &["role", "content"]);
        let role = f.variant(0, Role::parse).unwrap_or(Role::User);
        let content = match f.any(1) {
            Value::String(text) => MessageContent::Text(text),
            Value::Array(parts) => {
                MessageContent::Parts(f.check(list(Value::Array(parts), part)).unwrap_or_default())
            }
            _ => {
                f.refuse(Refused::ContentNeither);
                MessageContent::Text(String::new())
            }
        };
        f.done(WireModelMessage { role, content })
    }

    pub(super) fn messages(value: Value) -> Result<Vec<WireModelMessage>, Refused> {
        list(value, message)
    }

    /// Each known frame type's keys (by its row in [`FRAME_TYPES`]), in the order its
    /// reader in [`frame`] takes them.
    const KEYS: [&[&str]; FRAME_TYPES.len()] = [
        &[
            "stepId",
            "turnId",
            "conversationId",
            "domainTools",
            "scope",
            "catalogMode",
        ],
        &["text"],
        &["text"],
        &["toolCallId", "wireName", "canonicalId", "executor", "input"],
        &["toolCallId", "wireName", "canonicalId", "ok", "result"],
        &["lane", "eventType", "summary", "correlation", "data"],
        &[
            "stepId",
            "finishReason",
            "responseMessages",
            "pendingToolCalls",
            "usage",
        ],
        &["error"],
    ];

    pub(super) fn frame(m: Map<String, Value>) -> Result<Frame, Refused> {
        let frame_type = match m.get("type") {
            Some(Value::String(t)) => t.as_str(),
            _ => return Err(Refused::TypeNotAString),
        };
        let kind = position(&FRAME_TYPES, frame_type);
        let Some(keys) = KEYS.get(kind) else {
            return Ok(Frame::Unknown(m));
        };
        let mut f = Fields::of(Value::Object(m), keys);
        let frame = match kind {
            // step-start
            0 => Frame::StepStart(StepStart {
                step_id: f.text(0),
                turn_id: f.text(1),
                conversation_id: f.text(2),
                domain_tools: f.list(3, domain_tool),
                scope: f.list(4, string),
                catalog_mode: match f.opt(5) {
                    Some(mode) => f.check(variant(mode, CatalogMode::parse)),
                    None => None,
                },
            }),
            // text-delta
            1 => Frame::TextDelta { text: f.text(0) },
            // reasoning-delta
            2 => Frame::ReasoningDelta { text: f.text(0) },
            // tool-call
            3 => Frame::ToolCall(ToolCallFrame {
                tool_call_id: f.text(0),
                wire_name: f.text(1),
                canonical_id: f.text(2),
                executor: f.variant(3, Executor::parse).unwrap_or(Executor::Server),
                input: f.any(4),
            }),
            // tool-result
            4 => Frame::ToolResult(ToolResultFrame {
                tool_call_id: f.text(0),
                wire_name: f.text(1),
                canonical_id: f.text(2),
                ok: f.boolean(3),
                result: f.any(4),
            }),
            // inspector
            5 => Frame::Inspector(InspectorFrame {
                lane: f.variant(0, Lane::parse).unwrap_or(Lane::Host),
                event_type: f.text(1),
                summary: f.text(2),
                correlation: match f.opt(3) {
                    Some(correlation) => f.check(object(correlation)),
                    None => None,
                },
                data: f.opt(4),
            }),
            // step-finish
            6 => Frame::StepFinish(StepFinish {
                step_id: f.text(0),
                finish_reason: f.text(1),
                response_messages: f.list(2, message),
                pending_tool_calls: f.list(3, pending_call),
                usage: match f.opt(4) {
                    Some(value) => f.check(usage(value)),
                    None => None,
                },
            }),
            // error
            _ => {
                let mut e = Fields::of(f.any(0), &["code", "message"]);
                let error = ErrorBody {
                    code: e.text(0),
                    message: e.text(1),
                };
                f.check(e.done(()));
                Frame::Error { error }
            }
        };
        f.done(frame)
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

    /// `thread.full`: the conversation reached its stored caps; the step was not saved.
    pub fn thread_full(
        conversation_id: &str,
        max_messages: usize,
        max_bytes: usize,
        correlation: Map<String, Value>,
    ) -> Frame {
        host(
            "thread.full",
            format!(
                "this conversation reached its stored limit ({max_messages} messages, {max_bytes} bytes) — this step was not saved; start a new conversation"
            ),
            correlation,
            object([
                ("conversationId", Value::from(conversation_id)),
                ("maxMessages", Value::from(max_messages as u64)),
                ("maxBytes", Value::from(max_bytes as u64)),
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

    /// A refusal names the first field, in each type's reading order, that is wrong, as the
    /// reader that stopped at the first `?` did; nothing after it changes that.
    #[test]
    fn a_refused_frame_names_its_first_wrong_field() {
        let refusal = |frame: Value| {
            crate::test_support::from_value::<Frame>(frame)
                .unwrap_err()
                .to_string()
        };
        let cases = [
            (json!({"type": 3}), "a frame needs a string `type`"),
            (
                json!({"type": "tool-call", "toolCallId": 1}),
                "a field is not a string",
            ),
            (
                json!({"type": "tool-call", "toolCallId": "c", "wireName": "w",
                    "canonicalId": "k", "executor": "nobody"}),
                "an unknown variant",
            ),
            (
                json!({"type": "tool-call", "toolCallId": "c", "wireName": "w",
                    "canonicalId": "k", "executor": "browser"}),
                "a required field is missing",
            ),
            (
                json!({"type": "tool-result", "toolCallId": "c", "wireName": "w",
                    "canonicalId": "k", "ok": "yes"}),
                "a field is not a boolean",
            ),
            (
                json!({"type": "step-start", "stepId": "s", "turnId": "t", "conversationId": "c",
                    "domainTools": {}, "scope": 1}),
                "a field is not an array",
            ),
            (
                json!({"type": "step-start", "stepId": "s", "turnId": "t", "conversationId": "c",
                    "domainTools": [{"wireName": 1}], "scope": 1}),
                "a field is not a string",
            ),
            (
                json!({"type": "step-finish", "stepId": "s", "finishReason": "f",
                    "responseMessages": [{"role": "user", "content": 1}], "pendingToolCalls": 1}),
                "a message's content is neither text nor parts",
            ),
            (
                json!({"type": "step-finish", "stepId": "s", "finishReason": "f",
                    "responseMessages": [{"role": "user", "content": [1]}]}),
                "a content part is not an object",
            ),
            (
                json!({"type": "step-finish", "stepId": "s", "finishReason": "f",
                    "responseMessages": [], "pendingToolCalls": [],
                    "usage": {"inputTokens": -1}}),
                "a count is not a non-negative integer",
            ),
            (
                json!({"type": "inspector", "lane": "host", "eventType": "e", "summary": "s",
                    "correlation": []}),
                "a field is not an object",
            ),
            (
                json!({"type": "error", "error": 1}),
                "a field is not an object",
            ),
            (json!({"type": "error"}), "a required field is missing"),
            (
                json!({"type": "error", "error": {"code": "C", "message": false}}),
                "a field is not a string",
            ),
        ];
        for (frame, why) in cases {
            assert_eq!(refusal(frame.clone()), why, "{frame}");
        }
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
