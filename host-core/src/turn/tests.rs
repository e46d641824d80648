//! The step loop against a fake transport, UI and clock: every J rule, and a replay of the
//! reference browser's golden turn whose posted bodies must equal the recorded ones.

use super::*;
use crate::capability::{ActionDef, Availability, ComponentDef, Confirmation, Effect, Handler};
use crate::schema::empty_object_schema;
use crate::testing::{demo_surface, trace_request, traces_dir, DemoScreen, FakeClock};
use dpas_protocol::encode_frame;
use futures_executor::block_on;
use futures_util::FutureExt;
use serde_json::json;
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;

/// One scripted answer of the fake transport.
enum Reply {
    /// 200 with this NDJSON body, delivered in chunks of `chunk` bytes.
    Stream(Vec<u8>, usize),
    /// Any status with a body read whole.
    Status(u16, Vec<u8>),
    /// The body breaks after these bytes.
    Broken(Vec<u8>),
    Unreachable,
}

#[derive(Default)]
struct Fake {
    replies: RefCell<VecDeque<Reply>>,
    posted: RefCell<Vec<Value>>,
    clock: Rc<FakeClock>,
    /// Time each POST takes.
    post_ms: Cell<f64>,
    aborted: Cell<bool>,
    abort_on_post: Cell<Option<usize>>,
    until_false_for: Cell<u32>,
    has_until: Cell<bool>,
    yields: Cell<u32>,
    confirm_answer: Cell<bool>,
    /// The turn is cancelled while the user is being asked.
    abort_on_confirm: Cell<bool>,
    confirms: RefCell<Vec<ConfirmRequest>>,
    frames: RefCell<Vec<String>>,
    events: RefCell<Vec<TurnEvent>>,
    screen: RefCell<Option<Rc<DemoScreen>>>,
}

impl Transport for Fake {
    fn post(
        &self,
        body: Vec<u8>,
    ) -> LocalBoxFuture<'static, Result<StepResponse, TransportFailure>> {
        self.posted
            .borrow_mut()
            .push(serde_json::from_slice(&body).expect("a JSON body"));
        self.clock.0.set(self.clock.0.get() + self.post_ms.get());
        if self.abort_on_post.get() == Some(self.posted.borrow().len()) {
            self.aborted.set(true);
        }
        let reply = self
            .replies
            .borrow_mut()
            .pop_front()
            .expect("a scripted reply");
        let stream = |chunks: Vec<Result<Vec<u8>, TransportFailure>>| {
            Some(futures_util::stream::iter(chunks).boxed_local())
        };
        let response = match reply {
            Reply::Stream(bytes, chunk) => Ok(StepResponse {
                status: 200,
                body: stream(bytes.chunks(chunk).map(|c| Ok(c.to_vec())).collect()),
            }),
            Reply::Status(status, bytes) => Ok(StepResponse {
                status,
                body: stream(vec![Ok(bytes)]),
            }),
            Reply::Broken(bytes) => Ok(StepResponse {
                status: 200,
                body: stream(vec![Ok(bytes), Err(TransportFailure)]),
            }),
            Reply::Unreachable => Err(TransportFailure),
        };
        async move { response }.boxed_local()
    }
}

impl TaskYield for Fake {
    fn yield_task(&self) -> LocalBoxFuture<'static, ()> {
        self.yields.set(self.yields.get() + 1);
        self.clock.0.set(self.clock.0.get() + 0.4);
        async {}.boxed_local()
    }
}

impl AbortSignal for Fake {
    fn aborted(&self) -> bool {
        self.aborted.get()
    }
}

impl TurnUi for Fake {
    fn current_pathname(&self) -> String {
        self.screen
            .borrow()
            .as_ref()
            .map(|s| s.pathname.borrow().clone())
            .unwrap_or_default()
    }

    fn has_until(&self) -> bool {
        self.has_until.get()
    }

    fn until(&self) -> bool {
        let left = self.until_false_for.get();
        self.until_false_for.set(left.saturating_sub(1));
        left == 0
    }

    fn confirm(&self, request: &ConfirmRequest) -> LocalBoxFuture<'static, bool> {
        self.confirms.borrow_mut().push(request.clone());
        if self.abort_on_confirm.get() {
            // A dismissed dialog resolves false, like the unmounted dock does on cancel.
            self.aborted.set(true);
            return async { false }.boxed_local();
        }
        let answer = self.confirm_answer.get();
        async move { answer }.boxed_local()
    }
}

impl TurnObserver for Fake {
    fn on_frame(&self, frame: &Frame, _raw: Option<&str>) {
        self.frames.borrow_mut().push(frame.frame_type().to_owned());
    }

    fn on_event(&self, event: &TurnEvent) {
        self.events.borrow_mut().push(event.clone());
    }
}

struct Harness {
    surface: Surface,
    screen: Rc<DemoScreen>,
    fake: Fake,
}

impl Harness {
    fn new() -> Self {
        let (surface, screen, clock) = demo_surface();
        let fake = Fake {
            clock,
            ..Fake::default()
        };
        *fake.screen.borrow_mut() = Some(screen.clone());
        Self {
            surface,
            screen,
            fake,
        }
    }

    fn reply(&self, reply: Reply) {
        self.fake.replies.borrow_mut().push_back(reply);
    }

    fn options(&self) -> TurnOptions {
        TurnOptions {
            conversation_id: "cnv_test".into(),
            turn_id: "trn_test".into(),
            messages: vec![WireModelMessage::user_text("Which invoices are overdue?")],
            pathname: "/receivables/pending".into(),
            route_floors: Some(RouteFloors::demo()),
            model_id: None,
            catalog_mode: CatalogMode::Direct,
            settle: SettlePolicy::default(),
        }
    }

    fn run(&self, options: TurnOptions) -> TurnOutcome {
        let fake = &self.fake;
        let env = TurnEnv {
            surface: &self.surface,
            transport: fake,
            clock: &*fake.clock,
            yielder: fake,
            signal: fake,
            ui: fake,
            observer: fake,
        };
        block_on(run_turn(&env, options))
    }

    fn posted(&self) -> Vec<Value> {
        self.fake.posted.borrow().clone()
    }
}

fn ndjson(frames: &[Value]) -> Vec<u8> {
    frames
        .iter()
        .flat_map(|f| encode_frame(&serde_json::from_value::<Frame>(f.clone()).expect("a frame")))
        .collect()
}

fn start(domain: Value) -> Value {
    json!({ "type": "step-start", "stepId": "stp_x", "turnId": "trn_test", "conversationId": "cnv_test", "domainTools": domain, "scope": [] })
}

fn call(id: &str, wire: &str, canonical: &str, input: Value) -> Value {
    json!({ "toolCallId": id, "wireName": wire, "canonicalId": canonical, "input": input })
}

/// A whole step's frames: start, the server's frames, then a finish with these pending calls.
fn step_frames(server: &[Value], pending: &[Value], usage: Option<Value>) -> Vec<Value> {
    let mut frames = vec![start(json!([]))];
    frames.extend(server.iter().cloned());
    let mut parts = vec![json!({ "type": "text", "text": "working" })];
    parts.extend(pending.iter().map(|p| json!({ "type": "tool-call", "toolCallId": p["toolCallId"], "toolName": p["wireName"], "input": p["input"] })));
    let mut finish = json!({
        "type": "step-finish", "stepId": "stp_x", "finishReason": if pending.is_empty() { "stop" } else { "tool-calls" },
        "responseMessages": [{ "role": "assistant", "content": parts }],
        "pendingToolCalls": pending,
    });
    if let Some(usage) = usage {
        finish["usage"] = usage;
    }
    frames.push(finish);
    frames
}

fn step(server: &[Value], pending: &[Value], usage: Option<Value>) -> Reply {
    Reply::Stream(ndjson(&step_frames(server, pending, usage)), 5)
}

fn done() -> Reply {
    step(&[], &[], None)
}

fn tool_values(outcome: &TurnOutcome) -> Vec<Value> {
    outcome
        .messages
        .iter()
        .filter(|m| m.role == dpas_protocol::Role::Tool)
        .map(|m| serde_json::to_value(m).unwrap()["content"][0]["output"]["value"].clone())
        .collect()
}

fn error(outcome: &TurnOutcome) -> (&str, &str) {
    let error = outcome.error.as_ref().expect("an error");
    (error.code.as_str(), error.message.as_str())
}

const SET_FILTERS: (&str, &str) = (
    "view_invoices__pending__setFilters",
    "view:invoices.pending.setFilters",
);
const READ_STATE: (&str, &str) = (
    "view_invoices__pending__readState",
    "view:invoices.pending.readState",
);
const GO_TO: (&str, &str) = ("view_app__navigation__goTo", "view:app.navigation.goTo");

fn pending(id: &str, (wire, canonical): (&str, &str), input: Value) -> Value {
    call(id, wire, canonical, input)
}

// ---- the golden turn ------------------------------------------------------------------------

fn trace_body(name: &str) -> Vec<u8> {
    let path = traces_dir().join(format!("{name}.response.txt"));
    let text = std::fs::read(&path).expect("a response trace");
    let at = text
        .windows(2)
        .position(|w| w == b"\n\n")
        .expect("headers end")
        + 2;
    text[at..].to_vec()
}

#[test]
fn the_golden_turn_posts_exactly_what_the_reference_browser_posted() {
    dpas_protocol::require_traces!();
    let h = Harness::new();
    let step2 = trace_request("browser-carla-step2");
    // readState answers with the rows the reference table had (the trace's stc_6 result).
    let rows = step2["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool" && m["content"][0]["toolCallId"] == "stc_6")
        .map(|m| m["content"][0]["output"]["value"].clone())
        .unwrap();
    h.screen
        .outputs
        .borrow_mut()
        .insert(READ_STATE.1.into(), rows);
    for (n, chunk) in [(0, 7), (1, 1), (2, 4096)] {
        h.reply(Reply::Stream(
            trace_body(&format!("browser-carla-step{n}")),
            chunk,
        ));
    }
    let step0 = trace_request("browser-carla-step0");
    let options = TurnOptions {
        conversation_id: step0["conversationId"].as_str().unwrap().into(),
        turn_id: step0["turnId"].as_str().unwrap().into(),
        messages: serde_json::from_value(step0["messages"].clone()).unwrap(),
        pathname: "/receivables/pending".into(),
        route_floors: Some(RouteFloors::demo()),
        model_id: Some("mock/scripted".into()),
        catalog_mode: CatalogMode::Direct,
        settle: SettlePolicy::default(),
    };
    let outcome = h.run(options);
    assert_eq!(outcome.status, TurnStatus::Completed, "{:?}", outcome.error);
    let posted = h.posted();
    assert_eq!(posted.len(), 3);
    for (n, body) in posted.iter().enumerate() {
        assert_eq!(
            body,
            &trace_request(&format!("browser-carla-step{n}")),
            "step {n}"
        );
    }
    let last: Vec<Value> = step2["messages"].as_array().unwrap().clone();
    assert_eq!(
        serde_json::to_value(&outcome.messages)
            .unwrap()
            .as_array()
            .unwrap()[..last.len()],
        last[..]
    );
    assert_eq!(outcome.messages.len(), last.len() + 1);
    let usage = outcome.usage.unwrap();
    assert_eq!(
        (
            usage.input_tokens,
            usage.output_tokens,
            usage.reported_steps
        ),
        (48, 48, 3)
    );
    assert_eq!(
        h.screen.calls.borrow()[0],
        (SET_FILTERS.1.to_owned(), json!({ "due": "overdue" }))
    );
    let events = h.fake.events.borrow();
    assert!(events
        .iter()
        .any(|e| matches!(e, TurnEvent::Settled(SettleOutcome::Settled { ticks: 2 }))));
    assert_eq!(
        events
            .iter()
            .filter(|e| matches!(e, TurnEvent::AssistantBoundary))
            .count(),
        2
    );
    assert_eq!(
        events
            .iter()
            .filter(|e| matches!(e, TurnEvent::Usage(_)))
            .count(),
        3
    );
    let steps: Vec<&TurnEvent> = events
        .iter()
        .filter(|e| matches!(e, TurnEvent::StepStarted { .. }))
        .collect();
    let expected: Vec<TurnEvent> = (0..3)
        .map(|step_index| TurnEvent::StepStarted { step_index })
        .collect();
    assert_eq!(steps, expected.iter().collect::<Vec<_>>());
    assert!(!events
        .iter()
        .any(|e| matches!(e, TurnEvent::Reconcile { .. })));
    assert!(h.fake.frames.borrow().iter().any(|f| f == "text-delta"));
}

// ---- step outcomes --------------------------------------------------------------------------

#[test]
fn a_finished_step_without_calls_completes_and_appends_its_messages() {
    let h = Harness::new();
    h.reply(step(
        &[],
        &[],
        Some(json!({ "inputTokens": 3, "outputTokens": 2, "totalTokens": 5, "reportedSteps": 1 })),
    ));
    let outcome = h.run(h.options());
    assert_eq!(outcome.status, TurnStatus::Completed);
    assert_eq!(outcome.messages.len(), 2);
    assert_eq!(outcome.usage.unwrap().total_tokens, 5);
    let body = &h.posted()[0];
    assert_eq!(body["stepIndex"], 0);
    assert_eq!(
        body["catalog"]["scope"],
        json!(["app", "invoices", "reporting", "collections"])
    );
    assert_eq!(
        body["catalog"]["frontendTools"].as_array().unwrap().len(),
        16
    );
    assert!(body.get("modelId").is_none());
}

#[test]
fn an_unscoped_route_sends_no_scope() {
    let h = Harness::new();
    h.reply(done());
    let mut options = h.options();
    options.pathname = "/".into();
    h.run(options);
    assert!(h.posted()[0]["catalog"].get("scope").is_none());
}

#[test]
fn an_error_frame_fails_the_turn_and_discards_the_steps_messages() {
    let h = Harness::new();
    let mut frames = vec![start(json!([]))];
    frames.push(json!({ "type": "error", "error": { "code": "MODEL_ERROR", "message": "The model call failed." } }));
    frames.push(
        json!({ "type": "step-finish", "stepId": "stp_x", "finishReason": "error",
        "responseMessages": [{ "role": "assistant", "content": "half" }], "pendingToolCalls": [] }),
    );
    h.reply(Reply::Stream(ndjson(&frames), 64));
    let outcome = h.run(h.options());
    assert_eq!(outcome.status, TurnStatus::Error);
    assert_eq!(error(&outcome), ("MODEL_ERROR", "The model call failed."));
    assert_eq!(outcome.messages.len(), 1);
}

#[test]
fn a_malformed_frame_is_a_decode_error() {
    let h = Harness::new();
    let mut bytes = ndjson(&[start(json!([]))]);
    bytes.extend_from_slice(b"{not json\n");
    h.reply(Reply::Stream(bytes, 3));
    let outcome = h.run(h.options());
    assert_eq!(
        error(&outcome),
        ("PROTOCOL_DECODE_ERROR", "Malformed frame received.")
    );
}

#[test]
fn http_errors_use_the_body_when_it_names_code_and_message() {
    let h = Harness::new();
    h.reply(Reply::Status(
        413,
        br#"{"error":{"code":"CATALOG_TOO_LARGE","message":"Too big."}}"#.to_vec(),
    ));
    let outcome = h.run(h.options());
    assert_eq!(error(&outcome), ("CATALOG_TOO_LARGE", "Too big."));
    let h = Harness::new();
    h.reply(Reply::Status(502, b"<html>bad gateway</html>".to_vec()));
    assert_eq!(
        error(&h.run(h.options())),
        ("TRANSPORT_FAILED", "Chat endpoint returned 502.")
    );
}

#[test]
fn an_unreachable_endpoint_is_transport_failed_unless_cancelled() {
    let h = Harness::new();
    h.reply(Reply::Unreachable);
    let outcome = h.run(h.options());
    assert_eq!(
        error(&outcome),
        ("TRANSPORT_FAILED", "Could not reach the chat endpoint.")
    );
    let h = Harness::new();
    h.reply(Reply::Unreachable);
    h.fake.abort_on_post.set(Some(1));
    let outcome = h.run(h.options());
    assert_eq!(
        (outcome.status, outcome.error),
        (TurnStatus::Cancelled, None)
    );
}

#[test]
fn a_broken_stream_is_interrupted_unless_cancelled() {
    let h = Harness::new();
    h.reply(Reply::Broken(ndjson(&[start(json!([]))])));
    assert_eq!(
        error(&h.run(h.options())),
        ("TRANSPORT_FAILED", "The chat stream was interrupted.")
    );
    let h = Harness::new();
    h.reply(Reply::Broken(ndjson(&[start(json!([]))])));
    h.fake.abort_on_post.set(Some(1));
    assert_eq!(h.run(h.options()).status, TurnStatus::Cancelled);
}

#[test]
fn a_stream_that_ends_without_step_finish_is_interrupted() {
    let h = Harness::new();
    let mut bytes = ndjson(&[start(json!([]))]);
    bytes.extend_from_slice(br#"{"type":"step-finish""#);
    h.reply(Reply::Stream(bytes, 16));
    assert_eq!(
        error(&h.run(h.options())),
        ("TRANSPORT_FAILED", "The chat stream was interrupted.")
    );
}

#[test]
fn oversized_histories_are_refused_locally_without_posting() {
    let h = Harness::new();
    let mut options = h.options();
    options.messages = vec![WireModelMessage::user_text("x"); 401];
    let outcome = h.run(options);
    assert_eq!(outcome.status, TurnStatus::Error);
    assert_eq!(outcome.error.as_ref().unwrap().code, "CATALOG_TOO_LARGE");
    assert!(outcome.error.unwrap().message.contains("401"));
    assert!(h.posted().is_empty());
}

#[test]
fn an_aborted_signal_before_a_step_cancels_without_posting() {
    let h = Harness::new();
    h.fake.aborted.set(true);
    let outcome = h.run(h.options());
    assert_eq!(
        (outcome.status, outcome.messages.len()),
        (TurnStatus::Cancelled, 1)
    );
    assert!(h.posted().is_empty());
}

#[test]
fn the_deadline_is_checked_between_steps() {
    let h = Harness::new();
    h.fake.post_ms.set(180_001.0);
    h.reply(step(&[], &[pending("c1", READ_STATE, json!({}))], None));
    let outcome = h.run(h.options());
    assert_eq!(
        error(&outcome),
        (
            "RUN_LIMIT_EXCEEDED",
            "Turn deadline exceeded; the run was stopped."
        )
    );
    assert_eq!(h.posted().len(), 1);
    // The call of the finished step still ran and is answered.
    assert_eq!(
        tool_values(&outcome),
        [json!({ "rowCount": 13, "totalRows": 13 })]
    );
}

#[test]
fn eight_steps_is_the_cap() {
    let h = Harness::new();
    for n in 0..8 {
        h.reply(step(
            &[],
            &[pending(&format!("c{n}"), READ_STATE, json!({}))],
            None,
        ));
    }
    let outcome = h.run(h.options());
    assert_eq!(
        error(&outcome),
        ("RUN_LIMIT_EXCEEDED", "Stopped after 8 steps in one turn.")
    );
    let indices: Vec<Value> = h.posted().iter().map(|b| b["stepIndex"].clone()).collect();
    assert_eq!(indices, (0..8).map(Value::from).collect::<Vec<_>>());
}

// ---- browser calls --------------------------------------------------------------------------

#[test]
fn calls_run_in_order_with_the_tool_call_id_as_invocation_id() {
    let h = Harness::new();
    h.reply(step(
        &[],
        &[
            pending("c1", SET_FILTERS, json!({ "q": "DUN" })),
            pending("c2", READ_STATE, Value::Null),
        ],
        None,
    ));
    h.reply(step(
        &[],
        &[pending("c1", SET_FILTERS, json!({ "q": "DUN" }))],
        None,
    ));
    h.reply(done());
    let outcome = h.run(h.options());
    assert_eq!(outcome.status, TurnStatus::Completed);
    // The repeated c1 replays its settled result: the handler ran once.
    let calls: Vec<String> = h
        .screen
        .calls
        .borrow()
        .iter()
        .map(|(id, _)| id.clone())
        .collect();
    assert_eq!(calls, [SET_FILTERS.1, READ_STATE.1]);
    assert_eq!(
        tool_values(&outcome),
        [
            json!({ "done": true }),
            json!({ "rowCount": 13, "totalRows": 13 }),
            json!({ "done": true })
        ]
    );
    let second = &h.posted()[1]["messages"];
    assert_eq!(second.as_array().unwrap().len(), 4);
    assert_eq!(second[2]["content"][0]["toolName"], SET_FILTERS.0);
}

#[test]
fn a_name_missing_from_the_live_surface_is_capability_not_found() {
    let h = Harness::new();
    h.reply(step(
        &[],
        &[call(
            "c1",
            "view_gone__widget__act",
            "view:gone.widget.act",
            json!({}),
        )],
        None,
    ));
    h.reply(done());
    let outcome = h.run(h.options());
    assert_eq!(
        tool_values(&outcome)[0],
        json!({ "error": { "code": "CAPABILITY_NOT_FOUND", "message": "Tool view_gone__widget__act is not present on the current surface.", "retry": "after-refresh" } })
    );
}

#[test]
fn typed_capability_errors_reach_the_model_losslessly() {
    let h = Harness::new();
    h.reply(step(
        &[],
        &[pending("c1", SET_FILTERS, json!({ "status": "x" }))],
        None,
    ));
    h.reply(done());
    let value = &tool_values(&h.run(h.options()))[0];
    assert_eq!(value["error"]["code"], "INVALID_INPUT");
    assert_eq!(value["error"]["retry"], "with-changes");
    assert_eq!(value["error"]["details"]["issues"][0]["path"], "/status");
}

#[test]
fn surface_moving_calls_settle_and_until_must_hold() {
    let h = Harness::new();
    h.fake.has_until.set(true);
    h.fake.until_false_for.set(3);
    h.reply(step(
        &[],
        &[
            pending("c1", SET_FILTERS, json!({})),
            pending("c2", READ_STATE, json!({})),
        ],
        None,
    ));
    h.reply(done());
    h.run(h.options());
    let settled: Vec<TurnEvent> = h
        .fake
        .events
        .borrow()
        .iter()
        .filter(|e| matches!(e, TurnEvent::Settled(_)))
        .cloned()
        .collect();
    // Only setFilters moves the surface; `until` was false for three ticks.
    assert_eq!(
        settled,
        [TurnEvent::Settled(SettleOutcome::Settled { ticks: 4 })]
    );
    assert_eq!(h.fake.yields.get(), 4);
}

#[test]
fn surface_events_during_a_tick_extend_the_settle_wait() {
    let h = Harness::new();
    let surface = h.surface.clone();
    let ticks = Rc::new(Cell::new(0));
    let mut def = ComponentDef::new("invoices.toolbar", "A toolbar that re-registers.");
    let noop = Handler::sync(|_, _| Ok(None));
    def.actions.push(ActionDef::new(
        "refresh",
        "Refresh the toolbar.",
        Effect::LocalState,
        empty_object_schema(),
        noop,
    ));
    h.surface.register(def).unwrap();
    // Each of the first three yields mounts a component, as a React commit would.
    struct Mounting<'a> {
        fake: &'a Fake,
        surface: Surface,
        ticks: Rc<Cell<u32>>,
    }
    impl TaskYield for Mounting<'_> {
        fn yield_task(&self) -> LocalBoxFuture<'static, ()> {
            self.ticks.set(self.ticks.get() + 1);
            if self.ticks.get() <= 3 {
                let mut def = ComponentDef::new("invoices.row", "A row.");
                def.instance_id = Some(format!("r{}", self.ticks.get()));
                def.observations.push(crate::capability::ObservationDef {
                    name: "read".into(),
                    description: "Read the row.".into(),
                    output_schema: json!({ "type": "object" }),
                    read: Handler::sync(|_, _| Ok(Some(json!({})))),
                    availability: Availability::default(),
                });
                self.surface.register(def).unwrap();
            }
            self.fake.yield_task()
        }
    }
    let mounting = Mounting {
        fake: &h.fake,
        surface,
        ticks: ticks.clone(),
    };
    h.reply(step(
        &[],
        &[call(
            "c1",
            "view_invoices__toolbar__refresh",
            "view:invoices.toolbar.refresh",
            json!({}),
        )],
        None,
    ));
    h.reply(done());
    let env = TurnEnv {
        surface: &h.surface,
        transport: &h.fake,
        clock: &*h.fake.clock,
        yielder: &mounting,
        signal: &h.fake,
        ui: &h.fake,
        observer: &h.fake,
    };
    block_on(run_turn(&env, h.options()));
    assert!(h
        .fake
        .events
        .borrow()
        .contains(&TurnEvent::Settled(SettleOutcome::Settled { ticks: 4 })));
}

#[test]
fn the_agents_own_navigation_moves_the_next_steps_scope() {
    let h = Harness::new();
    h.reply(step(
        &[],
        &[pending("c1", GO_TO, json!({ "path": "/receivables/all" }))],
        None,
    ));
    h.reply(done());
    let outcome = h.run(h.options());
    assert_eq!(outcome.status, TurnStatus::Completed);
    let second = &h.posted()[1];
    assert_eq!(second["pathname"], "/receivables/all");
    assert_eq!(
        second["catalog"]["scope"],
        json!(["app", "invoices", "reporting"])
    );
}

#[test]
fn a_user_navigating_mid_turn_does_not_move_the_turn() {
    let h = Harness::new();
    h.reply(step(&[], &[pending("c1", READ_STATE, json!({}))], None));
    h.reply(done());
    *h.screen.pathname.borrow_mut() = "/receivables/clients".into();
    h.run(h.options());
    assert_eq!(h.posted()[1]["pathname"], "/receivables/pending");
}

#[test]
fn cancelling_between_calls_answers_the_rest_as_not_executed() {
    let h = Harness::new();
    h.reply(step(
        &[],
        &[
            pending("c1", READ_STATE, json!({})),
            pending("c2", SET_FILTERS, json!({})),
        ],
        None,
    ));
    h.fake.abort_on_post.set(Some(1));
    // The abort lands after the POST; the step's frames are still consumed, then no call runs.
    let outcome = h.run(h.options());
    assert_eq!(outcome.status, TurnStatus::Cancelled);
    let values = tool_values(&outcome);
    assert_eq!(values.len(), 2);
    assert!(values
        .iter()
        .all(|v| v["error"]["code"] == "TOOL_NOT_EXECUTED"));
    assert!(h.screen.calls.borrow().is_empty());
}

#[test]
fn server_results_feed_the_guard_and_a_verdict_answers_every_pending_call() {
    let h = Harness::new();
    let failed = |id: &str| {
        json!({ "type": "tool-result", "toolCallId": id, "wireName": "domain_issue-invoice", "canonicalId": "domain:issue-invoice",
            "ok": false, "result": { "error": { "code": "NO_SUCH_TOOL", "message": "m", "retry": "no" } } })
    };
    let server_call = |id: &str| json!({ "type": "tool-call", "toolCallId": id, "wireName": "domain_issue-invoice", "canonicalId": "domain:issue-invoice", "executor": "server", "input": { "id": 3 } });
    let server = [
        server_call("s1"),
        failed("s1"),
        server_call("s2"),
        failed("s2"),
    ];
    let frames = step_frames(&server, &[pending("c1", READ_STATE, json!({}))], None);
    h.reply(Reply::Stream(ndjson(&frames), 9));
    let outcome = h.run(h.options());
    assert_eq!(
        error(&outcome),
        ("RUN_LIMIT_EXCEEDED", "Stopped: domain:issue-invoice was called again with the same arguments after answering \"retry: no\".")
    );
    assert_eq!(
        tool_values(&outcome),
        [dpas_protocol::tool_results::tool_not_executed()]
    );
    assert!(h.screen.calls.borrow().is_empty());
}

#[test]
fn browser_failures_in_a_row_stop_the_turn_and_the_rest_are_not_executed() {
    let h = Harness::new();
    let calls: Vec<Value> = (0..5)
        .map(|n| {
            call(
                &format!("c{n}"),
                "view_gone__w__act",
                "view:gone.w.act",
                json!({ "n": n }),
            )
        })
        .collect();
    h.reply(step(&[], &calls, None));
    let outcome = h.run(h.options());
    assert_eq!(
        error(&outcome),
        (
            "RUN_LIMIT_EXCEEDED",
            "Stopped: 4 tool calls failed in a row without a single success."
        )
    );
    let values = tool_values(&outcome);
    assert_eq!(values.len(), 5);
    assert_eq!(values[3]["error"]["code"], "CAPABILITY_NOT_FOUND");
    assert_eq!(values[4]["error"]["code"], "TOOL_NOT_EXECUTED");
}

fn confirmed_table(h: &Harness) {
    let mut def = ComponentDef::new("invoices.bulk", "Bulk actions.");
    let screen = h.screen.clone();
    let execute = Handler::sync(move |input, _| {
        screen
            .calls
            .borrow_mut()
            .push(("view:invoices.bulk.archiveAll".into(), input));
        Ok(None)
    });
    let mut archive = ActionDef::new(
        "archiveAll",
        "Archive every row.",
        Effect::LocalState,
        empty_object_schema(),
        execute,
    );
    archive.confirmation = Confirmation::Required;
    def.actions.push(archive);
    h.surface.register(def).unwrap();
    h.reply(step(
        &[],
        &[call(
            "c1",
            "view_invoices__bulk__archiveAll",
            "view:invoices.bulk.archiveAll",
            json!({}),
        )],
        None,
    ));
    h.reply(done());
}

#[test]
fn a_required_confirmation_waits_for_the_user_and_runs_once_approved() {
    let h = Harness::new();
    h.fake.confirm_answer.set(true);
    confirmed_table(&h);
    let outcome = h.run(h.options());
    assert_eq!(tool_values(&outcome), [json!({ "done": true })]);
    assert_eq!(h.screen.calls.borrow().len(), 1);
    let asked = h.fake.confirms.borrow();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].capability_id, "view:invoices.bulk.archiveAll");
    assert_eq!(asked[0].summary, "Archive every row. — input: {}");
    assert_eq!(asked[0].tool_call_id, "c1");
}

#[test]
fn a_denied_confirmation_is_a_typed_result_and_nothing_runs() {
    let h = Harness::new();
    h.fake.confirm_answer.set(false);
    confirmed_table(&h);
    let outcome = h.run(h.options());
    let value = &tool_values(&outcome)[0];
    assert_eq!(value["error"]["code"], "CONFIRMATION_INVALID");
    assert_eq!(value["error"]["retry"], "no");
    assert_eq!(value["error"]["details"]["reason"], "denied");
    assert!(h.screen.calls.borrow().is_empty());
}

#[test]
fn a_cancel_while_the_user_is_asked_leaves_the_call_unexecuted_not_denied() {
    let h = Harness::new();
    h.fake.abort_on_confirm.set(true);
    confirmed_table(&h);
    let outcome = h.run(h.options());
    assert_eq!(outcome.status, TurnStatus::Cancelled);
    // J7: the user never declined; the call did not run and can be called again.
    let value = &tool_values(&outcome)[0];
    assert_eq!(value["error"]["code"], "TOOL_NOT_EXECUTED");
    assert_eq!(value["error"]["retry"], "yes");
    assert!(h.screen.calls.borrow().is_empty());
    assert_eq!(
        h.fake.posted.borrow().len(),
        1,
        "nothing is posted after the cancel"
    );
}

#[test]
fn successful_server_writes_ask_for_reconciliation() {
    let h = Harness::new();
    let domain = json!([
        { "wireName": "domain_mark-invoice-paid", "canonicalId": "domain:mark-invoice-paid", "description": "d", "requiresApproval": false, "sideEffect": "write" },
        { "wireName": "domain_issue-invoice", "canonicalId": "domain:issue-invoice", "description": "d", "requiresApproval": true, "sideEffect": "destructive" },
        { "wireName": "domain_list-invoices", "canonicalId": "domain:list-invoices", "description": "d", "requiresApproval": false, "sideEffect": "read" }
    ]);
    let result = |id: &str, wire: &str, ok: bool, value: Value| json!({ "type": "tool-result", "toolCallId": id, "wireName": wire, "canonicalId": "x", "ok": ok, "result": value });
    let frames = [
        start(domain),
        result(
            "s1",
            "domain_mark-invoice-paid",
            true,
            json!({ "status": "ok", "data": {} }),
        ),
        result(
            "s2",
            "domain_issue-invoice",
            true,
            json!({ "status": "approval-required", "approvalId": "apr_1" }),
        ),
        result(
            "s3",
            "domain_list-invoices",
            true,
            json!({ "status": "ok", "data": [] }),
        ),
        result(
            "s4",
            "domain_mark-invoice-paid",
            false,
            json!({ "status": "error" }),
        ),
        json!({ "type": "step-finish", "stepId": "stp_x", "finishReason": "stop", "responseMessages": [], "pendingToolCalls": [] }),
    ];
    h.reply(Reply::Stream(ndjson(&frames), 11));
    h.run(h.options());
    let reconciled: Vec<TurnEvent> = h
        .fake
        .events
        .borrow()
        .iter()
        .filter(|e| matches!(e, TurnEvent::Reconcile { .. }))
        .cloned()
        .collect();
    assert_eq!(
        reconciled,
        [TurnEvent::Reconcile {
            wire_name: "domain_mark-invoice-paid".into()
        }]
    );
}

#[test]
fn undecodable_tools_are_withheld_reported_and_counted_on_the_wire() {
    let h = Harness::new();
    let mut def = ComponentDef::new("files.browser", "Files.");
    def.procedures.push(crate::capability::ProcedureDef::new(
        "files/delete",
        "Delete a file.",
        Effect::Destructive,
        json!({ "type": "object" }),
    ));
    h.surface.register(def).unwrap();
    h.reply(done());
    let mut options = h.options();
    options.route_floors = None;
    h.run(options);
    assert_eq!(
        h.posted()[0]["catalog"]["truncated"],
        json!({ "dropped": 1, "reason": "undecodable" })
    );
    assert!(h
        .fake
        .events
        .borrow()
        .contains(&TurnEvent::CatalogUndecodable {
            canonical_ids: vec!["domain:files/delete".into()]
        }));
}

#[test]
fn meta_mode_posts_the_three_tools_and_acts_through_them() {
    let h = Harness::new();
    let act = |id: &str, capability: &str, input: Value| {
        call(
            id,
            "surface_act",
            capability,
            json!({ "capabilityId": capability, "input": input }),
        )
    };
    h.reply(step(
        &[],
        &[call(
            "c0",
            "surface_discover",
            "meta:surface_discover",
            json!({}),
        )],
        None,
    ));
    h.reply(step(
        &[],
        &[act(
            "c1",
            "view:app.navigation.goTo",
            json!({ "path": "/receivables/all" }),
        )],
        None,
    ));
    h.reply(done());
    let mut options = h.options();
    options.catalog_mode = CatalogMode::Meta;
    let outcome = h.run(options);
    assert_eq!(outcome.status, TurnStatus::Completed);
    let posted = h.posted();
    assert_eq!(posted[0]["catalog"]["mode"], "meta");
    let names: Vec<&str> = posted[0]["catalog"]["frontendTools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["wireName"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["surface_discover", "surface_read", "surface_act"]);
    assert_eq!(
        posted[0]["catalog"]["frontendState"][2],
        json!({ "wireName": "surface_act", "available": true })
    );
    let values = tool_values(&outcome);
    assert_eq!(values[0]["components"].as_array().unwrap().len(), 3);
    assert_eq!(values[1], json!({ "done": true }));
    // surface_act settles, and a successful navigation moves the next step's route.
    assert!(h
        .fake
        .events
        .borrow()
        .iter()
        .any(|e| matches!(e, TurnEvent::Settled(_))));
    assert_eq!(posted[2]["pathname"], "/receivables/all");
}

#[test]
fn a_browser_executed_domain_write_asks_for_reconciliation() {
    let h = Harness::new();
    h.screen.chase.set(Some(37));
    let chase = (
        "domain_update-collection-status",
        "domain:update-collection-status",
    );
    h.reply(step(
        &[],
        &[pending("c1", chase, json!({ "remindersSent": 2 }))],
        None,
    ));
    h.reply(done());
    let outcome = h.run(h.options());
    assert_eq!(tool_values(&outcome), [json!({ "invoice_id": 37 })]);
    assert!(h.fake.events.borrow().contains(&TurnEvent::Reconcile {
        wire_name: chase.0.into()
    }));
    // The reference does not move the surface, so no settle-wait follows it.
    assert!(!h
        .fake
        .events
        .borrow()
        .iter()
        .any(|e| matches!(e, TurnEvent::Settled(_))));
}
