//! The registry: resolution and staleness.

use super::*;

pub(super) fn request_with_token(id: &str, capability: &str, token: &str) -> InvokeRequest {
    InvokeRequest {
        invocation_id: Some(id.into()),
        capability_id: capability.into(),
        registration_id: Some(token.into()),
        input: Some(json!({})),
        ..Default::default()
    }
}

#[test]
fn a_replaced_registration_is_stale_and_names_the_live_one() {
    let f = Fixture::new();
    let old = f.register(pending_table(&f.screen));
    let old_id = old.registration_id().unwrap().to_owned();
    old.unregister();
    let new = f.register(pending_table(&f.screen));
    let capability = SET_FILTERS;
    let result = f.invoke(request_with_token("t1", capability, &old_id));
    let error = error_of(&result);
    assert_eq!(error.code, ErrorCode::StaleCapability);
    assert_eq!(error.retry, Retry::AfterRefresh);
    assert_eq!(
        error.details,
        Some(
            json!({ "reason": "registration-replaced", "liveRegistrationId": new.registration_id().unwrap() })
        )
    );
    let result = f.invoke(request_with_token(
        "t2",
        capability,
        "reg_zz_from_another_page",
    ));
    assert_eq!(
        error_of(&result).details.as_ref().unwrap()["reason"],
        "surface-reloaded"
    );
    let result = f.invoke(request_with_token(
        "t3",
        capability,
        new.registration_id().unwrap(),
    ));
    assert!(result.is_ok());
}

#[test]
fn calls_to_unmounted_components_say_so_until_the_tombstone_expires() {
    let f = Fixture::new();
    let handle = f.register(pending_table(&f.screen));
    let token = handle.registration_id().unwrap().to_owned();
    handle.unregister();
    let capability = "view:invoices.pending.readState";
    let result = f.invoke(request_with_token("t1", capability, &token));
    assert_eq!(error_of(&result).code, ErrorCode::ComponentUnmounted);
    assert_eq!(
        error_of(&result).details,
        Some(json!({ "phase": "resolve" }))
    );
    let result = f.call("t2", capability, json!({}));
    assert_eq!(error_of(&result).code, ErrorCode::ComponentUnmounted);
    f.clock.0.set(TOMBSTONE_TTL_MS);
    let result = f.call("t3", capability, json!({}));
    assert_eq!(error_of(&result).code, ErrorCode::CapabilityNotFound);
}

#[test]
fn several_instances_are_ambiguous_without_an_instance_id() {
    let f = Fixture::new();
    for instance in ["a", "b"] {
        let mut def = pending_table(&f.screen);
        def.instance_id = Some(instance.into());
        f.register(def);
    }
    let result = f.call("t1", "view:invoices.pending.readFilters", json!({}));
    let error = error_of(&result);
    assert_eq!(error.code, ErrorCode::AmbiguousInstance);
    assert_eq!(error.retry, Retry::WithChanges);
    let instances = error.details.as_ref().unwrap()["instances"]
        .as_array()
        .unwrap();
    assert_eq!(instances.len(), 2);
    assert_eq!(instances[0]["instanceId"], "a");
    let result = f.invoke(InvokeRequest {
        invocation_id: Some("t2".into()),
        capability_id: "view:invoices.pending.readFilters".into(),
        instance_id: Some("b".into()),
        ..Default::default()
    });
    assert!(result.is_ok());
}

#[test]
fn destructive_procedures_refuse_a_stale_surface_version() {
    let f = Fixture::new();
    f.screen.borrow_mut().chase = Some(37);
    let mut def = chase_dialog(&f.screen, &[]);
    def.procedures[0].effect = Effect::Destructive;
    f.register(def);
    let request = |id: &str, version: u64| InvokeRequest {
        invocation_id: Some(id.into()),
        capability_id: CHASE.into(),
        surface_version: Some(SurfaceVersion(version)),
        confirmed: true,
        ..Default::default()
    };
    let result = f.invoke(request("t1", 0));
    assert_eq!(
        error_of(&result).details,
        Some(json!({ "reason": "surface-version-mismatch" }))
    );
    assert!(f.invoke(request("t2", 1)).is_ok());
    // For other effects the version is only a hint.
    f.register(pending_table(&f.screen));
    let result = f.invoke(InvokeRequest {
        capability_id: "view:invoices.pending.readFilters".into(),
        surface_version: Some(SurfaceVersion(0)),
        ..Default::default()
    });
    assert!(result.is_ok());
}
