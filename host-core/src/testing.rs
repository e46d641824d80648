//! Test support: the demo's `/receivables/pending` surface, rebuilt from the reference
//! trace's own descriptors, with handlers that record what they were asked to do.

use crate::capability::{
    ActionDef, Availability, ComponentDef, Confirmation, Effect, Handler, ObservationDef,
    ProcedureDef,
};
use crate::ids::{parse_capability_id, CapabilityId};
use crate::registry::{Surface, SurfaceOptions};
use crate::settle::Clock;
use dpas_protocol::json::{Map, Value};
use dpas_protocol::test_json as json;
use std::cell::{Cell, RefCell};
use std::rc::Rc;

pub(crate) use dpas_protocol::test_support::traces_dir;

/// A request body from `fixtures/reference-traces/`.
pub(crate) fn trace_request(name: &str) -> Value {
    let path = traces_dir().join(format!("{name}.request.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).expect("a JSON trace")
}

/// A clock the test moves by hand.
#[derive(Default)]
pub(crate) struct FakeClock(pub Cell<f64>);

impl Clock for FakeClock {
    fn now_ms(&self) -> f64 {
        self.0.get()
    }
}

/// The screen behind the demo surface.
#[derive(Default)]
pub(crate) struct DemoScreen {
    /// Every action and procedure call, as `(canonical id, input)`.
    pub calls: RefCell<Vec<(String, Value)>>,
    pub pathname: RefCell<String>,
    pub chase: Cell<Option<i64>>,
    /// Canned outputs by canonical id, replacing the defaults.
    pub outputs: RefCell<std::collections::HashMap<String, Value>>,
}

pub(crate) const CHASE_REASON: &str = "Open an invoice's chase dialog first";

fn record(screen: &Rc<DemoScreen>, id: &str) -> Handler {
    let (screen, id) = (screen.clone(), id.to_owned());
    Handler::sync(move |input, _| {
        screen.calls.borrow_mut().push((id.clone(), input.clone()));
        match id.as_str() {
            "view:app.navigation.goTo" => {
                *screen.pathname.borrow_mut() = input["path"].as_str().unwrap_or("").to_owned()
            }
            "view:invoices.pending.setFilters" => {
                if let Some(chase) = input.get("chase").and_then(Value::as_str) {
                    screen.chase.set(chase.parse().ok());
                }
            }
            _ => {}
        }
        if let Some(output) = screen.outputs.borrow().get(&id) {
            return Ok(Some(output.clone()));
        }
        Ok(match id.as_str() {
            "view:invoices.pending.readState" => Some(json!({ "rowCount": 13, "totalRows": 13 })),
            "domain:update-collection-status" => Some(json!({ "invoice_id": input["invoiceId"] })),
            _ if id.starts_with("view:") && id.contains(".read") => Some(json!({})),
            _ => None,
        })
    })
}

/// The 16 descriptors the reference browser posted on `/receivables/pending` (the
/// `catalog.frontendTools` of its trace `browser-carla-step0`), kept in the repository so
/// the tests built on the demo surface run without the recorded traffic.
pub(crate) const DEMO_FRONTEND_TOOLS: &str =
    include_str!("../tests/fixtures/demo-frontend-tools.json");

/// Registers the surface the reference browser had on `/receivables/pending`, with the chase
/// reference bound to the open dialog's invoice.
pub(crate) fn register_demo_surface(surface: &Surface, screen: &Rc<DemoScreen>) {
    let tools: Vec<Value> = serde_json::from_str(DEMO_FRONTEND_TOOLS).expect("the fixture");
    let mut components: Vec<ComponentDef> = Vec::new();
    for tool in &tools {
        let id = tool["canonicalId"].as_str().unwrap_or_default();
        let full = tool["description"].as_str().unwrap_or_default();
        let description = full
            .split_once("] ")
            .map_or(full, |(_, rest)| rest)
            .to_owned();
        let schema = tool["inputSchema"].clone();
        let effect: Effect =
            dpas_protocol::test_support::from_value(tool["effect"].clone()).expect("an effect");
        match parse_capability_id(id).expect("a canonical id") {
            CapabilityId::View {
                component_type,
                name,
            } => {
                if components
                    .last()
                    .is_none_or(|c| c.component_type != component_type)
                {
                    components.push(ComponentDef::new(
                        component_type,
                        format!("The {component_type} component."),
                    ));
                }
                let component = components.last_mut().expect("just pushed");
                if effect == Effect::Read {
                    component.observations.push(ObservationDef {
                        name: name.to_owned(),
                        description,
                        output_schema: json!({ "type": "object" }),
                        read: record(screen, id),
                        availability: Availability::default(),
                        untrusted: false,
                    });
                } else {
                    component.actions.push(ActionDef {
                        name: name.to_owned(),
                        description,
                        input_schema: schema,
                        output_schema: None,
                        effect,
                        confirmation: Confirmation::Never,
                        idempotent: true,
                        execute: record(screen, id),
                        availability: Availability::default(),
                        untrusted: false,
                    });
                }
            }
            CapabilityId::Domain { path } => {
                let mut full_schema = Map::new();
                let mut properties = Map::new();
                properties.insert(
                    "invoiceId".into(),
                    json!({ "type": "integer", "exclusiveMinimum": 0 }),
                );
                properties.extend(
                    schema["properties"]
                        .as_object()
                        .cloned()
                        .unwrap_or_default(),
                );
                for (key, value) in schema.as_object().expect("an object schema") {
                    let value = if key == "properties" {
                        Value::Object(properties.clone())
                    } else {
                        value.clone()
                    };
                    full_schema.insert(key.clone(), value);
                    if key == "properties" {
                        full_schema.insert("required".into(), json!(["invoiceId"]));
                    }
                }
                let mut dialog =
                    ComponentDef::new("invoices.chase", "The chase dialog of the open invoice.");
                let (open, bound, note) = (screen.clone(), screen.clone(), screen.clone());
                dialog.procedures.push(ProcedureDef {
                    path: path.to_owned(),
                    description,
                    input_schema: Value::Object(full_schema),
                    output_schema: None,
                    effect,
                    confirmation: Confirmation::Never,
                    bind: Some(Rc::new(move || {
                        Ok(Map::from_iter([(
                            "invoiceId".to_owned(),
                            json!(bound.chase.get().unwrap_or(1)),
                        )]))
                    })),
                    overridable_fields: Vec::new(),
                    describe: Some(Rc::new(move || {
                        note.chase.get().map(|id| format!("Bound to invoice {id}."))
                    })),
                    availability: Availability::when(move || open.chase.get().is_some())
                        .reason(CHASE_REASON),
                    timeout_ms: None,
                });
                components.push(dialog);
            }
        }
    }
    for component in components {
        surface
            .register(component)
            .expect("the demo surface registers");
    }
}

/// A fresh surface with the demo registered, on a fake clock.
pub(crate) fn demo_surface() -> (Surface, Rc<DemoScreen>, Rc<FakeClock>) {
    let clock = Rc::new(FakeClock::default());
    let surface = Surface::new(SurfaceOptions {
        clock: clock.clone(),
        seed: 7,
        patterns: Rc::new(crate::pattern::NativePatterns),
    });
    let screen = Rc::new(DemoScreen::default());
    *screen.pathname.borrow_mut() = "/receivables/pending".into();
    register_demo_surface(&surface, &screen);
    let executor = screen.clone();
    surface.set_procedure_executor(record(&executor, "domain:update-collection-status"));
    (surface, screen, clock)
}
