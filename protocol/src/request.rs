//! Step requests, v2 (current) and v1 (served beside it), and (with the `server` feature) the
//! one decoding entry point from raw bytes to the normalised internal request
//! (`decode_request`, in `decode`).
//!
//! Precedence (reference-behaviour B12, DESIGN decision 1): a body naming a version that is
//! not the number 1 or 2 is 409 `PROTOCOL_VERSION_MISMATCH`; any other malformation is 400
//! `PROTOCOL_DECODE_ERROR`; a well-formed body with more frontend tools or messages than the
//! version allows is 413 `CATALOG_TOO_LARGE` naming plane, count and limit.

use serde::Serialize;

use crate::json::{ObjectWriter, WriteJson};
use crate::message::WireModelMessage;
use crate::tool::{CatalogMode, Truncated, WireToolDescriptor, WireToolState};

#[cfg(feature = "server")]
mod decode;
mod version;

#[cfg(feature = "server")]
pub use decode::{decode_request, decode_request_value, ChatStepRequest};
pub use version::ProtocolVersion;

/// The catalog envelope of a v2 request, as the browser builds it. It borrows: a step
/// request is written once per step from the loop's own history and projection, which are
/// not copied for it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CatalogV2<'a> {
    pub mode: CatalogMode,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<&'a [String]>,
    pub frontend_tools: &'a [WireToolDescriptor],
    pub frontend_state: &'a [WireToolState],
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncated: Option<Truncated>,
}

/// A v2 step request as the browser posts it (borrowing, like [`CatalogV2`]). Decoding goes
/// through [`decode_request`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StepRequestV2<'a> {
    pub protocol_version: u8,
    pub conversation_id: &'a str,
    pub turn_id: &'a str,
    pub step_index: u32,
    pub pathname: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_id: Option<&'a str>,
    pub messages: &'a [WireModelMessage],
    pub catalog: CatalogV2<'a>,
}

/// A v1 step request (deprecated; accepted for one minor release).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StepRequestV1 {
    pub protocol_version: u8,
    pub conversation_id: String,
    pub turn_id: String,
    pub step_index: u32,
    pub messages: Vec<WireModelMessage>,
    pub frontend_tools: Vec<WireToolDescriptor>,
}

impl StepRequestV2<'_> {
    /// The request body: the bytes of the `Serialize` derive (`serde_json::to_vec`), written
    /// by [`WriteJson`] so the browser build links no serializer.
    pub fn to_json(&self) -> Vec<u8> {
        crate::json::to_string(self).into_bytes()
    }
}

impl WriteJson for StepRequestV2<'_> {
    fn write_json(&self, out: &mut String) {
        ObjectWriter::new(out)
            .field("protocolVersion", &self.protocol_version)
            .field("conversationId", &self.conversation_id)
            .field("turnId", &self.turn_id)
            .field("stepIndex", &self.step_index)
            .field("pathname", &self.pathname)
            .opt_field("modelId", self.model_id.as_ref().map(|v| v as _))
            .field("messages", &self.messages)
            .field("catalog", &self.catalog)
            .end();
    }
}

impl WriteJson for CatalogV2<'_> {
    fn write_json(&self, out: &mut String) {
        ObjectWriter::new(out)
            .field("mode", &self.mode)
            .opt_field("scope", self.scope.as_ref().map(|v| v as _))
            .field("frontendTools", &self.frontend_tools)
            .field("frontendState", &self.frontend_state)
            .opt_field("truncated", self.truncated.as_ref().map(|v| v as _))
            .end();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_json as json;

    /// `to_json` writes the bytes of the `Serialize` derives, every optional field present
    /// and absent, every content part kind (with extra keys), odd strings and numbers.
    #[test]
    fn to_json_is_the_serialize_derive_byte_for_byte() {
        use crate::message::{ContentPart, MessageContent, Role};
        use crate::tool::{Confirmation, Plane, TruncationReason};
        let messages: Vec<WireModelMessage> = crate::test_support::from_value(json!([
            {"role": "system", "content": "be \"brief\"\n\u{1}"},
            {"role": "user", "content": [{"type": "text", "text": "é😀", "providerOptions": {"x": 1}}]},
            {"role": "assistant", "content": [
                {"type": "reasoning", "text": "hm"},
                {"type": "tool-call", "toolCallId": "c1", "toolName": "view_a", "input": {"b": 2, "a": [1.5, -3, null]}, "z": true},
                {"type": "image", "image": "data:", "mediaType": "image/png"},
                {"type": "text", "text": 5}
            ]},
            {"role": "tool", "content": [
                {"type": "tool-result", "toolCallId": "c1", "toolName": "view_a", "output": {"type": "json", "value": {"ok": 1e21}}}
            ]}
        ]))
        .unwrap();
        let mut messages = messages;
        messages.push(WireModelMessage::new(
            Role::Assistant,
            MessageContent::Parts(vec![ContentPart::tool_call("c2", "view_b", json!(0.1))]),
        ));
        let descriptor =
            |available: Option<bool>, reason: Option<&str>, untrusted: bool| WireToolDescriptor {
                wire_name: "view_a".into(),
                canonical_id: "view:a".into(),
                plane: Plane::View,
                description: "[view · read] A \\ B".into(),
                input_schema: json!({"type": "object", "properties": {"q": {"type": "string"}}})
                    .as_object()
                    .unwrap()
                    .clone(),
                effect: "read".into(),
                confirmation: Confirmation::Required,
                available,
                unavailable_reason: reason.map(Into::into),
                untrusted,
            };
        let tools = [
            descriptor(None, None, false),
            descriptor(Some(false), Some("closed"), true),
        ];
        let states = [
            WireToolState {
                wire_name: "view_a".into(),
                available: true,
                unavailable_reason: None,
                note: None,
            },
            WireToolState {
                wire_name: "view_b".into(),
                available: false,
                unavailable_reason: Some("no rows".into()),
                note: Some("tab\t".into()),
            },
        ];
        let scope = ["app".to_owned(), "receivables".to_owned()];
        for (model_id, scope, truncated, mode) in [
            (None, None, None, CatalogMode::Direct),
            (
                Some("openai:gpt"),
                Some(&scope[..]),
                Some(Truncated {
                    dropped: 3,
                    reason: TruncationReason::Budget,
                }),
                CatalogMode::Meta,
            ),
        ] {
            let request = StepRequestV2 {
                protocol_version: 2,
                conversation_id: "conv_1",
                turn_id: "turn \"1\"",
                step_index: 4_000_000_000,
                pathname: "/a/b",
                model_id,
                messages: &messages,
                catalog: CatalogV2 {
                    mode,
                    scope,
                    frontend_tools: &tools,
                    frontend_state: &states,
                    truncated,
                },
            };
            assert_eq!(
                String::from_utf8(request.to_json()).unwrap(),
                serde_json::to_string(&request).unwrap()
            );
        }
    }
}
