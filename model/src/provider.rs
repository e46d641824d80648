//! The `ModelProvider` trait and the events it yields.

use std::pin::Pin;
use std::sync::Arc;

use dpas_protocol::{UsageReport, WireModelMessage};
use futures_util::future::BoxFuture;
use futures_util::Stream;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// One tool offered to the model. The name is the wire name; nothing tells the model
/// where a tool runs.
#[derive(Debug, Clone)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// A JSON Schema object as JSON text, shared: a host offers the same schemas on every
    /// step, and a browser tool's schema is kept as the request carried it (nothing on the
    /// way to the model reads it).
    pub input_schema: Arc<RawValue>,
    /// The canonical id the host maps this wire name to (`view:todo.list.add`,
    /// `domain:list-todos`, `meta:surface_act`), when it knows one. Never sent to a vendor;
    /// the scripted model reads it to resolve a script's canonical ids.
    pub canonical_id: Option<String>,
    /// The tool returns untrusted content (U1): the adapters fence its results as data
    /// ([`crate::untrusted`]). Never sent to a vendor as a field.
    pub untrusted: bool,
}

impl ToolSpec {
    /// A tool whose schema is `schema`, serialised.
    pub fn new(name: impl Into<String>, description: impl Into<String>, schema: &Value) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            // A `Value` always serialises.
            input_schema: Arc::from(serde_json::value::to_raw_value(schema).unwrap_or_default()),
            canonical_id: None,
            untrusted: false,
        }
    }

    /// The same tool, mapped to `canonical_id`.
    pub fn with_canonical_id(mut self, canonical_id: impl Into<String>) -> Self {
        self.canonical_id = Some(canonical_id.into());
        self
    }

    /// The same tool, marked as returning untrusted content.
    pub fn untrusted(mut self) -> Self {
        self.untrusted = true;
        self
    }
}

/// The same name, description, schema text and mark: what shapes a vendor's request (the
/// canonical id only as an untrusted tool's fence source).
impl PartialEq for ToolSpec {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
            && self.description == other.description
            && self.input_schema.get() == other.input_schema.get()
            && self.untrusted == other.untrusted
            && (!self.untrusted || self.canonical_id == other.canonical_id)
    }
}

/// Everything one model step needs. `messages` is the whole history, the capability-state
/// system message already appended last when there is one.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelRequest {
    /// The vendor's model id (e.g. `gpt-4.1-mini`); the scripted provider ignores it.
    pub model: String,
    pub system: String,
    pub messages: Vec<WireModelMessage>,
    /// Stable order: the tool block is byte-identical across steps whose only change is
    /// availability, so a vendor's prompt cache keeps it. Shared by the model steps of one
    /// step-request, which offer the same tools.
    pub tools: Arc<[ToolSpec]>,
}

/// A complete tool call. `input` is the parsed arguments object (`{}` when the model sent
/// none); `invalid_input` carries a safe description when the arguments did not parse, in
/// which case the loop answers the call with an error instead of executing it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub input: Value,
    pub invalid_input: Option<String>,
}

/// Why a model step ended, in the AI SDK's vocabulary (`stop`, `tool-calls`, `length`,
/// `content-filter`, `error`, `other`, `unknown`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FinishReason(pub String);

impl FinishReason {
    pub fn stop() -> Self {
        Self("stop".into())
    }
    pub fn tool_calls() -> Self {
        Self("tool-calls".into())
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum ModelEvent {
    /// Answer text.
    TextDelta(String),
    /// Reasoning text; streamed on its own frame, never mixed into the answer.
    ReasoningDelta(String),
    /// A finished reasoning block whose provider metadata must travel back with the
    /// assistant message (Anthropic thinking signatures). Providers without such metadata
    /// never send it, and then reasoning is not kept in the history.
    ReasoningBlock {
        text: String,
        /// Goes into the history part as `providerOptions`.
        provider_options: Map<String, Value>,
    },
    ToolCall(ToolCall),
    /// The end of this model step, with its usage (empty when the vendor reported none).
    Finish {
        reason: FinishReason,
        usage: UsageReport,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelErrorKind {
    /// The vendor rejected the request or failed (4xx/5xx after retries).
    Vendor,
    /// The connection failed or the stream broke.
    Transport,
    /// The stream was not valid SSE or JSON.
    Protocol,
    /// Misconfiguration found at call time (e.g. a missing key).
    Config,
}

/// A provider failure. `message` is safe to show to a client and to the model: it never
/// carries a key, a URL, a host or an address.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ModelError {
    pub kind: ModelErrorKind,
    pub message: String,
}

impl ModelError {
    pub fn new(kind: ModelErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }
}

pub type EventStream = Pin<Box<dyn Stream<Item = Result<ModelEvent, ModelError>> + Send>>;

/// A model vendor (or a test double for one). Implementations must not panic on any
/// input, and must end the stream after `Finish` or an error.
pub trait ModelProvider: Send + Sync {
    /// The id listed by `GET /api/session` and accepted as `modelId` (e.g. `openai/gpt-4.1`).
    fn id(&self) -> &str;

    /// Starts one model step. Errors before the first event (connection refused, 4xx/5xx
    /// after retries) come back here; errors mid-stream come through the stream.
    fn stream(&self, request: ModelRequest) -> BoxFuture<'_, Result<EventStream, ModelError>>;
}
