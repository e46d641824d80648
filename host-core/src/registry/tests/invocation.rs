//! The registry: invocation: success, validation, typed errors.

use super::*;

#[test]
fn an_action_runs_with_validated_input_and_answers_done() {
    let f = Fixture::new();
    f.register(pending_table(&f.screen));
    let result = f.call("tc_1", SET_FILTERS, json!({ "due": "overdue" }));
    assert!(result.is_ok());
    assert_eq!(result.tool_value(), json!({ "done": true }));
    assert_eq!(result.invocation_id, "tc_1");
    assert!(!result.surface_changed);
    let state = f.call("tc_2", "view:invoices.pending.readState", Value::Null);
    assert_eq!(ok_output(&state).unwrap()["rowCount"], 7);
    assert_eq!(
        f.take_events(),
        [
            "invocation-started",
            "invocation-settled",
            "invocation-started",
            "invocation-settled"
        ]
    );
}

#[test]
fn invalid_input_is_refused_before_the_handler_runs() {
    let f = Fixture::new();
    f.register(pending_table(&f.screen));
    let result = f.call("tc_1", SET_FILTERS, json!({ "status": "x", "q": 3 }));
    let error = error_of(&result);
    assert_eq!(error.code, ErrorCode::InvalidInput);
    assert_eq!(error.retry, Retry::WithChanges);
    assert_eq!(
        error.details,
        Some(json!({ "issues": [
            { "path": "/status", "message": "Unrecognized key \"status\"" },
            { "path": "/q", "message": "Expected string, received number" }
        ] }))
    );
    assert_eq!(f.screen.borrow().runs.get(), 0);
    let result = f.call("tc_2", SORT, json!({ "direction": "up" }));
    assert_eq!(error_of(&result).code, ErrorCode::InvalidInput);
}

#[test]
fn unknown_malformed_and_hidden_ids_are_not_found() {
    let f = Fixture::new();
    f.register(pending_table(&f.screen));
    for (n, id) in [
        "view:invoices.pending.nothing",
        "view:invoices.other.readState",
        "invoices.pending.readState",
        "domain:nope",
    ]
    .into_iter()
    .enumerate()
    {
        let result = f.call(&format!("t{n}"), id, json!({}));
        let error = error_of(&result);
        assert_eq!(error.code, ErrorCode::CapabilityNotFound, "{id}");
        assert_eq!(error.retry, Retry::AfterRefresh);
        assert_eq!(error.details, None);
    }
}

#[test]
fn handlers_that_throw_become_execution_failed_and_typed_failures_pass_through() {
    let f = Fixture::new();
    let mut def = navigation();
    def.actions[0].execute =
        Handler::new(|_, _| async { Err(HandlerError::Threw("TypeError: x is undefined".into())) });
    f.register(def);
    f.register(pending_table(&f.screen));
    let result = f.call("t1", "view:app.navigation.goTo", json!({ "path": "/x" }));
    let error = error_of(&result);
    assert_eq!(error.code, ErrorCode::ExecutionFailed);
    assert_eq!(
        error.message,
        "The capability threw instead of returning a result."
    );
    assert_eq!(error.retry, Retry::No);
    assert!(!error.message.contains("TypeError"));
    let result = f.call("t2", SORT, json!({ "key": "segment" }));
    let error = error_of(&result);
    assert_eq!(error.code, ErrorCode::PreconditionFailed);
    assert_eq!(
        error.message,
        "\"segment\" is not a sortable column on this table."
    );
    assert_eq!(error.details, Some(json!({ "sortableIds": ["amount"] })));
}

#[test]
fn outputs_are_checked_for_size_and_schema() {
    let f = Fixture::new();
    let mut def = ComponentDef::new("big.table", "Returns too much.");
    def.observations.push(ObservationDef {
        name: "readAll".into(),
        description: "Everything.".into(),
        output_schema: json!({ "type": "string" }),
        read: Handler::sync(|_, _| Ok(Some(json!("x".repeat(33 * 1024))))),
        availability: Availability::default(),
        untrusted: false,
    });
    def.observations.push(ObservationDef {
        name: "readWrong".into(),
        description: "Not what it says.".into(),
        output_schema: json!({ "type": "string" }),
        read: Handler::sync(|_, _| Ok(Some(json!(5)))),
        availability: Availability::default(),
        untrusted: false,
    });
    f.register(def);
    let result = f.call("t1", "view:big.table.readAll", json!({}));
    assert_eq!(
        error_of(&result).details,
        Some(json!({ "reason": "output-too-large" }))
    );
    let result = f.call("t2", "view:big.table.readWrong", json!({}));
    assert_eq!(
        error_of(&result).details,
        Some(json!({ "reason": "output-invalid" }))
    );
    assert_eq!(error_of(&result).code, ErrorCode::ExecutionFailed);
}

#[test]
fn a_version_move_during_execution_is_flagged() {
    let f = Fixture::new();
    let surface = f.surface.clone();
    let mut def = ComponentDef::new("app.shell", "Mounts things.");
    let execute = Handler::sync(move |_, _| {
        surface.register(navigation()).unwrap();
        Ok(None)
    });
    def.actions.push(ActionDef::new(
        "openNavigation",
        "Mount the navigation.",
        Effect::LocalState,
        empty_object_schema(),
        execute,
    ));
    f.register(def);
    let result = f.call("t1", "view:app.shell.openNavigation", json!({}));
    assert!(result.surface_changed);
    assert_eq!(result.surface_version, SurfaceVersion(2));
    assert_eq!(result.to_value()["surfaceChanged"], true);
}
