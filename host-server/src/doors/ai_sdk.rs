//! `POST /agent/ai-sdk`: the AI SDK's UI message stream over the one step engine, for
//! `useChat` / `DefaultChatTransport` clients.
//!
//! In: the body `DefaultChatTransport` sends (`id`, `messages` as UI messages, `trigger`,
//! `messageId`), plus optionally `catalog` (the v2 request's, so `@dpas/host`'s Surface tools
//! are offered as tools the client answers with `addToolOutput`), `pathname` and `modelId`.
//! The body becomes a v2 step request and goes through `decode_request_value`, so every
//! contract check and limit applies unchanged (400/409/413 before anything streams).
//!
//! Out: SSE `data:` lines of UI message chunks (`x-vercel-ai-ui-message-stream: v1`): text,
//! reasoning, `tool-input-available` for every call (server calls marked
//! `providerExecuted`), `tool-output-available`/`tool-output-error` for server calls,
//! `start-step`/`finish-step` around each model step, `error` chunks with our code, and
//! `finish` with the usage as message metadata. Tools are dynamic tools named by wire name.

use actix_web::web;
use actix_web::{HttpRequest, HttpResponse};
use dpas_protocol::{Executor, Frame};
use serde_json::{json, Map, Value};

use dpas_engine::ChatConfig;

use super::open::{malformed, open_door, translated, BodyKind};
use super::sse::{self, FrameEncoder};
use crate::http::error::ApiError;
use crate::AppState;

/// Tool parts of a UI message: `dynamic-tool` (named by `toolName`) or `tool-<name>`.
fn tool_name(part: &Map<String, Value>) -> Option<&str> {
    match part.get("type").and_then(Value::as_str)? {
        "dynamic-tool" => part.get("toolName").and_then(Value::as_str),
        other => other.strip_prefix("tool-"),
    }
}

/// One assistant UI message → model messages: each step (split at `step-start`) is an
/// assistant message of reasoning, text and tool calls, followed by a tool message with the
/// results the parts carry.
fn assistant_messages(parts: &[Value], out: &mut Vec<Value>) -> Result<(), ApiError> {
    let mut content: Vec<Value> = Vec::new();
    let mut results: Vec<Value> = Vec::new();
    let flush = |content: &mut Vec<Value>, results: &mut Vec<Value>, out: &mut Vec<Value>| {
        if !content.is_empty() {
            out.push(json!({"role": "assistant", "content": std::mem::take(content)}));
        }
        if !results.is_empty() {
            out.push(json!({"role": "tool", "content": std::mem::take(results)}));
        }
    };
    for part in parts {
        let part = part.as_object().ok_or_else(malformed)?;
        match part.get("type").and_then(Value::as_str) {
            Some("step-start") => flush(&mut content, &mut results, out),
            Some(kind @ ("text" | "reasoning")) => {
                let text = part
                    .get("text")
                    .and_then(Value::as_str)
                    .ok_or_else(malformed)?;
                if !text.is_empty() {
                    content.push(json!({"type": kind, "text": text}));
                }
            }
            _ => {
                let Some(name) = tool_name(part) else {
                    // Sources, files and data parts are the UI's, not the model's.
                    continue;
                };
                let id = part
                    .get("toolCallId")
                    .and_then(Value::as_str)
                    .ok_or_else(malformed)?;
                let input = part.get("input").cloned().unwrap_or_else(|| json!({}));
                content.push(json!({"type": "tool-call", "toolCallId": id, "toolName": name, "input": input}));
                let output = match part.get("state").and_then(Value::as_str) {
                    Some("output-available") => {
                        json!({"type": "json", "value": part.get("output").cloned().unwrap_or(Value::Null)})
                    }
                    Some("output-error") => json!({"type": "error-text",
                        "value": part.get("errorText").and_then(Value::as_str).unwrap_or("The tool failed.")}),
                    _ => continue,
                };
                results.push(json!({"type": "tool-result", "toolCallId": id, "toolName": name, "output": output}));
            }
        }
    }
    flush(&mut content, &mut results, out);
    Ok(())
}

/// What a UI-message request becomes: the v2 step request, and the id of the assistant
/// message the stream continues (when the last message is one).
struct Translated {
    request: Value,
    continued_message: Option<String>,
}

fn translate(body: &Value) -> Result<Translated, ApiError> {
    let body = body.as_object().ok_or_else(malformed)?;
    let chat_id = body
        .get("id")
        .and_then(Value::as_str)
        .ok_or_else(malformed)?;
    let ui = body
        .get("messages")
        .and_then(Value::as_array)
        .ok_or_else(malformed)?;
    let mut messages = Vec::with_capacity(ui.len());
    let mut turn_id = None;
    let mut continued_message = None;
    let mut steps_since_user = 0_usize;
    for message in ui {
        let role = message.get("role").and_then(Value::as_str);
        let parts = message
            .get("parts")
            .and_then(Value::as_array)
            .ok_or_else(malformed)?;
        let id = message.get("id").and_then(Value::as_str);
        match role {
            Some("user") => {
                let text: Vec<Value> = parts
                    .iter()
                    .filter(|p| p.get("type").and_then(Value::as_str) == Some("text"))
                    .map(|p| json!({"type": "text", "text": p.get("text").cloned().unwrap_or_default()}))
                    .collect();
                messages.push(json!({"role": "user", "content": text}));
                turn_id = id.map(str::to_owned);
                continued_message = None;
                steps_since_user = 0;
            }
            Some("assistant") => {
                assistant_messages(parts, &mut messages)?;
                continued_message = id.map(str::to_owned);
                steps_since_user += parts
                    .iter()
                    .filter(|p| p.get("type").and_then(Value::as_str) == Some("step-start"))
                    .count()
                    .max(1);
            }
            // The system prompt is the server's; a client's system message is not relayed.
            Some("system") => {}
            _ => return Err(malformed()),
        }
    }
    let mut request = json!({
        "protocolVersion": 2,
        "conversationId": chat_id,
        "turnId": turn_id.unwrap_or_else(|| chat_id.to_owned()),
        "stepIndex": steps_since_user.min(dpas_protocol::limits::MAX_STEP_INDEX as usize),
        "pathname": body.get("pathname").cloned().unwrap_or_else(|| json!("/")),
        "messages": messages,
        "catalog": body.get("catalog").cloned().unwrap_or_else(|| json!({"mode": "direct", "frontendTools": []})),
    });
    if let Some(model) = body.get("modelId") {
        request["modelId"] = model.clone();
    }
    Ok(Translated {
        request,
        continued_message,
    })
}

/// The open text or reasoning part.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Open {
    Text,
    Reasoning,
}

impl Open {
    fn kind(self) -> &'static str {
        match self {
            Self::Text => "text",
            Self::Reasoning => "reasoning",
        }
    }
}

/// Frames → UI message chunks.
struct Encoder {
    message_id: String,
    open: Option<(Open, String)>,
    parts: u32,
    /// A server result was the last thing sent: the next output is a new model step.
    after_results: bool,
}

fn error_text(result: &Value) -> String {
    match (
        result.pointer("/error/code").and_then(Value::as_str),
        result.pointer("/error/message").and_then(Value::as_str),
    ) {
        (Some(code), Some(message)) => format!("{code}: {message}"),
        _ => result.to_string(),
    }
}

/// The AI SDK's finish reasons; anything else is `other`.
fn finish_reason(reason: &str) -> &str {
    match reason {
        "stop" | "length" | "content-filter" | "tool-calls" | "error" => reason,
        _ => "other",
    }
}

impl FrameEncoder for Encoder {
    /// The chunks for one frame; `true` once the stream is complete.
    fn encode(&mut self, frame: Frame, out: &mut Vec<Value>) -> bool {
        self.encode_frame(frame, out)
    }

    fn trailer(&self) -> Option<&'static str> {
        Some("[DONE]")
    }
}

impl Encoder {
    fn close(&mut self, out: &mut Vec<Value>) {
        if let Some((open, id)) = self.open.take() {
            out.push(json!({"type": format!("{}-end", open.kind()), "id": id}));
        }
    }

    fn step_boundary(&mut self, out: &mut Vec<Value>) {
        if self.after_results {
            self.after_results = false;
            out.push(json!({"type": "finish-step"}));
            out.push(json!({"type": "start-step"}));
        }
    }

    fn delta(&mut self, kind: Open, text: String, out: &mut Vec<Value>) {
        self.step_boundary(out);
        if self.open.as_ref().map(|(k, _)| *k) != Some(kind) {
            self.close(out);
            self.parts += 1;
            let id = format!("{}_{}", kind.kind(), self.parts);
            out.push(json!({"type": format!("{}-start", kind.kind()), "id": id}));
            self.open = Some((kind, id));
        }
        if let Some((_, id)) = &self.open {
            out.push(json!({"type": format!("{}-delta", kind.kind()), "id": id, "delta": text}));
        }
    }

    fn encode_frame(&mut self, frame: Frame, out: &mut Vec<Value>) -> bool {
        match frame {
            Frame::StepStart(start) => {
                out.push(json!({"type": "start", "messageId": self.message_id,
                    "messageMetadata": {"stepId": start.step_id}}));
                out.push(json!({"type": "start-step"}));
            }
            Frame::TextDelta { text } => self.delta(Open::Text, text, out),
            Frame::ReasoningDelta { text } => self.delta(Open::Reasoning, text, out),
            Frame::ToolCall(call) => {
                self.step_boundary(out);
                self.close(out);
                out.push(json!({
                    "type": "tool-input-available",
                    "toolCallId": call.tool_call_id,
                    "toolName": call.wire_name,
                    "title": call.canonical_id,
                    "input": call.input,
                    "dynamic": true,
                    "providerExecuted": call.executor == Executor::Server,
                }));
            }
            Frame::ToolResult(result) => {
                self.close(out);
                self.after_results = true;
                out.push(if result.ok {
                    json!({"type": "tool-output-available", "toolCallId": result.tool_call_id,
                        "output": result.result, "dynamic": true, "providerExecuted": true})
                } else {
                    json!({"type": "tool-output-error", "toolCallId": result.tool_call_id,
                        "errorText": error_text(&result.result), "dynamic": true, "providerExecuted": true})
                });
            }
            Frame::Error { error } => {
                self.close(out);
                out.push(
                    json!({"type": "error", "errorText": format!("{}: {}", error.code, error.message)}),
                );
            }
            Frame::StepFinish(finish) => {
                self.close(out);
                out.push(json!({"type": "finish-step"}));
                out.push(json!({
                    "type": "finish",
                    "finishReason": finish_reason(&finish.finish_reason),
                    "messageMetadata": {
                        "stepId": finish.step_id,
                        "finishReason": finish.finish_reason,
                        "usage": finish.usage,
                        "pendingToolCalls": finish.pending_tool_calls.len(),
                    },
                }));
                return true;
            }
            // Inspector frames are the browser package's; unknown frames are skipped.
            Frame::Inspector(_) | Frame::Unknown(_) => {}
        }
        false
    }
}

pub async fn agent_ai_sdk(
    req: HttpRequest,
    payload: web::Payload,
    state: web::Data<AppState>,
    chat: web::Data<ChatConfig>,
) -> Result<HttpResponse, ApiError> {
    let (run, continued) = open_door(&req, payload, &state, &chat, BodyKind::Json, |body| {
        translated(body, |body| {
            translate(body).map(|t| (t.request, t.continued_message))
        })
    })
    .await?;
    let message_id = continued.unwrap_or_else(|| format!("msg_{}", uuid::Uuid::new_v4().simple()));
    let encoder = Encoder {
        message_id,
        open: None,
        parts: 0,
        after_results: false,
    };
    let mut response = HttpResponse::Ok();
    response.insert_header(("x-vercel-ai-ui-message-stream", "v1"));
    Ok(sse::stream(run, encoder, response))
}

#[cfg(test)]
mod tests {
    use super::*;
    use dpas_protocol::request::decode_request_value;

    #[test]
    fn ui_messages_become_model_messages_step_by_step() {
        let body = json!({
            "id": "chat_1",
            "trigger": "submit-message",
            "messages": [
                {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hi"}, {"type": "file", "url": "x", "mediaType": "image/png"}]},
                {"id": "a1", "role": "assistant", "parts": [
                    {"type": "step-start"},
                    {"type": "reasoning", "text": "think"},
                    {"type": "dynamic-tool", "toolName": "domain_list-clients", "toolCallId": "c1", "state": "output-available", "input": {}, "output": {"status": "ok"}},
                    {"type": "tool-view_x", "toolCallId": "c2", "state": "output-error", "input": {"a": 1}, "errorText": "nope"},
                    {"type": "step-start"},
                    {"type": "text", "text": "done"},
                    {"type": "dynamic-tool", "toolName": "view_y", "toolCallId": "c3", "state": "input-available", "input": {}}
                ]}
            ]
        });
        let t = translate(&body).unwrap();
        assert_eq!(t.continued_message.as_deref(), Some("a1"));
        let r = &t.request;
        assert_eq!(r["conversationId"], "chat_1");
        assert_eq!(r["turnId"], "u1");
        assert_eq!(r["stepIndex"], 2);
        assert_eq!(r["pathname"], "/");
        let m = r["messages"].as_array().unwrap();
        let roles: Vec<&str> = m.iter().map(|m| m["role"].as_str().unwrap()).collect();
        assert_eq!(roles, ["user", "assistant", "tool", "assistant"]);
        assert_eq!(m[0]["content"], json!([{"type": "text", "text": "hi"}]));
        assert_eq!(
            m[1]["content"][0],
            json!({"type": "reasoning", "text": "think"})
        );
        assert_eq!(m[1]["content"][2]["toolName"], "view_x");
        assert_eq!(
            m[2]["content"][0]["output"],
            json!({"type": "json", "value": {"status": "ok"}})
        );
        assert_eq!(
            m[2]["content"][1]["output"],
            json!({"type": "error-text", "value": "nope"})
        );
        assert_eq!(m[3]["content"][1]["toolCallId"], "c3");
        assert!(decode_request_value(t.request).is_ok());
    }

    #[test]
    fn bodies_that_are_not_ui_message_requests_are_refused() {
        for bad in [
            json!([]),
            json!({"messages": []}),
            json!({"id": "c", "messages": {}}),
            json!({"id": "c", "messages": [{"role": "user"}]}),
            json!({"id": "c", "messages": [{"role": "robot", "parts": []}]}),
            json!({"id": "c", "messages": [{"role": "assistant", "parts": [{"type": "dynamic-tool", "toolName": "x"}]}]}),
        ] {
            assert!(translate(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_server_result_then_text_is_a_new_step() {
        use dpas_protocol::{ToolCallFrame, ToolResultFrame};
        let mut e = Encoder {
            message_id: "m".into(),
            open: None,
            parts: 0,
            after_results: false,
        };
        let mut out = Vec::new();
        e.encode(Frame::TextDelta { text: "a".into() }, &mut out);
        e.encode(
            Frame::ToolCall(ToolCallFrame {
                tool_call_id: "c".into(),
                wire_name: "domain_x".into(),
                canonical_id: "domain:x".into(),
                executor: Executor::Server,
                input: json!({}),
            }),
            &mut out,
        );
        e.encode(
            Frame::ToolResult(ToolResultFrame {
                tool_call_id: "c".into(),
                wire_name: "domain_x".into(),
                canonical_id: "domain:x".into(),
                ok: false,
                result: json!({"status": "error", "error": {"code": "TIMEOUT", "message": "slow"}}),
            }),
            &mut out,
        );
        e.encode(Frame::TextDelta { text: "b".into() }, &mut out);
        let types: Vec<&str> = out.iter().map(|c| c["type"].as_str().unwrap()).collect();
        assert_eq!(
            types,
            [
                "text-start",
                "text-delta",
                "text-end",
                "tool-input-available",
                "tool-output-error",
                "finish-step",
                "start-step",
                "text-start",
                "text-delta"
            ]
        );
        assert_eq!(out[4]["errorText"], "TIMEOUT: slow");
        assert_ne!(out[0]["id"], out[7]["id"]);
    }
}
