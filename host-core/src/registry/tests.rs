//! Registry behaviour, on a surface shaped like the demo's pending-invoices screen.

use super::*;
use crate::capability::{
    ActionDef, Confirmation, Effect, HandlerError, ObservationDef, ProcedureDef,
};
use crate::envelope::{ErrorCode, InvocationResult, Outcome, Retry, SurfaceError};
use crate::pattern::NativePatterns;
use crate::schema::empty_object_schema;
use futures_channel::oneshot;
use futures_executor::{block_on, LocalPool};
use futures_util::task::LocalSpawnExt;
use serde_json::{json, Map, Value};
use std::cell::{Cell, RefCell};
use std::rc::Rc;

const SET_FILTERS: &str = "view:invoices.pending.setFilters";
const SORT: &str = "view:invoices.pending.sort";
const CHASE: &str = "domain:update-collection-status";

struct FakeClock(Cell<f64>);

impl Clock for FakeClock {
    fn now_ms(&self) -> f64 {
        self.0.get()
    }
}

/// The demo screen's live state, shared by its handlers.
#[derive(Default)]
struct Screen {
    filters: Map<String, Value>,
    chase: Option<i64>,
    runs: Cell<u32>,
    executed: RefCell<Vec<(String, Value)>>,
}

struct Fixture {
    surface: Surface,
    clock: Rc<FakeClock>,
    screen: Rc<RefCell<Screen>>,
    events: Rc<RefCell<Vec<SurfaceEvent>>>,
}

impl Fixture {
    fn new() -> Self {
        let clock = Rc::new(FakeClock(Cell::new(0.0)));
        let surface = Surface::new(SurfaceOptions {
            clock: clock.clone(),
            seed: 42,
            patterns: Rc::new(NativePatterns),
        });
        let events = Rc::new(RefCell::new(Vec::new()));
        let sink = events.clone();
        surface.subscribe(move |event| sink.borrow_mut().push(event.clone()));
        let screen = Rc::new(RefCell::new(Screen::default()));
        let executed = screen.clone();
        surface.set_procedure_executor(Handler::sync(move |input, ctx| {
            executed.borrow().executed.borrow_mut().push((ctx.capability_id.clone(), input.clone()));
            Ok(Some(json!({ "invoice_id": input["invoiceId"], "reminders_sent": input["remindersSent"] })))
        }));
        Self {
            surface,
            clock,
            screen,
            events,
        }
    }

    fn take_events(&self) -> Vec<&'static str> {
        self.events
            .borrow_mut()
            .drain(..)
            .map(|e| e.name())
            .collect()
    }

    fn register(&self, def: ComponentDef) -> ComponentHandle {
        let handle = self.surface.register(def).expect("a valid definition");
        self.events.borrow_mut().clear();
        handle
    }

    fn invoke(&self, request: InvokeRequest) -> InvocationResult {
        block_on(self.surface.invoke(request))
    }

    fn call(&self, id: &str, capability: &str, input: Value) -> InvocationResult {
        self.invoke(InvokeRequest {
            invocation_id: Some(id.into()),
            capability_id: capability.into(),
            input: Some(input),
            ..InvokeRequest::default()
        })
    }
}

fn set_filters_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "q": { "type": "string" },
            "due": { "type": "string" },
            "chase": { "type": "string" }
        },
        "additionalProperties": false
    })
}

fn read_state_schema() -> Value {
    json!({
        "type": "object",
        "properties": { "rowCount": { "type": "integer" }, "filters": { "type": "object" } },
        "required": ["rowCount"]
    })
}

/// `invoices.pending`: readState, readFilters, setFilters, sort (with a precondition).
fn pending_table(screen: &Rc<RefCell<Screen>>) -> ComponentDef {
    let mut def = ComponentDef::new("invoices.pending", "Sent-but-unpaid invoices, in cents.");
    let state = screen.clone();
    def.observations.push(ObservationDef {
        name: "readState".into(),
        description: "The rows on screen, with counts.".into(),
        output_schema: read_state_schema(),
        read: Handler::sync(move |_, _| {
            let screen = state.borrow();
            screen.runs.set(screen.runs.get() + 1);
            let rows = if screen.filters.get("due") == Some(&json!("overdue")) {
                7
            } else {
                13
            };
            Ok(Some(json!({ "rowCount": rows, "filters": screen.filters })))
        }),
        availability: Availability::default(),
    });
    let state = screen.clone();
    def.observations.push(ObservationDef {
        name: "readFilters".into(),
        description: "The current filter values.".into(),
        output_schema: json!({ "type": "object" }),
        read: Handler::sync(move |_, _| Ok(Some(Value::Object(state.borrow().filters.clone())))),
        availability: Availability::default(),
    });
    let state = screen.clone();
    def.actions.push(ActionDef {
        name: "setFilters".into(),
        description: "Narrow this table.".into(),
        input_schema: set_filters_schema(),
        output_schema: None,
        effect: Effect::LocalState,
        confirmation: Confirmation::Never,
        idempotent: true,
        execute: Handler::sync(move |input, _| {
            let mut screen = state.borrow_mut();
            screen.runs.set(screen.runs.get() + 1);
            for (key, value) in input.as_object().into_iter().flatten() {
                if key == "chase" {
                    screen.chase = value.as_str().and_then(|s| s.parse().ok());
                }
                screen.filters.insert(key.clone(), value.clone());
            }
            Ok(None)
        }),
        availability: Availability::default(),
    });
    def.actions.push(ActionDef {
        name: "sort".into(),
        description: "Order by a sortable column.".into(),
        input_schema: json!({
            "type": "object",
            "properties": { "key": { "type": ["string", "null"] }, "direction": { "enum": ["asc", "desc"] } },
            "required": ["key"],
            "additionalProperties": false
        }),
        output_schema: None,
        effect: Effect::LocalState,
        confirmation: Confirmation::Never,
        idempotent: true,
        execute: Handler::sync(|input, _| match input["key"].as_str() {
            Some("amount") | None => Ok(None),
            Some(key) => Err(HandlerError::Failed(SurfaceError::precondition_failed(
                format!("\"{key}\" is not a sortable column on this table."),
                Some(json!({ "sortableIds": ["amount"] })),
            ))),
        }),
        availability: Availability::default(),
    });
    def
}

/// The chase dialog: `domain:update-collection-status`, bound to the open invoice.
fn chase_dialog(screen: &Rc<RefCell<Screen>>, overridable: &[&str]) -> ComponentDef {
    let mut def = ComponentDef::new("invoices.chase", "The chase dialog of one invoice.");
    let open = screen.clone();
    let bound = screen.clone();
    def.procedures.push(ProcedureDef {
        path: "update-collection-status".into(),
        description: "Record a collections chase against the invoice whose dialog is open.".into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "invoiceId": { "type": "integer", "exclusiveMinimum": 0 },
                "remindersSent": { "type": "integer", "minimum": 0, "maximum": 99 },
                "note": { "anyOf": [{ "type": "string", "maxLength": 500 }, { "type": "null" }] }
            },
            "required": ["invoiceId"],
            "additionalProperties": false
        }),
        output_schema: None,
        effect: Effect::ServerMutation,
        confirmation: Confirmation::Never,
        bind: Some(Rc::new(move || {
            let mut values = Map::new();
            values.insert("invoiceId".into(), json!(bound.borrow().chase.unwrap_or(1)));
            Ok(values)
        })),
        overridable_fields: overridable.iter().map(|s| s.to_string()).collect(),
        describe: Some(Rc::new(|| Some("Bound to DUN-0037.".into()))),
        availability: Availability::when(move || open.borrow().chase.is_some())
            .reason("Open an invoice's chase dialog first"),
        timeout_ms: None,
    });
    def
}

fn navigation() -> ComponentDef {
    let mut def = ComponentDef::new("app.navigation", "Current route plus navigation targets.");
    def.actions.push(ActionDef {
        name: "goTo".into(),
        description: "Navigate to a known route.".into(),
        input_schema: json!({ "type": "object", "properties": { "path": { "type": "string" } }, "required": ["path"] }),
        output_schema: None,
        effect: Effect::Navigation,
        confirmation: Confirmation::Never,
        idempotent: true,
        execute: Handler::sync(|_, _| Ok(None)),
        availability: Availability::default(),
    });
    def
}

fn error_of(result: &InvocationResult) -> &SurfaceError {
    result
        .error()
        .unwrap_or_else(|| panic!("expected an error, got {result:?}"))
}

fn ok_output(result: &InvocationResult) -> Option<&Value> {
    match &result.outcome {
        Outcome::Ok(output) => output.as_ref(),
        Outcome::Error(error) => panic!("expected ok, got {error:?}"),
    }
}

// ---- registration, ids, versions, events -------------------------------------------------

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

fn definition_error(def: ComponentDef) -> DefinitionErrorCode {
    Fixture::new()
        .surface
        .register(def)
        .err()
        .expect("a definition error")
        .code
}

#[test]
fn structural_defects_are_definition_errors() {
    let screen = Rc::new(RefCell::new(Screen::default()));
    let mut def = pending_table(&screen);
    def.component_type = "Invoices.pending".into();
    assert_eq!(definition_error(def), DefinitionErrorCode::InvalidId);
    let mut def = pending_table(&screen);
    def.instance_id = Some("row 1".into());
    assert_eq!(definition_error(def), DefinitionErrorCode::InvalidId);
    let mut def = pending_table(&screen);
    def.actions[0].name = "set_filters".into();
    assert_eq!(definition_error(def), DefinitionErrorCode::InvalidId);
    let mut def = pending_table(&screen);
    def.actions[0].name = "readState".into();
    assert_eq!(
        definition_error(def),
        DefinitionErrorCode::DuplicateCapability
    );
    let mut def = pending_table(&screen);
    def.actions[0].effect = Effect::ServerMutation;
    assert_eq!(definition_error(def), DefinitionErrorCode::PlaneViolation);
    let mut def = chase_dialog(&screen, &[]);
    def.procedures[0].effect = Effect::LocalState;
    assert_eq!(definition_error(def), DefinitionErrorCode::PlaneViolation);
    let mut def = pending_table(&screen);
    def.actions[0].input_schema = json!({ "oneOf": [{ "type": "object" }] });
    assert_eq!(
        definition_error(def),
        DefinitionErrorCode::UnsupportedSchema
    );
    let mut def = pending_table(&screen);
    def.actions[0].input_schema = json!({ "type": "string" });
    assert_eq!(
        definition_error(def),
        DefinitionErrorCode::UnsupportedSchema
    );
    let mut def = pending_table(&screen);
    def.observations[0].output_schema = json!({ "type": "string", "pattern": "(?=x)" });
    assert_eq!(
        definition_error(def),
        DefinitionErrorCode::UnsupportedSchema
    );
    let mut def = pending_table(&screen);
    def.description = "x".repeat(501);
    assert_eq!(definition_error(def), DefinitionErrorCode::LimitExceeded);
    let mut def = pending_table(&screen);
    def.actions[1].description = "x".repeat(301);
    assert_eq!(definition_error(def), DefinitionErrorCode::LimitExceeded);
    let mut def = pending_table(&screen);
    def.observations[1].description = String::new();
    assert_eq!(
        definition_error(def),
        DefinitionErrorCode::InvalidDefinition
    );
    let mut def = chase_dialog(&screen, &[]);
    def.procedures.push(def.procedures[0].clone());
    assert_eq!(
        definition_error(def),
        DefinitionErrorCode::DuplicateCapability
    );
    let long = format!("a.{}", "b".repeat(118));
    let mut def = navigation();
    def.component_type = long;
    assert_eq!(definition_error(def), DefinitionErrorCode::InvalidId);
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

// ---- availability ---------------------------------------------------------------------------

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

// ---- snapshot -------------------------------------------------------------------------------

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
    let wire = serde_json::to_value(procedure).unwrap();
    assert_eq!(
        wire["boundFields"],
        json!([{ "path": "invoiceId", "locked": true, "source": "ui-state" }])
    );
    assert_eq!(wire["confirmation"], "optional");
    assert_eq!(wire["effect"], "server-mutation");
    assert_eq!(
        serde_json::to_value(table).unwrap()["type"],
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

// ---- invocation: success, validation, typed errors -------------------------------------------

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
    });
    def.observations.push(ObservationDef {
        name: "readWrong".into(),
        description: "Not what it says.".into(),
        output_schema: json!({ "type": "string" }),
        read: Handler::sync(|_, _| Ok(Some(json!(5)))),
        availability: Availability::default(),
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

// ---- dedupe ---------------------------------------------------------------------------------

/// An action whose handler waits for the test to release it, counting its runs.
fn gated_action(
    runs: Rc<Cell<u32>>,
    gate: Rc<RefCell<Option<oneshot::Receiver<Value>>>>,
    effect: Effect,
) -> ComponentDef {
    let mut def = ComponentDef::new("slow.widget", "A widget whose actions take a while.");
    def.actions.push(ActionDef {
        name: "apply".into(),
        description: "Apply something slowly.".into(),
        input_schema: json!({ "type": "object" }),
        output_schema: None,
        effect,
        confirmation: Confirmation::Never,
        idempotent: false,
        execute: Handler::new(move |_, _| {
            runs.set(runs.get() + 1);
            let receiver = gate.borrow_mut().take();
            async move {
                match receiver {
                    Some(receiver) => receiver
                        .await
                        .map(Some)
                        .map_err(|_| HandlerError::Threw("dropped".into())),
                    None => Ok(None),
                }
            }
        }),
        availability: Availability::default(),
    });
    def
}

fn spawn_invoke(
    pool: &LocalPool,
    surface: &Surface,
    request: InvokeRequest,
) -> Rc<RefCell<Option<InvocationResult>>> {
    let slot = Rc::new(RefCell::new(None));
    let out = slot.clone();
    let future = surface.invoke(request);
    pool.spawner()
        .spawn_local(async move { *out.borrow_mut() = Some(future.await) })
        .unwrap();
    slot
}

fn apply(id: &str, input: Value) -> InvokeRequest {
    InvokeRequest {
        invocation_id: Some(id.into()),
        capability_id: "view:slow.widget.apply".into(),
        input: Some(input),
        ..InvokeRequest::default()
    }
}

/// The slow widget registered on `f`, with call `tc_1` to it started and left waiting.
struct GatedCall {
    handle: ComponentHandle,
    pool: LocalPool,
    first: Rc<RefCell<Option<InvocationResult>>>,
    release: oneshot::Sender<Value>,
    runs: Rc<Cell<u32>>,
}

fn start_gated_call(f: &Fixture, effect: Effect) -> GatedCall {
    let runs = Rc::new(Cell::new(0));
    let (release, receiver) = oneshot::channel();
    let gate = Rc::new(RefCell::new(Some(receiver)));
    let handle = f.register(gated_action(runs.clone(), gate, effect));
    let mut pool = LocalPool::new();
    let first = spawn_invoke(&pool, &f.surface, apply("tc_1", json!({ "a": 1 })));
    pool.run_until_stalled();
    assert!(first.borrow().is_none());
    GatedCall {
        handle,
        pool,
        first,
        release,
        runs,
    }
}

#[test]
fn the_same_invocation_id_in_flight_joins_and_runs_once() {
    let f = Fixture::new();
    let mut call = start_gated_call(&f, Effect::LocalState);
    let second = spawn_invoke(&call.pool, &f.surface, apply("tc_1", json!({ "a": 1.0 })));
    call.pool.run_until_stalled();
    assert!(second.borrow().is_none());
    call.release.send(json!({ "applied": true })).unwrap();
    call.pool.run_until_stalled();
    assert_eq!(call.runs.get(), 1);
    let first = call.first.borrow().clone().unwrap();
    assert_eq!(first.tool_value(), json!({ "applied": true }));
    assert_eq!(Some(first), second.borrow().clone());
}

#[test]
fn a_settled_invocation_id_replays_without_running_again() {
    let f = Fixture::new();
    let handle = f.register(pending_table(&f.screen));
    let first = f.call("tc_1", SET_FILTERS, json!({ "q": "DUN" }));
    handle.unregister();
    let replay = f.call("tc_1", SET_FILTERS, json!({ "q": "DUN" }));
    assert_eq!(first, replay);
    assert_eq!(f.screen.borrow().runs.get(), 1);
    let fresh = f.call("tc_2", SET_FILTERS, json!({ "q": "DUN" }));
    assert_eq!(error_of(&fresh).code, ErrorCode::ComponentUnmounted);
}

#[test]
fn terminal_errors_replay_too() {
    let f = Fixture::new();
    f.register(pending_table(&f.screen));
    let first = f.call("tc_1", SORT, json!({ "key": "segment" }));
    assert_eq!(error_of(&first).code, ErrorCode::PreconditionFailed);
    f.surface.unregister(
        f.surface.snapshot(&SnapshotOptions::default()).components[0]
            .registration_id
            .as_str(),
    );
    assert_eq!(f.call("tc_1", SORT, json!({ "key": "segment" })), first);
}

#[test]
fn reusing_an_id_for_a_different_request_conflicts_and_is_not_cached() {
    let f = Fixture::new();
    f.register(pending_table(&f.screen));
    let first = f.call("tc_1", SET_FILTERS, json!({ "q": "A" }));
    let conflict = f.call("tc_1", SET_FILTERS, json!({ "q": "B" }));
    let error = error_of(&conflict);
    assert_eq!(error.code, ErrorCode::InvocationConflict);
    assert_eq!(error.retry, Retry::WithChanges);
    assert_eq!(
        error.details,
        Some(json!({ "reason": "id-reused-with-different-request" }))
    );
    assert_eq!(f.call("tc_1", SET_FILTERS, json!({ "q": "A" })), first);
    assert_eq!(f.screen.borrow().runs.get(), 1);
    assert_eq!(f.screen.borrow().filters["q"], "A");
}

#[test]
fn a_conflict_while_in_flight_does_not_disturb_the_running_call() {
    let f = Fixture::new();
    let mut call = start_gated_call(&f, Effect::LocalState);
    let conflict = f.invoke(apply("tc_1", json!({ "a": 2 })));
    assert_eq!(error_of(&conflict).code, ErrorCode::InvocationConflict);
    call.release.send(json!(1)).unwrap();
    call.pool.run_until_stalled();
    assert!(call.first.borrow().as_ref().unwrap().is_ok());
    assert_eq!(call.runs.get(), 1);
}

#[test]
fn settled_results_expire_after_ten_minutes() {
    let f = Fixture::new();
    f.register(pending_table(&f.screen));
    f.call("tc_1", SET_FILTERS, json!({ "q": "A" }));
    f.clock.0.set(invoke::DEDUPE_TTL_MS - 1.0);
    f.call("tc_1", SET_FILTERS, json!({ "q": "A" }));
    assert_eq!(f.screen.borrow().runs.get(), 1);
    f.clock.0.set(invoke::DEDUPE_TTL_MS);
    f.call("tc_1", SET_FILTERS, json!({ "q": "A" }));
    assert_eq!(f.screen.borrow().runs.get(), 2);
}

#[test]
fn the_replay_cache_is_bounded_and_evicts_the_oldest() {
    let f = Fixture::new();
    f.register(pending_table(&f.screen));
    for n in 0..=invoke::DEDUPE_CAPACITY {
        f.call(&format!("tc_{n}"), SET_FILTERS, json!({}));
    }
    let runs = f.screen.borrow().runs.get();
    f.call(
        &format!("tc_{}", invoke::DEDUPE_CAPACITY),
        SET_FILTERS,
        json!({}),
    );
    assert_eq!(f.screen.borrow().runs.get(), runs);
    f.call("tc_0", SET_FILTERS, json!({}));
    assert_eq!(f.screen.borrow().runs.get(), runs + 1);
}

#[test]
fn missing_invocation_ids_are_minted() {
    let f = Fixture::new();
    f.register(pending_table(&f.screen));
    let request = InvokeRequest {
        capability_id: "view:invoices.pending.readFilters".into(),
        ..Default::default()
    };
    let a = f.invoke(request.clone());
    let b = f.invoke(request);
    assert!(a.invocation_id.starts_with("inv_") && a.invocation_id.len() == 16);
    assert_ne!(a.invocation_id, b.invocation_id);
}

// ---- confirmation ---------------------------------------------------------------------------

#[test]
fn required_confirmation_is_not_cached_so_the_confirmed_retry_runs_once() {
    let f = Fixture::new();
    let mut def = pending_table(&f.screen);
    def.actions[0].confirmation = Confirmation::Required;
    f.register(def);
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

// ---- procedures and bound keys --------------------------------------------------------------

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

// ---- resolution and staleness -----------------------------------------------------------------

fn request_with_token(id: &str, capability: &str, token: &str) -> InvokeRequest {
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

// ---- unmount during execution ---------------------------------------------------------------

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
    // Text that was never a version's never matched one; it still does not.
    for text in ["012", "+12", "00", "12.0", " 12", "", "twelve"] {
        let claim = SurfaceVersion::claimed(text);
        assert!(
            claim != SurfaceVersion(12) && claim != SurfaceVersion(0),
            "{text:?}"
        );
    }
}
