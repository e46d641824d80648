//! What both adapters send, as vendors take it: the history with every tool call answered,
//! message and tool-output texts, tool schemas as object schemas.

use dpas_protocol::{tool_results, ContentPart, MessageContent, Role, WireModelMessage};
use serde_json::value::RawValue;
use serde_json::Value;

/// The history as vendors accept it: every tool call answered by the tool messages right
/// after its assistant message (an unanswered call gets `TOOL_NOT_EXECUTED`, as the browser
/// shows it), results for calls not (or no longer) open dropped, and system messages met
/// while calls are open held back until they are answered.
pub(super) fn repaired_history(messages: &[WireModelMessage]) -> Vec<WireModelMessage> {
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
pub(super) fn message_text(message: &WireModelMessage, sep: &str) -> String {
    text_parts(message).join(sep)
}

/// The non-empty texts of a message, in order.
pub(super) fn text_parts(message: &WireModelMessage) -> Vec<&str> {
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
pub(super) fn tool_output_text(output: &Value) -> (String, bool) {
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
pub(super) fn object_schema(schema: &RawValue) -> Value {
    match serde_json::from_str(schema.get()) {
        Ok(Value::Object(map)) if !map.is_empty() => Value::Object(map),
        _ => serde_json::json!({"type": "object", "properties": {}}),
    }
}
