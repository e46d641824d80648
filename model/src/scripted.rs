//! The scripted provider: a test double for a model vendor. It plays the reference's golden
//! scenario (`fixtures/demo/README.md` §e), or a data-driven script of model turns loaded from
//! a JSON file (`--model scripted:<file>`), so tests can make the model batch calls, name
//! unknown tools, ask for a gated write, fail, go silent, or exceed the step cap.
//!
//! A script names a tool by its canonical id (`view:todo.list.add`, `domain:list-todos`) or
//! by its wire name (`view_todo__list__add`). A canonical id is resolved against the tools
//! the step offers ([`ToolSpec::canonical_id`], set by the host as it composes the catalog),
//! so escalated names (collisions, long ids, instances) come out as the host assigned them.
//! The matching rules are documented in `model/README.md`, and pinned by the tests below.

use std::borrow::Cow;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use dpas_protocol::wire_name::{decode_wire_name, is_valid_canonical_id};
use dpas_protocol::{ContentPart, Role, UsageReport, WireModelMessage};
use futures_util::future::BoxFuture;
use futures_util::stream::{self, StreamExt};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::provider::{
    EventStream, FinishReason, ModelError, ModelErrorKind, ModelEvent, ModelProvider, ModelRequest,
    ToolCall, ToolSpec,
};

/// The id the scripted provider is listed under.
pub const SCRIPTED_MODEL_ID: &str = "scripted";

/// Usage every scripted call reports (the reference's figures).
pub fn scripted_usage() -> UsageReport {
    UsageReport {
        input_tokens: Some(16),
        output_tokens: Some(16),
        total_tokens: Some(32),
        cached_input_tokens: Some(8),
        reasoning_tokens: Some(4),
        cache_write_input_tokens: None,
    }
}

const SET_FILTERS: &str = "view_invoices__pending__setFilters";
const READ_STATE: &str = "view_invoices__pending__readState";
const AGING: &str = "domain_collections-aging";
const ISSUE: &str = "domain_issue-invoice";

/// Tool results present anywhere in the prompt, as `(wire name, value)`, in order.
fn tool_results(messages: &[WireModelMessage]) -> Vec<(&str, &Value)> {
    messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .flat_map(|m| m.parts())
        .filter_map(|p| match p {
            ContentPart::ToolResult {
                tool_name, output, ..
            } => {
                let value = match output.get("type").and_then(Value::as_str) {
                    Some("json") => output.get("value").unwrap_or(&Value::Null),
                    _ => output,
                };
                Some((tool_name.as_str(), value))
            }
            _ => None,
        })
        .collect()
}

/// `€102,600`: whole euros, en-IE grouping, half away from zero.
pub fn format_eur(cents: i64) -> String {
    let euros = (cents as f64 / 100.0).round() as i64;
    let digits = euros.unsigned_abs().to_string();
    let mut grouped = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(c);
    }
    if euros < 0 {
        format!("-€{grouped}")
    } else {
        format!("€{grouped}")
    }
}

/// One scripted model call: what it streams, in order.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScriptTurn {
    /// Rules mode: the first turn whose `when` holds is played.
    #[serde(default)]
    pub when: Option<When>,
    #[serde(default)]
    pub reasoning: Option<String>,
    /// Text, streamed as one delta per element.
    #[serde(default)]
    pub text: Vec<String>,
    #[serde(default)]
    pub tool_calls: Vec<ScriptCall>,
    /// Defaults to `tool-calls` when there are calls, `stop` otherwise.
    #[serde(default)]
    pub finish_reason: Option<String>,
    /// Defaults to the scripted usage; `null` reports none.
    #[serde(default = "default_usage")]
    pub usage: Option<Value>,
    /// Fail before streaming anything, with this message.
    #[serde(default)]
    pub error: Option<String>,
    /// Fail mid-stream, after the text, with this message.
    #[serde(default)]
    pub error_after_text: Option<String>,
    /// Fail mid-stream, after the tool calls (they arrive, the finish never does).
    #[serde(default)]
    pub error_after_calls: Option<String>,
    /// Stream the text, then go silent forever (the loop's inactivity timeout must fire).
    #[serde(default)]
    pub silent_after_text: bool,
    /// Stream the text and the tool calls, then go silent forever (no finish): a model
    /// step cut while its calls are recorded and not yet run.
    #[serde(default)]
    pub silent_after_calls: bool,
    /// Wait this long before the first event.
    #[serde(default)]
    pub delay_ms: u64,
}

fn default_usage() -> Option<Value> {
    Some(
        json!({"inputTokens": 16, "outputTokens": 16, "totalTokens": 32, "cachedInputTokens": 8, "reasoningTokens": 4}),
    )
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScriptCall {
    /// A canonical id (resolved to the wire name the step offers for it) or a wire name.
    pub name: String,
    #[serde(default = "empty_object")]
    pub input: Value,
    /// Arguments that did not parse: the call arrives with `invalid_input` set.
    #[serde(default)]
    pub invalid_input: Option<String>,
}

fn empty_object() -> Value {
    json!({})
}

/// Conditions on the prompt, all of which must hold. Tool names are canonical ids or wire
/// names, as in [`ScriptCall::name`].
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct When {
    /// The last user message's text contains this (case-sensitive substring).
    #[serde(default)]
    pub last_user_contains: Option<String>,
    /// A result of this tool is in the prompt (anywhere in the history).
    #[serde(default)]
    pub has_result: Option<String>,
    /// No result of this tool is in the prompt.
    #[serde(default)]
    pub lacks_result: Option<String>,
    /// This step offers this tool.
    #[serde(default)]
    pub offered: Option<String>,
}

/// A script file: `{"turns": [...]}`. Without any `when`, turns play in order, one per
/// model call, and the last repeats; with `when` on turns, the first matching turn plays.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    pub turns: Vec<ScriptTurn>,
}

#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    #[error("cannot read the script file: {0}")]
    Read(#[from] std::io::Error),
    #[error("the script file is not a valid script: {0}")]
    Parse(#[from] serde_json::Error),
    #[error("the script has no turns")]
    Empty,
    /// A tool name with a `:` that is not a canonical id.
    #[error(
        "{at}: `{name}` is not a canonical id: a tool name with `:` must be `view:<type>.<name>` \
         or `domain:<path>` (meta mode's tools are named by wire name, e.g. `surface_act`)"
    )]
    ToolName {
        /// Where the name is, e.g. `turns[2].toolCalls[0].name`.
        at: String,
        name: String,
    },
}

/// Whether a script's tool name is a canonical id. Wire names never hold a `:` (a provider
/// takes only `[A-Za-z0-9_-]`), so any `:` marks one.
fn is_canonical(name: &str) -> bool {
    name.contains(':')
}

impl Script {
    /// Parses a script and checks it: at least one turn, and every tool name with a `:` a
    /// valid canonical id. Whether a step offers a tool is known only when the step runs.
    pub fn from_json(bytes: &[u8]) -> Result<Self, ScriptError> {
        let script: Script = serde_json::from_slice(bytes)?;
        if script.turns.is_empty() {
            return Err(ScriptError::Empty);
        }
        script.check_tool_names()?;
        Ok(script)
    }

    fn check_tool_names(&self) -> Result<(), ScriptError> {
        for (i, turn) in self.turns.iter().enumerate() {
            let mut names: Vec<(String, &str)> = Vec::new();
            if let Some(when) = &turn.when {
                for (field, name) in [
                    ("hasResult", &when.has_result),
                    ("lacksResult", &when.lacks_result),
                    ("offered", &when.offered),
                ] {
                    if let Some(name) = name {
                        names.push((format!("turns[{i}].when.{field}"), name));
                    }
                }
            }
            for (j, call) in turn.tool_calls.iter().enumerate() {
                names.push((format!("turns[{i}].toolCalls[{j}].name"), &call.name));
            }
            if let Some((at, name)) = names
                .into_iter()
                .find(|(_, n)| is_canonical(n) && !is_valid_canonical_id(n))
            {
                return Err(ScriptError::ToolName {
                    at,
                    name: name.to_owned(),
                });
            }
        }
        Ok(())
    }

    pub fn from_file(path: &std::path::Path) -> Result<Self, ScriptError> {
        Self::from_json(&std::fs::read(path)?)
    }
}

fn last_user_text(messages: &[WireModelMessage]) -> String {
    let Some(m) = messages.iter().rev().find(|m| m.role == Role::User) else {
        return String::new();
    };
    match &m.content {
        dpas_protocol::MessageContent::Text(t) => t.clone(),
        dpas_protocol::MessageContent::Parts(parts) => parts
            .iter()
            .filter_map(|p| match p {
                ContentPart::Text { text, .. } => Some(text.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join(""),
    }
}

/// The tools one step offers, as a script's names see them.
struct Offered<'a>(&'a [ToolSpec]);

impl Offered<'_> {
    /// The wire name a script's name stands for in this step: a wire name stands for itself;
    /// a canonical id for the first offered tool the host mapped to it (domain tools come
    /// first, then the browser's in request order), or, when none is, for the id itself,
    /// which the host then answers `NO_SUCH_TOOL`.
    fn wire_name<'n>(&'n self, name: &'n str) -> &'n str {
        if !is_canonical(name) {
            return name;
        }
        self.0
            .iter()
            .find(|t| t.canonical_id.as_deref() == Some(name))
            .map_or(name, |t| t.name.as_str())
    }

    /// Whether the step offers the tool a script's name names.
    fn offers(&self, name: &str) -> bool {
        if is_canonical(name) {
            self.0
                .iter()
                .any(|t| t.canonical_id.as_deref() == Some(name))
        } else {
            self.0.iter().any(|t| t.name == name)
        }
    }

    /// The canonical id of a tool name met in the prompt: the one this step's offered tool
    /// of that name maps to, else the id a plain (level-0, instance-free) wire name reverses
    /// to, else the name itself (a call the host answered `NO_SUCH_TOOL` keeps the name the
    /// model gave it).
    fn canonical_of<'n>(&self, wire_name: &'n str) -> Cow<'n, str> {
        let mapped = self
            .0
            .iter()
            .find(|t| t.name == wire_name)
            .and_then(|t| t.canonical_id.clone());
        match mapped.or_else(|| decode_wire_name(wire_name)) {
            Some(id) => Cow::Owned(id),
            None => Cow::Borrowed(wire_name),
        }
    }

    /// Whether a result under `result_name` is a result of the tool a script's name names:
    /// a wire name must equal it; a canonical id must equal its canonical id.
    fn is_result_of(&self, result_name: &str, name: &str) -> bool {
        if is_canonical(name) {
            self.canonical_of(result_name) == name
        } else {
            result_name == name
        }
    }
}

impl When {
    fn holds(&self, request: &ModelRequest) -> bool {
        let offered = Offered(&request.tools);
        let results = tool_results(&request.messages);
        let has = |name: &str| results.iter().any(|(n, _)| offered.is_result_of(n, name));
        self.last_user_contains
            .as_deref()
            .is_none_or(|needle| last_user_text(&request.messages).contains(needle))
            && self.has_result.as_deref().is_none_or(has)
            && self.lacks_result.as_deref().is_none_or(|n| !has(n))
            && self.offered.as_deref().is_none_or(|n| offered.offers(n))
    }
}

enum Mode {
    Golden,
    Script(Script),
}

/// The scripted provider. The id counter is per provider instance (one per process in the
/// server), as the reference's module-level counter is.
pub struct ScriptedProvider {
    id: String,
    mode: Mode,
    counter: AtomicU64,
    cursor: AtomicU64,
}

impl ScriptedProvider {
    /// The golden scenario.
    pub fn golden() -> Self {
        Self {
            id: SCRIPTED_MODEL_ID.into(),
            mode: Mode::Golden,
            counter: AtomicU64::new(0),
            cursor: AtomicU64::new(0),
        }
    }

    pub fn from_script(script: Script) -> Self {
        Self {
            id: SCRIPTED_MODEL_ID.into(),
            mode: Mode::Script(script),
            counter: AtomicU64::new(0),
            cursor: AtomicU64::new(0),
        }
    }

    pub fn into_arc(self) -> Arc<dyn ModelProvider> {
        Arc::new(self)
    }

    fn next_id(&self) -> u64 {
        self.counter.fetch_add(1, Ordering::Relaxed) + 1
    }

    fn golden_turn(&self, request: &ModelRequest) -> ScriptTurn {
        let _call = self.next_id(); // `scripted-<n>`: the response id, not on the wire
        let results = tool_results(&request.messages);
        let has = |name: &str| results.iter().any(|(n, _)| *n == name);
        if !has(SET_FILTERS) {
            return ScriptTurn {
                reasoning: Some("<|channel|>analysis Read the ageing, then narrow the table to what is overdue.".into()),
                text: vec!["Checking the **ageing ladder** and narrowing to `overdue`.\n".into()],
                tool_calls: vec![
                    ScriptCall { name: AGING.into(), input: json!({}), invalid_input: None },
                    ScriptCall { name: SET_FILTERS.into(), input: json!({"due": "overdue"}), invalid_input: None },
                ],
                usage: default_usage(),
                ..ScriptTurn::default()
            };
        }
        if !has(READ_STATE) {
            return ScriptTurn {
                tool_calls: vec![ScriptCall {
                    name: READ_STATE.into(),
                    input: json!({}),
                    invalid_input: None,
                }],
                usage: default_usage(),
                ..ScriptTurn::default()
            };
        }
        let last_read = results
            .iter()
            .rev()
            .find(|(n, _)| *n == READ_STATE)
            .map(|(_, v)| *v);
        let rows: &[Value] = last_read
            .and_then(|v| v.get("visibleRows"))
            .and_then(Value::as_array)
            .map_or(&[], Vec::as_slice);
        let text = if rows.is_empty() {
            "Nothing is overdue right now — the ledger is clean.".to_owned()
        } else {
            let total: i64 = rows
                .iter()
                .map(|r| r.get("amount").and_then(Value::as_i64).unwrap_or(0))
                .sum();
            let n = rows.len();
            let noun = if n == 1 { "invoice is" } else { "invoices are" };
            let ending = if request.tools.iter().any(|t| t.name == ISSUE) {
                "Open a row's chase dialog and I can record the reminder against it."
            } else {
                "Issuing and deleting are not available to this identity, so I stopped at reading."
            };
            format!(
                "**{n}** {noun} overdue, worth {}. {ending}",
                format_eur(total)
            )
        };
        ScriptTurn {
            text: vec![text],
            usage: default_usage(),
            ..ScriptTurn::default()
        }
    }

    /// The turn this call plays, its tool names resolved to the step's wire names.
    fn script_turn(&self, script: &Script, request: &ModelRequest) -> Option<ScriptTurn> {
        let _call = self.next_id();
        let mut turn = if script.turns.iter().any(|t| t.when.is_some()) {
            script
                .turns
                .iter()
                .find(|t| t.when.as_ref().is_none_or(|w| w.holds(request)))
                .cloned()
        } else {
            let i = self.cursor.fetch_add(1, Ordering::Relaxed) as usize;
            script.turns.get(i.min(script.turns.len() - 1)).cloned()
        }?;
        let offered = Offered(&request.tools);
        for call in &mut turn.tool_calls {
            if is_canonical(&call.name) {
                call.name = offered.wire_name(&call.name).to_owned();
            }
        }
        Some(turn)
    }

    fn events(&self, turn: ScriptTurn) -> Vec<Result<ModelEvent, ModelError>> {
        let mut events = Vec::new();
        if let Some(r) = turn.reasoning.filter(|r| !r.is_empty()) {
            events.push(Ok(ModelEvent::ReasoningDelta(r)));
        }
        if turn.text.iter().any(|t| !t.is_empty()) {
            let _text_block = self.next_id(); // `t<n>`: the text block's id, not on the wire
        }
        for t in turn.text.into_iter().filter(|t| !t.is_empty()) {
            events.push(Ok(ModelEvent::TextDelta(t)));
        }
        if let Some(message) = turn.error_after_text {
            events.push(Err(ModelError::new(ModelErrorKind::Vendor, message)));
            return events;
        }
        let has_calls = !turn.tool_calls.is_empty();
        for call in turn.tool_calls {
            events.push(Ok(ModelEvent::ToolCall(ToolCall {
                id: format!("stc_{}", self.next_id()),
                name: call.name,
                input: call.input,
                invalid_input: call.invalid_input,
            })));
        }
        if let Some(message) = turn.error_after_calls {
            events.push(Err(ModelError::new(ModelErrorKind::Vendor, message)));
            return events;
        }
        let reason = turn
            .finish_reason
            .unwrap_or_else(|| if has_calls { "tool-calls" } else { "stop" }.into());
        let usage = turn
            .usage
            .as_ref()
            .map(UsageReport::from_json)
            .unwrap_or_default();
        events.push(Ok(ModelEvent::Finish {
            reason: FinishReason(reason),
            usage,
        }));
        events
    }
}

impl ModelProvider for ScriptedProvider {
    fn id(&self) -> &str {
        &self.id
    }

    fn stream(&self, request: ModelRequest) -> BoxFuture<'_, Result<EventStream, ModelError>> {
        Box::pin(async move {
            let turn = match &self.mode {
                Mode::Golden => self.golden_turn(&request),
                Mode::Script(script) => self.script_turn(script, &request).ok_or_else(|| {
                    ModelError::new(
                        ModelErrorKind::Config,
                        "The scripted model has no turn for this prompt.",
                    )
                })?,
            };
            if let Some(message) = turn.error.clone() {
                return Err(ModelError::new(ModelErrorKind::Vendor, message));
            }
            let delay = Duration::from_millis(turn.delay_ms);
            let silent_after_calls = turn.silent_after_calls;
            let silent = turn.silent_after_text || silent_after_calls;
            let mut events = self.events(turn);
            if silent_after_calls {
                events.retain(|e| !matches!(e, Ok(ModelEvent::Finish { .. }) | Err(_)));
            } else if silent {
                // Keep what precedes the first call; then never yield again.
                events.retain(|e| {
                    matches!(
                        e,
                        Ok(ModelEvent::ReasoningDelta(_) | ModelEvent::TextDelta(_))
                    )
                });
            }
            let head = stream::iter(events);
            let delayed = stream::once(async move {
                if !delay.is_zero() {
                    tokio::time::sleep(delay).await;
                }
            })
            .filter_map(|()| async { None });
            let tail = if silent {
                stream::pending().boxed()
            } else {
                stream::empty().boxed()
            };
            Ok(delayed.chain(head).chain(tail).boxed())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::ToolSpec;

    fn request(messages: Vec<WireModelMessage>, tools: &[&str]) -> ModelRequest {
        ModelRequest {
            model: String::new(),
            system: String::new(),
            messages,
            tools: tools
                .iter()
                .map(|n| ToolSpec::new(*n, "", &json!({})))
                .collect(),
        }
    }

    /// A request offering `(wire name, canonical id)` tools, as the host composes them.
    fn offering(messages: Vec<WireModelMessage>, tools: &[(&str, &str)]) -> ModelRequest {
        ModelRequest {
            tools: tools
                .iter()
                .map(|(wire, id)| ToolSpec::new(*wire, "", &json!({})).with_canonical_id(*id))
                .collect(),
            ..request(messages, &[])
        }
    }

    fn scripted(json: &str) -> ScriptedProvider {
        ScriptedProvider::from_script(Script::from_json(json.as_bytes()).unwrap())
    }

    /// Rules that answer `has` when a result of `name` is in the prompt, else `offered` when
    /// the step offers it, else `neither`.
    fn has_offered_neither(name: &str) -> ScriptedProvider {
        let script = json!({"turns": [
            {"when": {"hasResult": name}, "text": ["has"]},
            {"when": {"offered": name}, "text": ["offered"]},
            {"when": {}, "text": ["neither"]}
        ]});
        scripted(&script.to_string())
    }

    /// The first text delta, or the name of the first call.
    async fn first(p: &ScriptedProvider, r: ModelRequest) -> String {
        match p.stream(r).await {
            Err(e) => format!("error: {}", e.message),
            Ok(s) => match s.map(|e| e.unwrap()).collect::<Vec<_>>().await.remove(0) {
                ModelEvent::TextDelta(t) => t,
                ModelEvent::ToolCall(c) => format!("call {}", c.name),
                other => format!("{other:?}"),
            },
        }
    }

    async fn collect(p: &ScriptedProvider, r: ModelRequest) -> Vec<ModelEvent> {
        p.stream(r)
            .await
            .unwrap()
            .map(|e| e.unwrap())
            .collect()
            .await
    }

    fn result(name: &str, value: Value) -> WireModelMessage {
        WireModelMessage::tool_result("x", name, value)
    }

    #[tokio::test]
    async fn silent_after_calls_streams_the_calls_and_never_finishes() {
        let script: Script = serde_json::from_value(json!({"turns": [{
            "text": ["Looking."],
            "toolCalls": [{"name": "domain_list", "input": {}}],
            "silentAfterCalls": true
        }]}))
        .unwrap();
        let p = ScriptedProvider::from_script(script);
        let mut stream = p.stream(request(vec![], &[])).await.unwrap();
        assert_eq!(
            stream.next().await.unwrap().unwrap(),
            ModelEvent::TextDelta("Looking.".into())
        );
        assert!(
            matches!(stream.next().await, Some(Ok(ModelEvent::ToolCall(c))) if c.name == "domain_list")
        );
        assert!(
            futures_util::FutureExt::now_or_never(stream.next()).is_none(),
            "no finish follows the calls"
        );
    }

    #[test]
    fn euro_format() {
        assert_eq!(format_eur(10_260_000), "€102,600");
        assert_eq!(format_eur(1_840_000), "€18,400");
        assert_eq!(format_eur(50), "€1");
        assert_eq!(format_eur(0), "€0");
        assert_eq!(format_eur(12_345_678_900), "€123,456,789");
    }

    #[tokio::test]
    async fn golden_turn_three_steps_with_the_reference_ids() {
        let p = ScriptedProvider::golden();
        let user = WireModelMessage::user_text("Which invoices are overdue, and by how much?");
        let step1 = collect(&p, request(vec![user.clone()], &[ISSUE])).await;
        assert_eq!(step1.len(), 5);
        assert!(
            matches!(&step1[0], ModelEvent::ReasoningDelta(r) if r.starts_with("<|channel|>analysis"))
        );
        let ModelEvent::ToolCall(a) = &step1[2] else {
            panic!()
        };
        let ModelEvent::ToolCall(b) = &step1[3] else {
            panic!()
        };
        // The reference's ids for a fresh process: stc_3, stc_4, then stc_6.
        assert_eq!((a.id.as_str(), a.name.as_str()), ("stc_3", AGING));
        assert_eq!(
            (b.id.as_str(), b.input.clone()),
            ("stc_4", json!({"due": "overdue"}))
        );
        assert!(
            matches!(&step1[4], ModelEvent::Finish { reason, .. } if reason.as_str() == "tool-calls")
        );

        let after_filter = vec![user.clone(), result(SET_FILTERS, json!({"done": true}))];
        let step2 = collect(&p, request(after_filter.clone(), &[ISSUE])).await;
        let ModelEvent::ToolCall(c) = &step2[0] else {
            panic!()
        };
        assert_eq!((c.id.as_str(), c.name.as_str()), ("stc_6", READ_STATE));

        let rows = json!({"visibleRows": [{"amount": 2675000}, {"amount": 780000}, {"amount": 2150000}, {"amount": 1840000}, {"amount": 615000}, {"amount": 960000}, {"amount": 1240000}]});
        let mut full = after_filter;
        full.push(result(READ_STATE, rows));
        let step3 = collect(&p, request(full.clone(), &[ISSUE])).await;
        assert_eq!(
            step3[0],
            ModelEvent::TextDelta("**7** invoices are overdue, worth €102,600. Open a row's chase dialog and I can record the reminder against it.".into())
        );
        let analyst = collect(&p, request(full, &[])).await;
        let ModelEvent::TextDelta(t) = &analyst[0] else {
            panic!()
        };
        assert!(t.ends_with(
            "Issuing and deleting are not available to this identity, so I stopped at reading."
        ));
        let ModelEvent::Finish { usage, .. } = analyst.last().unwrap() else {
            panic!()
        };
        assert_eq!(*usage, scripted_usage());
    }

    #[tokio::test]
    async fn golden_zero_and_one_rows() {
        let p = ScriptedProvider::golden();
        let base = vec![result(SET_FILTERS, json!({"done": true}))];
        let mut none = base.clone();
        none.push(result(READ_STATE, json!({"visibleRows": []})));
        assert_eq!(
            collect(&p, request(none, &[])).await[0],
            ModelEvent::TextDelta("Nothing is overdue right now — the ledger is clean.".into())
        );
        let mut one = base;
        one.push(result(
            READ_STATE,
            json!({"visibleRows": [{"amount": 100}]}),
        ));
        let ModelEvent::TextDelta(t) = &collect(&p, request(one, &[])).await[0] else {
            panic!()
        };
        assert!(t.starts_with("**1** invoice is overdue, worth €1. "));
    }

    #[tokio::test]
    async fn scripts_play_in_order_or_by_rule() {
        let script = Script::from_json(
            br#"{"turns": [
            {"text": ["a"], "toolCalls": [{"name": "domain_x"}]},
            {"text": ["b"], "usage": null}
        ]}"#,
        )
        .unwrap();
        let p = ScriptedProvider::from_script(script);
        let first = collect(&p, request(vec![], &[])).await;
        assert!(
            matches!(&first[1], ModelEvent::ToolCall(c) if c.name == "domain_x" && c.input == json!({}))
        );
        let second = collect(&p, request(vec![], &[])).await;
        assert_eq!(second[0], ModelEvent::TextDelta("b".into()));
        assert!(
            matches!(&second[1], ModelEvent::Finish { reason, usage } if reason.as_str() == "stop" && *usage == UsageReport::default())
        );
        // The last turn repeats.
        assert_eq!(
            collect(&p, request(vec![], &[])).await[0],
            ModelEvent::TextDelta("b".into())
        );

        let rules = Script::from_json(br#"{"turns": [
            {"when": {"lastUserContains": "issue"}, "toolCalls": [{"name": "domain_issue-invoice", "input": {"id": 21}}]},
            {"when": {}, "text": ["fallback"]}
        ]}"#)
        .unwrap();
        let p = ScriptedProvider::from_script(rules);
        let e = collect(
            &p,
            request(
                vec![WireModelMessage::user_text("please issue draft 21")],
                &[],
            ),
        )
        .await;
        assert!(matches!(&e[0], ModelEvent::ToolCall(c) if c.input == json!({"id": 21})));
        let e = collect(&p, request(vec![WireModelMessage::user_text("hello")], &[])).await;
        assert_eq!(e[0], ModelEvent::TextDelta("fallback".into()));
    }

    /// The worked example of README.md plays as the README says.
    #[tokio::test]
    async fn the_readme_example_plays_as_documented() {
        let readme = include_str!("../README.md");
        let from = readme.find("A worked example").unwrap();
        let block = &readme[from..];
        let json = &block[block.find("```json\n").unwrap() + 8..];
        let json = &json[..json.find("```").unwrap()];
        let p = ScriptedProvider::from_script(Script::from_json(json.as_bytes()).unwrap());
        let todo = &[("view_todo__list__add", "view:todo.list.add")];
        let ask = WireModelMessage::user_text("Add milk please");
        let first = collect(&p, offering(vec![ask.clone()], todo)).await;
        assert!(first.iter().any(|e| matches!(e,
            ModelEvent::ToolCall(c) if c.name == "view_todo__list__add" && c.input == json!({"text": "milk"}))));
        let answered = vec![
            ask,
            WireModelMessage::tool_result("x", "view_todo__list__add", json!({"ok": true})),
        ];
        let second = collect(&p, offering(answered, todo)).await;
        assert_eq!(
            second[0],
            ModelEvent::TextDelta("Milk is on your list.".into())
        );
        for other in ["hi", "Add Milk please"] {
            let events =
                collect(&p, offering(vec![WireModelMessage::user_text(other)], todo)).await;
            assert_eq!(
                events[0],
                ModelEvent::TextDelta("I can add things to your todo list.".into())
            );
        }
    }

    #[tokio::test]
    async fn script_errors() {
        let p = ScriptedProvider::from_script(
            Script::from_json(br#"{"turns": [{"error": "boom"}]}"#).unwrap(),
        );
        assert_eq!(
            p.stream(request(vec![], &[])).await.err().unwrap().message,
            "boom"
        );
        let p = ScriptedProvider::from_script(
            Script::from_json(br#"{"turns": [{"text": ["x"], "errorAfterText": "cut"}]}"#).unwrap(),
        );
        let events: Vec<_> = p
            .stream(request(vec![], &[]))
            .await
            .unwrap()
            .collect()
            .await;
        assert_eq!(events.len(), 2);
        assert_eq!(events[1].clone().unwrap_err().message, "cut");
        assert!(matches!(
            Script::from_json(br#"{"turns": []}"#),
            Err(ScriptError::Empty)
        ));
        assert!(Script::from_json(br#"{"turns": [{"bogus": 1}]}"#).is_err());
    }

    #[tokio::test]
    async fn last_user_contains_is_a_case_sensitive_substring_of_the_last_user_message() {
        let p = scripted(
            r#"{"turns": [
            {"when": {"lastUserContains": "milk"}, "text": ["matched"]},
            {"when": {}, "text": ["fallback"]}
        ]}"#,
        );
        let user = |t: &str| WireModelMessage::user_text(t);
        // A substring anywhere, exact case.
        assert_eq!(
            first(&p, request(vec![user("buy oat milk!")], &[])).await,
            "matched"
        );
        assert_eq!(
            first(&p, request(vec![user("Buy Milk")], &[])).await,
            "fallback"
        );
        assert_eq!(
            first(&p, request(vec![user("MILK")], &[])).await,
            "fallback"
        );
        // Only the last user message counts, whatever follows it.
        let earlier = vec![
            user("milk"),
            WireModelMessage::new(
                Role::Assistant,
                dpas_protocol::MessageContent::Text("Done.".into()),
            ),
            user("and bread"),
        ];
        assert_eq!(first(&p, request(earlier, &[])).await, "fallback");
        let then_results = vec![user("milk"), result("domain_x", json!({}))];
        assert_eq!(first(&p, request(then_results, &[])).await, "matched");
        // Text parts are joined with nothing between them.
        let parts: WireModelMessage = serde_json::from_value(json!({"role": "user", "content": [
            {"type": "text", "text": "mi"}, {"type": "text", "text": "lk"}
        ]}))
        .unwrap();
        assert_eq!(first(&p, request(vec![parts], &[])).await, "matched");
        // No user message: the text is empty, and only `""` is in it.
        assert_eq!(first(&p, request(vec![], &[])).await, "fallback");
        let empty =
            scripted(r#"{"turns": [{"when": {"lastUserContains": ""}, "text": ["always"]}]}"#);
        assert_eq!(first(&empty, request(vec![], &[])).await, "always");
    }

    #[tokio::test]
    async fn rules_are_tried_in_order_and_every_condition_must_hold() {
        let p = scripted(
            r#"{"turns": [
            {"when": {"lastUserContains": "a", "offered": "domain_x"}, "text": ["first"]},
            {"when": {"lastUserContains": "a"}, "text": ["second"]},
            {"text": ["no when holds always"]},
            {"when": {}, "text": ["never reached"]}
        ]}"#,
        );
        let a = || vec![WireModelMessage::user_text("a")];
        assert_eq!(first(&p, request(a(), &["domain_x"])).await, "first");
        assert_eq!(first(&p, request(a(), &[])).await, "second");
        assert_eq!(
            first(&p, request(vec![WireModelMessage::user_text("b")], &[])).await,
            "no when holds always"
        );
        // Rules keep no state: the same prompt plays the same turn.
        assert_eq!(first(&p, request(a(), &["domain_x"])).await, "first");
    }

    #[tokio::test]
    async fn when_no_rule_holds_the_model_step_fails() {
        let p = scripted(r#"{"turns": [{"when": {"lastUserContains": "milk"}, "text": ["x"]}]}"#);
        let err = p
            .stream(request(vec![WireModelMessage::user_text("bread")], &[]))
            .await
            .err()
            .unwrap();
        assert_eq!(err.kind, ModelErrorKind::Config);
        assert_eq!(
            err.message,
            "The scripted model has no turn for this prompt."
        );
    }

    #[tokio::test]
    async fn wire_names_match_whole_and_exact() {
        let p = has_offered_neither("view_todo__list__add");
        let near = [
            "view_todo__list__add_at_a",
            "View_todo__list__add",
            "view_todo__list",
        ];
        let answered = |name: &str| request(vec![result(name, json!({}))], &[]);
        assert_eq!(first(&p, request(vec![], &near)).await, "neither");
        assert_eq!(first(&p, answered(near[0])).await, "neither");
        let exact = request(vec![], &["view_todo__list__add"]);
        assert_eq!(first(&p, exact).await, "offered");
        assert_eq!(first(&p, answered("view_todo__list__add")).await, "has");
        // A wire name is called as written, offered or not.
        let p = scripted(r#"{"turns": [{"toolCalls": [{"name": "domain_nope"}]}]}"#);
        assert_eq!(first(&p, request(vec![], &[])).await, "call domain_nope");
    }

    #[tokio::test]
    async fn a_canonical_id_is_called_under_the_wire_name_the_step_offers_for_it() {
        let p = scripted(
            r#"{"turns": [
            {"toolCalls": [{"name": "view:todo.list.add", "input": {"text": "milk"}}, {"name": "domain:list-todos"}]}
        ]}"#,
        );
        // Plain names, and names the host escalated (an instance, a shortened id).
        for (view, domain) in [
            ("view_todo__list__add", "domain_list-todos"),
            (
                "view_todo__list__add_at_main",
                "domain_list-todos_0_abcdefg",
            ),
        ] {
            let events = collect(
                &p,
                offering(
                    vec![],
                    &[(domain, "domain:list-todos"), (view, "view:todo.list.add")],
                ),
            )
            .await;
            let calls: Vec<(&str, &Value)> = events
                .iter()
                .filter_map(|e| match e {
                    ModelEvent::ToolCall(c) => Some((c.name.as_str(), &c.input)),
                    _ => None,
                })
                .collect();
            assert_eq!(
                calls,
                [(view, &json!({"text": "milk"})), (domain, &json!({}))]
            );
        }
        // Several tools of one id (a component mounted twice): the first offered.
        let twice = offering(
            vec![],
            &[
                ("view_todo__list__add_at_b", "view:todo.list.add"),
                ("view_todo__list__add_at_a", "view:todo.list.add"),
            ],
        );
        assert_eq!(first(&p, twice).await, "call view_todo__list__add_at_b");
    }

    #[tokio::test]
    async fn a_canonical_id_the_step_does_not_offer_is_called_by_the_id_itself() {
        let p = scripted(
            r#"{"turns": [
            {"when": {"lacksResult": "domain:archive-done"}, "toolCalls": [{"name": "domain:archive-done"}]},
            {"when": {"hasResult": "domain:archive-done"}, "text": ["refused"]}
        ]}"#,
        );
        // Not offered (a wire name that merely looks like it does not count): the call goes out
        // under the id, and the host answers NO_SUCH_TOOL.
        let offered = &[("domain_archive-done", "domain:archive-done-cards")];
        assert_eq!(
            first(&p, offering(vec![], offered)).await,
            "call domain:archive-done"
        );
        // That answer, kept under the id, is a result of the id: the rule does not repeat.
        let answered = vec![result(
            "domain:archive-done",
            json!({"code": "NO_SUCH_TOOL"}),
        )];
        assert_eq!(first(&p, offering(answered, offered)).await, "refused");
    }

    #[tokio::test]
    async fn conditions_take_canonical_ids() {
        let p = has_offered_neither("view:todo.list.add");
        let escalated = &[("view_todo__list__add_at_main", "view:todo.list.add")];
        // `offered`: the host mapped an offered tool to the id, whatever its wire name.
        assert_eq!(first(&p, offering(vec![], escalated)).await, "offered");
        assert_eq!(
            first(
                &p,
                offering(vec![], &[("view_todo__list__add", "view:todo.list.other")])
            )
            .await,
            "neither"
        );
        // `hasResult`: a result under the name the step offers for the id…
        let r = |name: &str| vec![result(name, json!({"ok": true}))];
        assert_eq!(
            first(&p, offering(r("view_todo__list__add_at_main"), escalated)).await,
            "has"
        );
        // …or, for a tool this step no longer offers, under a plain wire name that reverses
        // to the id; an escalated name cannot be reversed.
        assert_eq!(
            first(&p, offering(r("view_todo__list__add"), &[])).await,
            "has"
        );
        assert_eq!(
            first(&p, offering(r("view_todo__list__add_at_main"), &[])).await,
            "neither"
        );
        // `lacksResult` is its negation.
        let lacks = scripted(
            r#"{"turns": [
            {"when": {"lacksResult": "domain:list-todos"}, "text": ["lacks"]},
            {"when": {}, "text": ["has"]}
        ]}"#,
        );
        let listed = &[("domain_list-todos", "domain:list-todos")];
        assert_eq!(first(&lacks, offering(vec![], listed)).await, "lacks");
        assert_eq!(
            first(&lacks, offering(r("domain_list-todos"), listed)).await,
            "has"
        );
    }

    #[tokio::test]
    async fn sequence_scripts_resolve_canonical_ids_too() {
        let p = scripted(r#"{"turns": [{"toolCalls": [{"name": "domain:list-todos"}]}]}"#);
        let listed = &[("domain_list-todos", "domain:list-todos")];
        assert_eq!(
            first(&p, offering(vec![], listed)).await,
            "call domain_list-todos"
        );
    }

    #[test]
    fn a_name_with_a_colon_must_be_a_canonical_id() {
        for (json, at, name) in [
            (
                r#"{"turns": [{"toolCalls": [{"name": "domain_x"}, {"name": "view:todo.list.Add"}]}]}"#,
                "turns[0].toolCalls[1].name",
                "view:todo.list.Add",
            ),
            (
                r#"{"turns": [{"text": ["x"]}, {"when": {"hasResult": "domain:"}}]}"#,
                "turns[1].when.hasResult",
                "domain:",
            ),
            (
                r#"{"turns": [{"when": {"lacksResult": "meta:surface_act"}}]}"#,
                "turns[0].when.lacksResult",
                "meta:surface_act",
            ),
            (
                r#"{"turns": [{"when": {"offered": "todo:list"}}]}"#,
                "turns[0].when.offered",
                "todo:list",
            ),
        ] {
            match Script::from_json(json.as_bytes()) {
                Err(e @ ScriptError::ToolName { .. }) => {
                    let ScriptError::ToolName { at: a, name: n } = &e else {
                        unreachable!()
                    };
                    assert_eq!((a.as_str(), n.as_str()), (at, name));
                    assert!(e
                        .to_string()
                        .starts_with(&format!("{at}: `{name}` is not a canonical id")));
                }
                other => panic!("{json}: {other:?}"),
            }
        }
        // Valid ids and plain wire names load; `lastUserContains` is text, not a name.
        Script::from_json(
            br#"{"turns": [{"when": {"lastUserContains": "a:b", "offered": "view:kanban.board.moveCard"},
            "toolCalls": [{"name": "domain:archive-done-cards"}, {"name": "surface_act"}]}]}"#,
        )
        .unwrap();
    }

    /// `examples/todo-backend/script.json`, which names its tools by canonical id, plays the
    /// turn its browser test expects (read at run time: the file is outside this crate).
    #[tokio::test]
    async fn the_todo_backend_example_script_plays_its_turn() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../examples/todo-backend/script.json");
        let p = ScriptedProvider::from_script(Script::from_file(&path).unwrap());
        let tools = &[
            ("domain_list-todos", "domain:list-todos"),
            ("domain_add-todo", "domain:add-todo"),
            ("domain_delete-all-todos", "domain:delete-all-todos"),
        ];
        let mut prompt = vec![WireModelMessage::user_text("please clear my list")];
        let events = collect(&p, offering(prompt.clone(), tools)).await;
        assert_eq!(
            events[0],
            ModelEvent::TextDelta("Let me look at your list.".into())
        );
        assert!(matches!(&events[1], ModelEvent::ToolCall(c) if c.name == "domain_list-todos"));
        prompt.push(result("domain_list-todos", json!({"status": "ok"})));
        assert_eq!(
            first(&p, offering(prompt.clone(), tools)).await,
            "call domain_delete-all-todos"
        );
        prompt.push(result(
            "domain_delete-all-todos",
            json!({"status": "approval-required"}),
        ));
        assert_eq!(
            first(&p, offering(prompt, tools)).await,
            "Clearing your list needs your approval: see the card above."
        );
    }
}
