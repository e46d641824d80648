//! The registry: availability.

use super::*;

#[test]
fn update_bumps_the_version_only_when_something_changes() {
    let f = Fixture::new();
    let handle = f.register(pending_table(&f.screen));
    assert!(!handle.update(ComponentUpdate {
        enabled: Some(true),
        ..Default::default()
    }));
    assert!(f.take_events().is_empty());
    assert_eq!(f.surface.version(), SurfaceVersion(1));
    assert!(handle.update(ComponentUpdate {
        enabled: Some(false),
        ..Default::default()
    }));
    assert_eq!(f.surface.version(), SurfaceVersion(2));
    assert_eq!(f.take_events(), ["availability-changed", "surface-changed"]);
    let result = f.call("t1", SET_FILTERS, json!({}));
    let error = error_of(&result);
    assert_eq!(error.code, ErrorCode::CapabilityNotAvailable);
    assert_eq!(error.retry, Retry::AfterRefresh);
    assert_eq!(
        error.details,
        Some(json!({ "reason": "component-disabled" }))
    );
    assert_eq!(f.screen.borrow().runs.get(), 0);
}

#[test]
fn pushed_overrides_disable_one_capability_with_a_reason() {
    let f = Fixture::new();
    let handle = f.register(pending_table(&f.screen));
    let sort = SORT.to_string();
    let off = PushedAvailability {
        available: false,
        reason: Some("Load the rows first".into()),
    };
    assert!(handle.update(ComponentUpdate {
        enabled: None,
        availability: vec![(sort.clone(), off.clone())]
    }));
    let events = f.events.borrow_mut().drain(..).collect::<Vec<_>>();
    assert_eq!(
        events[0],
        SurfaceEvent::AvailabilityChanged {
            capability_ids: vec![sort.clone()]
        }
    );
    assert!(!handle.update(ComponentUpdate {
        enabled: None,
        availability: vec![(sort.clone(), off)]
    }));
    let result = f.call("t1", &sort, json!({ "key": null }));
    assert_eq!(
        error_of(&result).details,
        Some(json!({ "reason": "Load the rows first" }))
    );
    assert!(f.call("t2", SET_FILTERS, json!({})).is_ok());
    let on = PushedAvailability {
        available: true,
        reason: None,
    };
    assert!(handle.update(ComponentUpdate {
        enabled: None,
        availability: vec![(sort.clone(), on)]
    }));
    assert!(f.call("t3", &sort, json!({ "key": null })).is_ok());
    assert_eq!(f.surface.version(), SurfaceVersion(3));
}

#[test]
fn when_predicates_gate_invocation_with_the_authored_reason() {
    let f = Fixture::new();
    f.register(chase_dialog(&f.screen, &[]));
    let result = f.call("t1", CHASE, json!({ "remindersSent": 1 }));
    let error = error_of(&result);
    assert_eq!(error.code, ErrorCode::CapabilityNotAvailable);
    assert_eq!(
        error.details,
        Some(json!({ "reason": "Open an invoice's chase dialog first" }))
    );
    assert!(f.screen.borrow().executed.borrow().is_empty());
}

#[test]
fn a_throwing_when_is_unavailable_with_when_error_and_a_false_one_without_reason_says_so() {
    let f = Fixture::new();
    let mut def = navigation();
    def.actions[0].availability = Availability {
        when: Some(Rc::new(|| Err("boom".into()))),
        unavailable_reason: None,
    };
    let mut second = def.actions[0].clone();
    second.name = "back".into();
    second.availability = Availability::when(|| false);
    def.actions.push(second);
    f.register(def);
    let result = f.call("t1", "view:app.navigation.goTo", json!({ "path": "/" }));
    assert_eq!(
        error_of(&result).details,
        Some(json!({ "reason": "when-error" }))
    );
    let result = f.call("t2", "view:app.navigation.back", json!({ "path": "/" }));
    assert_eq!(
        error_of(&result).details,
        Some(json!({ "reason": "when-false" }))
    );
}

#[test]
fn recheck_reports_when_flips_without_bumping_the_version() {
    let f = Fixture::new();
    f.register(pending_table(&f.screen));
    f.register(chase_dialog(&f.screen, &[]));
    assert!(!f.surface.recheck_availability());
    f.screen.borrow_mut().chase = Some(37);
    assert!(f.surface.recheck_availability());
    let events = f.events.borrow_mut().drain(..).collect::<Vec<_>>();
    assert_eq!(
        events,
        [SurfaceEvent::AvailabilityChanged {
            capability_ids: vec![CHASE.into()]
        }]
    );
    assert_eq!(f.surface.version(), SurfaceVersion(2));
    assert!(!f.surface.recheck_availability());
}
