//! The registry: confirmation.

use super::*;

/// The pending table registered with `setFilters` asking for confirmation.
fn confirming_fixture() -> Fixture {
    let f = Fixture::new();
    let mut def = pending_table(&f.screen);
    def.actions[0].confirmation = Confirmation::Required;
    f.register(def);
    f
}

#[test]
fn required_confirmation_is_not_cached_so_the_confirmed_retry_runs_once() {
    let f = confirming_fixture();
    let asked = f.call("tc_1", SET_FILTERS, json!({ "q": "A" }));
    let error = error_of(&asked);
    assert_eq!(error.code, ErrorCode::ConfirmationRequired);
    assert_eq!(error.retry, Retry::WithConfirmation);
    let details = error.details.clone().unwrap();
    assert_eq!(
        details["summary"],
        "Narrow this table. — input: {\"q\":\"A\"}"
    );
    assert_eq!(details["effect"], "local-state");
    assert_eq!(details["origin"], "client");
    assert_eq!(f.screen.borrow().runs.get(), 0);
    let confirmed = f.invoke(InvokeRequest {
        invocation_id: Some("tc_1".into()),
        capability_id: SET_FILTERS.into(),
        input: Some(json!({ "q": "A" })),
        confirmed: true,
        ..Default::default()
    });
    assert!(confirmed.is_ok());
    assert_eq!(f.call("tc_1", SET_FILTERS, json!({ "q": "A" })), confirmed);
    assert_eq!(f.screen.borrow().runs.get(), 1);
    let denied = SurfaceError::confirmation_denied(SET_FILTERS);
    assert_eq!(
        (denied.code, denied.retry),
        (ErrorCode::ConfirmationInvalid, Retry::No)
    );
}

/// The confirmation request names the capability, and its summary (description and input)
/// is cut at 300 characters, counted as `char`s.
#[test]
fn a_confirmation_summary_is_cut_at_300_characters() {
    let f = confirming_fixture();
    let error = error_of(&f.call("tc_1", SET_FILTERS, json!({ "q": "é".repeat(400) }))).clone();
    assert_eq!(
        error.message,
        format!("{SET_FILTERS} needs the user's confirmation before it runs.")
    );
    let summary = error.details.unwrap()["summary"]
        .as_str()
        .unwrap()
        .to_owned();
    let whole = format!(
        "Narrow this table. — input: {{\"q\":\"{}\"}}",
        "é".repeat(400)
    );
    assert_eq!(summary, whole.chars().take(300).collect::<String>());
    assert_eq!(summary.chars().count(), 300);
}

#[test]
fn destructive_procedures_require_confirmation_by_their_floor() {
    let f = Fixture::new();
    f.screen.borrow_mut().chase = Some(37);
    let mut def = chase_dialog(&f.screen, &[]);
    def.procedures[0].effect = Effect::Destructive;
    f.register(def);
    let result = f.call("t1", CHASE, json!({}));
    assert_eq!(error_of(&result).code, ErrorCode::ConfirmationRequired);
    assert_eq!(
        f.surface.snapshot(&SnapshotOptions::default()).procedures[0].confirmation,
        Confirmation::Required
    );
}
