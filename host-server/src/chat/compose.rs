//! Catalog composition for one step-request (reference-behaviour E1–E6): the domain half for
//! the session's actor, scoped by route, plus the declared frontend tools, with collisions,
//! undecodable names and limits handled and every reduction reported.

use std::collections::HashMap;

use dpas_protocol::catalog::{capability_state_message, drop_indices, find_collisions};
use dpas_protocol::frame::{host_inspector, step_correlation};
use dpas_protocol::limits::check_catalog_limits;
use dpas_protocol::request::ProtocolVersion;
use dpas_protocol::wire_name::encode_wire_name;
use dpas_protocol::{
    CatalogMode, ChatStepRequest, DomainToolInfo, Frame, HostError, RouteFloors, WireToolDescriptor,
};
use serde_json::{json, Value};

use crate::runtime::audit::{AuditDraft, AuditSource};
use crate::runtime::{Actor, CallSurface, Correlation, Runtime};

/// One governed tool offered to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct DomainTool {
    pub info: DomainToolInfo,
    /// The runtime's capability id (`collections-aging`), without the `domain:` plane.
    pub capability_id: String,
    pub input_schema: Value,
}

/// What one step offers the model, and what was reduced on the way.
#[derive(Debug, Clone)]
pub struct Composition {
    pub step_id: String,
    pub scope: Vec<String>,
    pub catalog_mode: CatalogMode,
    /// Registry order.
    pub domain: Vec<DomainTool>,
    /// The declared frontend tools left after collisions, in request order.
    pub frontend: Vec<WireToolDescriptor>,
    /// Host inspector frames to send right after `step-start` (F2 item 2).
    pub host_frames: Vec<Frame>,
    /// The capability-state system message (E6), appended after the whole history.
    pub state_message: Option<String>,
}

impl Composition {
    /// The canonical id a wire name maps to (domain first, then frontend), if any.
    pub fn canonical_of(&self, wire_name: &str) -> Option<String> {
        self.domain
            .iter()
            .find(|t| t.info.wire_name == wire_name)
            .map(|t| t.info.canonical_id.clone())
            .or_else(|| {
                self.frontend
                    .iter()
                    .find(|d| d.wire_name == wire_name)
                    .map(|d| d.canonical_id.clone())
            })
    }
}

/// A wire name a provider accepts: 1–64 characters of `[A-Za-z0-9_-]`.
pub(crate) fn provider_safe(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Names each domain capability (`domain:<id>`, level 0, as the reference's server does) and
/// captures the name as assigned. A name a provider would refuse, or one two capabilities
/// share, cannot be audited under one id: it comes back as `Err` and is withheld.
pub fn domain_wire_names<'a>(ids: impl Iterator<Item = &'a str>) -> Vec<Result<String, String>> {
    let names: Vec<String> = ids
        .map(|id| encode_wire_name(&format!("domain:{id}"), None, 0))
        .collect();
    let mut counts: HashMap<&str, usize> = HashMap::with_capacity(names.len());
    for n in &names {
        *counts.entry(n.as_str()).or_default() += 1;
    }
    names
        .iter()
        .map(|n| {
            if provider_safe(n) && counts[n.as_str()] == 1 {
                Ok(n.clone())
            } else {
                Err(n.clone())
            }
        })
        .collect()
}

/// Mints a step id: `stp_` and 12 characters of `[a-z0-9]` (A6).
pub fn mint_step_id() -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let bytes = uuid::Uuid::new_v4().into_bytes();
    let mut id = String::with_capacity(16);
    id.push_str("stp_");
    id.extend(
        bytes
            .iter()
            .take(12)
            .map(|b| ALPHABET[usize::from(*b) % 36] as char),
    );
    id
}

/// Composes the catalog. Errors are the contract's: 409 `CATALOG_COLLISION` (v1 only) and
/// 413 `CATALOG_TOO_LARGE`; both are decided before anything is streamed.
pub fn compose(
    runtime: &Runtime,
    actor: &Actor,
    request: &ChatStepRequest,
    floors: &RouteFloors,
) -> Result<Composition, HostError> {
    let step_id = mint_step_id();
    let correlation = || step_correlation(&request.conversation_id, &request.turn_id, &step_id);
    let audit_correlation = Correlation {
        conversation_id: Some(request.conversation_id.clone()),
        turn_id: Some(request.turn_id.clone()),
        step_id: Some(step_id.clone()),
        invocation_id: None,
    };
    let host_audit = |kind: &str, data: Value| {
        runtime.audit().record(AuditDraft {
            actor_id: Some(actor.id.clone()),
            correlation: audit_correlation.clone(),
            data: Some(data),
            ..AuditDraft::new(AuditSource::Host, kind)
        });
    };

    let scope = floors.resolve(&request.pathname, request.requested_scope.as_deref());
    let tags = (!scope.is_empty()).then_some(scope.as_slice());
    let discovered = runtime.discover(actor, CallSurface::AiSdk, tags);

    let names = domain_wire_names(discovered.iter().map(|info| info.id.as_str()));
    let mut domain = Vec::with_capacity(discovered.len());
    let mut undecodable = Vec::new();
    for (info, name) in discovered.into_iter().zip(names) {
        let wire = match name {
            Ok(wire) => wire,
            Err(wire) => {
                undecodable.push(wire);
                continue;
            }
        };
        let declared_approval = runtime
            .registry()
            .get(&info.id)
            .is_some_and(|c| c.meta.approval_required);
        let mut description = info.description.clone();
        if declared_approval {
            description.push_str(" Requires approval.");
        }
        domain.push(DomainTool {
            info: DomainToolInfo {
                wire_name: wire,
                canonical_id: format!("domain:{}", info.id),
                description,
                requires_approval: info.requires_approval,
                side_effect: info.side_effect.as_str().to_owned(),
            },
            capability_id: info.id,
            input_schema: info.input_schema,
        });
    }

    let mut host_frames = Vec::new();
    let infos: Vec<DomainToolInfo> = domain.iter().map(|t| t.info.clone()).collect();
    let mut frontend = request.frontend_tools.clone();
    let collisions = find_collisions(&frontend, &infos);
    if !collisions.is_empty() {
        host_audit(
            "catalog.collision",
            json!({"capabilityIds": collisions.capability_ids}),
        );
        if request.version == ProtocolVersion::V1 {
            return Err(HostError::catalog_collision(&collisions.capability_ids));
        }
        drop_indices(&mut frontend, &collisions.frontend_indices);
        host_frames.push(host_inspector::collision(
            &collisions.capability_ids,
            correlation(),
        ));
    }
    if let Some(truncated) = &request.truncated {
        host_frames.push(host_inspector::truncated(truncated, correlation()));
    }
    if !undecodable.is_empty() {
        host_audit("catalog.undecodable", json!({"wireNames": undecodable}));
        host_frames.push(host_inspector::undecodable(&undecodable, correlation()));
    }
    check_catalog_limits(frontend.len(), domain.len())?;
    let state_message = capability_state_message(&request.frontend_state, &frontend);
    Ok(Composition {
        step_id,
        scope,
        catalog_mode: request.catalog_mode,
        domain,
        frontend,
        host_frames,
        state_message,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_ids_have_the_reference_shape() {
        let id = mint_step_id();
        assert_eq!(id.len(), 16);
        assert!(id.starts_with("stp_"));
        assert!(id[4..]
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()));
        assert_ne!(mint_step_id(), id);
    }

    #[test]
    fn domain_names_that_cannot_be_audited_are_withheld() {
        let names = domain_wire_names(["list-invoices", "odd id", "a:b", "some_thing"].into_iter());
        assert_eq!(names[0], Ok("domain_list-invoices".to_owned()));
        assert_eq!(names[1], Err("domain_odd id".to_owned()));
        assert_eq!(names[2], Err("domain_a:b".to_owned()));
        // An id with its own underscore is shortened, captured and offered.
        assert!(names[3]
            .as_ref()
            .is_ok_and(|n| n.starts_with("domain_some_thing_0_")));
        let same = domain_wire_names(["x", "x"].into_iter());
        assert!(
            same.iter().all(Result::is_err),
            "a shared name cannot be audited under one id"
        );
    }

    #[test]
    fn provider_safe_names() {
        assert!(provider_safe("domain_list-invoices"));
        assert!(!provider_safe("domain_a:b"));
        assert!(!provider_safe(""));
        assert!(!provider_safe(&"a".repeat(65)));
    }
}
