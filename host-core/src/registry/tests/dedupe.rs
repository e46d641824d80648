//! The registry: dedupe.

use super::*;

/// An action whose handler waits for the test to release it, counting its runs.
pub(super) fn gated_action(
    runs: Rc<Cell<u32>>,
    gate: Rc<RefCell<Option<oneshot::Receiver<Value>>>>,
    effect: Effect,
) -> ComponentDef {
    let mut def = ComponentDef::new("slow.widget", "A widget whose actions take a while.");
    def.actions.push(ActionDef {
        name: "apply".into(),
        description: "Apply something slowly.".into(),
        input_schema: json!({ "type": "object" }),
        output_schema: None,
        effect,
        confirmation: Confirmation::Never,
        idempotent: false,
        execute: Handler::new(move |_, _| {
            runs.set(runs.get() + 1);
            let receiver = gate.borrow_mut().take();
            async move {
                match receiver {
                    Some(receiver) => receiver
                        .await
                        .map(Some)
                        .map_err(|_| HandlerError::Threw("dropped".into())),
                    None => Ok(None),
                }
            }
        }),
        availability: Availability::default(),
        untrusted: false,
    });
    def
}

pub(super) fn spawn_invoke(
    pool: &LocalPool,
    surface: &Surface,
    request: InvokeRequest,
) -> Rc<RefCell<Option<InvocationResult>>> {
    let slot = Rc::new(RefCell::new(None));
    let out = slot.clone();
    let future = surface.invoke(request);
    pool.spawner()
        .spawn_local(async move { *out.borrow_mut() = Some(future.await) })
        .unwrap();
    slot
}

pub(super) fn apply(id: &str, input: Value) -> InvokeRequest {
    InvokeRequest {
        invocation_id: Some(id.into()),
        capability_id: "view:slow.widget.apply".into(),
        input: Some(input),
        ..InvokeRequest::default()
    }
}

/// The slow widget registered on `f`, with call `tc_1` to it started and left waiting.
pub(super) struct GatedCall {
    pub(super) handle: ComponentHandle,
    pub(super) pool: LocalPool,
    pub(super) first: Rc<RefCell<Option<InvocationResult>>>,
    pub(super) release: oneshot::Sender<Value>,
    pub(super) runs: Rc<Cell<u32>>,
}

pub(super) fn start_gated_call(f: &Fixture, effect: Effect) -> GatedCall {
    let runs = Rc::new(Cell::new(0));
    let (release, receiver) = oneshot::channel();
    let gate = Rc::new(RefCell::new(Some(receiver)));
    let handle = f.register(gated_action(runs.clone(), gate, effect));
    let mut pool = LocalPool::new();
    let first = spawn_invoke(&pool, &f.surface, apply("tc_1", json!({ "a": 1 })));
    pool.run_until_stalled();
    assert!(first.borrow().is_none());
    GatedCall {
        handle,
        pool,
        first,
        release,
        runs,
    }
}

#[test]
fn the_same_invocation_id_in_flight_joins_and_runs_once() {
    let f = Fixture::new();
    let mut call = start_gated_call(&f, Effect::LocalState);
    let second = spawn_invoke(&call.pool, &f.surface, apply("tc_1", json!({ "a": 1.0 })));
    call.pool.run_until_stalled();
    assert!(second.borrow().is_none());
    call.release.send(json!({ "applied": true })).unwrap();
    call.pool.run_until_stalled();
    assert_eq!(call.runs.get(), 1);
    let first = call.first.borrow().clone().unwrap();
    assert_eq!(first.tool_value(), json!({ "applied": true }));
    assert_eq!(Some(first), second.borrow().clone());
}

#[test]
fn a_settled_invocation_id_replays_without_running_again() {
    let f = Fixture::new();
    let handle = f.register(pending_table(&f.screen));
    let first = f.call("tc_1", SET_FILTERS, json!({ "q": "DUN" }));
    handle.unregister();
    let replay = f.call("tc_1", SET_FILTERS, json!({ "q": "DUN" }));
    assert_eq!(first, replay);
    assert_eq!(f.screen.borrow().runs.get(), 1);
    let fresh = f.call("tc_2", SET_FILTERS, json!({ "q": "DUN" }));
    assert_eq!(error_of(&fresh).code, ErrorCode::ComponentUnmounted);
}

#[test]
fn terminal_errors_replay_too() {
    let f = Fixture::new();
    f.register(pending_table(&f.screen));
    let first = f.call("tc_1", SORT, json!({ "key": "segment" }));
    assert_eq!(error_of(&first).code, ErrorCode::PreconditionFailed);
    f.surface.unregister(
        f.surface.snapshot(&SnapshotOptions::default()).components[0]
            .registration_id
            .as_str(),
    );
    assert_eq!(f.call("tc_1", SORT, json!({ "key": "segment" })), first);
}

#[test]
fn reusing_an_id_for_a_different_request_conflicts_and_is_not_cached() {
    let f = Fixture::new();
    f.register(pending_table(&f.screen));
    let first = f.call("tc_1", SET_FILTERS, json!({ "q": "A" }));
    let conflict = f.call("tc_1", SET_FILTERS, json!({ "q": "B" }));
    let error = error_of(&conflict);
    assert_eq!(error.code, ErrorCode::InvocationConflict);
    assert_eq!(error.retry, Retry::WithChanges);
    assert_eq!(
        error.details,
        Some(json!({ "reason": "id-reused-with-different-request" }))
    );
    assert_eq!(f.call("tc_1", SET_FILTERS, json!({ "q": "A" })), first);
    assert_eq!(f.screen.borrow().runs.get(), 1);
    assert_eq!(f.screen.borrow().filters["q"], "A");
}

#[test]
fn a_conflict_while_in_flight_does_not_disturb_the_running_call() {
    let f = Fixture::new();
    let mut call = start_gated_call(&f, Effect::LocalState);
    let conflict = f.invoke(apply("tc_1", json!({ "a": 2 })));
    assert_eq!(error_of(&conflict).code, ErrorCode::InvocationConflict);
    call.release.send(json!(1)).unwrap();
    call.pool.run_until_stalled();
    assert!(call.first.borrow().as_ref().unwrap().is_ok());
    assert_eq!(call.runs.get(), 1);
}

#[test]
fn settled_results_expire_after_ten_minutes() {
    let f = Fixture::new();
    f.register(pending_table(&f.screen));
    f.call("tc_1", SET_FILTERS, json!({ "q": "A" }));
    f.clock.0.set(invoke::DEDUPE_TTL_MS - 1.0);
    f.call("tc_1", SET_FILTERS, json!({ "q": "A" }));
    assert_eq!(f.screen.borrow().runs.get(), 1);
    f.clock.0.set(invoke::DEDUPE_TTL_MS);
    f.call("tc_1", SET_FILTERS, json!({ "q": "A" }));
    assert_eq!(f.screen.borrow().runs.get(), 2);
}

#[test]
fn the_replay_cache_is_bounded_and_evicts_the_oldest() {
    let f = Fixture::new();
    f.register(pending_table(&f.screen));
    for n in 0..=invoke::DEDUPE_CAPACITY {
        f.call(&format!("tc_{n}"), SET_FILTERS, json!({}));
    }
    let runs = f.screen.borrow().runs.get();
    f.call(
        &format!("tc_{}", invoke::DEDUPE_CAPACITY),
        SET_FILTERS,
        json!({}),
    );
    assert_eq!(f.screen.borrow().runs.get(), runs);
    f.call("tc_0", SET_FILTERS, json!({}));
    assert_eq!(f.screen.borrow().runs.get(), runs + 1);
}

#[test]
fn missing_invocation_ids_are_minted() {
    let f = Fixture::new();
    f.register(pending_table(&f.screen));
    let request = InvokeRequest {
        capability_id: "view:invoices.pending.readFilters".into(),
        ..Default::default()
    };
    let a = f.invoke(request.clone());
    let b = f.invoke(request);
    assert!(a.invocation_id.starts_with("inv_") && a.invocation_id.len() == 16);
    assert_ne!(a.invocation_id, b.invocation_id);
}
