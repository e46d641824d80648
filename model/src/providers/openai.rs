//! The OpenAI-compatible chat-completions adapter (OpenAI, OpenRouter, Ollama, vLLM, the
//! llama.cpp server, LM Studio, DeepSeek, Groq): request mapping and stream decoding.

use std::collections::{HashMap, VecDeque};

use dpas_protocol::{ContentPart, MessageContent, Role, UsageReport, WireModelMessage};
use eventsource_stream::Event;
use futures_util::future::BoxFuture;
use reqwest::header::{HeaderMap, HeaderValue, ACCEPT, AUTHORIZATION, CONTENT_TYPE};
use serde_json::{json, Map, Value};

use super::config::{HttpSettings, ProviderConfigError};
use super::driver::{
    count, drive, fresh_call_id, parse_arguments, parse_payload, Decoder, Flow, ENDED_EARLY,
};
use super::request::{message_text, object_schema, repaired_history, text_parts, tool_output_text};
use super::sanitize::{error_text, reported_error};
use super::{http, sse};
use crate::provider::{
    EventStream, FinishReason, ModelError, ModelErrorKind, ModelEvent, ModelProvider, ModelRequest,
    ToolCall, ToolSpec,
};
use crate::untrusted::{self, Fences};

/// The vendor's public API, used when `OPENAI_BASE_URL` is not set.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// One OpenAI-compatible model.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenAiConfig {
    /// Sent as a bearer token; local servers (Ollama, llama.cpp) need none.
    pub api_key: Option<String>,
    /// Everything before `/chat/completions`, e.g. `http://localhost:11434/v1`.
    pub base_url: String,
    /// The vendor's model id, e.g. `gpt-4.1-mini` or `llama3.2:3b`.
    pub model: String,
    pub http: HttpSettings,
}

/// The OpenAI-compatible provider, listed as `openai/<model>`.
pub struct OpenAiProvider {
    id: String,
    config: OpenAiConfig,
    url: String,
    client: reqwest::Client,
}

impl std::fmt::Debug for OpenAiProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiProvider")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl OpenAiProvider {
    pub fn new(config: OpenAiConfig) -> Result<Self, ProviderConfigError> {
        let client = http::client(&config.http, &config.base_url)
            .map_err(|_| ProviderConfigError::HttpClient)?;
        Ok(Self {
            id: format!("openai/{}", config.model),
            url: format!("{}/chat/completions", config.base_url.trim_end_matches('/')),
            config,
            client,
        })
    }

    fn headers(&self) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
        if let Some(key) = self.config.api_key.as_deref().filter(|k| !k.is_empty()) {
            if let Ok(mut value) = HeaderValue::from_str(&format!("Bearer {key}")) {
                value.set_sensitive(true);
                headers.insert(AUTHORIZATION, value);
            }
        }
        headers
    }

    /// The model id sent: the request's, unless it is empty or this provider's listed id.
    fn model_for<'a>(&'a self, request: &'a ModelRequest) -> &'a str {
        if request.model.is_empty() || request.model == self.id {
            &self.config.model
        } else {
            &request.model
        }
    }
}

impl ModelProvider for OpenAiProvider {
    fn id(&self) -> &str {
        &self.id
    }

    fn stream(&self, request: ModelRequest) -> BoxFuture<'_, Result<EventStream, ModelError>> {
        Box::pin(async move {
            let body = request_body(self.model_for(&request), &request);
            let body = serde_json::to_vec(&body).map_err(|_| {
                ModelError::new(
                    ModelErrorKind::Config,
                    "The model request could not be encoded.",
                )
            })?;
            let key = self.config.api_key.as_deref().unwrap_or("");
            let secrets = [key, self.config.base_url.as_str()];
            let response = http::post(
                &self.client,
                &self.config.http,
                &self.url,
                &self.headers(),
                &body,
                &secrets,
            )
            .await?;
            let secrets = secrets.iter().map(|s| (*s).to_owned()).collect();
            Ok(drive(
                sse::events(http::body_chunks(response)),
                OpenAiDecoder::new(secrets),
            ))
        })
    }
}

/// Decodes a response body (e.g. a recorded stream) exactly as a live one is decoded.
pub fn decode_body<S>(body: S) -> EventStream
where
    S: futures_util::Stream<Item = Result<Vec<u8>, ModelError>> + Send + 'static,
{
    drive(sse::events(Box::pin(body)), OpenAiDecoder::new(Vec::new()))
}

/// The chat-completions request body for one model step.
pub fn request_body(model: &str, request: &ModelRequest) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), Value::from(model));
    body.insert("messages".into(), Value::Array(messages(request)));
    if !request.tools.is_empty() {
        body.insert(
            "tools".into(),
            Value::Array(request.tools.iter().map(tool).collect()),
        );
    }
    body.insert("stream".into(), Value::Bool(true));
    body.insert("stream_options".into(), json!({"include_usage": true}));
    Value::Object(body)
}

fn tool(spec: &ToolSpec) -> Value {
    json!({
        "type": "function",
        "function": {
            "name": spec.name,
            "description": spec.description,
            "parameters": object_schema(&spec.input_schema),
        }
    })
}

fn messages(request: &ModelRequest) -> Vec<Value> {
    let mut out = Vec::with_capacity(request.messages.len() + 2);
    if !request.system.is_empty() {
        out.push(json!({"role": "system", "content": request.system}));
    }
    let history = repaired_history(&request.messages);
    let fences = Fences::of(request);
    if fences.any_in(&history) {
        out.push(json!({"role": "system", "content": untrusted::NOTE}));
    }
    for message in history {
        match message.role {
            Role::System => {
                let text = message_text(&message, "\n\n");
                if !text.is_empty() {
                    out.push(json!({"role": "system", "content": text}));
                }
            }
            Role::User => match text_parts(&message).as_slice() {
                [] => {}
                [text] => out.push(json!({"role": "user", "content": text})),
                texts => {
                    let parts: Vec<Value> = texts
                        .iter()
                        .map(|t| json!({"type": "text", "text": t}))
                        .collect();
                    out.push(json!({"role": "user", "content": parts}));
                }
            },
            Role::Assistant => {
                if let Some(m) = assistant(&message) {
                    out.push(m);
                }
            }
            Role::Tool => out.extend(
                message
                    .parts()
                    .iter()
                    .filter_map(|part| tool_message(part, &fences)),
            ),
        }
    }
    out
}

/// An assistant message: its text and its tool calls (reasoning and unknown parts are not
/// sent back; chat completions has no place for them). `None` when nothing is left.
fn assistant(message: &WireModelMessage) -> Option<Value> {
    let text = message_text(message, "");
    let calls: Vec<Value> = match &message.content {
        MessageContent::Text(_) => Vec::new(),
        MessageContent::Parts(parts) => parts
            .iter()
            .filter_map(|p| match p {
                ContentPart::ToolCall {
                    tool_call_id,
                    tool_name,
                    input,
                    ..
                } => Some(json!({
                    "id": tool_call_id,
                    "type": "function",
                    "function": {"name": tool_name, "arguments": input.to_string()},
                })),
                _ => None,
            })
            .collect(),
    };
    if text.is_empty() && calls.is_empty() {
        return None;
    }
    let mut m = Map::new();
    m.insert("role".into(), Value::from("assistant"));
    m.insert(
        "content".into(),
        if text.is_empty() {
            Value::Null
        } else {
            Value::from(text)
        },
    );
    if !calls.is_empty() {
        m.insert("tool_calls".into(), Value::Array(calls));
    }
    Some(Value::Object(m))
}

fn tool_message(part: &ContentPart, fences: &Fences<'_>) -> Option<Value> {
    match part {
        ContentPart::ToolResult {
            tool_call_id,
            tool_name,
            output,
            ..
        } => Some(json!({
            "role": "tool",
            "tool_call_id": tool_call_id,
            "content": fences.apply(tool_name, tool_output_text(output).0),
        })),
        _ => None,
    }
}

/// A tool call being assembled from deltas.
#[derive(Debug, Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

/// Decodes a chat-completions stream: deltas as they come, tool calls when the finish
/// reason arrives, `Finish` at `[DONE]` (or at the end of a body that had a finish reason).
struct OpenAiDecoder {
    calls: Vec<PartialCall>,
    /// The vendor's `index` → the position in `calls` of the call it currently means; every
    /// position is in bounds (entries are added after a push and cleared with the drain).
    by_index: HashMap<u64, usize>,
    calls_emitted: bool,
    finish_reason: Option<String>,
    usage: UsageReport,
    secrets: Vec<String>,
}

impl OpenAiDecoder {
    fn new(secrets: Vec<String>) -> Self {
        Self {
            calls: Vec::new(),
            by_index: HashMap::new(),
            calls_emitted: false,
            finish_reason: None,
            usage: UsageReport::default(),
            secrets,
        }
    }

    fn chunk(&mut self, chunk: &Map<String, Value>, out: &mut VecDeque<ModelEvent>) {
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            self.usage = usage_report(usage);
        }
        let choices = chunk.get("choices").and_then(Value::as_array);
        for choice in choices.into_iter().flatten() {
            // Only the first choice is read: we never ask for more than one.
            if count(choice.get("index")).unwrap_or(0) != 0 {
                continue;
            }
            if let Some(delta) = choice.get("delta").and_then(Value::as_object) {
                self.delta(delta, out);
            }
            if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
                if !reason.is_empty() {
                    self.finish_reason = Some(reason.to_owned());
                    self.emit_calls(out);
                }
            }
        }
    }

    fn delta(&mut self, delta: &Map<String, Value>, out: &mut VecDeque<ModelEvent>) {
        if let Some(reasoning) = reasoning_text(delta) {
            out.push_back(ModelEvent::ReasoningDelta(reasoning));
        }
        for key in ["content", "refusal"] {
            if let Some(text) = delta.get(key).and_then(Value::as_str) {
                if !text.is_empty() {
                    out.push_back(ModelEvent::TextDelta(text.to_owned()));
                }
            }
        }
        let calls = delta.get("tool_calls").and_then(Value::as_array);
        for (pos, call) in calls.into_iter().flatten().enumerate() {
            self.tool_call_delta(pos as u64, call);
        }
    }

    fn tool_call_delta(&mut self, pos: u64, call: &Value) {
        if self.calls_emitted {
            return;
        }
        let index = count(call.get("index")).unwrap_or(pos);
        let id = call
            .get("id")
            .and_then(Value::as_str)
            .filter(|id| !id.is_empty());
        let slot = match self.by_index.get(&index) {
            // A new id on a known index is a new call (servers that send every call at 0).
            Some(&slot)
                if id.is_none_or(|id| {
                    self.calls[slot].id.is_empty() || self.calls[slot].id == id
                }) =>
            {
                slot
            }
            _ => {
                self.calls.push(PartialCall::default());
                let slot = self.calls.len() - 1;
                self.by_index.insert(index, slot);
                slot
            }
        };
        let partial = &mut self.calls[slot];
        if let Some(id) = id {
            if partial.id.is_empty() {
                partial.id = id.to_owned();
            }
        }
        let function = call.get("function");
        if let Some(name) = function.and_then(|f| f.get("name")).and_then(Value::as_str) {
            if partial.name.is_empty() {
                partial.name = name.to_owned();
            }
        }
        match function.and_then(|f| f.get("arguments")) {
            Some(Value::String(args)) => partial.arguments.push_str(args),
            Some(value @ (Value::Object(_) | Value::Array(_))) if partial.arguments.is_empty() => {
                partial.arguments = value.to_string();
            }
            _ => {}
        }
    }

    fn emit_calls(&mut self, out: &mut VecDeque<ModelEvent>) {
        if self.calls_emitted {
            return;
        }
        self.calls_emitted = true;
        self.by_index.clear();
        for partial in self.calls.drain(..) {
            let (input, invalid_input) = parse_arguments(&partial.arguments);
            out.push_back(ModelEvent::ToolCall(ToolCall {
                id: if partial.id.is_empty() {
                    fresh_call_id()
                } else {
                    partial.id
                },
                name: partial.name,
                input,
                invalid_input,
            }));
        }
    }

    fn finish(&mut self, out: &mut VecDeque<ModelEvent>) {
        let had_calls = !self.calls.is_empty();
        self.emit_calls(out);
        let reason = match self.finish_reason.as_deref() {
            Some(reason) => finish_reason(reason),
            None if had_calls => FinishReason::tool_calls(),
            None => FinishReason("unknown".into()),
        };
        out.push_back(ModelEvent::Finish {
            reason,
            usage: self.usage,
        });
    }
}

impl Decoder for OpenAiDecoder {
    fn on_event(
        &mut self,
        event: &Event,
        out: &mut VecDeque<ModelEvent>,
    ) -> Result<Flow, ModelError> {
        let data = event.data.trim();
        if data.is_empty() {
            return Ok(Flow::Continue);
        }
        if data == "[DONE]" {
            self.finish(out);
            return Ok(Flow::Finished);
        }
        let chunk = parse_payload(data)?;
        if let Some(error) = chunk.get("error").filter(|e| !e.is_null()) {
            return Err(stream_error(error, &self.secrets));
        }
        self.chunk(&chunk, out);
        Ok(Flow::Continue)
    }

    fn on_end(&mut self, out: &mut VecDeque<ModelEvent>) -> Result<(), ModelError> {
        if self.finish_reason.is_none() {
            return Err(ModelError::new(ModelErrorKind::Transport, ENDED_EARLY));
        }
        self.finish(out);
        Ok(())
    }
}

/// An error object sent inside the stream (OpenRouter, vLLM do this mid-stream).
fn stream_error(error: &Value, secrets: &[String]) -> ModelError {
    reported_error(error_text(&json!({ "error": error })), secrets)
}

/// Reasoning in a delta: `reasoning_content` (DeepSeek, vLLM), else `reasoning` (OpenRouter,
/// Ollama), else the texts of `reasoning_details`; one source per delta, since OpenRouter
/// sends the same text in both of the last two.
fn reasoning_text(delta: &Map<String, Value>) -> Option<String> {
    for key in ["reasoning_content", "reasoning"] {
        if let Some(text) = delta.get(key).and_then(Value::as_str) {
            if !text.is_empty() {
                return Some(text.to_owned());
            }
        }
    }
    let details = delta.get("reasoning_details").and_then(Value::as_array)?;
    let text: String = details
        .iter()
        .filter_map(|d| match d.get("type").and_then(Value::as_str) {
            Some("reasoning.text") => d.get("text").and_then(Value::as_str),
            Some("reasoning.summary") => d.get("summary").and_then(Value::as_str),
            _ => None,
        })
        .collect();
    (!text.is_empty()).then_some(text)
}

fn usage_report(usage: &Value) -> UsageReport {
    UsageReport {
        input_tokens: count(usage.get("prompt_tokens")),
        output_tokens: count(usage.get("completion_tokens")),
        total_tokens: count(usage.get("total_tokens")),
        cached_input_tokens: count(usage.pointer("/prompt_tokens_details/cached_tokens"))
            .or_else(|| count(usage.get("prompt_cache_hit_tokens"))),
        reasoning_tokens: count(usage.pointer("/completion_tokens_details/reasoning_tokens")),
        cache_write_input_tokens: None,
    }
}

/// Chat-completions finish reasons in the AI SDK's vocabulary.
fn finish_reason(reason: &str) -> FinishReason {
    FinishReason(
        match reason {
            "stop" | "end_turn" | "eos" => "stop",
            "length" | "max_tokens" => "length",
            "content_filter" => "content-filter",
            "tool_calls" | "function_call" | "tool_use" => "tool-calls",
            "error" => "error",
            _ => "other",
        }
        .to_owned(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(lines: &[&str]) -> Vec<ModelEvent> {
        let mut decoder = OpenAiDecoder::new(Vec::new());
        let mut out = VecDeque::new();
        for line in lines {
            let event = Event {
                data: (*line).to_owned(),
                ..Event::default()
            };
            if decoder.on_event(&event, &mut out).unwrap() == Flow::Finished {
                break;
            }
        }
        out.into_iter().collect()
    }

    #[test]
    fn a_new_id_on_a_reused_index_is_a_new_call() {
        let events = decode(&[
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"x","arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"b","function":{"name":"y","arguments":"{\"k\":1}"}}]}}]}"#,
            r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#,
            "[DONE]",
        ]);
        let ids: Vec<_> = events
            .iter()
            .filter_map(|e| match e {
                ModelEvent::ToolCall(c) => Some((c.id.as_str(), c.name.as_str())),
                _ => None,
            })
            .collect();
        assert_eq!(ids, [("a", "x"), ("b", "y")]);
    }

    #[test]
    fn finish_reasons_map() {
        for (raw, mapped) in [
            ("stop", "stop"),
            ("length", "length"),
            ("content_filter", "content-filter"),
            ("tool_calls", "tool-calls"),
            ("weird", "other"),
        ] {
            assert_eq!(finish_reason(raw).as_str(), mapped);
        }
    }

    #[test]
    fn done_without_a_finish_reason_is_unknown() {
        let events = decode(&[r#"{"choices":[{"delta":{"content":"hi"}}]}"#, "[DONE]"]);
        assert_eq!(
            events.last(),
            Some(&ModelEvent::Finish {
                reason: FinishReason("unknown".into()),
                usage: UsageReport::default()
            })
        );
    }
}
