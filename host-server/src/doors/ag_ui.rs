//! `POST /agent/ag-ui`: AG-UI 1.0 over the one step engine, for `HttpAgent` and the clients
//! built on it (CopilotKit, assistant-ui's AG-UI adapter).
//!
//! In: `RunAgentInput`. `threadId` is the owner's thread, `messages` the conversation (the
//! client's tool results come back as `tool` messages), `tools` the client's own tools,
//! offered as browser-plane tools the client executes; the actor's domain tools run here as
//! they do for `/agent/chat`. `forwardedProps.pathname` / `forwardedProps.modelId` pick the
//! route scope and model. The input becomes a v2 step request and is decoded with
//! `decode_request_value`, so every contract check and limit applies before anything streams.
//!
//! A client tool whose name a provider would refuse, or that two tools share, is not offered
//! and is reported in a `CUSTOM` event `dpas.tools.refused`; one that shares a domain tool's
//! wire name is dropped by composition and reported as `dpas.catalog.collision`. Names are
//! never rewritten.
//!
//! Out: SSE events: `RUN_STARTED`, `TEXT_MESSAGE_*`, `REASONING_*`, `TOOL_CALL_START/ARGS/END`
//! for every call, `TOOL_CALL_RESULT` for server calls only, then `RUN_FINISHED` (outcome
//! `success`, with `pendingToolCallIds` for the client's calls, and the usage) or `RUN_ERROR`
//! with our error code.

use actix_web::{web, HttpRequest, HttpResponse};
use dpas_protocol::{Frame, Lane, Usage};
use serde_json::{json, Map, Value};

use dpas_engine::compose::provider_safe;
use dpas_engine::ChatConfig;

use super::open::malformed;
use super::open::{open_door, BodyKind};
use super::sse::{self, FrameEncoder};
use crate::http::error::ApiError;
use crate::AppState;

/// The AG-UI protocol version this server speaks.
pub const AG_UI_VERSION: &str = "1.0";

fn text_of(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter(|p| p.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect(),
        _ => String::new(),
    }
}

/// The model-message form of AG-UI messages; tool results are named after their calls.
fn messages(input: &[Value]) -> Result<(Vec<Value>, Option<String>, usize), ApiError> {
    let mut out = Vec::with_capacity(input.len());
    let mut names: Vec<(String, String)> = Vec::new();
    let mut last_user = None;
    let mut since_user = 0;
    for m in input {
        let role = m
            .get("role")
            .and_then(Value::as_str)
            .ok_or_else(malformed)?;
        match role {
            "user" => {
                out.push(json!({"role": "user", "content": [{"type": "text", "text": text_of(m.get("content"))}]}));
                last_user = m.get("id").and_then(Value::as_str).map(str::to_owned);
                since_user = 0;
            }
            "assistant" => {
                let mut content = Vec::new();
                let text = text_of(m.get("content"));
                if !text.is_empty() {
                    content.push(json!({"type": "text", "text": text}));
                }
                let calls = match m.get("toolCalls") {
                    None | Some(Value::Null) => &[][..],
                    Some(Value::Array(calls)) => calls.as_slice(),
                    Some(_) => return Err(malformed()),
                };
                for call in calls {
                    let id = call
                        .get("id")
                        .and_then(Value::as_str)
                        .ok_or_else(malformed)?;
                    let f = call.get("function").ok_or_else(malformed)?;
                    let name = f
                        .get("name")
                        .and_then(Value::as_str)
                        .ok_or_else(malformed)?;
                    let arguments = f.get("arguments").and_then(Value::as_str).unwrap_or("");
                    let input: Value = if arguments.trim().is_empty() {
                        json!({})
                    } else {
                        serde_json::from_str(arguments).map_err(|_| malformed())?
                    };
                    names.push((id.to_owned(), name.to_owned()));
                    content.push(json!({"type": "tool-call", "toolCallId": id, "toolName": name, "input": input}));
                }
                if !content.is_empty() {
                    out.push(json!({"role": "assistant", "content": content}));
                    since_user += 1;
                }
            }
            "tool" => {
                let id = m
                    .get("toolCallId")
                    .and_then(Value::as_str)
                    .ok_or_else(malformed)?;
                let name = names
                    .iter()
                    .find(|(call, _)| call == id)
                    .map(|(_, name)| name.as_str())
                    .ok_or_else(malformed)?;
                let output = match m.get("error").and_then(Value::as_str) {
                    Some(error) => json!({"type": "error-text", "value": error}),
                    None => {
                        let text = text_of(m.get("content"));
                        match serde_json::from_str::<Value>(&text) {
                            Ok(value) => json!({"type": "json", "value": value}),
                            Err(_) => json!({"type": "text", "value": text}),
                        }
                    }
                };
                out.push(json!({"role": "tool", "content": [
                    {"type": "tool-result", "toolCallId": id, "toolName": name, "output": output}
                ]}));
            }
            // The system prompt is the server's; the client's own system, developer,
            // reasoning and activity messages are not relayed to the model.
            "system" | "developer" | "reasoning" | "activity" => {}
            _ => return Err(malformed()),
        }
    }
    Ok((out, last_user, since_user))
}

/// The client's tools as browser-plane descriptors, and the names refused on the way.
fn client_tools(tools: &[Value]) -> Result<(Vec<Value>, Vec<String>), ApiError> {
    let mut offered: Vec<Value> = Vec::with_capacity(tools.len());
    let mut refused = Vec::new();
    let mut seen: Vec<&str> = Vec::with_capacity(tools.len());
    for tool in tools {
        let name = tool
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(malformed)?;
        let description = tool
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or("");
        let schema = match tool.get("parameters") {
            Some(Value::Object(schema)) => Value::Object(schema.clone()),
            None | Some(Value::Null) => json!({"type": "object", "properties": {}}),
            Some(_) => return Err(malformed()),
        };
        let shared = seen.contains(&name);
        seen.push(name);
        if !provider_safe(name) || shared {
            if !refused.iter().any(|r| r == name) {
                refused.push(name.to_owned());
            }
            if shared {
                offered.retain(|d| d["wireName"] != name);
            }
            continue;
        }
        offered.push(json!({
            "wireName": name,
            "canonicalId": format!("view:{name}"),
            "plane": "view",
            "description": description,
            "inputSchema": schema,
            "effect": "",
            "confirmation": "never",
        }));
    }
    Ok((offered, refused))
}

struct Translated {
    request: Value,
    thread_id: String,
    run_id: String,
    refused: Vec<String>,
}

fn translate(body: &Value) -> Result<Translated, ApiError> {
    let body = body.as_object().ok_or_else(malformed)?;
    let text = |key| body.get(key).and_then(Value::as_str).ok_or_else(malformed);
    let thread_id = text("threadId")?.to_owned();
    let run_id = text("runId")?.to_owned();
    let list = |key| match body.get(key) {
        None | Some(Value::Null) => Ok(&[][..]),
        Some(Value::Array(items)) => Ok(items.as_slice()),
        Some(_) => Err(malformed()),
    };
    let (messages, last_user, since_user) = messages(list("messages")?)?;
    let (frontend, refused) = client_tools(list("tools")?)?;
    let forwarded = body.get("forwardedProps").and_then(Value::as_object);
    let prop = |key| forwarded.and_then(|f| f.get(key)).cloned();
    let mut request = json!({
        "protocolVersion": 2,
        "conversationId": thread_id,
        "turnId": last_user.unwrap_or_else(|| run_id.clone()),
        "stepIndex": since_user.min(dpas_protocol::limits::MAX_STEP_INDEX as usize),
        "pathname": prop("pathname").unwrap_or_else(|| json!("/")),
        "messages": messages,
        "catalog": {"mode": "direct", "frontendTools": frontend},
    });
    if let Some(model) = prop("modelId") {
        request["modelId"] = model;
    }
    Ok(Translated {
        request,
        thread_id,
        run_id,
        refused,
    })
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Open {
    Text,
    Reasoning,
}

/// Frames → AG-UI events.
struct Encoder {
    thread_id: String,
    run_id: String,
    model: String,
    refused: Vec<String>,
    open: Option<(Open, String)>,
    /// The assistant message the current model step's calls hang under.
    message_id: Option<String>,
    after_results: bool,
    ids: u32,
    failed: bool,
}

fn now_ms() -> i64 {
    i64::try_from(time::OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000_000).unwrap_or(0)
}

impl Encoder {
    fn next_id(&mut self, prefix: &str) -> String {
        self.ids += 1;
        format!("{prefix}_{}_{}", self.run_id, self.ids)
    }

    fn close(&mut self, out: &mut Vec<Value>) {
        match self.open.take() {
            Some((Open::Text, id)) => {
                out.push(json!({"type": "TEXT_MESSAGE_END", "messageId": id}))
            }
            Some((Open::Reasoning, id)) => {
                out.push(json!({"type": "REASONING_MESSAGE_END", "messageId": id}));
                out.push(json!({"type": "REASONING_END", "messageId": id}));
            }
            None => {}
        }
    }

    /// A new model step begins after server results: its output is a new assistant message.
    fn step_boundary(&mut self) {
        if self.after_results {
            self.after_results = false;
            self.message_id = None;
        }
    }

    fn assistant_message(&mut self) -> String {
        match &self.message_id {
            Some(id) => id.clone(),
            None => {
                let id = self.next_id("msg");
                self.message_id = Some(id.clone());
                id
            }
        }
    }

    fn text(&mut self, delta: String, out: &mut Vec<Value>) {
        self.step_boundary();
        if !matches!(self.open, Some((Open::Text, _))) {
            self.close(out);
            let id = self.assistant_message();
            out.push(json!({"type": "TEXT_MESSAGE_START", "messageId": id, "role": "assistant"}));
            self.open = Some((Open::Text, id));
        }
        if let Some((_, id)) = &self.open {
            out.push(json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": id, "delta": delta}));
        }
    }

    fn reasoning(&mut self, delta: String, out: &mut Vec<Value>) {
        self.step_boundary();
        if !matches!(self.open, Some((Open::Reasoning, _))) {
            self.close(out);
            let id = self.next_id("rsn");
            out.push(json!({"type": "REASONING_START", "messageId": id}));
            out.push(
                json!({"type": "REASONING_MESSAGE_START", "messageId": id, "role": "reasoning"}),
            );
            self.open = Some((Open::Reasoning, id));
        }
        if let Some((_, id)) = &self.open {
            out.push(json!({"type": "REASONING_MESSAGE_CONTENT", "messageId": id, "delta": delta}));
        }
    }

    fn usage(&self, usage: Option<&Usage>) -> Option<Value> {
        let u = usage?;
        let mut entry = json!({
            "model": self.model,
            "inputTokens": u.input_tokens,
            "outputTokens": u.output_tokens,
            "totalTokens": u.total_tokens,
        });
        for (key, value) in [
            ("reasoningTokens", u.reasoning_tokens),
            ("cachedInputTokens", u.cached_input_tokens),
            ("cacheWriteInputTokens", u.cache_write_input_tokens),
        ] {
            if let Some(v) = value {
                entry[key] = json!(v);
            }
        }
        Some(json!([entry]))
    }
}

impl FrameEncoder for Encoder {
    fn encode(&mut self, frame: Frame, out: &mut Vec<Value>) -> bool {
        if self.failed {
            return matches!(frame, Frame::StepFinish(_));
        }
        match frame {
            Frame::StepStart(_) => {
                out.push(json!({"type": "RUN_STARTED", "threadId": self.thread_id,
                    "runId": self.run_id, "protocolVersion": AG_UI_VERSION, "timestamp": now_ms()}));
                if !self.refused.is_empty() {
                    out.push(json!({"type": "CUSTOM", "name": "dpas.tools.refused", "value": {
                        "names": self.refused,
                        "reason": "A provider would refuse the name, or two tools share it; not offered, not renamed.",
                    }}));
                }
            }
            Frame::TextDelta { text } => self.text(text, out),
            Frame::ReasoningDelta { text } => self.reasoning(text, out),
            Frame::ToolCall(call) => {
                self.step_boundary();
                self.close(out);
                let parent = self.assistant_message();
                out.push(
                    json!({"type": "TOOL_CALL_START", "toolCallId": call.tool_call_id,
                    "toolCallName": call.wire_name, "parentMessageId": parent}),
                );
                out.push(
                    json!({"type": "TOOL_CALL_ARGS", "toolCallId": call.tool_call_id,
                    "delta": call.input.to_string()}),
                );
                out.push(json!({"type": "TOOL_CALL_END", "toolCallId": call.tool_call_id}));
            }
            Frame::ToolResult(result) => {
                self.close(out);
                self.after_results = true;
                let id = self.next_id("tool");
                out.push(
                    json!({"type": "TOOL_CALL_RESULT", "messageId": id, "role": "tool",
                    "toolCallId": result.tool_call_id, "content": result.result.to_string()}),
                );
            }
            Frame::Inspector(inspector) if inspector.lane == Lane::Host => {
                out.push(
                    json!({"type": "CUSTOM", "name": format!("dpas.{}", inspector.event_type),
                    "value": {"summary": inspector.summary, "data": inspector.data}}),
                );
            }
            Frame::Error { error } => {
                self.close(out);
                self.failed = true;
                out.push(
                    json!({"type": "RUN_ERROR", "message": error.message, "code": error.code,
                    "timestamp": now_ms()}),
                );
            }
            Frame::StepFinish(finish) => {
                self.close(out);
                let mut outcome = Map::new();
                outcome.insert("type".into(), json!("success"));
                if !finish.pending_tool_calls.is_empty() {
                    let ids: Vec<&str> = finish
                        .pending_tool_calls
                        .iter()
                        .map(|c| c.tool_call_id.as_str())
                        .collect();
                    outcome.insert("pendingToolCallIds".into(), json!(ids));
                }
                let mut event = json!({"type": "RUN_FINISHED", "threadId": self.thread_id,
                    "runId": self.run_id, "outcome": outcome, "timestamp": now_ms()});
                if let Some(usage) = self.usage(finish.usage.as_ref()) {
                    event["usage"] = usage;
                }
                out.push(event);
                return true;
            }
            Frame::Inspector(_) | Frame::Unknown(_) => {}
        }
        false
    }
}

pub async fn agent_ag_ui(
    req: HttpRequest,
    payload: web::Payload,
    state: web::Data<AppState>,
    chat: web::Data<ChatConfig>,
) -> Result<HttpResponse, ApiError> {
    let (run, translated) = open_door(&req, payload, &state, &chat, BodyKind::Json, |body| {
        super::open::translated(body, |body| {
            translate(body).map(|mut t| (std::mem::take(&mut t.request), t))
        })
    })
    .await?;
    let encoder = Encoder {
        model: run.provider.id().to_owned(),
        thread_id: translated.thread_id,
        run_id: translated.run_id,
        refused: translated.refused,
        open: None,
        message_id: None,
        after_results: false,
        ids: 0,
        failed: false,
    };
    Ok(sse::stream(run, encoder, HttpResponse::Ok()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use dpas_protocol::request::decode_request_value;

    #[test]
    fn run_input_becomes_a_step_request() {
        let body = json!({
            "threadId": "t1", "runId": "r2",
            "messages": [
                {"id": "u1", "role": "user", "content": "Highlight row 3"},
                {"id": "s", "role": "system", "content": "ignored"},
                {"id": "a1", "role": "assistant", "toolCalls": [
                    {"id": "c1", "type": "function", "function": {"name": "highlight", "arguments": "{\"row\":3}"}}
                ]},
                {"id": "m1", "role": "tool", "toolCallId": "c1", "content": "{\"ok\":true}"}
            ],
            "tools": [
                {"name": "highlight", "description": "Highlights", "parameters": {"type": "object"}},
                {"name": "bad name!", "description": ""},
                {"name": "twice", "description": ""},
                {"name": "twice", "description": ""}
            ],
            "context": [],
            "forwardedProps": {"pathname": "/receivables/pending"}
        });
        let t = translate(&body).unwrap();
        assert_eq!(t.refused, ["bad name!", "twice"]);
        let r = &t.request;
        assert_eq!(r["turnId"], "u1");
        assert_eq!(r["stepIndex"], 1);
        assert_eq!(r["pathname"], "/receivables/pending");
        let tools = r["catalog"]["frontendTools"].as_array().unwrap();
        assert_eq!(tools.len(), 1);
        assert_eq!(tools[0]["wireName"], "highlight");
        let m = r["messages"].as_array().unwrap();
        assert_eq!(m.len(), 3);
        assert_eq!(m[1]["content"][0]["input"], json!({"row": 3}));
        assert_eq!(m[2]["content"][0]["toolName"], "highlight");
        assert_eq!(
            m[2]["content"][0]["output"],
            json!({"type": "json", "value": {"ok": true}})
        );
        assert!(decode_request_value(t.request).is_ok());
    }

    #[test]
    fn inputs_that_are_not_run_input_are_refused() {
        for bad in [
            json!([]),
            json!({"runId": "r"}),
            json!({"threadId": "t", "runId": "r", "messages": {}}),
            json!({"threadId": "t", "runId": "r", "messages": [{"role": "robot"}]}),
            json!({"threadId": "t", "runId": "r", "messages": [{"role": "tool", "toolCallId": "nope", "content": "1"}]}),
            json!({"threadId": "t", "runId": "r", "messages": [{"role": "assistant", "toolCalls": [
                {"id": "c", "type": "function", "function": {"name": "x", "arguments": "{oops"}}]}]}),
            json!({"threadId": "t", "runId": "r", "tools": [{"description": "no name"}]}),
        ] {
            assert!(translate(&bad).is_err(), "{bad}");
        }
    }
}
