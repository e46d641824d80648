//! `WireModelMessage` (reference-behaviour B5): the AI SDK v5 model-message shape the
//! browser posts and the server hands back. Unknown part types, and known parts whose
//! fields do not have the expected types, are kept as raw JSON and round-trip unchanged.

use crate::json::{Map, Value};
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::json::{ObjectWriter, WriteJson};

crate::wire_enum! {
    /// Who wrote a model message.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[serde(rename_all = "lowercase")]
    pub enum Role {
        System = "system",
        User = "user",
        Assistant = "assistant",
        Tool = "tool",
    }
}

/// One model message. Extra keys on the message itself are dropped (the reference strips).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WireModelMessage {
    pub role: Role,
    pub content: MessageContent,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum MessageContent {
    Text(String),
    Parts(Vec<ContentPart>),
}

/// One content part. Typed where the host reads it; everything else verbatim.
#[derive(Debug, Clone, PartialEq)]
pub enum ContentPart {
    Text {
        text: String,
        extra: Map<String, Value>,
    },
    Reasoning {
        text: String,
        extra: Map<String, Value>,
    },
    ToolCall {
        tool_call_id: String,
        /// Always the wire name, never the canonical id.
        tool_name: String,
        input: Value,
        extra: Map<String, Value>,
    },
    ToolResult {
        tool_call_id: String,
        tool_name: String,
        /// `{type:"json", value}` on the wire as the host writes it; other output shapes
        /// (`text`, `error-text`, …) are kept as sent.
        output: Value,
        extra: Map<String, Value>,
    },
    /// Any other part (images, files, provider-specific parts): kept exactly.
    Other(Map<String, Value>),
}

impl WireModelMessage {
    pub fn new(role: Role, content: MessageContent) -> Self {
        Self { role, content }
    }

    pub fn user_text(text: impl Into<String>) -> Self {
        Self::new(Role::User, MessageContent::Text(text.into()))
    }

    pub fn system_text(text: impl Into<String>) -> Self {
        Self::new(Role::System, MessageContent::Text(text.into()))
    }

    /// A tool message answering one call with a JSON value (the shape of F5 and J5).
    pub fn tool_result(
        tool_call_id: impl Into<String>,
        wire_name: impl Into<String>,
        value: Value,
    ) -> Self {
        Self::new(
            Role::Tool,
            MessageContent::Parts(vec![ContentPart::tool_result_json(
                tool_call_id,
                wire_name,
                value,
            )]),
        )
    }

    /// The parts of this message (a string content is one text part, not materialised).
    pub fn parts(&self) -> &[ContentPart] {
        match &self.content {
            MessageContent::Parts(parts) => parts,
            MessageContent::Text(_) => &[],
        }
    }
}

impl ContentPart {
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text {
            text: text.into(),
            extra: Map::new(),
        }
    }

    pub fn tool_call(
        tool_call_id: impl Into<String>,
        tool_name: impl Into<String>,
        input: Value,
    ) -> Self {
        Self::ToolCall {
            tool_call_id: tool_call_id.into(),
            tool_name: tool_name.into(),
            input,
            extra: Map::new(),
        }
    }

    pub fn tool_result_json(
        tool_call_id: impl Into<String>,
        tool_name: impl Into<String>,
        value: Value,
    ) -> Self {
        let mut output = Map::with_capacity(2);
        output.insert("type".into(), Value::from("json"));
        output.insert("value".into(), value);
        Self::ToolResult {
            tool_call_id: tool_call_id.into(),
            tool_name: tool_name.into(),
            output: Value::Object(output),
            extra: Map::new(),
        }
    }

    /// The `type` of this part as written on the wire.
    pub fn part_type(&self) -> &str {
        match self {
            Self::Text { .. } => "text",
            Self::Reasoning { .. } => "reasoning",
            Self::ToolCall { .. } => "tool-call",
            Self::ToolResult { .. } => "tool-result",
            Self::Other(map) => map.get("type").and_then(Value::as_str).unwrap_or(""),
        }
    }

    pub(crate) fn from_map(mut map: Map<String, Value>) -> Self {
        // A known part is typed only when every field it needs has the right type;
        // otherwise it stays `Other` so nothing is lost or reshaped.
        let kind = map.get("type").and_then(Value::as_str).unwrap_or("");
        match kind {
            "text" | "reasoning" if map.get("text").is_some_and(Value::is_string) => {
                let is_text = kind == "text";
                map.remove("type");
                let text = take_string(&mut map, "text");
                if is_text {
                    Self::Text { text, extra: map }
                } else {
                    Self::Reasoning { text, extra: map }
                }
            }
            "tool-call"
                if map.get("toolCallId").is_some_and(Value::is_string)
                    && map.get("toolName").is_some_and(Value::is_string)
                    && map.contains_key("input") =>
            {
                map.remove("type");
                let tool_call_id = take_string(&mut map, "toolCallId");
                let tool_name = take_string(&mut map, "toolName");
                let input = map.remove("input").unwrap_or(Value::Null);
                Self::ToolCall {
                    tool_call_id,
                    tool_name,
                    input,
                    extra: map,
                }
            }
            "tool-result"
                if map.get("toolCallId").is_some_and(Value::is_string)
                    && map.get("toolName").is_some_and(Value::is_string)
                    && map.contains_key("output") =>
            {
                map.remove("type");
                let tool_call_id = take_string(&mut map, "toolCallId");
                let tool_name = take_string(&mut map, "toolName");
                let output = map.remove("output").unwrap_or(Value::Null);
                Self::ToolResult {
                    tool_call_id,
                    tool_name,
                    output,
                    extra: map,
                }
            }
            _ => Self::Other(map),
        }
    }
}

impl WriteJson for WireModelMessage {
    fn write_json(&self, out: &mut String) {
        ObjectWriter::new(out)
            .field("role", &self.role)
            .field("content", &self.content)
            .end();
    }
}

impl WriteJson for MessageContent {
    fn write_json(&self, out: &mut String) {
        match self {
            Self::Text(text) => text.write_json(out),
            Self::Parts(parts) => parts.write_json(out),
        }
    }
}

/// The same text as the `Serialize` impl below: `type`, the typed fields, then `extra`.
impl WriteJson for ContentPart {
    fn write_json(&self, out: &mut String) {
        let extra = match self {
            Self::Other(map) => return map.write_json(out),
            Self::Text { extra, .. }
            | Self::Reasoning { extra, .. }
            | Self::ToolCall { extra, .. }
            | Self::ToolResult { extra, .. } => extra,
        };
        let mut object = ObjectWriter::new(out);
        object.field("type", &self.part_type());
        match self {
            Self::Text { text, .. } | Self::Reasoning { text, .. } => {
                object.field("text", text);
            }
            Self::ToolCall {
                tool_call_id,
                tool_name,
                input: value,
                ..
            }
            | Self::ToolResult {
                tool_call_id,
                tool_name,
                output: value,
                ..
            } => {
                let key = if matches!(self, Self::ToolCall { .. }) {
                    "input"
                } else {
                    "output"
                };
                object
                    .field("toolCallId", tool_call_id)
                    .field("toolName", tool_name)
                    .field(key, value);
            }
            Self::Other(_) => {}
        }
        for (key, value) in extra {
            object.field(key, value);
        }
        object.end();
    }
}

fn take_string(map: &mut Map<String, Value>, key: &str) -> String {
    match map.remove(key) {
        Some(Value::String(s)) => s,
        _ => String::new(),
    }
}

impl<'de> Deserialize<'de> for ContentPart {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match Value::deserialize(deserializer)? {
            Value::Object(map) => Ok(Self::from_map(map)),
            _ => Err(D::Error::custom("a content part must be an object")),
        }
    }
}

impl Serialize for ContentPart {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let (extra, len) = match self {
            Self::Other(map) => return map.serialize(serializer),
            Self::Text { extra, .. } | Self::Reasoning { extra, .. } => (extra, 2),
            Self::ToolCall { extra, .. } | Self::ToolResult { extra, .. } => (extra, 4),
        };
        let mut m = serializer.serialize_map(Some(len + extra.len()))?;
        m.serialize_entry("type", self.part_type())?;
        match self {
            Self::Text { text, .. } | Self::Reasoning { text, .. } => {
                m.serialize_entry("text", text)?;
            }
            Self::ToolCall {
                tool_call_id,
                tool_name,
                input,
                ..
            } => {
                m.serialize_entry("toolCallId", tool_call_id)?;
                m.serialize_entry("toolName", tool_name)?;
                m.serialize_entry("input", input)?;
            }
            Self::ToolResult {
                tool_call_id,
                tool_name,
                output,
                ..
            } => {
                m.serialize_entry("toolCallId", tool_call_id)?;
                m.serialize_entry("toolName", tool_name)?;
                m.serialize_entry("output", output)?;
            }
            Self::Other(_) => {}
        }
        for (k, v) in extra {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_json as json;

    #[test]
    fn unknown_and_odd_parts_round_trip_unchanged() {
        let raw = json!([
            {"type": "image", "image": "data:...", "mediaType": "image/png"},
            {"type": "text", "text": 5},
            {"type": "tool-call", "toolCallId": "c1", "toolName": "view_a__b", "input": {"x": 1}, "providerOptions": {"a": {"b": 1}}},
            {"type": "reasoning", "text": "hm", "providerOptions": {"anthropic": {"signature": "sig"}}},
            {"noType": true}
        ]);
        let parts: Vec<ContentPart> = crate::test_support::from_value(raw.clone()).unwrap();
        assert!(matches!(parts[0], ContentPart::Other(_)));
        assert!(matches!(parts[1], ContentPart::Other(_)));
        assert!(matches!(parts[2], ContentPart::ToolCall { .. }));
        assert!(matches!(parts[3], ContentPart::Reasoning { .. }));
        assert_eq!(crate::test_support::to_value(&parts).unwrap(), raw);
    }

    #[test]
    fn tool_result_shape_matches_f5() {
        let msg = WireModelMessage::tool_result(
            "stc_3",
            "domain_collections-aging",
            json!({"status": "ok"}),
        );
        assert_eq!(
            serde_json::to_string(&msg).unwrap(),
            r#"{"role":"tool","content":[{"type":"tool-result","toolCallId":"stc_3","toolName":"domain_collections-aging","output":{"type":"json","value":{"status":"ok"}}}]}"#
        );
    }

    #[test]
    fn string_content_and_roles() {
        let m: WireModelMessage =
            crate::test_support::from_value(json!({"role": "user", "content": "hi", "extra": 1}))
                .unwrap();
        assert_eq!(m, WireModelMessage::user_text("hi"));
        assert!(crate::test_support::from_value::<WireModelMessage>(
            json!({"role": "robot", "content": "x"})
        )
        .is_err());
        assert!(crate::test_support::from_value::<WireModelMessage>(
            json!({"role": "user", "content": [1]})
        )
        .is_err());
    }
}
