//! Composition rules shared by both halves: collisions (E3 and decision 4), the
//! capability-state message (E6), meta-mode tools (I1–I3) and a call's canonical id (I2).

use crate::json::{Map, Value};

use crate::frame::DomainToolInfo;
use crate::tool::{Confirmation, Plane, WireToolDescriptor, WireToolState};

/// Frontend descriptors that duplicate a governed domain tool: the same canonical id (E3),
/// or the same wire name under another canonical id (decision 4).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Collisions {
    /// Indexes into the frontend descriptors, ascending.
    pub frontend_indices: Vec<usize>,
    /// The colliding canonical ids, in descriptor order, without repeats.
    pub capability_ids: Vec<String>,
}

impl Collisions {
    pub fn is_empty(&self) -> bool {
        self.frontend_indices.is_empty()
    }
}

pub fn find_collisions<S>(
    frontend: &[WireToolDescriptor<S>],
    domain: &[DomainToolInfo],
) -> Collisions {
    let mut out = Collisions::default();
    for (i, d) in frontend.iter().enumerate() {
        let clash = domain
            .iter()
            .any(|t| t.canonical_id == d.canonical_id || t.wire_name == d.wire_name);
        if clash {
            out.frontend_indices.push(i);
            if !out.capability_ids.contains(&d.canonical_id) {
                out.capability_ids.push(d.canonical_id.clone());
            }
        }
    }
    out
}

/// Removes the descriptors at `indices` (ascending), keeping the order of the rest.
pub fn drop_indices<T>(items: &mut Vec<T>, indices: &[usize]) {
    if indices.is_empty() {
        return;
    }
    let mut i = 0;
    items.retain(|_| {
        let keep = indices.binary_search(&i).is_err();
        i += 1;
        keep
    });
}

/// The heading of the capability-state system message.
pub const CAPABILITY_STATE_HEADING: &str = "Capability state (this step):";

/// The capability-state message (E6), rendered from `frontendState` in order against the
/// remaining descriptors (wire → canonical id, falling back to the wire name): unavailable
/// entries with their reason, available entries with a note; `None` when no line results.
pub fn capability_state_message<S>(
    state: &[WireToolState],
    descriptors: &[WireToolDescriptor<S>],
) -> Option<String> {
    let mut out = String::new();
    for s in state {
        let id = descriptors
            .iter()
            .find(|d| d.wire_name == s.wire_name)
            .map_or(s.wire_name.as_str(), |d| d.canonical_id.as_str());
        let detail = if !s.available {
            let reason = s.unavailable_reason.as_deref().filter(|r| !r.is_empty());
            format!(
                "unavailable: {}",
                reason.unwrap_or("not available right now")
            )
        } else if let Some(note) = s.note.as_deref().filter(|n| !n.is_empty()) {
            format!("available; {note}")
        } else {
            continue;
        };
        if out.is_empty() {
            out.push_str(CAPABILITY_STATE_HEADING);
        }
        out.push_str("\n- ");
        out.push_str(id);
        out.push_str(" — ");
        out.push_str(&detail);
    }
    (!out.is_empty()).then_some(out)
}

/// Meta-mode tool names (I1).
pub const SURFACE_DISCOVER: &str = "surface_discover";
pub const SURFACE_READ: &str = "surface_read";
pub const SURFACE_ACT: &str = "surface_act";
pub const META_TOOLS: [&str; 3] = [SURFACE_DISCOVER, SURFACE_READ, SURFACE_ACT];

pub fn is_meta_tool(wire_name: &str) -> bool {
    META_TOOLS.contains(&wire_name)
}

/// The canonical id of a call (I2): a meta tool's `capabilityId` argument when it is a
/// non-empty string, else `meta:<wireName>`; otherwise the mapped id from `lookup`, falling
/// back to the wire name itself.
pub fn call_canonical_id(
    wire_name: &str,
    input: &Value,
    lookup: impl FnOnce(&str) -> Option<String>,
) -> String {
    if is_meta_tool(wire_name) {
        return match input.get("capabilityId").and_then(Value::as_str) {
            Some(id) if !id.is_empty() => id.to_owned(),
            _ => format!("meta:{wire_name}"),
        };
    }
    lookup(wire_name).unwrap_or_else(|| wire_name.to_owned())
}

fn schema(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// The three meta-mode descriptors (I3). Their bytes never change with what is mounted.
pub fn meta_descriptors() -> Vec<WireToolDescriptor> {
    let tool =
        |name: &str, effect: &str, description: &str, input_schema: Value| WireToolDescriptor {
            wire_name: name.to_owned(),
            canonical_id: format!("meta:{name}"),
            plane: Plane::View,
            description: description.to_owned(),
            input_schema: schema(input_schema),
            effect: effect.to_owned(),
            confirmation: Confirmation::Never,
            available: None,
            unavailable_reason: None,
            untrusted: false,
        };
    vec![
        tool(
            SURFACE_DISCOVER,
            "read",
            "[view · read] Lists what the screen offers right now: components, their observations and actions, contextual procedures, input schemas and availability. Call it with no arguments first; pass `scope` only to narrow to component-type prefixes you have seen in a previous answer.",
            static_schema(r#"{"type":"object","properties":{"scope":{"type":"array","items":{"type":"string"}}},"additionalProperties":false}"#),
        ),
        tool(
            SURFACE_READ,
            "read",
            "[view · read] Reads one observation by the capabilityId that surface_discover listed.",
            static_schema(r#"{"type":"object","properties":{"capabilityId":{"type":"string"},"instanceId":{"type":"string"}},"required":["capabilityId"],"additionalProperties":false}"#),
        ),
        tool(
            SURFACE_ACT,
            "unknown",
            "[view · unknown] Runs one action or contextual procedure by the capabilityId that surface_discover listed; its own arguments go inside `input`.",
            static_schema(r#"{"type":"object","properties":{"capabilityId":{"type":"string"},"instanceId":{"type":"string"},"input":{"type":"object"},"invocationId":{"type":"string"},"confirmationId":{"type":"string"},"surfaceVersion":{"type":"string"}},"required":["capabilityId"],"additionalProperties":false}"#),
        ),
    ]
}

/// A schema written as JSON text: parsed where it is needed instead of being built by
/// `json!`, whose per-leaf `unwrap` and generated code are the larger share in the browser
/// build. The texts are constants, checked by the tests below.
fn static_schema(text: &str) -> Value {
    crate::json::parse(text.as_bytes()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_json as json;

    fn desc(wire: &str, id: &str) -> WireToolDescriptor {
        WireToolDescriptor {
            wire_name: wire.into(),
            canonical_id: id.into(),
            plane: Plane::Domain,
            description: String::new(),
            input_schema: Map::new(),
            effect: "read".into(),
            confirmation: Confirmation::Never,
            available: None,
            unavailable_reason: None,
            untrusted: false,
        }
    }

    fn info(wire: &str, id: &str) -> DomainToolInfo {
        DomainToolInfo {
            wire_name: wire.into(),
            canonical_id: id.into(),
            description: String::new(),
            requires_approval: false,
            side_effect: "read".into(),
        }
    }

    fn state(
        wire: &str,
        available: bool,
        reason: Option<&str>,
        note: Option<&str>,
    ) -> WireToolState {
        WireToolState {
            wire_name: wire.into(),
            available,
            unavailable_reason: reason.map(Into::into),
            note: note.map(Into::into),
        }
    }

    #[test]
    fn collisions_by_canonical_id_and_by_wire_name() {
        let frontend = vec![
            desc("view_a__b", "view:a.b"),
            desc("domain_collections-aging", "domain:collections-aging"),
            desc("domain_list-invoices", "domain:something-else"),
            desc("x_other", "domain:collections-aging"),
        ];
        let domain = vec![
            info("domain_collections-aging", "domain:collections-aging"),
            info("domain_list-invoices", "domain:list-invoices"),
        ];
        let c = find_collisions(&frontend, &domain);
        assert_eq!(c.frontend_indices, vec![1, 2, 3]);
        assert_eq!(
            c.capability_ids,
            vec!["domain:collections-aging", "domain:something-else"]
        );
        let mut kept = frontend.clone();
        drop_indices(&mut kept, &c.frontend_indices);
        assert_eq!(kept, vec![frontend[0].clone()]);
        assert!(find_collisions(&frontend[..1], &domain).is_empty());
    }

    #[test]
    fn e6_carla_example_is_exact() {
        let descriptors = vec![desc(
            "domain_update-collection-status",
            "domain:update-collection-status",
        )];
        let states = vec![
            state("view_a__b", true, None, None),
            state(
                "domain_update-collection-status",
                false,
                Some("Open an invoice's chase dialog first"),
                None,
            ),
        ];
        assert_eq!(
            capability_state_message(&states, &descriptors).unwrap(),
            "Capability state (this step):\n- domain:update-collection-status — unavailable: Open an invoice's chase dialog first"
        );
    }

    #[test]
    fn e6_notes_fallbacks_and_empty() {
        let states = vec![
            state("view_gone", false, None, None),
            state("view_noted", true, None, Some("3 rows selected")),
            state("view_plain", true, None, None),
        ];
        let none: &[WireToolDescriptor] = &[];
        assert_eq!(
            capability_state_message(&states, none).unwrap(),
            "Capability state (this step):\n- view_gone — unavailable: not available right now\n- view_noted — available; 3 rows selected"
        );
        assert_eq!(
            capability_state_message(&[state("v", true, None, None)], none),
            None
        );
        assert_eq!(capability_state_message(&[], none), None);
    }

    #[test]
    fn i2_call_canonical_ids() {
        let input = json!({"capabilityId": "view:invoices.pending.setFilters"});
        assert_eq!(
            call_canonical_id("surface_act", &input, |_| None),
            "view:invoices.pending.setFilters"
        );
        assert_eq!(
            call_canonical_id("surface_act", &json!({"capabilityId": ""}), |_| None),
            "meta:surface_act"
        );
        assert_eq!(
            call_canonical_id("surface_discover", &Value::Null, |_| None),
            "meta:surface_discover"
        );
        assert_eq!(
            call_canonical_id("domain_x", &Value::Null, |_| Some("domain:x".into())),
            "domain:x"
        );
        assert_eq!(call_canonical_id("weird", &Value::Null, |_| None), "weird");
    }

    #[test]
    fn meta_descriptors_are_closed_objects() {
        let m = meta_descriptors();
        assert_eq!(
            m.iter().map(|d| d.wire_name.as_str()).collect::<Vec<_>>(),
            META_TOOLS
        );
        for d in &m {
            assert_eq!(d.input_schema["additionalProperties"], json!(false));
            assert_eq!(d.input_schema["type"], json!("object"));
        }
        assert_eq!(m[1].input_schema["required"], json!(["capabilityId"]));
        assert_eq!(m[2].effect, "unknown");
    }
}
