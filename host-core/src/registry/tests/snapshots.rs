//! The registry: snapshot.

use super::*;

#[test]
fn snapshots_order_components_and_report_availability() {
    let f = Fixture::new();
    f.register(pending_table(&f.screen));
    f.register(chase_dialog(&f.screen, &[]));
    f.register(navigation());
    let snapshot = f.surface.snapshot(&SnapshotOptions::default());
    assert_eq!(snapshot.surface_version, SurfaceVersion(3));
    let types: Vec<&str> = snapshot
        .components
        .iter()
        .map(|c| c.component_type.as_str())
        .collect();
    // The chase dialog has only a procedure, so it appears in `procedures` alone.
    assert_eq!(types, ["app.navigation", "invoices.pending"]);
    let table = &snapshot.components[1];
    assert_eq!(table.instance_id, "default");
    assert_eq!(
        table.observations[0].capability_id,
        "view:invoices.pending.readState"
    );
    assert_eq!(table.actions[0].effect, Effect::LocalState);
    let procedure = &snapshot.procedures[0];
    assert_eq!(procedure.procedure_id, CHASE);
    assert!(!procedure.available);
    assert_eq!(
        procedure.unavailable_reason.as_deref(),
        Some("Open an invoice's chase dialog first")
    );
    assert_eq!(procedure.confirmation, Confirmation::Optional);
    assert_eq!(
        procedure.contextual_note.as_deref(),
        Some("Bound to DUN-0037.")
    );
    assert_eq!(procedure.context.component_type, "invoices.chase");
    let properties = procedure.input_schema["properties"].as_object().unwrap();
    assert!(!properties.contains_key("invoiceId"));
    assert!(procedure.input_schema.get("required").is_none());
    let wire = dpas_protocol::test_support::to_value(procedure).unwrap();
    assert_eq!(
        wire["boundFields"],
        json!([{ "path": "invoiceId", "locked": true, "source": "ui-state" }])
    );
    assert_eq!(wire["confirmation"], "optional");
    assert_eq!(wire["effect"], "server-mutation");
    assert_eq!(
        dpas_protocol::test_support::to_value(table).unwrap()["type"],
        "invoices.pending"
    );
}

#[test]
fn snapshots_respect_scope_priority_and_include_unavailable() {
    let f = Fixture::new();
    f.register(pending_table(&f.screen));
    f.register(chase_dialog(&f.screen, &[]));
    let mut nav = navigation();
    nav.priority = -1;
    f.register(nav);
    let all = f.surface.snapshot(&SnapshotOptions::default());
    let types: Vec<&str> = all
        .components
        .iter()
        .map(|c| c.component_type.as_str())
        .collect();
    assert_eq!(types, ["invoices.pending", "app.navigation"]);
    let scoped = f.surface.snapshot(&SnapshotOptions {
        scope: vec!["app".into()],
        include_unavailable: true,
    });
    assert_eq!(scoped.components.len(), 1);
    assert!(scoped.procedures.is_empty());
    let available_only = f.surface.snapshot(&SnapshotOptions {
        scope: vec![],
        include_unavailable: false,
    });
    assert!(available_only.procedures.is_empty());
    assert_eq!(available_only.components.len(), 2);
}

#[test]
fn snapshot_json_is_what_serialize_writes() {
    let f = Fixture::new();
    f.register(pending_table(&f.screen));
    f.register(chase_dialog(&f.screen, &[]));
    f.register(navigation());
    let mut snapshot = f.surface.snapshot(&SnapshotOptions::default());
    // Every optional field both ways: the fixture's procedure has a note and a reason and no
    // output schema; a copy gets the opposite, and so do an action and an observation.
    let mut procedure = snapshot.procedures[0].clone();
    procedure.contextual_note = None;
    procedure.unavailable_reason = None;
    procedure.available = true;
    procedure.output_schema = Some(json!({ "type": "object", "x-float": 0.30000000000000004 }));
    procedure.bound_fields.clear();
    snapshot.procedures.push(procedure);
    let table = &mut snapshot.components[1];
    let mut action = table.actions[0].clone();
    action.output_schema = Some(json!({ "type": "null" }));
    action.unavailable_reason = Some("Not now".into());
    action.available = false;
    table.actions.push(action);
    let mut observation = table.observations[0].clone();
    observation.unavailable_reason = Some("Hidden".into());
    table.observations.push(observation);

    let by_hand = snapshot.to_value();
    assert_eq!(
        by_hand,
        dpas_protocol::test_support::to_value(&snapshot).unwrap()
    );
    assert_eq!(
        serde_json::to_string(&by_hand).unwrap(),
        serde_json::to_string(&snapshot).unwrap(),
        "the same keys in the same order"
    );
}
