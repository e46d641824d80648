//! The model providers this crate writes itself, for real vendors: an OpenAI-compatible
//! chat-completions adapter and an Anthropic Messages adapter, over `reqwest` and
//! `eventsource-stream`, and the `<vendor>:<model>` spec the server is configured with.
//!
//! Shared here: HTTP settings (timeouts, retry policy), the request sender that retries 429
//! and 5xx before the first byte, and the driver that turns SSE events into `ModelEvent`s.

pub mod anthropic;
mod http;
pub mod openai;
mod sanitize;
mod spec;
mod sse;

use std::collections::VecDeque;
use std::time::Duration;

use dpas_protocol::{tool_results, ContentPart, MessageContent, Role, WireModelMessage};
use eventsource_stream::Event;
use futures_util::stream::{self, StreamExt};
use serde_json::value::RawValue;
use serde_json::Value;

use crate::provider::{EventStream, ModelError, ModelErrorKind, ModelEvent};

pub use anthropic::{AnthropicConfig, AnthropicProvider, ANTHROPIC_VERSION};
pub use openai::{OpenAiConfig, OpenAiProvider};
pub use sanitize::sanitize_vendor_text;
pub use spec::{
    provider_from_spec, provider_from_spec_env, providers_from_spec, ProviderConfigError, Vendor,
    VendorSpec,
};

/// How the adapters talk HTTP. Every field is public so tests (and the server) can shorten
/// timeouts and retry delays.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpSettings {
    /// Limit on establishing the TCP (and TLS) connection.
    pub connect_timeout: Duration,
    /// Limit on receiving the response status and headers of one attempt.
    pub response_timeout: Duration,
    pub retry: RetryPolicy,
}

impl Default for HttpSettings {
    fn default() -> Self {
        Self {
            connect_timeout: Duration::from_secs(10),
            response_timeout: Duration::from_secs(120),
            retry: RetryPolicy::default(),
        }
    }
}

/// Retries of a 429 or 5xx answer, only ever before the first byte of a stream was read.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    /// The wait before each retry; its length is the number of retries.
    pub delays: Vec<Duration>,
    /// The longest wait a vendor's `retry-after` header may ask for; longer asks are cut.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            delays: vec![
                Duration::from_millis(500),
                Duration::from_millis(1500),
                Duration::from_millis(4000),
            ],
            max_retry_after: Duration::from_secs(10),
        }
    }
}

impl RetryPolicy {
    /// No retries at all.
    pub fn none() -> Self {
        Self {
            delays: Vec::new(),
            max_retry_after: Duration::ZERO,
        }
    }
}

/// What a decoder tells the driver after one SSE event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flow {
    Continue,
    /// The step is complete (`Finish` was queued); nothing more is read.
    Finished,
}

/// A vendor's stream decoder: a pure state machine over SSE events.
trait Decoder: Send + 'static {
    fn on_event(
        &mut self,
        event: &Event,
        out: &mut VecDeque<ModelEvent>,
    ) -> Result<Flow, ModelError>;

    /// The byte stream ended; queue what completes the step or fail.
    fn on_end(&mut self, out: &mut VecDeque<ModelEvent>) -> Result<(), ModelError>;
}

struct Driver<D> {
    events: sse::SseEvents,
    decoder: D,
    queue: VecDeque<ModelEvent>,
    error: Option<ModelError>,
    done: bool,
}

/// Runs `decoder` over `events`: everything decoded before a failure is yielded first, then
/// the failure, then the stream ends; nothing is read after `Finish`.
fn drive<D: Decoder>(events: sse::SseEvents, decoder: D) -> EventStream {
    let driver = Driver {
        events,
        decoder,
        queue: VecDeque::new(),
        error: None,
        done: false,
    };
    Box::pin(stream::unfold(driver, |mut d| async move {
        loop {
            if let Some(event) = d.queue.pop_front() {
                return Some((Ok(event), d));
            }
            if let Some(error) = d.error.take() {
                return Some((Err(error), d));
            }
            if d.done {
                return None;
            }
            let step = match d.events.next().await {
                Some(Ok(event)) => d.decoder.on_event(&event, &mut d.queue),
                Some(Err(error)) => Err(error),
                None => d.decoder.on_end(&mut d.queue).map(|()| Flow::Finished),
            };
            match step {
                Ok(Flow::Continue) => {}
                Ok(Flow::Finished) => d.done = true,
                Err(error) => {
                    d.error = Some(error);
                    d.done = true;
                }
            }
        }
    }))
}

/// A token count as vendors send it: a finite number ≥ 0 (floored); anything else is absent.
fn count(value: Option<&Value>) -> Option<u64> {
    let v = value?.as_f64()?;
    (v.is_finite() && v >= 0.0).then(|| v.floor().min(u64::MAX as f64) as u64)
}

/// Adds two optional counts: absent only when both are.
fn add_counts(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (None, None) => None,
        (x, y) => Some(x.unwrap_or(0).saturating_add(y.unwrap_or(0))),
    }
}

fn protocol_error(message: &str) -> ModelError {
    ModelError::new(ModelErrorKind::Protocol, message)
}

const MALFORMED_JSON: &str = "The model provider sent a malformed event (not valid JSON).";
const ENDED_EARLY: &str = "The model stream ended before the step finished.";

/// Parses one SSE `data` payload as a JSON object.
fn parse_payload(data: &str) -> Result<serde_json::Map<String, Value>, ModelError> {
    match serde_json::from_str::<Value>(data) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(protocol_error(
            "The model provider sent a malformed event (not a JSON object).",
        )),
        Err(_) => Err(protocol_error(MALFORMED_JSON)),
    }
}

/// Parses streamed tool-call arguments: empty means `{}`; anything but a JSON object is
/// reported through `invalid_input` with `{}` as the input.
fn parse_arguments(raw: &str) -> (Value, Option<String>) {
    if raw.trim().is_empty() {
        return (Value::Object(serde_json::Map::new()), None);
    }
    match serde_json::from_str::<Value>(raw) {
        Ok(Value::Object(map)) => (Value::Object(map), None),
        Ok(_) => (
            Value::Object(serde_json::Map::new()),
            Some("The tool arguments were not a JSON object.".to_owned()),
        ),
        Err(_) => (
            Value::Object(serde_json::Map::new()),
            Some("The tool arguments were not valid JSON.".to_owned()),
        ),
    }
}

/// A fresh tool-call id for vendors that send none; unique within this process.
fn fresh_call_id() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!(
        "call_{nanos:08x}{:04x}",
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// The history as vendors accept it: every tool call answered by the tool messages right
/// after its assistant message (an unanswered call gets `TOOL_NOT_EXECUTED`, as the browser
/// shows it), results for calls not (or no longer) open dropped, and system messages met
/// while calls are open held back until they are answered.
fn repaired_history(messages: &[WireModelMessage]) -> Vec<WireModelMessage> {
    let mut out = Vec::with_capacity(messages.len());
    let mut open: Vec<(String, String)> = Vec::new();
    let mut held: Vec<WireModelMessage> = Vec::new();
    for message in messages {
        match message.role {
            Role::Tool => {
                let mut kept = Vec::new();
                for part in message.parts() {
                    if let ContentPart::ToolResult { tool_call_id, .. } = part {
                        if let Some(pos) = open.iter().position(|(id, _)| id == tool_call_id) {
                            open.remove(pos);
                            kept.push(part.clone());
                        }
                    }
                }
                if !kept.is_empty() {
                    out.push(WireModelMessage::new(
                        Role::Tool,
                        MessageContent::Parts(kept),
                    ));
                }
                if open.is_empty() {
                    out.append(&mut held);
                }
            }
            Role::System if !open.is_empty() => held.push(message.clone()),
            _ => {
                close_open_calls(&mut open, &mut out);
                out.append(&mut held);
                out.push(message.clone());
                if message.role == Role::Assistant {
                    open = message
                        .parts()
                        .iter()
                        .filter_map(|p| match p {
                            ContentPart::ToolCall {
                                tool_call_id,
                                tool_name,
                                ..
                            } => Some((tool_call_id.clone(), tool_name.clone())),
                            _ => None,
                        })
                        .collect();
                }
            }
        }
    }
    close_open_calls(&mut open, &mut out);
    out.append(&mut held);
    out
}

fn close_open_calls(open: &mut Vec<(String, String)>, out: &mut Vec<WireModelMessage>) {
    if open.is_empty() {
        return;
    }
    let parts = open
        .drain(..)
        .map(|(id, name)| {
            ContentPart::tool_result_json(id, name, tool_results::tool_not_executed())
        })
        .collect();
    out.push(WireModelMessage::new(
        Role::Tool,
        MessageContent::Parts(parts),
    ));
}

/// The text of a message: its string content, or its non-empty text parts joined by `sep`.
fn message_text(message: &WireModelMessage, sep: &str) -> String {
    text_parts(message).join(sep)
}

/// The non-empty texts of a message, in order.
fn text_parts(message: &WireModelMessage) -> Vec<&str> {
    match &message.content {
        MessageContent::Text(text) => vec![text.as_str()],
        MessageContent::Parts(parts) => parts
            .iter()
            .filter_map(|p| match p {
                ContentPart::Text { text, .. } => Some(text.as_str()),
                _ => None,
            })
            .collect(),
    }
    .into_iter()
    .filter(|t| !t.is_empty())
    .collect()
}

/// A tool result's output as the text vendors take, and whether it reports an error.
fn tool_output_text(output: &Value) -> (String, bool) {
    let kind = output.get("type").and_then(Value::as_str).unwrap_or("");
    let value = output.get("value");
    let as_text = |v: Option<&Value>| match v {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => String::new(),
    };
    match kind {
        "json" => (value.map(Value::to_string).unwrap_or_default(), false),
        "text" => (as_text(value), false),
        "error-text" => (as_text(value), true),
        "error-json" => (value.map(Value::to_string).unwrap_or_default(), true),
        "execution-denied" => (
            output
                .get("reason")
                .and_then(Value::as_str)
                .unwrap_or("The tool execution was denied.")
                .to_owned(),
            true,
        ),
        "content" => {
            let items = value
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or_default();
            let text = items
                .iter()
                .filter_map(|item| item.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n");
            (text, false)
        }
        _ => (output.to_string(), false),
    }
}

/// A tool's JSON Schema as vendors require it: an object schema.
fn object_schema(schema: &RawValue) -> Value {
    match serde_json::from_str(schema.get()) {
        Ok(Value::Object(map)) if !map.is_empty() => Value::Object(map),
        _ => serde_json::json!({"type": "object", "properties": {}}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn counts_follow_h2() {
        assert_eq!(count(Some(&json!(3))), Some(3));
        assert_eq!(count(Some(&json!(3.7))), Some(3));
        assert_eq!(count(Some(&json!(-1))), None);
        assert_eq!(count(Some(&json!("3"))), None);
        assert_eq!(count(None), None);
        assert_eq!(add_counts(None, None), None);
        assert_eq!(add_counts(Some(2), None), Some(2));
        assert_eq!(add_counts(Some(2), Some(3)), Some(5));
    }

    #[test]
    fn arguments_parse_or_report() {
        assert_eq!(parse_arguments(""), (json!({}), None));
        assert_eq!(parse_arguments(" {\"a\":1} "), (json!({"a": 1}), None));
        assert!(parse_arguments("[1]").1.is_some());
        assert!(parse_arguments("{\"a\":").1.is_some());
    }

    fn call(id: &str) -> ContentPart {
        ContentPart::tool_call(id, "view_a", json!({}))
    }

    #[test]
    fn unanswered_calls_are_answered_and_orphans_dropped() {
        let history = vec![
            WireModelMessage::user_text("hi"),
            WireModelMessage::new(
                Role::Assistant,
                MessageContent::Parts(vec![call("a"), call("b")]),
            ),
            WireModelMessage::tool_result("a", "view_a", json!({"ok": true})),
            WireModelMessage::system_text("state"),
            WireModelMessage::tool_result("zz", "view_a", json!({"ok": true})),
            WireModelMessage::user_text("again"),
        ];
        let out = repaired_history(&history);
        let roles: Vec<Role> = out.iter().map(|m| m.role).collect();
        assert_eq!(
            roles,
            [
                Role::User,
                Role::Assistant,
                Role::Tool,
                Role::Tool,
                Role::System,
                Role::User
            ]
        );
        match &out[3].parts()[0] {
            ContentPart::ToolResult {
                tool_call_id,
                output,
                ..
            } => {
                assert_eq!(tool_call_id, "b");
                assert_eq!(output["value"]["error"]["code"], "TOOL_NOT_EXECUTED");
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn tool_outputs_as_text() {
        assert_eq!(
            tool_output_text(&json!({"type":"json","value":{"a":1}})),
            (r#"{"a":1}"#.into(), false)
        );
        assert_eq!(
            tool_output_text(&json!({"type":"error-text","value":"boom"})),
            ("boom".into(), true)
        );
        assert_eq!(
            tool_output_text(&json!({"type":"text","value":"t"})),
            ("t".into(), false)
        );
    }

    #[test]
    fn fresh_ids_differ() {
        assert_ne!(fresh_call_id(), fresh_call_id());
    }
}
