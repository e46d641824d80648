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
