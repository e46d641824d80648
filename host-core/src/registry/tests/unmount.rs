//! The registry: unmount during execution.

use super::*;

#[test]
fn unmounting_mid_flight_settles_component_unmounted() {
    let f = Fixture::new();
    let mut call = start_gated_call(&f, Effect::LocalState);
    call.handle.unregister();
    call.pool.run_until_stalled();
    let result = call.first.borrow().clone().unwrap();
    assert_eq!(error_of(&result).code, ErrorCode::ComponentUnmounted);
    assert_eq!(
        error_of(&result).details,
        Some(json!({ "phase": "mid-flight" }))
    );
    assert!(result.surface_changed);
}

#[test]
fn navigation_survives_unmounting_its_owner() {
    let f = Fixture::new();
    let mut call = start_gated_call(&f, Effect::Navigation);
    call.handle.unregister();
    call.pool.run_until_stalled();
    assert!(call.first.borrow().is_none());
    call.release
        .send(json!({ "path": "/receivables/all" }))
        .unwrap();
    call.pool.run_until_stalled();
    assert!(call.first.borrow().as_ref().unwrap().is_ok());
}

#[test]
fn tombstones_are_bounded_to_the_most_recent_hundred() {
    let f = Fixture::new();
    let mut tokens = Vec::new();
    for n in 0..=TOMBSTONE_CAPACITY {
        let mut def = navigation();
        def.instance_id = Some(format!("i{n}"));
        let handle = f.register(def);
        tokens.push(handle.registration_id().unwrap().to_owned());
        handle.unregister();
    }
    let goto = "view:app.navigation.goTo";
    let oldest = f.invoke(request_with_token("t1", goto, &tokens[0]));
    assert_eq!(error_of(&oldest).code, ErrorCode::CapabilityNotFound);
    let newest = f.invoke(request_with_token("t2", goto, &tokens[TOMBSTONE_CAPACITY]));
    assert_eq!(error_of(&newest).code, ErrorCode::ComponentUnmounted);
}

#[test]
fn a_joined_call_still_runs_once_when_the_first_caller_gives_up() {
    let f = Fixture::new();
    let mut call = start_gated_call(&f, Effect::LocalState);
    // The first caller's task is dropped; the invocation stays in flight in the registry.
    drop(call.pool);
    call.pool = LocalPool::new();
    let second = spawn_invoke(&call.pool, &f.surface, apply("tc_1", json!({ "a": 1 })));
    call.pool.run_until_stalled();
    call.release.send(json!("late")).unwrap();
    call.pool.run_until_stalled();
    assert_eq!(call.runs.get(), 1);
    assert_eq!(
        second.borrow().as_ref().unwrap().tool_value(),
        json!("late")
    );
}

#[test]
fn replacing_handlers_alone_keeps_the_version_and_the_registration() {
    let f = Fixture::new();
    let handle = f.register(pending_table(&f.screen));
    let id = handle.registration_id().unwrap().to_owned();
    let mut def = pending_table(&f.screen);
    def.actions[1].execute = Handler::sync(|_, _| Ok(Some(json!("new handler"))));
    assert_eq!(handle.replace(def), Ok(false));
    assert_eq!(f.surface.version(), SurfaceVersion(1));
    assert!(f.take_events().is_empty());
    let result = f.call("t1", SORT, json!({ "key": "amount" }));
    assert_eq!(ok_output(&result), Some(&json!("new handler")));
    assert_eq!(handle.registration_id(), Some(id.as_str()));
}

#[test]
fn replacing_the_structure_bumps_the_version_and_reports_flips() {
    let f = Fixture::new();
    let handle = f.register(chase_dialog(&f.screen, &[]));
    let mut def = chase_dialog(&f.screen, &["invoiceId"]);
    def.procedures[0].availability = Availability::default();
    assert_eq!(handle.replace(def), Ok(true));
    assert_eq!(f.surface.version(), SurfaceVersion(2));
    assert_eq!(f.take_events(), ["availability-changed", "surface-changed"]);
    let snapshot = f.surface.snapshot(&SnapshotOptions::default());
    assert!(!snapshot.procedures[0].bound_fields[0].locked);
    assert!(snapshot.procedures[0].available);
}

#[test]
fn a_replacement_keeps_type_and_instance() {
    let f = Fixture::new();
    let handle = f.register(pending_table(&f.screen));
    let mut moved = pending_table(&f.screen);
    moved.instance_id = Some("other".into());
    assert_eq!(
        handle.replace(moved).unwrap_err().code,
        DefinitionErrorCode::InvalidDefinition
    );
    let mut broken = pending_table(&f.screen);
    broken.actions[0].effect = Effect::Destructive;
    assert_eq!(
        handle.replace(broken).unwrap_err().code,
        DefinitionErrorCode::PlaneViolation
    );
    handle.unregister();
    assert_eq!(handle.replace(pending_table(&f.screen)), Ok(false));
}

#[test]
fn a_claimed_version_is_only_the_text_a_version_is_written_as() {
    assert_eq!(SurfaceVersion::claimed("12"), SurfaceVersion(12));
    assert_eq!(SurfaceVersion::claimed("0"), SurfaceVersion(0));
    assert_eq!(
        SurfaceVersion::claimed("18446744073709551614"),
        SurfaceVersion(u64::MAX - 1)
    );
    // Past `u64` it names no version (as `str::parse` refused it).
    assert_eq!(
        SurfaceVersion::claimed("18446744073709551616"),
        SurfaceVersion(u64::MAX)
    );
    // Text that was never a version's never matched one; it still does not.
    for text in [
        "012", "+12", "-12", "00", "12.0", " 12", "12 ", "", "twelve", "1٢",
    ] {
        let claim = SurfaceVersion::claimed(text);
        assert!(
            claim != SurfaceVersion(12) && claim != SurfaceVersion(0),
            "{text:?}"
        );
    }
}
