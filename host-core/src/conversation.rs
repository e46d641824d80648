//! The conversation store behind assistant-ui's external-store runtime (`API.md`,
//! `ConversationState`), as a pure reducer: it takes a turn's frames and loop events and keeps
//! the chat views (streaming text, reasoning apart, tool calls with their state), the model
//! history that is posted, per-turn and per-conversation usage, and inspector events.
//!
//! The wasm layer owns the async part: `begin_turn` → `run_turn` with an observer that feeds
//! [`Conversation::observe_frame`] / [`Conversation::observe_event`] → `finish_turn`.

use crate::turn::{TurnEvent, TurnOutcome};
use dpas_protocol::error::tool_results::is_error_shaped;
use dpas_protocol::json::Value;
use dpas_protocol::json::{object, ObjectWriter, WriteJson};
use dpas_protocol::wire_name::{decode_wire_name, is_browser_tool};
use dpas_protocol::{
    ContentPart, ErrorBody, Executor, Frame, MessageContent, PendingToolCall, Role, StepFinish,
    Usage, WireModelMessage,
};
use serde::Serialize;

/// Inspector events kept; the oldest are evicted first.
pub(crate) const MAX_INSPECTOR_EVENTS: usize = 400;

dpas_protocol::wire_enum! {
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
    #[serde(rename_all = "lowercase")]
    pub enum ChatRole {
        User = "user",
        Assistant = "assistant",
    }
}

dpas_protocol::wire_enum! {
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
    #[serde(rename_all = "lowercase")]
    pub enum ToolCallState {
        Running = "running",
        Done = "done",
        Error = "error",
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallView {
    pub tool_call_id: String,
    pub wire_name: String,
    pub canonical_id: String,
    pub executor: Executor,
    pub input: Value,
    pub state: ToolCallState,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
}

/// One message as it shows: its parts in the order the model produced them, and its tool
/// calls (which its `ToolCall` parts point into). `text`, `reasoning` and `toolCalls` in its
/// JSON are derived from the parts.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatMessageView {
    pub id: String,
    pub role: ChatRole,
    pub parts: Vec<ChatPart>,
    pub tool_calls: Vec<ToolCallView>,
}

/// A part of a message. Text and reasoning show with channel markers removed (a marker may
/// span deltas, so each keeps what streamed); a tool call is an index into the message's
/// `tool_calls`.
#[derive(Debug, Clone, PartialEq)]
pub enum ChatPart {
    Text(Segment),
    Reasoning(Segment),
    ToolCall(usize),
}

/// Text or reasoning as it shows, and what streamed into it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Segment {
    shown: String,
    raw: Streamed,
}

impl Segment {
    /// The text with channel markers removed.
    pub fn text(&self) -> &str {
        &self.shown
    }
}

/// A part as JS sees it (the JSON of `parts`): `{type:"text"|"reasoning", text}` or
/// `{type:"tool-call", ...ToolCallView}`.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
enum PartView<'a> {
    Text { text: &'a str },
    Reasoning { text: &'a str },
    ToolCall(&'a ToolCallView),
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InspectorEvent {
    pub lane: String,
    pub event_type: String,
    pub summary: String,
    pub at: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConversationState {
    pub conversation_id: String,
    pub messages: Vec<ChatMessageView>,
    pub is_running: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turn_usage: Option<Usage>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conversation_usage: Option<Usage>,
    pub inspector: Vec<InspectorEvent>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorBody>,
}

// The views' JSON text for JS, the bytes of their `Serialize` derives (tested below), written
// without a serializer (`dpas_protocol::json`).

impl WriteJson for ToolCallView {
    fn write_json(&self, out: &mut String) {
        let mut object = ObjectWriter::new(out);
        self.write_fields(&mut object);
        object.end();
    }
}

impl ToolCallView {
    fn write_fields(&self, object: &mut ObjectWriter<'_>) {
        object
            .field("toolCallId", &self.tool_call_id)
            .field("wireName", &self.wire_name)
            .field("canonicalId", &self.canonical_id)
            .field("executor", &self.executor)
            .field("input", &self.input)
            .field("state", &self.state)
            .opt_field("result", self.result.as_ref().map(|v| v as _));
    }
}

impl WriteJson for ChatMessageView {
    fn write_json(&self, out: &mut String) {
        let mut object = ObjectWriter::new(out);
        object
            .field("id", &self.id)
            .field("role", &self.role)
            .field("text", &self.text())
            .field("reasoning", &self.reasoning())
            .field("toolCalls", &self.tool_calls)
            .field("parts", &Parts(self));
        object.end();
    }
}

/// The `parts` array of a message: empty text and reasoning left out.
struct Parts<'a>(&'a ChatMessageView);

impl WriteJson for Parts<'_> {
    fn write_json(&self, out: &mut String) {
        let message = self.0;
        out.push('[');
        let mut first = true;
        for part in &message.parts {
            let (kind, text, call) = match part {
                ChatPart::Text(segment) => ("text", segment.shown.as_str(), None),
                ChatPart::Reasoning(segment) => ("reasoning", segment.shown.as_str(), None),
                ChatPart::ToolCall(index) => ("tool-call", "", message.tool_calls.get(*index)),
            };
            if text.is_empty() && call.is_none() {
                continue;
            }
            if !first {
                out.push(',');
            }
            first = false;
            let mut object = ObjectWriter::new(out);
            object.field("type", &kind);
            match call {
                Some(call) => call.write_fields(&mut object),
                None => {
                    object.field("text", &text);
                }
            }
            object.end();
        }
        out.push(']');
    }
}

/// The derive's bytes, for the tests' comparison with [`WriteJson`]: the derived fields first,
/// as JS reads them.
impl Serialize for ChatMessageView {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut s = serializer.serialize_struct("ChatMessageView", 6)?;
        s.serialize_field("id", &self.id)?;
        s.serialize_field("role", &self.role)?;
        s.serialize_field("text", &self.text())?;
        s.serialize_field("reasoning", &self.reasoning())?;
        s.serialize_field("toolCalls", &self.tool_calls)?;
        s.serialize_field("parts", &self.part_views())?;
        s.end()
    }
}

impl WriteJson for InspectorEvent {
    fn write_json(&self, out: &mut String) {
        ObjectWriter::new(out)
            .field("lane", &self.lane)
            .field("eventType", &self.event_type)
            .field("summary", &self.summary)
            .field("at", &self.at)
            .opt_field("data", self.data.as_ref().map(|v| v as _))
            .end();
    }
}

impl WriteJson for ConversationState {
    fn write_json(&self, out: &mut String) {
        ObjectWriter::new(out)
            .field("conversationId", &self.conversation_id)
            .field("messages", &self.messages)
            .field("isRunning", &self.is_running)
            .opt_field("turnUsage", self.turn_usage.as_ref().map(|v| v as _))
            .opt_field(
                "conversationUsage",
                self.conversation_usage.as_ref().map(|v| v as _),
            )
            .field("inspector", &self.inspector)
            .opt_field("error", self.error.as_ref().map(|v| v as _))
            .end();
    }
}

/// The byte offset of two ASCII bytes in a row (always a char boundary: ASCII bytes never
/// occur inside a multi-byte UTF-8 sequence). By hand rather than `str::find("..")`, which
/// links core's substring searcher into the browser build.
fn find_pair(text: &str, pair: [u8; 2]) -> Option<usize> {
    text.as_bytes().windows(2).position(|w| w == pair)
}

/// Removes model channel markers: every `<|token|>`, and the word that names a channel or a
/// role after `<|channel|>` / `<|start|>` (e.g. `<|channel|>analysis `).
#[cfg(test)]
pub(crate) fn strip_channel_markers(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    Streamed::default().push(&mut out, raw);
    out
}

/// Streamed text with markers removed as it arrives, in time linear in its length: only the
/// part that text still to come could change (an unfinished marker, the word after
/// `<|channel|>` / `<|start|>` while it may go on, a last `<`) is read again with the next
/// delta, so what is shown is always [`strip_channel_markers`] of everything pushed.
/// Everything before that part is final: the scan is then between markers, where what
/// follows cannot reach back.
#[derive(Debug, Clone, Default, PartialEq)]
struct Streamed {
    /// Everything pushed, before markers are removed.
    raw: String,
    /// Where in `raw` the part that can still change begins.
    from: usize,
    /// The length of the shown text before that part.
    settled: usize,
}

impl Streamed {
    /// Appends `delta` and brings `shown` (what earlier pushes showed) up to date.
    fn push(&mut self, shown: &mut String, delta: &str) {
        self.raw.push_str(delta);
        shown.truncate(self.settled);
        let raw = &self.raw;
        let mut rest = raw.get(self.from..).unwrap_or_default();
        // Cut with `split_at_checked` (the markers are ASCII, so every cut is at a char
        // boundary): a `str` range index would link core's slicing panic and its `Debug`
        // formatting.
        while let Some((before, marker)) =
            find_pair(rest, *b"<|").and_then(|at| rest.split_at_checked(at))
        {
            shown.push_str(before);
            // Read again from here if the marker is not over by the end of the text.
            self.from = raw.len() - marker.len();
            self.settled = shown.len();
            // The closing `|>` is looked for after the opening `<|` (they do not overlap in
            // `<|>`).
            let Some((token, after)) = marker.get(2..).and_then(|inner| {
                let end = find_pair(inner, *b"|>")?;
                Some((inner.get(..end)?, inner.get(end + 2..)?))
            }) else {
                // An unfinished marker is held back until it completes.
                return;
            };
            rest = after;
            if token == "channel" || token == "start" {
                let Some(word) = rest.find(|c: char| !c.is_ascii_alphanumeric() && c != '_') else {
                    // The word runs to the end: more of it may come.
                    return;
                };
                rest = rest.get(word..).unwrap_or_default();
                rest = rest.strip_prefix(' ').unwrap_or(rest);
            }
        }
        shown.push_str(rest);
        // A last `<` may open a marker with the next delta.
        let open = usize::from(matches!(rest.as_bytes().last(), Some(b'<')));
        self.from = raw.len() - open;
        self.settled = shown.len() - open;
    }
}

impl ChatMessageView {
    fn new(id: String, role: ChatRole) -> Self {
        Self {
            id,
            role,
            parts: Vec::new(),
            tool_calls: Vec::new(),
        }
    }

    /// The answer text (markdown): the text parts, in order.
    pub fn text(&self) -> String {
        self.joined(false)
    }

    /// The reasoning parts, in order.
    pub fn reasoning(&self) -> String {
        self.joined(true)
    }

    fn joined(&self, reasoning: bool) -> String {
        let mut out = String::new();
        for part in &self.parts {
            match (part, reasoning) {
                (ChatPart::Text(segment), false) | (ChatPart::Reasoning(segment), true) => {
                    out.push_str(&segment.shown)
                }
                _ => {}
            }
        }
        out
    }

    /// The parts as JS sees them (the derive's, for the tests), empty text and reasoning left
    /// out.
    fn part_views(&self) -> Vec<PartView<'_>> {
        let mut views = Vec::new();
        for part in &self.parts {
            let view = match part {
                ChatPart::Text(segment) => PartView::Text {
                    text: &segment.shown,
                },
                ChatPart::Reasoning(segment) => PartView::Reasoning {
                    text: &segment.shown,
                },
                ChatPart::ToolCall(index) => match self.tool_calls.get(*index) {
                    Some(call) => PartView::ToolCall(call),
                    None => continue,
                },
            };
            if !matches!(view, PartView::Text { text } | PartView::Reasoning { text } if text.is_empty())
            {
                views.push(view);
            }
        }
        views
    }

    /// Appends to the last part when it is text (reasoning), else to a new one.
    fn push_text(&mut self, delta: &str) {
        self.push_segment(delta, false);
    }

    fn push_reasoning(&mut self, delta: &str) {
        self.push_segment(delta, true);
    }

    fn push_segment(&mut self, delta: &str, reasoning: bool) {
        let segment = match (self.parts.last_mut(), reasoning) {
            (Some(ChatPart::Text(segment)), false) | (Some(ChatPart::Reasoning(segment)), true) => {
                segment
            }
            _ => {
                let segment = Segment::default();
                self.parts.push(if reasoning {
                    ChatPart::Reasoning(segment)
                } else {
                    ChatPart::Text(segment)
                });
                match self.parts.last_mut() {
                    Some(ChatPart::Text(segment) | ChatPart::Reasoning(segment)) => segment,
                    _ => return,
                }
            }
        };
        segment.raw.push(&mut segment.shown, delta);
    }

    fn push_call(&mut self, call: ToolCallView) {
        self.parts.push(ChatPart::ToolCall(self.tool_calls.len()));
        self.tool_calls.push(call);
    }
}

/// One conversation: its chat views and the model history it posts.
#[derive(Debug, Clone, PartialEq)]
pub struct Conversation {
    state: ConversationState,
    history: Vec<WireModelMessage>,
    next_message: u64,
    /// The assistant view the current step writes into; `None` after a boundary.
    open_assistant: Option<usize>,
}

fn settled_state(ok: bool) -> ToolCallState {
    if ok {
        ToolCallState::Done
    } else {
        ToolCallState::Error
    }
}

impl Conversation {
    pub fn new(conversation_id: impl Into<String>) -> Self {
        Self {
            state: ConversationState {
                conversation_id: conversation_id.into(),
                messages: Vec::new(),
                is_running: false,
                turn_usage: None,
                conversation_usage: None,
                inspector: Vec::new(),
                error: None,
            },
            history: Vec::new(),
            next_message: 0,
            open_assistant: None,
        }
    }

    pub fn state(&self) -> &ConversationState {
        &self.state
    }

    /// The model messages posted with the next turn.
    pub fn history(&self) -> &[WireModelMessage] {
        &self.history
    }

    fn mint_id(&mut self) -> String {
        self.next_message += 1;
        format!("msg_{}", self.next_message)
    }

    fn push_view(&mut self, role: ChatRole) -> usize {
        let id = self.mint_id();
        self.state.messages.push(ChatMessageView::new(id, role));
        self.state.messages.len() - 1
    }

    fn assistant(&mut self) -> &mut ChatMessageView {
        let index = match self.open_assistant {
            Some(index) => index,
            None => {
                let index = self.push_view(ChatRole::Assistant);
                self.open_assistant = Some(index);
                index
            }
        };
        &mut self.state.messages[index]
    }

    fn tool_call_mut(&mut self, tool_call_id: &str) -> Option<&mut ToolCallView> {
        for message in self.state.messages.iter_mut().rev() {
            for call in &mut message.tool_calls {
                if call.tool_call_id == tool_call_id {
                    return Some(call);
                }
            }
        }
        None
    }

    /// Starts a turn with the user's text; `None` while a turn is already running (J10).
    /// Returns the history to post, the new user message included.
    pub fn begin_turn(&mut self, text: &str) -> Option<Vec<WireModelMessage>> {
        if self.state.is_running {
            return None;
        }
        let index = self.push_view(ChatRole::User);
        self.state.messages[index].push_text(text);
        self.history.push(WireModelMessage::user_text(text));
        self.state.is_running = true;
        self.state.turn_usage = None;
        self.state.error = None;
        self.open_assistant = None;
        Some(self.history.clone())
    }

    /// Starts a turn that answers the browser calls the history's last assistant message left
    /// unanswered (a page reloaded while a call waited, e.g. for the user's confirmation):
    /// the history and those calls, or `None` when a turn runs or nothing is unanswered.
    pub fn begin_resume(&mut self) -> Option<(Vec<WireModelMessage>, Vec<PendingToolCall>)> {
        let last = self.history.last()?;
        if self.state.is_running || last.role != Role::Assistant {
            return None;
        }
        let mut calls = Vec::new();
        for part in last.parts() {
            if let ContentPart::ToolCall {
                tool_call_id,
                tool_name,
                input,
                ..
            } = part
            {
                if is_browser_tool(tool_name) {
                    calls.push(PendingToolCall {
                        tool_call_id: tool_call_id.clone(),
                        wire_name: tool_name.clone(),
                        canonical_id: decode_wire_name(tool_name)
                            .unwrap_or_else(|| tool_name.clone()),
                        input: input.clone(),
                    });
                }
            }
        }
        if calls.is_empty() {
            return None;
        }
        self.state.is_running = true;
        self.state.turn_usage = None;
        self.state.error = None;
        // The calls' results and the next step's text go to the message that made them.
        self.open_assistant = self.state.messages.len().checked_sub(1);
        Some((self.history.clone(), calls))
    }

    fn record_inspector(&mut self, event: InspectorEvent) {
        if self.state.inspector.len() == MAX_INSPECTOR_EVENTS {
            self.state.inspector.remove(0);
        }
        self.state.inspector.push(event);
    }

    /// Applies one frame of the running turn; `at_ms` stamps inspector events.
    pub fn observe_frame(&mut self, frame: &Frame, at_ms: f64) {
        match frame {
            Frame::TextDelta { text } => self.assistant().push_text(text),
            Frame::ReasoningDelta { text } => self.assistant().push_reasoning(text),
            // Browser calls are shown when the loop runs them, from its own events.
            Frame::ToolCall(call) if call.executor == Executor::Server => {
                let view = ToolCallView {
                    tool_call_id: call.tool_call_id.clone(),
                    wire_name: call.wire_name.clone(),
                    canonical_id: call.canonical_id.clone(),
                    executor: Executor::Server,
                    input: call.input.clone(),
                    state: ToolCallState::Running,
                    result: None,
                };
                self.assistant().push_call(view);
            }
            Frame::ToolResult(result) => {
                if let Some(view) = self.tool_call_mut(&result.tool_call_id) {
                    view.state = settled_state(result.ok);
                    view.result = Some(result.result.clone());
                }
            }
            Frame::Inspector(inspector) => {
                self.record_inspector(InspectorEvent {
                    lane: inspector.lane.as_str().to_owned(),
                    event_type: inspector.event_type.clone(),
                    summary: inspector.summary.clone(),
                    at: at_ms,
                    data: inspector.data.clone(),
                });
            }
            Frame::StepFinish(finish) => {
                self.show_unannounced_calls(finish);
                if let Some(usage) = finish.usage {
                    // Subsets are summed apart from their parents (H3, H5).
                    self.state.turn_usage = Usage::sum_opt(self.state.turn_usage, Some(usage));
                    self.state.conversation_usage =
                        Usage::sum_opt(self.state.conversation_usage, Some(usage));
                }
            }
            _ => {}
        }
    }

    /// A call the model made that no frame announced and that is not left for the browser is
    /// one to a tool in neither plane (the server answers it NO_SUCH_TOOL in the history and
    /// says so only in an inspector frame): it is shown as a failed call with its input, so the
    /// conversation shows every call the model made. Its answer stays in the history and the
    /// inspector frame: finding it in the step's messages measured +80 B gzip in the package.
    fn show_unannounced_calls(&mut self, finish: &StepFinish) {
        for part in finish
            .response_messages
            .iter()
            .flat_map(WireModelMessage::parts)
        {
            let ContentPart::ToolCall {
                tool_call_id,
                tool_name,
                input,
                ..
            } = part
            else {
                continue;
            };
            if self.tool_call_mut(tool_call_id).is_some()
                || finish
                    .pending_tool_calls
                    .iter()
                    .any(|p| p.tool_call_id == *tool_call_id)
            {
                continue;
            }
            // No catalog entry names it: its canonical id is its wire name (C8).
            let view = ToolCallView {
                tool_call_id: tool_call_id.clone(),
                wire_name: tool_name.clone(),
                canonical_id: tool_name.clone(),
                executor: Executor::Server,
                input: input.clone(),
                state: ToolCallState::Error,
                result: None,
            };
            self.assistant().push_call(view);
        }
    }

    /// Applies one loop event of the running turn.
    pub fn observe_event(&mut self, event: &TurnEvent, at_ms: f64) {
        match event {
            TurnEvent::ToolCallStarted {
                tool_call_id,
                wire_name,
                canonical_id,
                input,
            } => {
                let view = ToolCallView {
                    tool_call_id: tool_call_id.clone(),
                    wire_name: wire_name.clone(),
                    canonical_id: canonical_id.clone(),
                    executor: Executor::Browser,
                    input: input.clone(),
                    state: ToolCallState::Running,
                    result: None,
                };
                self.assistant().push_call(view);
            }
            TurnEvent::ToolCallSettled {
                tool_call_id,
                ok,
                value,
                ..
            } => {
                if let Some(view) = self.tool_call_mut(tool_call_id) {
                    view.state = settled_state(*ok);
                    view.result = Some(value.clone());
                }
            }
            TurnEvent::AssistantBoundary => self.open_assistant = None,
            TurnEvent::CatalogUndecodable { canonical_ids } => {
                self.record_inspector(InspectorEvent {
                    lane: "host".into(),
                    event_type: "catalog.undecodable".into(),
                    summary: format!(
                        "{} tool(s) withheld: no way back to their canonical id",
                        canonical_ids.len()
                    ),
                    at: at_ms,
                    data: Some(object([("capabilityIds", canonical_ids.clone().into())])),
                })
            }
            TurnEvent::StepStarted { .. }
            | TurnEvent::StepRetry { .. }
            | TurnEvent::Settled(_)
            | TurnEvent::Reconcile { .. }
            | TurnEvent::Usage(_) => {}
        }
    }

    /// Ends the turn: its history replaces the stored one whatever the status (J10); calls
    /// still shown as running were never answered by this turn and settle as errors.
    pub fn finish_turn(&mut self, outcome: &TurnOutcome) {
        self.history = outcome.messages.clone();
        self.state.is_running = false;
        self.state.error = outcome.error.clone();
        self.open_assistant = None;
        for view in self
            .state
            .messages
            .iter_mut()
            .flat_map(|m| m.tool_calls.iter_mut())
        {
            if view.state == ToolCallState::Running {
                view.state = ToolCallState::Error;
            }
        }
    }

    /// Rebuilds a stored thread from its model messages (`/api/threads/:id/model-messages`).
    /// Tool calls are matched to their results; a wire name of the view or meta plane marks a
    /// browser call (the thread does not record executors).
    pub fn restore(
        conversation_id: impl Into<String>,
        messages: Vec<WireModelMessage>,
        usage: Option<Usage>,
    ) -> Self {
        let mut conversation = Self::new(conversation_id);
        for message in &messages {
            match message.role {
                Role::User => {
                    let index = conversation.push_view(ChatRole::User);
                    let view = &mut conversation.state.messages[index];
                    match &message.content {
                        MessageContent::Text(text) => view.push_text(text),
                        MessageContent::Parts(parts) => parts.iter().for_each(|p| {
                            if let ContentPart::Text { text, .. } = p {
                                view.push_text(text);
                            }
                        }),
                    }
                }
                Role::Assistant => {
                    conversation.open_assistant = None;
                    let view = conversation.assistant();
                    if let MessageContent::Text(text) = &message.content {
                        view.push_text(text);
                    }
                    for part in message.parts() {
                        match part {
                            ContentPart::Text { text, .. } => view.push_text(text),
                            ContentPart::Reasoning { text, .. } => view.push_reasoning(text),
                            ContentPart::ToolCall {
                                tool_call_id,
                                tool_name,
                                input,
                                ..
                            } => view.push_call(ToolCallView {
                                tool_call_id: tool_call_id.clone(),
                                wire_name: tool_name.clone(),
                                // Without a catalog the id comes from the decoder, else the wire name (C8).
                                canonical_id: decode_wire_name(tool_name)
                                    .unwrap_or_else(|| tool_name.clone()),
                                executor: if is_browser_tool(tool_name) {
                                    Executor::Browser
                                } else {
                                    Executor::Server
                                },
                                input: input.clone(),
                                state: ToolCallState::Running,
                                result: None,
                            }),
                            _ => {}
                        }
                    }
                }
                Role::Tool => {
                    for part in message.parts() {
                        if let ContentPart::ToolResult {
                            tool_call_id,
                            output,
                            ..
                        } = part
                        {
                            let value = match output.get("type").and_then(Value::as_str) {
                                Some("json") => output.get("value").cloned().unwrap_or(Value::Null),
                                _ => output.clone(),
                            };
                            if let Some(view) = conversation.tool_call_mut(tool_call_id) {
                                view.state = settled_state(!is_error_shaped(&value));
                                view.result = Some(value);
                            }
                        }
                    }
                }
                Role::System => {}
            }
        }
        conversation.open_assistant = None;
        conversation.history = messages;
        conversation.state.conversation_usage = usage;
        conversation
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::turn::TurnStatus;
    use dpas_protocol::test_json as json;

    fn frame(value: Value) -> Frame {
        dpas_protocol::test_support::from_value(value).unwrap()
    }

    /// What JS gets (`dpas_protocol::json`'s text) is what the `Serialize` derives write.
    #[track_caller]
    fn assert_written_as_derived(state: &ConversationState) {
        assert_eq!(
            dpas_protocol::json::to_string(state),
            serde_json::to_string(state).unwrap()
        );
    }

    fn usage(input: u64) -> Value {
        json!({ "inputTokens": input, "outputTokens": 2, "totalTokens": input + 2, "reasoningTokens": 1, "reportedSteps": 1 })
    }

    fn finish(usage: Option<Value>) -> Frame {
        let mut value = json!({ "type": "step-finish", "stepId": "s", "finishReason": "stop", "responseMessages": [], "pendingToolCalls": [] });
        if let Some(usage) = usage {
            value["usage"] = usage;
        }
        frame(value)
    }

    #[test]
    fn channel_markers_are_removed_even_across_deltas() {
        assert_eq!(
            strip_channel_markers("<|channel|>analysis Read the ageing."),
            "Read the ageing."
        );
        assert_eq!(
            strip_channel_markers("<|start|>assistant<|channel|>final<|message|>Hi<|end|>"),
            "Hi"
        );
        assert_eq!(strip_channel_markers("a <| b"), "a ");
        assert_eq!(strip_channel_markers("é<|end|>ü|>"), "éü|>");
        // `<|>` opens a marker and does not close it: it panicked (a close found inside the
        // opening pair made the token's range run backwards).
        assert_eq!(strip_channel_markers("a<|>b"), "a");
        assert_eq!(strip_channel_markers("x<|>y|>z"), "xz");
        let mut conversation = Conversation::new("cnv_1");
        conversation.begin_turn("q").unwrap();
        conversation.observe_frame(
            &frame(json!({ "type": "reasoning-delta", "text": "<|chan" })),
            0.0,
        );
        assert_eq!(conversation.state().messages[1].reasoning(), "");
        conversation.observe_frame(
            &frame(json!({ "type": "reasoning-delta", "text": "nel|>analysis Plan." })),
            0.0,
        );
        assert_eq!(conversation.state().messages[1].reasoning(), "Plan.");
    }

    /// Texts whose markers, channel words, spaces and `<` fall across deltas.
    const TRICKY: &[&str] = &[
        "<|channel|>analysis Read the ageing.",
        "<|start|>assistant<|channel|>final<|message|>Hi<|end|>",
        "a <| b",
        "é<|end|>ü|>",
        "a<|>b",
        "x<|>y|>z",
        "<<|channel|>commentary to=functions.x <|message|>{}",
        "1 < 2 <|end|> 3 <",
        "<|channel|>final",
        "<|channel|>final\n<|message|>ok <",
        "ü<|start|>user_1 <|message|>ä <| never closed |",
        "<|channel|>analysis  two spaces<|channel|> x",
        "|><||>|<|<|x|>y<",
    ];

    /// The view after `deltas`, checked after each one against the whole text's strip.
    fn stream(deltas: &[&str]) {
        let mut view = ChatMessageView::new("m".into(), ChatRole::Assistant);
        let mut thought = ChatMessageView::new("r".into(), ChatRole::Assistant);
        let mut raw = String::new();
        for delta in deltas {
            raw.push_str(delta);
            view.push_text(delta);
            thought.push_reasoning(delta);
            assert_eq!(view.text(), strip_channel_markers(&raw), "{deltas:?}");
            assert_eq!(thought.reasoning(), view.text(), "{deltas:?}");
        }
    }

    #[test]
    fn streamed_text_shows_the_whole_texts_strip_at_every_split() {
        for text in TRICKY {
            let cuts: Vec<usize> = (0..=text.len())
                .filter(|&at| text.is_char_boundary(at))
                .collect();
            // Every split into three deltas (so into two, with an empty one)...
            for (n, &a) in cuts.iter().enumerate() {
                for &b in &cuts[n..] {
                    stream(&[&text[..a], &text[a..b], &text[b..]]);
                }
            }
            // ...and one character at a time.
            let chars: Vec<&str> = cuts.windows(2).map(|w| &text[w[0]..w[1]]).collect();
            stream(&chars);
        }
    }

    #[test]
    fn streamed_text_keeps_only_what_can_still_change() {
        let mut view = ChatMessageView::new("m".into(), ChatRole::Assistant);
        for delta in ["Plain ", "text ", "<|channel|>ana", "lysis", " Read", " <"] {
            view.push_text(delta);
        }
        assert_eq!(view.text(), "Plain text Read <");
        // Only the last `<` is read again with the next delta; the rest is final.
        let tail = |view: &ChatMessageView| match &view.parts[..] {
            [ChatPart::Text(segment)] => {
                segment.raw.raw.get(segment.raw.from..).unwrap().to_owned()
            }
            parts => panic!("one text part: {parts:?}"),
        };
        assert_eq!(tail(&view), "<");
        view.push_text("|end|>.");
        assert_eq!(
            (view.text().as_str(), tail(&view).as_str()),
            ("Plain text Read .", "")
        );
    }

    #[test]
    fn a_turn_streams_text_reasoning_and_tool_calls_into_views() {
        let mut conversation = Conversation::new("cnv_1");
        let history = conversation.begin_turn("What is overdue?").unwrap();
        assert_eq!(history, [WireModelMessage::user_text("What is overdue?")]);
        assert!(conversation.begin_turn("again").is_none());
        conversation.observe_frame(
            &frame(json!({ "type": "reasoning-delta", "text": "<|channel|>analysis Plan." })),
            1.0,
        );
        conversation.observe_frame(
            &frame(json!({ "type": "text-delta", "text": "Checking the " })),
            1.0,
        );
        conversation.observe_frame(
            &frame(json!({ "type": "text-delta", "text": "**ageing**." })),
            1.0,
        );
        conversation.observe_frame(&frame(json!({ "type": "tool-call", "toolCallId": "s1", "wireName": "domain_collections-aging", "canonicalId": "domain:collections-aging", "executor": "server", "input": {} })), 1.0);
        conversation.observe_frame(&frame(json!({ "type": "tool-call", "toolCallId": "b1", "wireName": "view_t__a__b", "canonicalId": "view:t.a.b", "executor": "browser", "input": {} })), 1.0);
        conversation.observe_frame(&frame(json!({ "type": "tool-result", "toolCallId": "s1", "wireName": "domain_collections-aging", "canonicalId": "domain:collections-aging", "ok": true, "result": { "status": "ok", "data": [] } })), 1.0);
        conversation.observe_frame(&frame(json!({ "type": "inspector", "lane": "runtime", "eventType": "model.usage", "summary": "16 in", "data": { "inputTokens": 16 } })), 2.5);
        conversation.observe_frame(&finish(Some(usage(16))), 3.0);
        conversation.observe_event(
            &TurnEvent::ToolCallStarted {
                tool_call_id: "b1".into(),
                wire_name: "view_t__a__b".into(),
                canonical_id: "view:t.a.b".into(),
                input: json!({}),
            },
            3.0,
        );
        let state = conversation.state();
        assert_written_as_derived(state);
        assert!(state.is_running);
        assert_eq!(state.messages.len(), 2);
        let assistant = &state.messages[1];
        assert_eq!(
            (
                assistant.role,
                assistant.text().as_str(),
                assistant.reasoning().as_str()
            ),
            (ChatRole::Assistant, "Checking the **ageing**.", "Plan.")
        );
        let states: Vec<(Executor, ToolCallState)> = assistant
            .tool_calls
            .iter()
            .map(|c| (c.executor, c.state))
            .collect();
        assert_eq!(
            states,
            [
                (Executor::Server, ToolCallState::Done),
                (Executor::Browser, ToolCallState::Running)
            ]
        );
        assert_eq!(state.inspector[0].at, 2.5);
        conversation.observe_event(
            &TurnEvent::ToolCallSettled {
                tool_call_id: "b1".into(),
                wire_name: "view_t__a__b".into(),
                canonical_id: "view:t.a.b".into(),
                ok: false,
                value: json!({ "error": {} }),
            },
            4.0,
        );
        conversation.observe_event(&TurnEvent::AssistantBoundary, 4.0);
        conversation.observe_frame(
            &frame(json!({ "type": "text-delta", "text": "Done." })),
            5.0,
        );
        conversation.observe_frame(&finish(Some(usage(20))), 5.0);
        let state = conversation.state();
        assert_written_as_derived(state);
        assert_eq!(state.messages[1].tool_calls[1].state, ToolCallState::Error);
        assert_eq!(state.messages.len(), 3);
        assert_eq!(state.messages[2].text(), "Done.");
        let turn = state.turn_usage.unwrap();
        assert_eq!(
            (
                turn.input_tokens,
                turn.output_tokens,
                turn.reasoning_tokens,
                turn.reported_steps
            ),
            (36, 4, Some(2), 2)
        );
        let messages = vec![
            WireModelMessage::user_text("What is overdue?"),
            WireModelMessage::user_text("(stand-in)"),
        ];
        conversation.finish_turn(&TurnOutcome {
            status: TurnStatus::Completed,
            messages: messages.clone(),
            usage: None,
            error: None,
        });
        assert!(!conversation.state().is_running);
        assert_eq!(conversation.history(), messages);
    }

    #[test]
    fn a_message_keeps_its_parts_in_the_order_they_streamed() {
        let mut conversation = Conversation::new("cnv_1");
        conversation.begin_turn("Move the card").unwrap();
        for value in [
            json!({ "type": "reasoning-delta", "text": "<|channel|>analysis Move it." }),
            json!({ "type": "text-delta", "text": "Moving " }),
            json!({ "type": "text-delta", "text": "it." }),
            json!({ "type": "tool-call", "toolCallId": "s1", "wireName": "domain_move", "canonicalId": "domain:move", "executor": "server", "input": { "id": 1 } }),
            json!({ "type": "tool-result", "toolCallId": "s1", "wireName": "domain_move", "canonicalId": "domain:move", "ok": true, "result": { "status": "ok" } }),
            json!({ "type": "reasoning-delta", "text": "<|channel|>analysis " }),
            json!({ "type": "text-delta", "text": "See the card above." }),
        ] {
            conversation.observe_frame(&frame(value), 1.0);
        }
        let state = conversation.state();
        assert_written_as_derived(state);
        let message = dpas_protocol::test_support::to_value(&state.messages[1]).unwrap();
        // The reasoning part that showed nothing (only a marker) is left out.
        assert_eq!(
            message["parts"],
            json!([
                { "type": "reasoning", "text": "Move it." },
                { "type": "text", "text": "Moving it." },
                { "type": "tool-call", "toolCallId": "s1", "wireName": "domain_move", "canonicalId": "domain:move", "executor": "server", "input": { "id": 1 }, "state": "done", "result": { "status": "ok" } },
                { "type": "text", "text": "See the card above." },
            ])
        );
        // The compatible fields are derived from the parts.
        assert_eq!(message["text"], json!("Moving it.See the card above."));
        assert_eq!(message["reasoning"], json!("Move it."));
        assert_eq!(message["toolCalls"][0]["state"], json!("done"));
        let user = dpas_protocol::test_support::to_value(&state.messages[0]).unwrap();
        assert_eq!(
            user["parts"],
            json!([{ "type": "text", "text": "Move the card" }])
        );
    }

    #[test]
    fn a_restored_message_keeps_its_parts_in_order() {
        let messages: Vec<WireModelMessage> = dpas_protocol::test_support::from_value(json!([
            { "role": "user", "content": "Move the card" },
            { "role": "assistant", "content": [
                { "type": "tool-call", "toolCallId": "s1", "toolName": "domain_move", "input": {} },
            ] },
            { "role": "tool", "content": [
                { "type": "tool-result", "toolCallId": "s1", "toolName": "domain_move", "output": { "type": "json", "value": { "status": "ok" } } },
            ] },
            { "role": "assistant", "content": [{ "type": "text", "text": "See the card above." }] },
        ]))
        .unwrap();
        let conversation = Conversation::restore("cnv_1", messages, None);
        let state = conversation.state();
        assert_written_as_derived(state);
        let kinds = |message: &ChatMessageView| -> Vec<&'static str> {
            let mut kinds = Vec::new();
            for part in &message.parts {
                kinds.push(match part {
                    ChatPart::Text(_) => "text",
                    ChatPart::Reasoning(_) => "reasoning",
                    ChatPart::ToolCall(_) => "tool-call",
                });
            }
            kinds
        };
        assert_eq!(kinds(&state.messages[1]), ["tool-call"]);
        assert_eq!(kinds(&state.messages[2]), ["text"]);
    }

    #[test]
    fn a_call_to_an_unknown_tool_shows_as_a_failed_call() {
        let mut conversation = Conversation::new("cnv_1");
        conversation.begin_turn("Add milk").unwrap();
        // The server answers a call in neither plane in the history and an inspector frame
        // only; a browser call of the same step is left pending (no answer yet).
        conversation.observe_frame(&frame(json!({ "type": "inspector", "lane": "host", "eventType": "tool.unknown", "summary": "model called \"nope\"", "data": { "wireName": "nope" } })), 1.0);
        let step_finish = frame(json!({
            "type": "step-finish", "stepId": "s", "finishReason": "tool-calls",
            "responseMessages": [
                { "role": "assistant", "content": [
                    { "type": "tool-call", "toolCallId": "u1", "toolName": "nope", "input": { "x": 1 } },
                ] },
                { "role": "tool", "content": [
                    { "type": "tool-result", "toolCallId": "u1", "toolName": "nope", "output": { "type": "json", "value": dpas_protocol::error::tool_results::no_such_tool("nope") } },
                ] },
                { "role": "assistant", "content": [
                    { "type": "tool-call", "toolCallId": "b1", "toolName": "view_t__a__b", "input": {} },
                ] },
            ],
            "pendingToolCalls": [{ "toolCallId": "b1", "wireName": "view_t__a__b", "canonicalId": "view:t.a.b", "input": {} }],
        }));
        conversation.observe_frame(&step_finish, 2.0);
        let calls = &conversation.state().messages[1].tool_calls;
        assert_eq!(
            calls.len(),
            1,
            "the pending browser call waits for the loop: {calls:?}"
        );
        assert_eq!(
            (
                calls[0].tool_call_id.as_str(),
                calls[0].wire_name.as_str(),
                calls[0].state
            ),
            ("u1", "nope", ToolCallState::Error)
        );
        assert_eq!(calls[0].canonical_id, "nope");
        assert_eq!(calls[0].input, json!({ "x": 1 }));
        // A call already shown is not shown twice.
        conversation.observe_frame(&step_finish, 3.0);
        assert_eq!(conversation.state().messages[1].tool_calls.len(), 1);
    }

    #[test]
    fn turn_usage_restarts_while_conversation_usage_accumulates() {
        let mut conversation = Conversation::new("cnv_1");
        conversation.begin_turn("one").unwrap();
        conversation.observe_frame(&finish(Some(usage(10))), 0.0);
        conversation.finish_turn(&TurnOutcome {
            status: TurnStatus::Completed,
            messages: vec![],
            usage: None,
            error: None,
        });
        conversation.begin_turn("two").unwrap();
        assert_eq!(conversation.state().turn_usage, None);
        conversation.observe_frame(&finish(Some(usage(5))), 0.0);
        conversation.observe_frame(&finish(None), 0.0);
        assert_eq!(conversation.state().turn_usage.unwrap().input_tokens, 5);
        assert_eq!(
            conversation
                .state()
                .conversation_usage
                .unwrap()
                .input_tokens,
            15
        );
    }

    #[test]
    fn an_ended_turn_keeps_its_error_and_settles_calls_left_running() {
        let mut conversation = Conversation::new("cnv_1");
        conversation.begin_turn("go").unwrap();
        conversation.observe_event(
            &TurnEvent::ToolCallStarted {
                tool_call_id: "b1".into(),
                wire_name: "view_a__b__c".into(),
                canonical_id: "view:a.b.c".into(),
                input: json!({}),
            },
            0.0,
        );
        let error = ErrorBody {
            code: "TRANSPORT_FAILED".into(),
            message: "Could not reach the chat endpoint.".into(),
        };
        conversation.finish_turn(&TurnOutcome {
            status: TurnStatus::Error,
            messages: vec![],
            usage: None,
            error: Some(error.clone()),
        });
        assert_eq!(conversation.state().error, Some(error));
        assert_written_as_derived(conversation.state());
        assert_eq!(
            conversation.state().messages[1].tool_calls[0].state,
            ToolCallState::Error
        );
        conversation.begin_turn("again").unwrap();
        assert_eq!(conversation.state().error, None);
    }

    #[test]
    fn inspector_events_are_bounded() {
        let mut conversation = Conversation::new("cnv_1");
        for n in 0..=MAX_INSPECTOR_EVENTS {
            conversation.observe_event(
                &TurnEvent::CatalogUndecodable {
                    canonical_ids: vec![format!("domain:{n}")],
                },
                n as f64,
            );
        }
        let inspector = &conversation.state().inspector;
        assert_eq!(inspector.len(), MAX_INSPECTOR_EVENTS);
        assert_eq!(inspector[0].at, 1.0);
        assert_eq!(inspector[0].event_type, "catalog.undecodable");
        assert_written_as_derived(conversation.state());
    }

    #[test]
    fn a_stored_thread_restores_its_views() {
        let trace = crate::testing::trace_request("browser-carla-step2");
        let messages: Vec<WireModelMessage> =
            dpas_protocol::test_support::from_value(trace["messages"].clone()).unwrap();
        let conversation = Conversation::restore("cnv_clkfjhdk056i", messages.clone(), None);
        let state = conversation.state();
        let roles: Vec<ChatRole> = state.messages.iter().map(|m| m.role).collect();
        assert_eq!(
            roles,
            [ChatRole::User, ChatRole::Assistant, ChatRole::Assistant]
        );
        assert_eq!(
            state.messages[0].text(),
            "Which invoices are overdue, and by how much?"
        );
        let first = &state.messages[1];
        assert_eq!(
            first.text(),
            "Checking the **ageing ladder** and narrowing to `overdue`.\n"
        );
        let calls: Vec<(&str, Executor, ToolCallState)> = first
            .tool_calls
            .iter()
            .map(|c| (c.wire_name.as_str(), c.executor, c.state))
            .collect();
        assert_eq!(
            calls,
            [
                (
                    "domain_collections-aging",
                    Executor::Server,
                    ToolCallState::Done
                ),
                (
                    "view_invoices__pending__setFilters",
                    Executor::Browser,
                    ToolCallState::Done
                )
            ]
        );
        assert_eq!(first.tool_calls[1].result, Some(json!({ "done": true })));
        assert_eq!(
            first.tool_calls[1].canonical_id,
            "view:invoices.pending.setFilters"
        );
        assert_eq!(conversation.history(), messages);
        assert!(!state.is_running);
        let view = dpas_protocol::test_support::to_value(&state.messages[1]).unwrap();
        assert!(view.get("rawText").is_none() && view.get("toolCalls").is_some());
    }
}
