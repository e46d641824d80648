//! The per-consumer snapshot (agent-surface §3.7): a catalog of what is mounted and whether
//! it is available, never observation output.

use super::state::Surface;
use crate::capability::{Confirmation, Effect};
use crate::ids::{self, in_scope};
use crate::schema::{reduce_input_schema, BoundField};
use crate::version::SurfaceVersion;
use dpas_protocol::json::{Map, Value};
use serde::Serialize;

/// What the snapshot is taken for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotOptions {
    /// Component-type prefixes; empty is unscoped.
    pub scope: Vec<String>,
    /// Keep unavailable capabilities (visible-disabled) in the snapshot.
    pub include_unavailable: bool,
}

impl Default for SnapshotOptions {
    fn default() -> Self {
        Self {
            scope: Vec::new(),
            include_unavailable: true,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ObservationSnapshot {
    pub capability_id: String,
    pub name: String,
    pub description: String,
    pub output_schema: Value,
    pub available: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unavailable_reason: Option<String>,
    /// Read by the projection only; not part of the snapshot as written.
    #[serde(skip)]
    pub untrusted: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ActionSnapshot {
    pub capability_id: String,
    pub name: String,
    pub description: String,
    pub input_schema: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    pub effect: Effect,
    pub idempotent: bool,
    pub confirmation: Confirmation,
    pub available: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unavailable_reason: Option<String>,
    /// Read by the projection only; not part of the snapshot as written.
    #[serde(skip)]
    pub untrusted: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ComponentSnapshot {
    #[serde(rename = "type")]
    pub component_type: String,
    pub instance_id: String,
    pub registration_id: String,
    pub description: String,
    pub observations: Vec<ObservationSnapshot>,
    pub actions: Vec<ActionSnapshot>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BoundFieldSnapshot {
    pub path: String,
    pub locked: bool,
    /// Always `"ui-state"`.
    pub source: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProcedureContext {
    #[serde(rename = "type")]
    pub component_type: String,
    pub instance_id: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProcedureSnapshot {
    pub procedure_id: String,
    /// Stable authored text; live text goes to `contextual_note`, never here.
    pub description: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub contextual_note: Option<String>,
    /// The reduced schema: locked bound keys removed.
    pub input_schema: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    pub effect: Effect,
    /// The effective level: at least the effect's floor.
    pub confirmation: Confirmation,
    pub available: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unavailable_reason: Option<String>,
    pub bound_fields: Vec<BoundFieldSnapshot>,
    pub registration_id: String,
    pub context: ProcedureContext,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Snapshot {
    pub surface_version: SurfaceVersion,
    pub components: Vec<ComponentSnapshot>,
    pub procedures: Vec<ProcedureSnapshot>,
}

fn gate(available: Result<(), String>) -> (bool, Option<String>) {
    match available {
        Ok(()) => (true, None),
        Err(reason) => (false, Some(reason)),
    }
}

// The snapshot as JSON, built by hand: what its `Serialize` derive writes, field for field
// (`snapshot_json_is_what_serialize_writes` compares them). The browser build needs the JSON
// only in meta mode (`surface_discover`); through `dpas_protocol::test_support::to_value` it instantiated
// serde_json's whole `Value` serializer and every snapshot type's `Serialize` for it (1.2 KB
// gzip), and through JSON text a float of 17 significant digits may not read back to the
// same `f64` (serde_json without `float_roundtrip`).

fn put(map: &mut Map<String, Value>, key: &str, value: Value) {
    map.insert(key.to_owned(), value);
}

fn put_some(map: &mut Map<String, Value>, key: &str, value: Option<Value>) {
    if let Some(value) = value {
        put(map, key, value);
    }
}

fn text(value: &str) -> Value {
    Value::String(value.to_owned())
}

fn opt_text(value: &Option<String>) -> Option<Value> {
    value.as_deref().map(text)
}

/// `available` and, when unavailable with one, `unavailableReason`.
fn put_availability(map: &mut Map<String, Value>, available: bool, reason: &Option<String>) {
    put(map, "available", Value::Bool(available));
    put_some(map, "unavailableReason", opt_text(reason));
}

/// `inputSchema` and, when declared, `outputSchema`.
fn put_schemas(map: &mut Map<String, Value>, input: &Value, output: &Option<Value>) {
    put(map, "inputSchema", input.clone());
    put_some(map, "outputSchema", output.clone());
}

fn array<T>(items: &[T], to_value: fn(&T) -> Value) -> Value {
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        out.push(to_value(item));
    }
    Value::Array(out)
}

impl ObservationSnapshot {
    pub fn to_value(&self) -> Value {
        let mut map = Map::new();
        put(&mut map, "capabilityId", text(&self.capability_id));
        put(&mut map, "name", text(&self.name));
        put(&mut map, "description", text(&self.description));
        put(&mut map, "outputSchema", self.output_schema.clone());
        put_availability(&mut map, self.available, &self.unavailable_reason);
        Value::Object(map)
    }
}

impl ActionSnapshot {
    pub fn to_value(&self) -> Value {
        let mut map = Map::new();
        put(&mut map, "capabilityId", text(&self.capability_id));
        put(&mut map, "name", text(&self.name));
        put(&mut map, "description", text(&self.description));
        put_schemas(&mut map, &self.input_schema, &self.output_schema);
        put(&mut map, "effect", text(self.effect.as_str()));
        put(&mut map, "idempotent", Value::Bool(self.idempotent));
        put(&mut map, "confirmation", text(self.confirmation.as_str()));
        put_availability(&mut map, self.available, &self.unavailable_reason);
        Value::Object(map)
    }
}

impl ComponentSnapshot {
    pub fn to_value(&self) -> Value {
        let mut map = Map::new();
        put(&mut map, "type", text(&self.component_type));
        put(&mut map, "instanceId", text(&self.instance_id));
        put(&mut map, "registrationId", text(&self.registration_id));
        put(&mut map, "description", text(&self.description));
        put(
            &mut map,
            "observations",
            array(&self.observations, ObservationSnapshot::to_value),
        );
        put(
            &mut map,
            "actions",
            array(&self.actions, ActionSnapshot::to_value),
        );
        Value::Object(map)
    }
}

impl BoundFieldSnapshot {
    pub fn to_value(&self) -> Value {
        let mut map = Map::new();
        put(&mut map, "path", text(&self.path));
        put(&mut map, "locked", Value::Bool(self.locked));
        put(&mut map, "source", text(self.source));
        Value::Object(map)
    }
}

impl ProcedureSnapshot {
    pub fn to_value(&self) -> Value {
        let mut map = Map::new();
        put(&mut map, "procedureId", text(&self.procedure_id));
        put(&mut map, "description", text(&self.description));
        put_some(&mut map, "contextualNote", opt_text(&self.contextual_note));
        put_schemas(&mut map, &self.input_schema, &self.output_schema);
        put(&mut map, "effect", text(self.effect.as_str()));
        put(&mut map, "confirmation", text(self.confirmation.as_str()));
        put_availability(&mut map, self.available, &self.unavailable_reason);
        put(
            &mut map,
            "boundFields",
            array(&self.bound_fields, BoundFieldSnapshot::to_value),
        );
        put(&mut map, "registrationId", text(&self.registration_id));
        let mut context = Map::new();
        put(&mut context, "type", text(&self.context.component_type));
        put(&mut context, "instanceId", text(&self.context.instance_id));
        put(&mut map, "context", Value::Object(context));
        Value::Object(map)
    }
}

impl Snapshot {
    pub fn to_value(&self) -> Value {
        let mut map = Map::new();
        put(&mut map, "surfaceVersion", self.surface_version.into());
        put(
            &mut map,
            "components",
            array(&self.components, ComponentSnapshot::to_value),
        );
        put(
            &mut map,
            "procedures",
            array(&self.procedures, ProcedureSnapshot::to_value),
        );
        Value::Object(map)
    }
}

/// The agent-facing input schema of a procedure and its bound-field list.
pub(crate) fn bound_view(schema: &Value, bound: &[BoundField]) -> (Value, Vec<BoundFieldSnapshot>) {
    let mut fields = Vec::with_capacity(bound.len());
    for f in bound {
        fields.push(BoundFieldSnapshot {
            path: f.path.clone(),
            locked: f.locked,
            source: "ui-state",
        });
    }
    (reduce_input_schema(schema, bound), fields)
}

impl Surface {
    /// Takes a snapshot. Side-effect free apart from running `when`/reason/`describe`.
    pub fn snapshot(&self, options: &SnapshotOptions) -> Snapshot {
        let version = self.version();
        let mut registrations = self.registrations();
        registrations.retain(|r| in_scope(&r.def.component_type, &options.scope));
        // Snapshot order: priority descending, then type, then instance id.
        dpas_protocol::sort::sort_stable(&mut registrations, |a, b| {
            (
                std::cmp::Reverse(a.def.priority),
                &a.def.component_type,
                &a.instance_id,
            ) < (
                std::cmp::Reverse(b.def.priority),
                &b.def.component_type,
                &b.instance_id,
            )
        });
        let keep = |available: bool| available || options.include_unavailable;
        let mut components = Vec::new();
        let mut procedures = Vec::new();
        for registration in &registrations {
            let def = &registration.def;
            let mut observations = Vec::new();
            for o in &def.observations {
                let capability_id = ids::view_capability_id(&def.component_type, &o.name);
                let (available, unavailable_reason) =
                    gate(registration.availability(&capability_id, &o.availability));
                if keep(available) {
                    observations.push(ObservationSnapshot {
                        capability_id,
                        name: o.name.clone(),
                        description: o.description.clone(),
                        output_schema: o.output_schema.clone(),
                        available,
                        unavailable_reason,
                        untrusted: o.untrusted,
                    });
                }
            }
            let mut actions = Vec::new();
            for a in &def.actions {
                let capability_id = ids::view_capability_id(&def.component_type, &a.name);
                let (available, unavailable_reason) =
                    gate(registration.availability(&capability_id, &a.availability));
                if keep(available) {
                    actions.push(ActionSnapshot {
                        capability_id,
                        name: a.name.clone(),
                        description: a.description.clone(),
                        input_schema: a.input_schema.clone(),
                        output_schema: a.output_schema.clone(),
                        effect: a.effect,
                        idempotent: a.idempotent,
                        confirmation: a.confirmation,
                        available,
                        unavailable_reason,
                        untrusted: a.untrusted,
                    });
                }
            }
            for (procedure, bound) in def.procedures.iter().zip(registration.bound.iter()) {
                let procedure_id = ids::domain_capability_id(&procedure.path);
                let (available, unavailable_reason) =
                    gate(registration.availability(&procedure_id, &procedure.availability));
                if !keep(available) {
                    continue;
                }
                let (input_schema, bound_fields) = bound_view(&procedure.input_schema, bound);
                procedures.push(ProcedureSnapshot {
                    contextual_note: procedure.describe.as_ref().and_then(|describe| describe()),
                    procedure_id,
                    description: procedure.description.clone(),
                    input_schema,
                    output_schema: procedure.output_schema.clone(),
                    effect: procedure.effect,
                    confirmation: procedure.effective_confirmation(),
                    available,
                    unavailable_reason,
                    bound_fields,
                    registration_id: registration.id.clone(),
                    context: ProcedureContext {
                        component_type: def.component_type.clone(),
                        instance_id: registration.instance_id.clone(),
                    },
                });
            }
            // A component with nothing left to show is dropped entirely.
            if observations.is_empty() && actions.is_empty() {
                continue;
            }
            components.push(ComponentSnapshot {
                component_type: def.component_type.clone(),
                instance_id: registration.instance_id.clone(),
                registration_id: registration.id.clone(),
                description: def.description.clone(),
                observations,
                actions,
            });
        }
        Snapshot {
            surface_version: version,
            components,
            procedures,
        }
    }
}
