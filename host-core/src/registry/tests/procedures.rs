//! The registry: procedures and bound keys.

use super::*;

#[test]
fn locked_bound_keys_are_refused() {
    let f = Fixture::new();
    f.screen.borrow_mut().chase = Some(37);
    f.register(chase_dialog(&f.screen, &[]));
    let result = f.call("t1", CHASE, json!({ "invoiceId": 5, "remindersSent": 1 }));
    let error = error_of(&result);
    assert_eq!(error.code, ErrorCode::InvalidInput);
    assert_eq!(
        error.details,
        Some(json!({ "lockedFields": ["invoiceId"] }))
    );
    assert!(f.screen.borrow().executed.borrow().is_empty());
}

#[test]
fn bound_values_are_read_at_execution_time_and_merged() {
    let f = Fixture::new();
    f.register(pending_table(&f.screen));
    f.register(chase_dialog(&f.screen, &[]));
    f.call("t1", SET_FILTERS, json!({ "chase": "37" }));
    let result = f.call("t2", CHASE, json!({ "remindersSent": 2 }));
    assert_eq!(
        ok_output(&result),
        Some(&json!({ "invoice_id": 37, "reminders_sent": 2 }))
    );
    f.call("t3", SET_FILTERS, json!({ "chase": "41" }));
    f.call("t4", CHASE, json!({ "remindersSent": 3 }));
    let executed = f.screen.borrow().executed.borrow().clone();
    assert_eq!(
        executed,
        [
            (
                CHASE.to_string(),
                json!({ "remindersSent": 2, "invoiceId": 37 })
            ),
            (
                CHASE.to_string(),
                json!({ "remindersSent": 3, "invoiceId": 41 })
            ),
        ]
    );
}

#[test]
fn overridable_bound_keys_default_to_the_ui_value() {
    let f = Fixture::new();
    f.screen.borrow_mut().chase = Some(37);
    f.register(chase_dialog(&f.screen, &["invoiceId"]));
    let snapshot = f.surface.snapshot(&SnapshotOptions::default());
    let schema = &snapshot.procedures[0].input_schema;
    assert!(schema["properties"]["invoiceId"]["description"]
        .as_str()
        .unwrap()
        .starts_with("Defaults to the current UI value"));
    assert!(!snapshot.procedures[0].bound_fields[0].locked);
    f.call("t1", CHASE, json!({ "invoiceId": 5 }));
    f.call("t2", CHASE, json!({}));
    let inputs: Vec<Value> = f
        .screen
        .borrow()
        .executed
        .borrow()
        .iter()
        .map(|(_, input)| input.clone())
        .collect();
    assert_eq!(
        inputs,
        [json!({ "invoiceId": 5 }), json!({ "invoiceId": 37 })]
    );
}

#[test]
fn procedure_input_is_validated_against_the_reduced_then_the_full_schema() {
    let f = Fixture::new();
    f.screen.borrow_mut().chase = Some(37);
    f.register(chase_dialog(&f.screen, &[]));
    let result = f.call("t1", CHASE, json!({ "remindersSent": 100 }));
    assert_eq!(error_of(&result).code, ErrorCode::InvalidInput);
    let result = f.call("t2", CHASE, json!("not an object"));
    assert_eq!(error_of(&result).code, ErrorCode::InvalidInput);
    // A bound value that breaks the full schema is a binding failure, not the agent's fault.
    f.screen.borrow_mut().chase = Some(-1);
    let result = f.call("t3", CHASE, json!({}));
    let error = error_of(&result);
    assert_eq!(error.code, ErrorCode::PreconditionFailed);
    assert_eq!(error.details, Some(json!({ "reason": "binding-failed" })));
    assert!(f.screen.borrow().executed.borrow().is_empty());
}

#[test]
fn a_binding_that_throws_at_execution_is_a_precondition_failure() {
    let f = Fixture::new();
    let mut def = chase_dialog(&f.screen, &[]);
    let calls = Rc::new(Cell::new(0));
    let counter = calls.clone();
    def.procedures[0].bind = Some(Rc::new(move || {
        counter.set(counter.get() + 1);
        if counter.get() == 1 {
            Ok(Map::from_iter([("invoiceId".to_string(), json!(1))]))
        } else {
            Err("row gone".into())
        }
    }));
    def.procedures[0].availability = Availability::default();
    f.register(def);
    let result = f.call("t1", CHASE, json!({}));
    assert_eq!(error_of(&result).code, ErrorCode::PreconditionFailed);
    assert_eq!(error_of(&result).retry, Retry::AfterRefresh);
}

#[test]
fn a_binding_that_throws_at_registration_has_no_bound_keys() {
    let f = Fixture::new();
    let mut def = chase_dialog(&f.screen, &[]);
    def.procedures[0].bind = Some(Rc::new(|| Err("not ready".into())));
    f.register(def);
    let snapshot = f.surface.snapshot(&SnapshotOptions::default());
    assert!(snapshot.procedures[0].bound_fields.is_empty());
    assert!(snapshot.procedures[0].input_schema["properties"]
        .get("invoiceId")
        .is_some());
}

#[test]
fn without_an_executor_a_procedure_fails_as_transport() {
    let clock = Rc::new(FakeClock(Cell::new(0.0)));
    let surface = Surface::new(SurfaceOptions {
        clock,
        seed: 1,
        patterns: Rc::new(NativePatterns),
    });
    let screen = Rc::new(RefCell::new(Screen {
        chase: Some(3),
        ..Default::default()
    }));
    surface.register(chase_dialog(&screen, &[])).unwrap();
    let result = block_on(surface.invoke(InvokeRequest {
        capability_id: CHASE.into(),
        ..Default::default()
    }));
    assert_eq!(error_of(&result).code, ErrorCode::ExecutionFailed);
    assert_eq!(
        error_of(&result).details.as_ref().unwrap()["reason"],
        "transport"
    );
}
