//! Registry behaviour, on a surface shaped like the demo's pending-invoices screen.

use super::*;
use crate::capability::{
    ActionDef, Availability, Confirmation, Effect, HandlerError, ObservationDef, ProcedureDef,
};
use crate::envelope::{ErrorCode, InvocationResult, Outcome, Retry, SurfaceError};
use crate::pattern::NativePatterns;
use crate::schema::empty_object_schema;
use dpas_protocol::json::{Map, Value};
use dpas_protocol::test_json as json;
use futures_channel::oneshot;
use futures_executor::{block_on, LocalPool};
use futures_util::task::LocalSpawnExt;
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
        untrusted: false,
    });
    let state = screen.clone();
    def.observations.push(ObservationDef {
        name: "readFilters".into(),
        description: "The current filter values.".into(),
        output_schema: json!({ "type": "object" }),
        read: Handler::sync(move |_, _| Ok(Some(Value::Object(state.borrow().filters.clone())))),
        availability: Availability::default(),
        untrusted: false,
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
        untrusted: false,
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
        untrusted: false,
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
        untrusted: false,
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

mod availability;
mod confirmation;
mod dedupe;
mod invocation;
mod lifecycle;
mod procedures;
mod resolution;
mod snapshots;
mod unmount;

// Helpers more than one file uses.
use dedupe::{apply, spawn_invoke, start_gated_call};
use resolution::request_with_token;
