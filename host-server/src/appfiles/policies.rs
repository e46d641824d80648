//! The capabilities file's policies, with the semantics of the demo's built-in ones
//! (`gate-model-writes`, `analyst-hides-writes`) and a deny by role. They are attached to
//! the file's own capabilities, so under `--demo` they never govern the demo's.

use std::sync::Arc;

use super::spec::{DenyIfRole, HideUnlessRole, PolicySpec, RequireApproval};
use dpas_governance::{policy_fn, CallSurface, Decision, Policy, PolicyPhase};

/// The policy a file entry describes (the schema guarantees exactly one rule per entry).
pub fn build(spec: &PolicySpec) -> Arc<dyn Policy> {
    let name = spec.name.clone();
    if let Some(rule) = &spec.require_approval {
        require_approval(name, rule.clone())
    } else if let Some(rule) = &spec.hide_unless_role {
        hide_unless_role(name, rule.clone())
    } else if let Some(rule) = &spec.deny_if_role {
        deny_if_role(name, rule.clone())
    } else {
        // Unreachable through `CapabilityFile::parse`; a rule-less entry allows.
        policy_fn(name, &[], |_| Ok(Decision::Allow))
    }
}

/// Like `gate-model-writes`: the listed ids, called from the listed surfaces, need approval.
fn require_approval(name: String, rule: RequireApproval) -> Arc<dyn Policy> {
    let surfaces: Vec<CallSurface> = rule
        .surfaces
        .iter()
        .copied()
        .map(CallSurface::from)
        .collect();
    policy_fn(name, &[PolicyPhase::Invocation], move |req| {
        let id = req.capability.id.as_str();
        if !(surfaces.contains(&req.surface) && rule.ids.iter().any(|i| i == id)) {
            return Ok(Decision::Allow);
        }
        let reason = if req.surface.is_model() {
            format!("{id} was initiated from a model loop")
        } else {
            format!("{id} needs the user's approval")
        };
        Ok(Decision::RequireApproval {
            reason,
            approval_type: "human-confirmation".to_owned(),
            expires_in: None,
        })
    })
}

/// Like `analyst-hides-writes`: capabilities with the listed side effects do not exist for
/// anyone whose role is not listed (discovery and invocation).
fn hide_unless_role(name: String, rule: HideUnlessRole) -> Arc<dyn Policy> {
    policy_fn(
        name,
        &[PolicyPhase::Discovery, PolicyPhase::Invocation],
        move |req| {
            let hidden = rule.side_effects.contains(&req.capability.side_effect)
                && !rule.roles.contains(&req.actor.role);
            Ok(if hidden {
                Decision::Hide
            } else {
                Decision::Allow
            })
        },
    )
}

/// Actors with a listed role are refused (`POLICY_DENIED`) what the rule covers.
fn deny_if_role(name: String, rule: DenyIfRole) -> Arc<dyn Policy> {
    policy_fn(name, &[PolicyPhase::Invocation], move |req| {
        let covered = rule
            .ids
            .as_ref()
            .is_none_or(|ids| ids.contains(&req.capability.id))
            && rule
                .side_effects
                .as_ref()
                .is_none_or(|s| s.contains(&req.capability.side_effect));
        Ok(if covered && rule.roles.contains(&req.actor.role) {
            Decision::Deny(rule.message.clone())
        } else {
            Decision::Allow
        })
    })
}
