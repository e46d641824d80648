//! The step loop against a fake transport, UI and clock: every J rule, and a replay of the
//! reference browser's golden turn whose posted bodies must equal the recorded ones.

use super::*;
use crate::capability::{ActionDef, Availability, ComponentDef, Confirmation, Effect, Handler};
use crate::schema::empty_object_schema;
use crate::testing::{demo_surface, trace_request, traces_dir, DemoScreen, FakeClock};
use dpas_protocol::encode_frame;
use dpas_protocol::test_json as json;
use futures_executor::block_on;
use futures_util::future::LocalBoxFuture;
use futures_util::FutureExt;
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
            route_floors: Some(dpas_protocol::test_support::reference_route_floors()),
            model_id: None,
            catalog_mode: CatalogMode::Direct,
            settle: SettlePolicy::default(),
            resume: Vec::new(),
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
        .flat_map(|f| {
            encode_frame(
                &dpas_protocol::test_support::from_value::<Frame>(f.clone()).expect("a frame"),
            )
        })
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
        .map(|m| {
            dpas_protocol::test_support::to_value(m).unwrap()["content"][0]["output"]["value"]
                .clone()
        })
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

mod calls;
mod golden;
mod steps;
