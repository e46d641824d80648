//! The scripted provider: a test double for a model vendor. It plays the reference's golden
//! scenario (`fixtures/demo/README.md` §e), or a data-driven script of model turns loaded from
//! a JSON file (`--model scripted:<file>`), so tests can make the model batch calls, name
//! unknown tools, ask for a gated write, fail, go silent, or exceed the step cap.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use dpas_protocol::{ContentPart, Role, UsageReport, WireModelMessage};
use futures_util::future::BoxFuture;
use futures_util::stream::{self, StreamExt};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::provider::{
    EventStream, FinishReason, ModelError, ModelErrorKind, ModelEvent, ModelProvider, ModelRequest,
    ToolCall,
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

/// Conditions on the prompt, all of which must hold.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct When {
    /// The last user message's text contains this.
    #[serde(default)]
    pub last_user_contains: Option<String>,
    /// A tool result with this wire name is in the prompt.
    #[serde(default)]
    pub has_result: Option<String>,
    /// No tool result with this wire name is in the prompt.
    #[serde(default)]
    pub lacks_result: Option<String>,
    /// A tool with this name is offered.
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
}

impl Script {
    pub fn from_json(bytes: &[u8]) -> Result<Self, ScriptError> {
        let script: Script = serde_json::from_slice(bytes)?;
        if script.turns.is_empty() {
            return Err(ScriptError::Empty);
        }
        Ok(script)
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

impl When {
    fn holds(&self, request: &ModelRequest) -> bool {
        let results = tool_results(&request.messages);
        let has = |name: &str| results.iter().any(|(n, _)| *n == name);
        self.last_user_contains
            .as_deref()
            .is_none_or(|needle| last_user_text(&request.messages).contains(needle))
            && self.has_result.as_deref().is_none_or(has)
            && self.lacks_result.as_deref().is_none_or(|n| !has(n))
            && self
                .offered
                .as_deref()
                .is_none_or(|n| request.tools.iter().any(|t| t.name == n))
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

    fn script_turn(&self, script: &Script, request: &ModelRequest) -> Option<ScriptTurn> {
        let _call = self.next_id();
        if script.turns.iter().any(|t| t.when.is_some()) {
            return script
                .turns
                .iter()
                .find(|t| t.when.as_ref().is_none_or(|w| w.holds(request)))
                .cloned();
        }
        let i = self.cursor.fetch_add(1, Ordering::Relaxed) as usize;
        script.turns.get(i.min(script.turns.len() - 1)).cloned()
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
        let ask = WireModelMessage::user_text("Add milk please");
        let first = collect(&p, request(vec![ask.clone()], &["view_todo__list__add"])).await;
        assert!(first.iter().any(|e| matches!(e,
            ModelEvent::ToolCall(c) if c.name == "view_todo__list__add" && c.input == json!({"text": "milk"}))));
        let answered = vec![
            ask,
            WireModelMessage::tool_result("x", "view_todo__list__add", json!({"ok": true})),
        ];
        let second = collect(&p, request(answered, &["view_todo__list__add"])).await;
        assert_eq!(
            second[0],
            ModelEvent::TextDelta("Milk is on your list.".into())
        );
        let other = collect(&p, request(vec![WireModelMessage::user_text("hi")], &[])).await;
        assert_eq!(
            other[0],
            ModelEvent::TextDelta("I can add things to your todo list.".into())
        );
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
}
