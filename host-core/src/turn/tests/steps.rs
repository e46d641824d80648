//! The step loop: step outcomes.

use super::*;

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
fn a_budget_that_stops_the_run_ends_the_turn_with_its_code_and_message() {
    // `BUDGET_EXHAUSTED` is the server's frame-only code, not a row of the browser's table:
    // the turn ends on it as on any error frame, with the server's words.
    let h = Harness::new();
    let frames = vec![
        start(json!([])),
        json!({ "type": "inspector", "lane": "host", "eventType": "budget",
            "summary": "actor-day budget exhausted",
            "data": { "budgets": [{ "scope": "actor-day", "tokensLimit": 70, "tokensLeft": 0 }],
                "exhausted": "actor-day" } }),
        json!({ "type": "error", "error": { "code": "BUDGET_EXHAUSTED",
            "message": "Your budget for today is used up; the run was stopped." } }),
        json!({ "type": "step-finish", "stepId": "stp_x", "finishReason": "error",
            "responseMessages": [], "pendingToolCalls": [] }),
    ];
    h.reply(Reply::Stream(ndjson(&frames), 64));
    let outcome = h.run(h.options());
    assert_eq!(outcome.status, TurnStatus::Error);
    assert_eq!(
        error(&outcome),
        (
            "BUDGET_EXHAUSTED",
            "Your budget for today is used up; the run was stopped."
        )
    );
    assert_eq!(h.posted().len(), 1, "no further step is posted");
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

/// Every attempt of a step (the first and its [`STEP_RETRIES`] retries) gets this reply.
fn every_attempt(h: &Harness, reply: impl Fn() -> Reply) {
    for _ in 0..=STEP_RETRIES {
        h.reply(reply());
    }
}

#[test]
fn an_unreachable_endpoint_is_transport_failed_unless_cancelled() {
    let h = Harness::new();
    every_attempt(&h, || Reply::Unreachable);
    let outcome = h.run(h.options());
    assert_eq!(
        error(&outcome),
        ("TRANSPORT_FAILED", "Could not reach the chat endpoint.")
    );
    assert_eq!(h.posted().len(), 1 + STEP_RETRIES);
    let h = Harness::new();
    h.reply(Reply::Unreachable);
    h.fake.abort_on_post.set(Some(1));
    let outcome = h.run(h.options());
    assert_eq!(
        (outcome.status, outcome.error),
        (TurnStatus::Cancelled, None)
    );
    assert_eq!(h.posted().len(), 1, "a cancelled turn posts nothing again");
}

#[test]
fn a_broken_stream_is_interrupted_unless_cancelled() {
    let h = Harness::new();
    every_attempt(&h, || Reply::Broken(ndjson(&[start(json!([]))])));
    assert_eq!(
        error(&h.run(h.options())),
        ("TRANSPORT_FAILED", "The chat stream was interrupted.")
    );
    let h = Harness::new();
    h.reply(Reply::Broken(ndjson(&[start(json!([]))])));
    h.fake.abort_on_post.set(Some(1));
    assert_eq!(h.run(h.options()).status, TurnStatus::Cancelled);
    assert_eq!(h.posted().len(), 1);
}

#[test]
fn a_stream_that_ends_without_step_finish_is_interrupted() {
    let h = Harness::new();
    let mut bytes = ndjson(&[start(json!([]))]);
    bytes.extend_from_slice(br#"{"type":"step-finish""#);
    every_attempt(&h, || Reply::Stream(bytes.clone(), 16));
    assert_eq!(
        error(&h.run(h.options())),
        ("TRANSPORT_FAILED", "The chat stream was interrupted.")
    );
}

fn retries(h: &Harness) -> Vec<(usize, usize, u32)> {
    h.fake
        .events
        .borrow()
        .iter()
        .filter_map(|e| match e {
            TurnEvent::StepRetry {
                step_index,
                attempt,
                delay_ms,
            } => Some((*step_index, *attempt, *delay_ms)),
            _ => None,
        })
        .collect()
}

#[test]
fn a_step_broken_mid_frame_is_posted_again_and_read_on_from_where_it_broke() {
    // The server answers the re-posted step with the whole step from its record: the loop
    // skips what it already decoded, so every frame is seen once and the turn completes.
    let whole = ndjson(&step_frames(
        &[
            json!({ "type": "text-delta", "text": "Hel" }),
            json!({ "type": "text-delta", "text": "lo" }),
        ],
        &[],
        None,
    ));
    let once = Harness::new();
    once.reply(Reply::Stream(whole.clone(), 7));
    let expected = once.run(once.options());
    let expected_frames = once.fake.frames.borrow().clone();

    let h = Harness::new();
    // Broken inside the second frame's line.
    let cut = whole.iter().position(|&b| b == b'\n').unwrap() + 9;
    h.reply(Reply::Broken(whole[..cut].to_vec()));
    h.reply(Reply::Stream(whole, 7));
    let outcome = h.run(h.options());
    assert_eq!(outcome.status, TurnStatus::Completed);
    assert_eq!(outcome.messages, expected.messages);
    assert_eq!(*h.fake.frames.borrow(), expected_frames);
    let posted = h.posted();
    assert_eq!(posted.len(), 2);
    assert_eq!(posted[0], posted[1], "a retry posts the same request");
    assert_eq!(retries(&h), vec![(0, 1, 250)]);
}

#[test]
fn an_unreachable_step_is_retried_with_doubling_pauses_and_completes() {
    let h = Harness::new();
    h.reply(Reply::Unreachable);
    h.reply(Reply::Unreachable);
    h.reply(Reply::Broken(Vec::new()));
    h.reply(done());
    let before = h.fake.clock.0.get();
    let outcome = h.run(h.options());
    assert_eq!(outcome.status, TurnStatus::Completed);
    assert_eq!(retries(&h), vec![(0, 1, 250), (0, 2, 500), (0, 3, 1000)]);
    assert!(h.fake.clock.0.get() - before >= 1750.0, "the pauses passed");
}

#[test]
fn a_cancel_during_the_pause_ends_the_turn_without_posting_again() {
    let h = Harness::new();
    h.reply(Reply::Unreachable);
    h.fake.abort_on_post.set(None);
    // The UI's cancel arrives while the loop waits: the first yield of the pause aborts.
    let outcome = {
        let fake = &h.fake;
        let cancel = CancelOnYield(fake);
        let env = TurnEnv {
            surface: &h.surface,
            transport: fake,
            clock: &*fake.clock,
            yielder: &cancel,
            signal: fake,
            ui: fake,
            observer: fake,
        };
        block_on(run_turn(&env, h.options()))
    };
    assert_eq!(
        (outcome.status, outcome.error),
        (TurnStatus::Cancelled, None)
    );
    assert_eq!(h.posted().len(), 1);
    assert_eq!(retries(&h), vec![(0, 1, 250)]);
}

struct CancelOnYield<'a>(&'a Fake);

impl TaskYield for CancelOnYield<'_> {
    fn yield_task(&self) -> LocalBoxFuture<'static, ()> {
        self.0.aborted.set(true);
        async {}.boxed_local()
    }
}

#[test]
fn an_answer_that_is_not_the_step_is_not_retried() {
    // The owning replica died mid-step: what it did is unknown, so the turn ends.
    let h = Harness::new();
    h.reply(Reply::Broken(ndjson(&[start(json!([]))])));
    h.reply(Reply::Status(
        503,
        br#"{"error":{"code":"STEP_INTERRUPTED","message":"The step was interrupted."}}"#.to_vec(),
    ));
    let outcome = h.run(h.options());
    assert_eq!(
        error(&outcome),
        ("STEP_INTERRUPTED", "The step was interrupted.")
    );
    assert_eq!(h.posted().len(), 2);
    let h = Harness::new();
    h.reply(Reply::Status(502, b"bad gateway".to_vec()));
    h.run(h.options());
    assert_eq!(
        h.posted().len(),
        1,
        "an HTTP error answer is not a broken connection"
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
