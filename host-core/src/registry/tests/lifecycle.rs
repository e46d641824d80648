//! The registry: registration, ids, versions, events.

use super::*;

#[test]
fn register_mints_a_registration_id_bumps_the_version_and_announces_it() {
    let f = Fixture::new();
    assert_eq!(f.surface.version(), SurfaceVersion(0));
    let handle = f.surface.register(pending_table(&f.screen)).unwrap();
    let id = handle.registration_id().unwrap();
    assert!(
        id.starts_with("reg_1") && id.len() == "reg_1".len() + 6,
        "{id}"
    );
    assert_eq!(handle.status(), HandleStatus::Active);
    assert_eq!(f.surface.version(), SurfaceVersion(1));
    assert_eq!(f.take_events(), ["component-registered", "surface-changed"]);
    let second = f.surface.register(navigation()).unwrap();
    assert_ne!(second.registration_id(), handle.registration_id());
    assert!(second.registration_id().unwrap().starts_with("reg_2"));
    assert_eq!(f.surface.version(), SurfaceVersion(2));
}

#[test]
fn unregister_bumps_the_version_and_is_idempotent() {
    let f = Fixture::new();
    let handle = f.register(pending_table(&f.screen));
    assert!(handle.unregister());
    assert_eq!(handle.status(), HandleStatus::Unregistered);
    assert_eq!(f.surface.version(), SurfaceVersion(2));
    assert_eq!(
        f.take_events(),
        ["component-unregistered", "surface-changed"]
    );
    assert!(!handle.unregister());
    assert!(f.take_events().is_empty());
    assert_eq!(f.surface.version(), SurfaceVersion(2));
}

#[test]
fn a_duplicate_live_instance_is_rejected_with_a_dead_handle() {
    let f = Fixture::new();
    f.register(pending_table(&f.screen));
    let rejected = f.surface.register(pending_table(&f.screen)).unwrap();
    assert_eq!(rejected.status(), HandleStatus::Rejected);
    assert_eq!(rejected.registration_id(), None);
    assert!(!rejected.update(ComponentUpdate {
        enabled: Some(false),
        ..Default::default()
    }));
    assert_eq!(f.take_events(), ["component-rejected"]);
    assert_eq!(f.surface.version(), SurfaceVersion(1));
    let mut other = pending_table(&f.screen);
    other.instance_id = Some("second".into());
    assert_eq!(
        f.surface.register(other).unwrap().status(),
        HandleStatus::Active
    );
}

/// The code of the definition's refusal, after checking its message.
fn definition_error_saying(def: ComponentDef, message: &str) -> DefinitionErrorCode {
    let error = Fixture::new()
        .surface
        .register(def)
        .err()
        .expect("a definition error");
    assert_eq!(error.message, message);
    error.code
}

#[test]
fn structural_defects_are_definition_errors() {
    let screen = Rc::new(RefCell::new(Screen::default()));
    let mut def = pending_table(&screen);
    def.component_type = "Invoices.pending".into();
    assert_eq!(
        definition_error_saying(def, "component type \"Invoices.pending\" is not valid"),
        DefinitionErrorCode::InvalidId
    );
    let mut def = pending_table(&screen);
    def.instance_id = Some("row 1".into());
    assert_eq!(
        definition_error_saying(def, "instance id \"row 1\" is not valid"),
        DefinitionErrorCode::InvalidId
    );
    let mut def = pending_table(&screen);
    def.actions[0].name = "set_filters".into();
    assert_eq!(
        definition_error_saying(
            def,
            "capability id \"view:invoices.pending.set_filters\" is not valid"
        ),
        DefinitionErrorCode::InvalidId
    );
    let mut def = pending_table(&screen);
    def.actions[0].name = "readState".into();
    assert_eq!(
        definition_error_saying(def, "view:invoices.pending.readState is declared twice"),
        DefinitionErrorCode::DuplicateCapability
    );
    let mut def = pending_table(&screen);
    def.actions[0].effect = Effect::ServerMutation;
    assert_eq!(definition_error_saying(def, "view:invoices.pending.setFilters declares effect server-mutation; a view action is local-state or navigation"), DefinitionErrorCode::PlaneViolation);
    let mut def = chase_dialog(&screen, &[]);
    def.procedures[0].effect = Effect::LocalState;
    assert_eq!(definition_error_saying(def, "domain:update-collection-status declares effect local-state; a domain reference has a server effect"), DefinitionErrorCode::PlaneViolation);
    let mut def = pending_table(&screen);
    def.actions[0].input_schema = json!({ "oneOf": [{ "type": "object" }] });
    assert_eq!(
        definition_error_saying(def, "view:invoices.pending.setFilters input schema: keyword `oneOf` is outside the supported schema subset"),
        DefinitionErrorCode::UnsupportedSchema
    );
    let mut def = pending_table(&screen);
    def.actions[0].input_schema = json!({ "type": "string" });
    assert_eq!(
        definition_error_saying(
            def,
            "view:invoices.pending.setFilters input schema must be an object schema"
        ),
        DefinitionErrorCode::UnsupportedSchema
    );
    let mut def = pending_table(&screen);
    def.observations[0].output_schema = json!({ "type": "string", "pattern": "(?=x)" });
    assert_eq!(
        definition_error_saying(def, "view:invoices.pending.readState output schema: pattern \"(?=x)\": look-around or a named group is not supported"),
        DefinitionErrorCode::UnsupportedSchema
    );
    let mut def = pending_table(&screen);
    def.description = "x".repeat(501);
    assert_eq!(
        definition_error_saying(
            def,
            "invoices.pending has a 501-character description, over the limit of 500"
        ),
        DefinitionErrorCode::LimitExceeded
    );
    let mut def = pending_table(&screen);
    def.actions[1].description = "x".repeat(301);
    assert_eq!(
        definition_error_saying(
            def,
            "view:invoices.pending.sort has a 301-character description, over the limit of 300"
        ),
        DefinitionErrorCode::LimitExceeded
    );
    let mut def = pending_table(&screen);
    def.observations[1].description = String::new();
    assert_eq!(
        definition_error_saying(def, "view:invoices.pending.readFilters needs a description"),
        DefinitionErrorCode::InvalidDefinition
    );
    let mut def = chase_dialog(&screen, &[]);
    def.procedures.push(def.procedures[0].clone());
    assert_eq!(
        definition_error_saying(
            def,
            "domain:update-collection-status is referenced twice by one component"
        ),
        DefinitionErrorCode::DuplicateCapability
    );
    let long_type = format!("a.{}", "b".repeat(118));
    let mut def = navigation();
    def.component_type = long_type.clone();
    assert_eq!(
        definition_error_saying(
            def,
            &format!("capability id \"view:{}.goTo\" is not valid", long_type),
        ),
        DefinitionErrorCode::InvalidId
    );
}

#[test]
fn listeners_may_mutate_the_surface_and_events_stay_in_order() {
    let f = Fixture::new();
    let surface = f.surface.clone();
    let nav_registered = Rc::new(Cell::new(false));
    let once = nav_registered.clone();
    f.surface.subscribe(move |event| {
        if matches!(event, SurfaceEvent::ComponentRegistered { .. }) && !once.replace(true) {
            surface.register(navigation()).unwrap();
        }
    });
    f.surface.register(pending_table(&f.screen)).unwrap();
    assert_eq!(
        f.take_events(),
        [
            "component-registered",
            "surface-changed",
            "component-registered",
            "surface-changed"
        ]
    );
    assert_eq!(f.surface.version(), SurfaceVersion(2));
}

#[test]
fn unsubscribed_listeners_hear_nothing() {
    let f = Fixture::new();
    let heard = Rc::new(Cell::new(0));
    let counter = heard.clone();
    let id = f.surface.subscribe(move |_| counter.set(counter.get() + 1));
    f.register(navigation());
    assert_eq!(heard.get(), 2);
    assert!(f.surface.unsubscribe(id));
    assert!(!f.surface.unsubscribe(id));
    f.register(pending_table(&f.screen));
    assert_eq!(heard.get(), 2);
}
