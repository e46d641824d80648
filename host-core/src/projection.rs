//! Direct-mode projection of the live surface into wire descriptors (reference-behaviour
//! B6/B7, C6/C8, agent-surface §3.11): the stable half (`frontendTools`), the volatile half
//! (`frontendState`), and the wire-name map the loop dispatches through.
//!
//! Names are assigned catalog-wide with `dpas_protocol::wire_name::assign_wire_names`.
//! A name that cannot serve as a provider tool name, or that two entries would share, has no
//! reliable way back to its canonical id: it is withheld and counted as undecodable.

use crate::capability::{tool_description, Effect};
use crate::ids::Plane;
use crate::registry::{SnapshotOptions, Surface, SurfaceVersion};
use crate::schema::empty_object_schema;
use dpas_protocol::json::{Map, Value};
use dpas_protocol::tool::{
    Confirmation, Truncated, TruncationReason, WireToolDescriptor, WireToolState,
};
use dpas_protocol::wire_name::{assign_wire_names, utf16_prefix, WireKey, MAX_WIRE_NAME_LEN};

/// Longest reason or note sent in `frontendState`, in UTF-16 units.
pub(crate) const MAX_STATE_TEXT: usize = dpas_protocol::limits::MAX_REASON_LEN;

/// How a wire name leads back to the capability it was projected from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolBinding {
    pub wire_name: String,
    pub canonical_id: String,
    pub plane: Plane,
    pub effect: Effect,
    pub instance_id: String,
    pub registration_id: String,
    /// Its results are untrusted content (U1).
    pub untrusted: bool,
}

/// One step's catalog, built from one snapshot.
#[derive(Debug, Clone, PartialEq)]
pub struct Projection {
    pub surface_version: SurfaceVersion,
    pub descriptors: Vec<WireToolDescriptor>,
    /// One entry per descriptor, in descriptor order.
    pub state: Vec<WireToolState>,
    /// One binding per descriptor, in descriptor order.
    pub bindings: Vec<ToolBinding>,
    /// Canonical ids withheld because their names could not be mapped back.
    pub undecodable: Vec<String>,
}

impl Projection {
    /// The `truncated` envelope when tools were withheld.
    pub fn truncated(&self) -> Option<Truncated> {
        (!self.undecodable.is_empty()).then_some(Truncated {
            dropped: self.undecodable.len() as u64,
            reason: TruncationReason::Undecodable,
        })
    }

    /// Reverses a wire name through the map (never by decoding).
    pub fn binding(&self, wire_name: &str) -> Option<&ToolBinding> {
        self.bindings.iter().find(|b| b.wire_name == wire_name)
    }

    /// View-plane tools whose effect is not `read`: calling one is followed by a settle-wait.
    pub fn moves_surface(&self, wire_name: &str) -> bool {
        self.binding(wire_name)
            .is_some_and(|b| b.plane == Plane::View && b.effect != Effect::Read)
    }

    /// Tools that navigate: a successful call re-reads the pathname.
    pub fn moves_route(&self, wire_name: &str) -> bool {
        self.binding(wire_name)
            .is_some_and(|b| b.effect == Effect::Navigation)
    }
}

struct Entry {
    canonical_id: String,
    /// Set only where the id alone is ambiguous (several instances or references).
    wire_instance: Option<String>,
    binding_instance: String,
    registration_id: String,
    plane: Plane,
    effect: Effect,
    confirmation: Confirmation,
    description: String,
    input_schema: Value,
    available: bool,
    unavailable_reason: Option<String>,
    note: Option<String>,
    untrusted: bool,
}

fn is_tool_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_WIRE_NAME_LEN
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// A registration id as an instance qualifier (`_` is reserved for the wire encoding).
fn sanitized(registration_id: &str) -> String {
    registration_id.replace('_', "-")
}

fn collect_entries(surface: &Surface, scope: &[String]) -> (SurfaceVersion, Vec<Entry>) {
    let mut snapshot = surface.snapshot(&SnapshotOptions {
        scope: scope.to_vec(),
        include_unavailable: true,
    });
    let mut entries = Vec::new();
    // The snapshot is this function's own: its schemas move into the entries, not copied.
    for i in 0..snapshot.components.len() {
        let kind = &snapshot.components[i].component_type;
        let multi = snapshot
            .components
            .iter()
            .filter(|c| c.component_type == *kind)
            .count()
            > 1;
        let component = &mut snapshot.components[i];
        let view =
            |capability_id: &str, effect, confirmation, description: &str, schema: Value| Entry {
                canonical_id: capability_id.to_owned(),
                wire_instance: multi.then(|| component.instance_id.clone()),
                binding_instance: component.instance_id.clone(),
                registration_id: component.registration_id.clone(),
                plane: Plane::View,
                effect,
                confirmation,
                description: description.to_owned(),
                input_schema: schema,
                available: true,
                unavailable_reason: None,
                note: None,
                untrusted: false,
            };
        for o in &component.observations {
            let mut entry = view(
                &o.capability_id,
                Effect::Read,
                Confirmation::Never,
                &o.description,
                empty_object_schema(),
            );
            (entry.available, entry.unavailable_reason, entry.untrusted) =
                (o.available, o.unavailable_reason.clone(), o.untrusted);
            entries.push(entry);
        }
        for a in &mut component.actions {
            let mut entry = view(
                &a.capability_id,
                a.effect,
                a.confirmation,
                &a.description,
                std::mem::take(&mut a.input_schema),
            );
            (entry.available, entry.unavailable_reason, entry.untrusted) =
                (a.available, a.unavailable_reason.clone(), a.untrusted);
            entries.push(entry);
        }
    }
    for i in 0..snapshot.procedures.len() {
        let p = &snapshot.procedures[i];
        // How many references this procedure has, and how many of them share this one's
        // context instance, counted in a loop (the crate's size rule).
        let (mut references, mut same_context) = (0, 0);
        for q in &snapshot.procedures {
            if q.procedure_id == p.procedure_id {
                references += 1;
                if q.context.instance_id == p.context.instance_id {
                    same_context += 1;
                }
            }
        }
        // Duplicate references are told apart by their context instance, or else by registration.
        let wire_instance = match references {
            1 => None,
            _ if same_context == 1 => Some(p.context.instance_id.clone()),
            _ => Some(sanitized(&p.registration_id)),
        };
        let p = &mut snapshot.procedures[i];
        entries.push(Entry {
            canonical_id: p.procedure_id.clone(),
            wire_instance,
            binding_instance: p.context.instance_id.clone(),
            registration_id: p.registration_id.clone(),
            plane: Plane::Domain,
            effect: p.effect,
            confirmation: p.confirmation,
            description: p.description.clone(),
            input_schema: std::mem::take(&mut p.input_schema),
            available: p.available,
            unavailable_reason: p.unavailable_reason.clone(),
            note: p.contextual_note.clone(),
            untrusted: false,
        });
    }
    (snapshot.surface_version, entries)
}

/// Projects the live surface, restricted to `scope` (component-type prefixes; empty is
/// unscoped), into this step's direct-mode catalog.
pub fn project(surface: &Surface, scope: &[String]) -> Projection {
    let (surface_version, entries) = collect_entries(surface, scope);
    let mut keys = Vec::with_capacity(entries.len());
    for e in &entries {
        keys.push(WireKey::new(&e.canonical_id, e.wire_instance.as_deref()));
    }
    let names = surface.wire_names(surface_version, scope, || assign_wire_names(&keys));
    let mut projection = Projection {
        surface_version,
        descriptors: Vec::new(),
        state: Vec::new(),
        bindings: Vec::new(),
        undecodable: Vec::new(),
    };
    for (entry, name) in entries.into_iter().zip(&names) {
        let shared = names.iter().filter(|n| *n == name).count() > 1;
        if shared || !is_tool_name(name) {
            projection.undecodable.push(entry.canonical_id);
            continue;
        }
        let input_schema = match entry.input_schema {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        projection.descriptors.push(WireToolDescriptor {
            wire_name: name.clone(),
            canonical_id: entry.canonical_id.clone(),
            plane: entry.plane,
            description: tool_description(
                entry.plane,
                entry.effect,
                entry.confirmation,
                &entry.description,
            ),
            input_schema,
            effect: entry.effect.as_str().to_owned(),
            confirmation: entry.confirmation,
            available: None,
            unavailable_reason: None,
            untrusted: entry.untrusted,
        });
        let clip = |text: Option<String>| {
            text.filter(|t| !t.is_empty()).map(|mut t| {
                t.truncate(utf16_prefix(&t, MAX_STATE_TEXT).len());
                t
            })
        };
        projection.state.push(WireToolState {
            wire_name: name.clone(),
            available: entry.available,
            unavailable_reason: if entry.available {
                None
            } else {
                clip(entry.unavailable_reason)
            },
            note: clip(entry.note),
        });
        projection.bindings.push(ToolBinding {
            wire_name: name.clone(),
            canonical_id: entry.canonical_id,
            plane: entry.plane,
            effect: entry.effect,
            instance_id: entry.binding_instance,
            registration_id: entry.registration_id,
            untrusted: entry.untrusted,
        });
    }
    projection
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capability::{ActionDef, Availability, ComponentDef, Handler, ProcedureDef};
    use crate::testing::{demo_surface, trace_request};
    use dpas_protocol::test_json as json;

    fn names(projection: &Projection) -> Vec<&str> {
        projection
            .descriptors
            .iter()
            .map(|d| d.wire_name.as_str())
            .collect()
    }

    fn pending_floor() -> Vec<String> {
        dpas_protocol::test_support::reference_route_floors().floor("/receivables/pending")
    }

    #[test]
    fn the_demo_surface_projects_to_the_reference_catalog_byte_for_byte() {
        let (surface, _, _) = demo_surface();
        let projection = project(&surface, &pending_floor());
        let trace = trace_request("browser-carla-step0");
        assert_eq!(
            dpas_protocol::test_support::to_value(&projection.descriptors).unwrap(),
            trace["catalog"]["frontendTools"]
        );
        assert_eq!(
            dpas_protocol::test_support::to_value(&projection.state).unwrap(),
            trace["catalog"]["frontendState"]
        );
        assert_eq!(projection.truncated(), None);
        assert_eq!(projection.surface_version, surface.version());
    }

    #[test]
    fn the_state_carries_the_live_note_and_availability_flips_leave_descriptors_alone() {
        let (surface, screen, _) = demo_surface();
        let before = project(&surface, &pending_floor());
        screen.chase.set(Some(37));
        let after = project(&surface, &pending_floor());
        assert_eq!(before.descriptors, after.descriptors);
        let chase = after.state.last().unwrap();
        assert!(chase.available);
        assert_eq!(chase.unavailable_reason, None);
        assert_eq!(chase.note.as_deref(), Some("Bound to invoice 37."));
    }

    #[test]
    fn bindings_reverse_names_and_classify_what_moves() {
        let (surface, _, _) = demo_surface();
        let projection = project(&surface, &pending_floor());
        let binding = projection
            .binding("view_invoices__pending__setFilters")
            .unwrap();
        assert_eq!(binding.canonical_id, "view:invoices.pending.setFilters");
        assert_eq!(binding.instance_id, "default");
        assert!(binding.registration_id.starts_with("reg_"));
        assert!(projection.moves_surface("view_invoices__pending__setFilters"));
        assert!(!projection.moves_surface("view_invoices__pending__readState"));
        assert!(!projection.moves_surface("domain_update-collection-status"));
        assert!(projection.moves_route("view_app__navigation__goTo"));
        assert!(!projection.moves_route("view_invoices__pending__setFilters"));
        assert_eq!(projection.binding("view_invoices__pending__nothing"), None);
    }

    #[test]
    fn scope_narrows_the_catalog() {
        let (surface, _, _) = demo_surface();
        let app_only = project(&surface, &["app".to_owned()]);
        assert_eq!(
            names(&app_only),
            [
                "view_app__navigation__readCurrentRoute",
                "view_app__navigation__goTo",
                "view_app__session__read"
            ]
        );
        assert_eq!(project(&surface, &[]).descriptors.len(), 16);
    }

    fn widget(instance: &str) -> ComponentDef {
        let mut def = ComponentDef::new("rows.row", "One row.");
        def.instance_id = Some(instance.to_owned());
        let mut open = ActionDef::new(
            "open",
            "Open the row.",
            Effect::Navigation,
            empty_object_schema(),
            Handler::sync(|_, _| Ok(None)),
        );
        open.confirmation = Confirmation::Required;
        def.actions.push(open);
        def
    }

    fn reference(path: &str) -> ProcedureDef {
        let schema = json!({ "type": "object", "properties": { "id": { "type": "integer" } } });
        ProcedureDef::new(path, "Delete it.", Effect::Destructive, schema)
    }

    #[test]
    fn names_are_reassigned_when_registrations_or_the_scope_change() {
        // The names are remembered per surface version and scope (`Surface::wire_names`).
        let (surface, _, _) = demo_surface();
        let rows = ["rows".to_owned()];
        surface.register(widget("row-1")).unwrap();
        assert_eq!(names(&project(&surface, &rows)), ["view_rows__row__open"]);
        let second = surface.register(widget("row-2")).unwrap();
        assert_eq!(
            names(&project(&surface, &rows)),
            [
                "view_rows__row__open_at_row-1",
                "view_rows__row__open_at_row-2"
            ]
        );
        assert_eq!(
            names(&project(&surface, &["app".to_owned()]))[0],
            "view_app__navigation__readCurrentRoute"
        );
        assert!(second.unregister());
        assert_eq!(names(&project(&surface, &rows)), ["view_rows__row__open"]);
    }

    #[test]
    fn several_instances_get_instance_qualified_names() {
        let (surface, _, _) = demo_surface();
        surface.register(widget("row-1")).unwrap();
        surface.register(widget("row-2")).unwrap();
        let projection = project(&surface, &["rows".to_owned()]);
        let names = names(&projection);
        assert_eq!(
            names,
            [
                "view_rows__row__open_at_row-1",
                "view_rows__row__open_at_row-2"
            ]
        );
        assert_eq!(projection.binding(names[1]).unwrap().instance_id, "row-2");
        assert_eq!(
            projection.descriptors[0].description,
            "[view · navigation · requires confirmation] Open the row."
        );
        let single = project(&surface, &["app".to_owned()]);
        assert!(single
            .descriptors
            .iter()
            .all(|d| !d.wire_name.contains("_at_")));
    }

    #[test]
    fn duplicate_references_are_told_apart_by_context() {
        let (surface, _, _) = demo_surface();
        for instance in ["a", "b"] {
            let mut def = ComponentDef::new("orders.dialog", "A dialog.");
            def.instance_id = Some(instance.into());
            def.procedures.push(reference("delete-order"));
            surface.register(def).unwrap();
        }
        let projection = project(&surface, &["orders".to_owned()]);
        assert_eq!(projection.descriptors.len(), 2);
        assert_ne!(
            projection.descriptors[0].wire_name,
            projection.descriptors[1].wire_name
        );
        assert!(projection.descriptors[0]
            .wire_name
            .starts_with("domain_delete-order_at_a"));
        assert_eq!(
            projection.descriptors[0].description,
            "[domain · destructive · requires confirmation] Delete it."
        );
        assert_eq!(
            projection.descriptors[0].confirmation,
            Confirmation::Required
        );
    }

    #[test]
    fn names_that_cannot_be_tool_names_are_withheld_and_counted() {
        let (surface, _, _) = demo_surface();
        let mut def = ComponentDef::new("files.browser", "Files.");
        def.procedures.push(reference("files/delete"));
        surface.register(def).unwrap();
        let projection = project(&surface, &[]);
        assert_eq!(projection.undecodable, ["domain:files/delete"]);
        assert_eq!(
            projection.truncated(),
            Some(Truncated {
                dropped: 1,
                reason: TruncationReason::Undecodable
            })
        );
        assert_eq!(projection.descriptors.len(), 16);
        assert_eq!(projection.state.len(), 16);
    }

    #[test]
    fn long_reasons_are_clipped_to_the_wire_limit() {
        let (surface, _, _) = demo_surface();
        let mut def = widget("only");
        def.actions[0].availability = Availability::when(|| false).reason("é".repeat(400));
        surface.register(def).unwrap();
        let projection = project(&surface, &["rows".to_owned()]);
        let reason = projection.state[0].unavailable_reason.as_deref().unwrap();
        assert_eq!(reason.encode_utf16().count(), MAX_STATE_TEXT);
        // A character of two UTF-16 units that would cross the limit is left out whole.
        let (surface, _, _) = demo_surface();
        let mut def = widget("only");
        let long = format!("x{}", "😀".repeat(200));
        def.actions[0].availability = Availability::when(|| false).reason(long);
        surface.register(def).unwrap();
        let projection = project(&surface, &["rows".to_owned()]);
        let reason = projection.state[0].unavailable_reason.as_deref().unwrap();
        assert_eq!(reason, format!("x{}", "😀".repeat(149)));
    }
}
