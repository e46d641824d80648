//! The demo receivables domain: ledger, capabilities, policies and the two demo users.

pub mod capabilities;
pub mod http;
pub mod ledger;

use std::sync::Arc;

use dpas_protocol::RouteFloors;
pub use ledger::Ledger;

use dpas_governance::{
    policy_fn, Actor, CallSurface, Decision, Policy, PolicyPhase, RuntimeBuilder,
};

pub const ROLE_CONTROLLER: &str = "controller";
pub const ROLE_ANALYST: &str = "analyst";

/// Capabilities a model surface may only run after the user approves.
pub const GATED_CAPABILITIES: [&str; 2] = ["issue-invoice", "delete-invoice"];

/// The demo app's route → scope floor table, in the format of `--routes` files (route →
/// tokens; `app` is prepended to every non-empty floor). The app in `www/` imports the same
/// file as its `routeScopes`, so the browser and the server resolve one table.
pub const ROUTES_JSON: &str = include_str!("routes.json");

/// The demo app's route floors ([`ROUTES_JSON`]).
pub fn route_floors() -> RouteFloors {
    crate::appfiles::parse_routes(std::path::Path::new("demo/routes.json"), ROUTES_JSON)
        .expect("the demo's routes.json is a valid routes file (checked by its unit test)")
}

/// A demo identity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DemoUser {
    pub email: &'static str,
    pub name: &'static str,
    pub role: &'static str,
}

pub const CONTROLLER: DemoUser = DemoUser {
    email: "carla@example.com",
    name: "Carla Controller",
    role: ROLE_CONTROLLER,
};
pub const ANALYST: DemoUser = DemoUser {
    email: "ada@example.com",
    name: "Ada Analyst",
    role: ROLE_ANALYST,
};

impl DemoUser {
    pub fn by_role(role: &str) -> Option<Self> {
        [CONTROLLER, ANALYST].into_iter().find(|u| u.role == role)
    }

    pub fn actor(&self) -> Actor {
        Actor::user(self.email, self.name, self.role)
    }
}

/// `gate-model-writes`: issue and delete from a model surface need the user's approval.
pub fn gate_model_writes() -> Arc<dyn Policy> {
    policy_fn("gate-model-writes", &[PolicyPhase::Invocation], |req| {
        let gated = matches!(req.surface, CallSurface::Model | CallSurface::Mcp)
            && GATED_CAPABILITIES.contains(&req.capability.id.as_str());
        Ok(if gated {
            Decision::RequireApproval {
                reason: format!("{} was initiated from a model loop", req.capability.id),
                approval_type: "human-confirmation".to_owned(),
                expires_in: None,
            }
        } else {
            Decision::Allow
        })
    })
}

/// `analyst-hides-writes`: anyone but a controller sees and reaches reads only.
pub fn analyst_hides_writes() -> Arc<dyn Policy> {
    policy_fn(
        "analyst-hides-writes",
        &[PolicyPhase::Discovery, PolicyPhase::Invocation],
        |req| {
            Ok(
                if req.capability.side_effect.is_read_only() || req.actor.role == ROLE_CONTROLLER {
                    Decision::Allow
                } else {
                    Decision::Hide
                },
            )
        },
    )
}

/// Registers the demo's capabilities and policies on a runtime builder.
pub fn register(builder: RuntimeBuilder, ledger: &Ledger) -> RuntimeBuilder {
    let builder = capabilities::capabilities(ledger)
        .into_iter()
        .fold(builder, RuntimeBuilder::capability);
    builder
        .policy(gate_model_writes())
        .policy(analyst_hides_writes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| (*x).to_owned()).collect()
    }

    /// The demo serves the reference behaviour's D2 table, the one its traces were recorded
    /// against.
    #[test]
    fn the_demo_routes_are_the_reference_table() {
        let floors = route_floors();
        assert_eq!(floors.shell_token, "app");
        let reference = dpas_protocol::test_support::reference_route_floors();
        let mut ours = floors.routes.clone();
        let mut theirs = reference.routes.clone();
        ours.sort();
        theirs.sort();
        assert_eq!(ours, theirs);
        assert_eq!(
            floors.floor("/receivables/clients/42"),
            s(&["app", "clients", "invoices"])
        );
        assert_eq!(floors.floor("/architecture"), s(&["app"]));
        assert!(floors.floor("/").is_empty());
    }
}
