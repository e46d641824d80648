//! The step loop: browser calls.

use super::*;

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
    register_confirmed_table(h);
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

fn register_confirmed_table(h: &Harness) {
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
}

/// A turn resumed after a reload: the restored history ends with the call the user had not
/// yet confirmed.
fn resumed(h: &Harness) -> TurnOptions {
    let mut options = h.options();
    options.messages.push(
        dpas_protocol::test_support::from_value(json!({ "role": "assistant", "content": [
            { "type": "tool-call", "toolCallId": "c1", "toolName": "view_invoices__bulk__archiveAll", "input": {} }
        ] }))
        .unwrap(),
    );
    options.resume = vec![PendingToolCall {
        tool_call_id: "c1".into(),
        wire_name: "view_invoices__bulk__archiveAll".into(),
        canonical_id: "view:invoices.bulk.archiveAll".into(),
        input: json!({}),
    }];
    options
}

#[test]
fn a_resumed_turn_asks_again_runs_once_approved_and_posts_the_answer_as_step_0() {
    let h = Harness::new();
    h.fake.confirm_answer.set(true);
    register_confirmed_table(&h);
    h.reply(done());
    let outcome = h.run(resumed(&h));
    assert_eq!(outcome.status, TurnStatus::Completed);
    assert_eq!(h.fake.confirms.borrow().len(), 1);
    assert_eq!(h.fake.confirms.borrow()[0].tool_call_id, "c1");
    assert_eq!(h.screen.calls.borrow().len(), 1);
    let posted = h.posted();
    assert_eq!(
        posted.len(),
        1,
        "the calls are answered before the one step"
    );
    assert_eq!(posted[0]["stepIndex"], 0);
    let last = posted[0]["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["role"], "tool");
    assert_eq!(last["content"][0]["toolCallId"], "c1");
    assert_eq!(
        last["content"][0]["output"]["value"],
        json!({ "done": true })
    );
}

#[test]
fn a_resumed_turn_denied_posts_the_denial_and_runs_nothing() {
    let h = Harness::new();
    h.fake.confirm_answer.set(false);
    register_confirmed_table(&h);
    h.reply(done());
    let outcome = h.run(resumed(&h));
    assert_eq!(outcome.status, TurnStatus::Completed);
    assert!(h.screen.calls.borrow().is_empty());
    let last = h.posted()[0]["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(
        last["content"][0]["output"]["value"]["error"]["code"],
        "CONFIRMATION_INVALID"
    );
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
