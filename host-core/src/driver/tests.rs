//! The driver over fakes: a transport held open by a gate, a thread source with canned
//! answers, and a turn's abort recorded.

use super::*;
use crate::testing::{demo_surface, FakeClock};
use crate::turn::{ConfirmRequest, StepResponse, TransportFailure};
use dpas_protocol::encode_frame;
use dpas_protocol::test_json as json;
use futures_channel::oneshot;
use futures_executor::{block_on, LocalPool};
use futures_util::task::LocalSpawnExt;
use futures_util::{FutureExt, StreamExt};

/// One finished step that answers in text.
fn answer() -> Vec<u8> {
    let frames = [
        json!({ "type": "step-start", "stepId": "stp_x", "turnId": "trn_1", "conversationId": "cnv_1", "domainTools": [], "scope": [] }),
        json!({
            "type": "step-finish", "stepId": "stp_x", "finishReason": "stop",
            "responseMessages": [{ "role": "assistant", "content": [{ "type": "text", "text": "Done." }] }],
            "pendingToolCalls": [],
            "usage": { "inputTokens": 3, "outputTokens": 2, "totalTokens": 5, "reportedSteps": 1 },
        }),
    ];
    frames
        .iter()
        .flat_map(|f| {
            encode_frame(
                &dpas_protocol::test_support::from_value::<Frame>(f.clone()).expect("a frame"),
            )
        })
        .collect()
}

/// Answers every POST with [`answer`], once its gate (if any) opens.
struct Gated(RefCell<Option<oneshot::Receiver<()>>>);

impl Transport for Gated {
    fn post(&self, _: Vec<u8>) -> LocalBoxFuture<'static, Result<StepResponse, TransportFailure>> {
        let gate = self.0.borrow_mut().take();
        async move {
            if let Some(gate) = gate {
                let _ = gate.await;
            }
            let chunks: Vec<Result<Vec<u8>, TransportFailure>> = vec![Ok(answer())];
            Ok(StepResponse {
                status: 200,
                body: Some(futures_util::stream::iter(chunks).boxed_local()),
            })
        }
        .boxed_local()
    }
}

struct Flag(Rc<Cell<bool>>);

impl AbortSignal for Flag {
    fn aborted(&self) -> bool {
        self.0.get()
    }
}

struct Ui;

impl TurnUi for Ui {
    fn current_pathname(&self) -> String {
        "/receivables/pending".into()
    }
    fn has_until(&self) -> bool {
        false
    }
    fn until(&self) -> bool {
        true
    }
    fn confirm(&self, _: &ConfirmRequest) -> LocalBoxFuture<'static, bool> {
        std::future::ready(false).boxed_local()
    }
}

struct NoWait;

impl TaskYield for NoWait {
    fn yield_task(&self) -> LocalBoxFuture<'static, ()> {
        std::future::ready(()).boxed_local()
    }
}

#[derive(Default)]
struct Threads {
    messages: RefCell<Option<Result<Value, u16>>>,
    usage: RefCell<Option<Value>>,
}

impl ThreadSource for Rc<Threads> {
    fn load(&self, _: &str) -> LocalBoxFuture<'static, StoredThread> {
        let messages = self.messages.borrow().clone().expect("a canned answer");
        std::future::ready((messages, self.usage.borrow().clone())).boxed_local()
    }
}

struct Fixture {
    driver: Rc<ConversationDriver>,
    threads: Rc<Threads>,
    changes: Rc<Cell<u32>>,
    /// Set by the current turn's `abort`.
    aborted: Rc<Cell<bool>>,
    begun: Rc<Cell<u32>>,
}

impl Fixture {
    fn new() -> Self {
        let (surface, _screen, _clock) = demo_surface();
        let threads = Rc::new(Threads::default());
        let changes = Rc::new(Cell::new(0));
        let counted = changes.clone();
        let driver = ConversationDriver::new(
            "cnv_1".into(),
            None,
            CatalogMode::Direct,
            DriverOptions {
                surface,
                clock: Rc::new(FakeClock::default()),
                yielder: Rc::new(NoWait),
                threads: Rc::new(threads.clone()),
                route_floors: None,
                on_change: Box::new(move || counted.set(counted.get() + 1)),
                observer: Box::new(NoObserver),
            },
        );
        Self {
            driver,
            threads,
            changes,
            aborted: Rc::new(Cell::new(false)),
            begun: Rc::new(Cell::new(0)),
        }
    }

    /// Sends `text` over a transport that answers once `gate` opens (at once without one).
    fn send(
        &self,
        text: &str,
        gate: Option<oneshot::Receiver<()>>,
    ) -> LocalBoxFuture<'static, TurnOutcome> {
        let (aborted, begun) = (self.aborted.clone(), self.begun.clone());
        let driver = self.driver.clone();
        let text = text.to_owned();
        async move {
            let begin = || {
                begun.set(begun.get() + 1);
                aborted.set(false);
                let flag = aborted.clone();
                Ok::<_, ()>(TurnParts {
                    turn_id: "trn_1".into(),
                    pathname: "/receivables/pending".into(),
                    transport: Box::new(Gated(RefCell::new(gate))),
                    signal: Box::new(Flag(aborted.clone())),
                    ui: Box::new(Ui),
                    abort: Box::new(move || flag.set(true)),
                })
            };
            driver.send(&text, begin).await.expect("the parts are made")
        }
        .boxed_local()
    }
}

struct NoObserver;

/// Runs `turn` on `pool`; its outcome lands in the returned slot when it ends.
fn spawn(
    pool: &LocalPool,
    turn: LocalBoxFuture<'static, TurnOutcome>,
) -> Rc<RefCell<Option<TurnOutcome>>> {
    let slot = Rc::new(RefCell::new(None));
    let out = slot.clone();
    pool.spawner()
        .spawn_local(turn.map(move |outcome| *out.borrow_mut() = Some(outcome)))
        .unwrap();
    slot
}

impl TurnObserver for NoObserver {}

#[test]
fn a_turn_runs_through_the_store_and_tells_the_app() {
    let f = Fixture::new();
    let outcome = block_on(f.send("How many invoices are overdue?", None));
    assert_eq!(outcome.status, TurnStatus::Completed);
    let store = f.driver.store();
    assert!(!store.state().is_running);
    assert_eq!(
        store.history().len(),
        2,
        "the user's message and the answer"
    );
    assert_eq!(store.state().turn_usage.as_ref().unwrap().total_tokens, 5);
    assert!(
        f.changes.get() >= 3,
        "begin, frames and finish are each told"
    );
}

#[test]
fn one_turn_at_a_time_a_second_send_is_busy() {
    let f = Fixture::new();
    let (open, gate) = oneshot::channel();
    let mut pool = LocalPool::new();
    let first = spawn(&pool, f.send("first", Some(gate)));
    pool.run_until_stalled();
    assert!(f.driver.store().state().is_running);

    let busy = block_on(f.send("second", None));
    assert_eq!(busy.status, TurnStatus::Error);
    let error = busy.error.as_ref().unwrap();
    assert_eq!(
        (error.code.as_str(), error.message.as_str()),
        (
            "TURN_IN_PROGRESS",
            "A turn is already running in this conversation."
        )
    );
    assert_eq!(
        busy.messages.len(),
        1,
        "the history as it stands: the first message"
    );
    assert_eq!(f.begun.get(), 1, "the refused turn makes no parts");

    open.send(()).unwrap();
    pool.run_until_stalled();
    assert_eq!(
        first.borrow().as_ref().unwrap().status,
        TurnStatus::Completed
    );
    assert_eq!(f.driver.store().history().len(), 2);
}

#[test]
fn cancel_aborts_the_running_turn_once() {
    let f = Fixture::new();
    let (_open, gate) = oneshot::channel::<()>();
    let mut pool = LocalPool::new();
    let _turn = spawn(&pool, f.send("first", Some(gate)));
    pool.run_until_stalled();
    f.driver.cancel();
    assert!(f.aborted.get());
    f.aborted.set(false);
    f.driver.cancel();
    assert!(!f.aborted.get(), "the abort is spent");
}

#[test]
fn a_reset_during_a_turn_cancels_it_and_the_old_turn_no_longer_writes() {
    let f = Fixture::new();
    let (open, gate) = oneshot::channel();
    let mut pool = LocalPool::new();
    let old = spawn(&pool, f.send("first", Some(gate)));
    pool.run_until_stalled();
    f.driver.reset("cnv_2".into());
    assert!(f.aborted.get(), "the running turn is cancelled");
    open.send(()).unwrap();
    // The old turn's transport answers anyway; nothing of it reaches the new conversation.
    pool.run_until_stalled();
    assert!(old.borrow().is_some(), "the old turn ended");
    let store = f.driver.store();
    assert_eq!(store.state().conversation_id, "cnv_2");
    assert!(store.history().is_empty());
    assert!(store.state().messages.is_empty());
    assert!(!store.state().is_running);
}

fn stored_thread() -> Value {
    json!([
        { "role": "user", "content": [{ "type": "text", "text": "Hello" }] },
        { "role": "assistant", "content": [{ "type": "text", "text": "Hi." }] },
    ])
}

#[test]
fn restore_continues_the_stored_thread_with_its_usage() {
    let f = Fixture::new();
    *f.threads.messages.borrow_mut() = Some(Ok(stored_thread()));
    *f.threads.usage.borrow_mut() =
        Some(json!({ "inputTokens": 7, "outputTokens": 4, "totalTokens": 11, "reportedSteps": 2 }));
    block_on(f.driver.clone().restore("cnv_9".into())).unwrap();
    let store = f.driver.store();
    assert_eq!(store.state().conversation_id, "cnv_9");
    assert_eq!(store.history().len(), 2);
    assert_eq!(
        store
            .state()
            .conversation_usage
            .as_ref()
            .unwrap()
            .total_tokens,
        11
    );
}

#[test]
fn a_thread_that_cannot_be_read_leaves_the_conversation_as_it_was() {
    let f = Fixture::new();
    *f.threads.messages.borrow_mut() = Some(Err(404));
    let failed = block_on(f.driver.clone().restore("cnv_9".into()));
    assert_eq!(failed, Err(RestoreError::Unavailable(404)));
    *f.threads.messages.borrow_mut() = Some(Ok(json!({ "not": "messages" })));
    let failed = block_on(f.driver.clone().restore("cnv_9".into()));
    assert_eq!(failed, Err(RestoreError::Malformed));
    assert_eq!(f.driver.store().state().conversation_id, "cnv_1");
    assert_eq!(f.changes.get(), 0);

    // Unreadable usage is left out, not a failure.
    *f.threads.messages.borrow_mut() = Some(Ok(stored_thread()));
    *f.threads.usage.borrow_mut() = Some(json!("not usage"));
    block_on(f.driver.clone().restore("cnv_9".into())).unwrap();
    assert_eq!(f.driver.store().state().conversation_id, "cnv_9");
    assert!(f.driver.store().state().conversation_usage.is_none());
}

/// Resumes the restored thread over a transport that answers at once.
fn resume(f: &Fixture) -> Started {
    let flag = f.aborted.clone();
    f.driver
        .start(None, || {
            Ok::<_, ()>(TurnParts {
                turn_id: "trn_2".into(),
                pathname: "/receivables/pending".into(),
                transport: Box::new(Gated(RefCell::new(None))),
                signal: Box::new(Flag(flag.clone())),
                ui: Box::new(Ui),
                abort: Box::new(|| {}),
            })
        })
        .expect("the parts are made")
}

#[test]
fn a_restored_thread_with_an_unanswered_browser_call_resumes_with_it() {
    let f = Fixture::new();
    *f.threads.messages.borrow_mut() = Some(Ok(json!([
        { "role": "user", "content": [{ "type": "text", "text": "What's overdue?" }] },
        { "role": "assistant", "content": [
            { "type": "tool-call", "toolCallId": "c1", "toolName": "view_invoices__pending__readState", "input": {} },
        ] },
    ])));
    block_on(f.driver.clone().restore("cnv_9".into())).unwrap();
    let Started::Running(turn, options) = resume(&f) else {
        panic!("an unanswered call resumes the turn");
    };
    assert_eq!(options.resume.len(), 1);
    assert!(f.driver.store().state().is_running);
    let outcome = block_on(run_turn(&turn.env(), options));
    turn.finish(&outcome);
    assert_eq!(outcome.status, TurnStatus::Completed);
    let store = f.driver.store();
    // The call's answer, then the step's text, in the history and on the restored message.
    let roles: Vec<_> = store.history().iter().map(|m| m.role).collect();
    use dpas_protocol::Role;
    assert_eq!(
        roles,
        [Role::User, Role::Assistant, Role::Tool, Role::Assistant]
    );
    let views = &store.state().messages;
    assert_eq!(views.len(), 2, "the answer continues the restored message");
    assert_eq!(
        views[1].tool_calls[0].state,
        crate::conversation::ToolCallState::Done
    );
    drop(store);
    // Answered now: nothing left to resume.
    assert!(matches!(resume(&f), Started::Idle));
}

#[test]
fn a_restored_thread_without_unanswered_calls_does_not_resume() {
    let f = Fixture::new();
    *f.threads.messages.borrow_mut() = Some(Ok(stored_thread()));
    block_on(f.driver.clone().restore("cnv_9".into())).unwrap();
    assert!(matches!(resume(&f), Started::Idle));
    assert!(!f.driver.store().state().is_running);
}
