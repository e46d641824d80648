//! The Anthropic Messages adapter: request mapping (system and tools apart, prompt-cache
//! breakpoints, thinking blocks with their signatures sent back) and stream decoding.

use std::collections::{HashMap, VecDeque};

use dpas_protocol::{ContentPart, MessageContent, Role, UsageReport, WireModelMessage};
use eventsource_stream::Event;
use futures_util::future::BoxFuture;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, ACCEPT, CONTENT_TYPE};
use serde_json::{json, Map, Value};

use super::config::{HttpSettings, ProviderConfigError};
use super::driver::{
    add_counts, count, drive, fresh_call_id, parse_arguments, parse_payload, Decoder, Flow,
    ENDED_EARLY,
};
use super::request::{message_text, object_schema, repaired_history, tool_output_text};
use super::sanitize::{error_text, reported_error};
use super::{http, sse};
use crate::provider::{
    EventStream, FinishReason, ModelError, ModelErrorKind, ModelEvent, ModelProvider, ModelRequest,
    ToolCall,
};
use crate::untrusted::{self, Fences};

/// The vendor's public API, used when `ANTHROPIC_BASE_URL` is not set.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";

/// The `anthropic-version` header sent with every request.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// The default `max_tokens` (the Messages API requires one).
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// One Anthropic model.
#[derive(Debug, Clone, PartialEq)]
pub struct AnthropicConfig {
    pub api_key: String,
    /// The API root, with or without a trailing `/v1`.
    pub base_url: String,
    /// The vendor's model id, e.g. `claude-sonnet-4-5`.
    pub model: String,
    pub max_tokens: u32,
    /// Extended thinking with this budget when set (`max_tokens` is raised above it).
    pub thinking_budget: Option<u32>,
    pub http: HttpSettings,
}

/// The Anthropic provider, listed as `anthropic/<model>`.
pub struct AnthropicProvider {
    id: String,
    config: AnthropicConfig,
    url: String,
    client: reqwest::Client,
}

impl std::fmt::Debug for AnthropicProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnthropicProvider")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl AnthropicProvider {
    pub fn new(config: AnthropicConfig) -> Result<Self, ProviderConfigError> {
        let client = http::client(&config.http, &config.base_url)
            .map_err(|_| ProviderConfigError::HttpClient)?;
        let base = config.base_url.trim_end_matches('/');
        let url = if base.ends_with("/v1") {
            format!("{base}/messages")
        } else {
            format!("{base}/v1/messages")
        };
        Ok(Self {
            id: format!("anthropic/{}", config.model),
            url,
            config,
            client,
        })
    }

    fn headers(&self) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
        headers.insert(
            HeaderName::from_static("anthropic-version"),
            HeaderValue::from_static(ANTHROPIC_VERSION),
        );
        if let Ok(mut value) = HeaderValue::from_str(&self.config.api_key) {
            value.set_sensitive(true);
            headers.insert(HeaderName::from_static("x-api-key"), value);
        }
        headers
    }
}

impl ModelProvider for AnthropicProvider {
    fn id(&self) -> &str {
        &self.id
    }

    fn stream(&self, request: ModelRequest) -> BoxFuture<'_, Result<EventStream, ModelError>> {
        Box::pin(async move {
            let model = if request.model.is_empty() || request.model == self.id {
                self.config.model.as_str()
            } else {
                request.model.as_str()
            };
            let options = RequestOptions {
                max_tokens: self.config.max_tokens,
                thinking_budget: self.config.thinking_budget,
            };
            let body =
                serde_json::to_vec(&request_body(model, &request, options)).map_err(|_| {
                    ModelError::new(
                        ModelErrorKind::Config,
                        "The model request could not be encoded.",
                    )
                })?;
            let secrets = [self.config.api_key.as_str(), self.config.base_url.as_str()];
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
                AnthropicDecoder::new(secrets),
            ))
        })
    }
}

/// Decodes a response body (e.g. a recorded stream) exactly as a live one is decoded.
pub fn decode_body<S>(body: S) -> EventStream
where
    S: futures_util::Stream<Item = Result<Vec<u8>, ModelError>> + Send + 'static,
{
    drive(
        sse::events(Box::pin(body)),
        AnthropicDecoder::new(Vec::new()),
    )
}

/// Generation settings that are not part of the prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestOptions {
    pub max_tokens: u32,
    pub thinking_budget: Option<u32>,
}

impl Default for RequestOptions {
    fn default() -> Self {
        Self {
            max_tokens: DEFAULT_MAX_TOKENS,
            thinking_budget: None,
        }
    }
}

/// The Messages request body for one model step.
pub fn request_body(model: &str, request: &ModelRequest, options: RequestOptions) -> Value {
    let history = repaired_history(&request.messages);
    let mut system = Vec::new();
    if !request.system.is_empty() {
        // Breakpoint: tools + system prompt are one cached prefix, stable across steps.
        system.push(json!({
            "type": "text",
            "text": request.system,
            "cache_control": {"type": "ephemeral"},
        }));
    }
    // After the cached prefix: the note comes with the first untrusted result.
    let fences = Fences::of(request);
    if fences.any_in(&history) {
        system.push(json!({"type": "text", "text": untrusted::NOTE}));
    }
    // History system messages (the capability state) follow the cached prompt, so a
    // change in them never invalidates the cached prefix.
    for message in history.iter().filter(|m| m.role == Role::System) {
        let text = message_text(message, "\n\n");
        if !text.is_empty() {
            system.push(json!({"type": "text", "text": text}));
        }
    }

    let mut body = Map::new();
    body.insert("model".into(), Value::from(model));
    let mut max_tokens = options.max_tokens.max(1);
    if let Some(budget) = options.thinking_budget {
        max_tokens = max_tokens.max(budget.saturating_add(DEFAULT_MAX_TOKENS));
        body.insert(
            "thinking".into(),
            json!({"type": "enabled", "budget_tokens": budget}),
        );
    }
    body.insert("max_tokens".into(), Value::from(max_tokens));
    if !system.is_empty() {
        body.insert("system".into(), Value::Array(system));
    }
    body.insert("messages".into(), Value::Array(turns(&history, &fences)));
    if !request.tools.is_empty() {
        let last = request.tools.len() - 1;
        let tools = request
            .tools
            .iter()
            .enumerate()
            .map(|(i, spec)| {
                let mut tool = json!({
                    "name": spec.name,
                    "description": spec.description,
                    "input_schema": object_schema(&spec.input_schema),
                });
                if i == last {
                    // Breakpoint: the tool block is byte-stable across the steps of a turn.
                    tool["cache_control"] = json!({"type": "ephemeral"});
                }
                tool
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
    }
    body.insert("stream".into(), Value::Bool(true));
    Value::Object(body)
}

/// User and assistant turns: tool results become `tool_result` blocks in a user turn,
/// consecutive turns of one role are merged, and empty turns are dropped.
fn turns(history: &[WireModelMessage], fences: &Fences<'_>) -> Vec<Value> {
    let mut turns: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for message in history {
        let (role, blocks) = match message.role {
            Role::System => continue,
            Role::User => ("user", user_blocks(message)),
            Role::Assistant => ("assistant", assistant_blocks(message)),
            Role::Tool => ("user", tool_result_blocks(message, fences)),
        };
        if blocks.is_empty() {
            continue;
        }
        match turns.last_mut() {
            Some((last, content)) if *last == role => content.extend(blocks),
            _ => turns.push((role, blocks)),
        }
    }
    turns
        .into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect()
}

fn text_block(text: &str) -> Option<Value> {
    (!text.is_empty()).then(|| json!({"type": "text", "text": text}))
}

fn user_blocks(message: &WireModelMessage) -> Vec<Value> {
    match &message.content {
        MessageContent::Text(text) => text_block(text).into_iter().collect(),
        MessageContent::Parts(parts) => parts
            .iter()
            .filter_map(|p| match p {
                ContentPart::Text { text, .. } => text_block(text),
                _ => None,
            })
            .collect(),
    }
}

fn assistant_blocks(message: &WireModelMessage) -> Vec<Value> {
    let parts = match &message.content {
        MessageContent::Text(text) => return text_block(text).into_iter().collect(),
        MessageContent::Parts(parts) => parts,
    };
    parts
        .iter()
        .filter_map(|p| match p {
            ContentPart::Text { text, .. } => text_block(text),
            ContentPart::Reasoning { text, extra } => thinking_block(text, extra),
            ContentPart::ToolCall {
                tool_call_id,
                tool_name,
                input,
                ..
            } => Some(json!({
                "type": "tool_use",
                "id": tool_call_id,
                "name": tool_name,
                "input": if input.is_object() { input.clone() } else { json!({}) },
            })),
            _ => None,
        })
        .collect()
}

/// A reasoning part goes back as a thinking block only with its signature (or as a
/// redacted block with its data); without one Anthropic would reject it, so it is dropped.
fn thinking_block(text: &str, extra: &Map<String, Value>) -> Option<Value> {
    let options = extra.get("providerOptions")?.get("anthropic")?;
    if let Some(signature) = options.get("signature").and_then(Value::as_str) {
        return Some(json!({"type": "thinking", "thinking": text, "signature": signature}));
    }
    let data = options.get("redactedData").and_then(Value::as_str)?;
    Some(json!({"type": "redacted_thinking", "data": data}))
}

fn tool_result_blocks(message: &WireModelMessage, fences: &Fences<'_>) -> Vec<Value> {
    message
        .parts()
        .iter()
        .filter_map(|p| match p {
            ContentPart::ToolResult {
                tool_call_id,
                tool_name,
                output,
                ..
            } => {
                let (text, is_error) = tool_output_text(output);
                let mut block = json!({
                    "type": "tool_result",
                    "tool_use_id": tool_call_id,
                    "content": fences.apply(tool_name, text),
                });
                if is_error {
                    block["is_error"] = Value::Bool(true);
                }
                Some(block)
            }
            _ => None,
        })
        .collect()
}

/// A content block being streamed.
#[derive(Debug)]
enum Block {
    Thinking {
        text: String,
        signature: String,
    },
    Redacted {
        data: String,
    },
    Tool {
        id: String,
        name: String,
        json: String,
        initial: Value,
    },
    /// Text, and the block types we do not act on (server tools and their results).
    Other,
}

/// Usage as Anthropic reports it; `message_delta` values replace `message_start` ones.
#[derive(Debug, Default, Clone, Copy)]
struct RawUsage {
    input: Option<u64>,
    cache_read: Option<u64>,
    cache_write: Option<u64>,
    output: Option<u64>,
    thinking: Option<u64>,
}

impl RawUsage {
    fn update(&mut self, usage: &Value) {
        let fields = [
            (&mut self.input, usage.get("input_tokens")),
            (&mut self.cache_read, usage.get("cache_read_input_tokens")),
            (
                &mut self.cache_write,
                usage.get("cache_creation_input_tokens"),
            ),
            (&mut self.output, usage.get("output_tokens")),
            (
                &mut self.thinking,
                usage.pointer("/output_tokens_details/thinking_tokens"),
            ),
        ];
        for (slot, value) in fields {
            if let Some(n) = count(value) {
                *slot = Some(n);
            }
        }
    }

    /// Input counts every prompt token, so cache reads and writes stay subsets of it.
    fn report(&self) -> UsageReport {
        let input = add_counts(add_counts(self.input, self.cache_read), self.cache_write);
        UsageReport {
            input_tokens: input,
            output_tokens: self.output,
            total_tokens: add_counts(input, self.output),
            cached_input_tokens: self.cache_read,
            reasoning_tokens: self.thinking,
            cache_write_input_tokens: self.cache_write,
        }
    }
}

struct AnthropicDecoder {
    blocks: HashMap<u64, Block>,
    usage: RawUsage,
    stop_reason: Option<String>,
    secrets: Vec<String>,
}

impl AnthropicDecoder {
    fn new(secrets: Vec<String>) -> Self {
        Self {
            blocks: HashMap::new(),
            usage: RawUsage::default(),
            stop_reason: None,
            secrets,
        }
    }

    fn block_start(&mut self, index: u64, block: &Value, out: &mut VecDeque<ModelEvent>) {
        let text_of = |key: &str| block.get(key).and_then(Value::as_str).unwrap_or("");
        let state = match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                push_text(out, text_of("text"));
                Block::Other
            }
            Some("thinking") => {
                push_reasoning(out, text_of("thinking"));
                Block::Thinking {
                    text: text_of("thinking").to_owned(),
                    signature: text_of("signature").to_owned(),
                }
            }
            Some("redacted_thinking") => Block::Redacted {
                data: text_of("data").to_owned(),
            },
            Some("tool_use") => Block::Tool {
                id: text_of("id").to_owned(),
                name: text_of("name").to_owned(),
                json: String::new(),
                initial: block.get("input").cloned().unwrap_or(Value::Null),
            },
            _ => Block::Other,
        };
        self.blocks.insert(index, state);
    }

    fn block_delta(&mut self, index: u64, delta: &Value, out: &mut VecDeque<ModelEvent>) {
        let field = |key: &str| delta.get(key).and_then(Value::as_str).unwrap_or("");
        let block = self.blocks.get_mut(&index);
        match (delta.get("type").and_then(Value::as_str), block) {
            (Some("text_delta"), _) => push_text(out, field("text")),
            (Some("thinking_delta"), Some(Block::Thinking { text, .. })) => {
                text.push_str(field("thinking"));
                push_reasoning(out, field("thinking"));
            }
            (Some("signature_delta"), Some(Block::Thinking { signature, .. })) => {
                signature.push_str(field("signature"));
            }
            (Some("input_json_delta"), Some(Block::Tool { json, .. })) => {
                json.push_str(field("partial_json"));
            }
            _ => {}
        }
    }

    fn block_stop(&mut self, index: u64, out: &mut VecDeque<ModelEvent>) {
        if let Some(block) = self.blocks.remove(&index) {
            finish_block(block, out);
        }
    }

    fn finish(&mut self, out: &mut VecDeque<ModelEvent>) {
        let mut open: Vec<(u64, Block)> = self.blocks.drain().collect();
        open.sort_by_key(|(index, _)| *index);
        for (_, block) in open {
            finish_block(block, out);
        }
        out.push_back(ModelEvent::Finish {
            reason: finish_reason(self.stop_reason.as_deref()),
            usage: self.usage.report(),
        });
    }
}

fn push_text(out: &mut VecDeque<ModelEvent>, text: &str) {
    if !text.is_empty() {
        out.push_back(ModelEvent::TextDelta(text.to_owned()));
    }
}

fn push_reasoning(out: &mut VecDeque<ModelEvent>, text: &str) {
    if !text.is_empty() {
        out.push_back(ModelEvent::ReasoningDelta(text.to_owned()));
    }
}

fn finish_block(block: Block, out: &mut VecDeque<ModelEvent>) {
    match block {
        Block::Tool {
            id,
            name,
            json,
            initial,
        } => {
            let (input, invalid_input) = if json.trim().is_empty() && initial.is_object() {
                (initial, None)
            } else {
                parse_arguments(&json)
            };
            out.push_back(ModelEvent::ToolCall(ToolCall {
                id: if id.is_empty() { fresh_call_id() } else { id },
                name,
                input,
                invalid_input,
            }));
        }
        Block::Thinking { text, signature } if !signature.is_empty() => {
            out.push_back(ModelEvent::ReasoningBlock {
                text,
                provider_options: anthropic_options("signature", signature),
            });
        }
        Block::Redacted { data } if !data.is_empty() => {
            out.push_back(ModelEvent::ReasoningBlock {
                text: String::new(),
                provider_options: anthropic_options("redactedData", data),
            });
        }
        _ => {}
    }
}

/// `{"anthropic": {key: value}}`, the history part's `providerOptions`.
fn anthropic_options(key: &str, value: String) -> Map<String, Value> {
    let mut inner = Map::new();
    inner.insert(key.to_owned(), Value::String(value));
    let mut options = Map::new();
    options.insert("anthropic".into(), Value::Object(inner));
    options
}

impl Decoder for AnthropicDecoder {
    fn on_event(
        &mut self,
        event: &Event,
        out: &mut VecDeque<ModelEvent>,
    ) -> Result<Flow, ModelError> {
        let data = event.data.trim();
        if data.is_empty() {
            return Ok(Flow::Continue);
        }
        let payload = parse_payload(data)?;
        let kind = payload
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or(event.event.as_str());
        let index = count(payload.get("index")).unwrap_or(0);
        match kind {
            "message_start" => {
                if let Some(usage) = payload.get("message").and_then(|m| m.get("usage")) {
                    self.usage.update(usage);
                }
            }
            "content_block_start" => {
                if let Some(block) = payload.get("content_block") {
                    self.block_start(index, block, out);
                }
            }
            "content_block_delta" => {
                if let Some(delta) = payload.get("delta") {
                    self.block_delta(index, delta, out);
                }
            }
            "content_block_stop" => self.block_stop(index, out),
            "message_delta" => {
                let reason = payload.get("delta").and_then(|d| d.get("stop_reason"));
                if let Some(reason) = reason.and_then(Value::as_str) {
                    self.stop_reason = Some(reason.to_owned());
                }
                if let Some(usage) = payload.get("usage") {
                    self.usage.update(usage);
                }
            }
            "message_stop" => {
                self.finish(out);
                return Ok(Flow::Finished);
            }
            "error" => return Err(stream_error(&Value::Object(payload), &self.secrets)),
            // `ping` and event types added after this was written.
            _ => {}
        }
        Ok(Flow::Continue)
    }

    fn on_end(&mut self, out: &mut VecDeque<ModelEvent>) -> Result<(), ModelError> {
        // A body cut after `message_delta` lost only `message_stop`: the step is complete.
        if self.stop_reason.is_none() {
            return Err(ModelError::new(ModelErrorKind::Transport, ENDED_EARLY));
        }
        self.finish(out);
        Ok(())
    }
}

/// An `error` event (e.g. `overloaded_error` mid-stream).
fn stream_error(payload: &Value, secrets: &[String]) -> ModelError {
    reported_error(error_text(payload), secrets)
}

/// Anthropic stop reasons in the AI SDK's vocabulary.
fn finish_reason(reason: Option<&str>) -> FinishReason {
    FinishReason(
        match reason {
            Some("end_turn" | "stop_sequence" | "pause_turn") => "stop",
            Some("tool_use") => "tool-calls",
            Some("max_tokens" | "model_context_window_exceeded") => "length",
            Some("refusal") => "content-filter",
            Some(_) => "other",
            None => "unknown",
        }
        .to_owned(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_keeps_subsets_inside_input() {
        let mut usage = RawUsage::default();
        usage.update(&json!({"input_tokens": 2, "cache_creation_input_tokens": 3068, "cache_read_input_tokens": 0, "output_tokens": 69}));
        usage.update(&json!({"input_tokens": 6, "cache_creation_input_tokens": 3337, "cache_read_input_tokens": 6289, "output_tokens": 198}));
        let report = usage.report();
        assert_eq!(report.input_tokens, Some(6 + 6289 + 3337));
        assert_eq!(report.cached_input_tokens, Some(6289));
        assert_eq!(report.cache_write_input_tokens, Some(3337));
        assert_eq!(report.output_tokens, Some(198));
        assert_eq!(report.total_tokens, Some(6 + 6289 + 3337 + 198));
    }

    #[test]
    fn stop_reasons_map() {
        assert_eq!(finish_reason(Some("end_turn")).as_str(), "stop");
        assert_eq!(finish_reason(Some("tool_use")).as_str(), "tool-calls");
        assert_eq!(finish_reason(Some("max_tokens")).as_str(), "length");
        assert_eq!(finish_reason(Some("refusal")).as_str(), "content-filter");
        assert_eq!(finish_reason(None).as_str(), "unknown");
    }
}
