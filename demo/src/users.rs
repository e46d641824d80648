//! The demo's two users: a controller, who may write, and an analyst, who reads.

use dpas_governance::Actor;

pub const ROLE_CONTROLLER: &str = "controller";
pub const ROLE_ANALYST: &str = "analyst";

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
