//! The step loop: the golden turn.

use super::*;

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
        messages: dpas_protocol::test_support::from_value(step0["messages"].clone()).unwrap(),
        pathname: "/receivables/pending".into(),
        route_floors: Some(dpas_protocol::test_support::reference_route_floors()),
        model_id: Some("mock/scripted".into()),
        catalog_mode: CatalogMode::Direct,
        settle: SettlePolicy::default(),
        resume: Vec::new(),
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
        dpas_protocol::test_support::to_value(&outcome.messages)
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
