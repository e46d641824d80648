//! Plain vocabulary of the governed runtime: surfaces, side effects, risk, actors, correlation
//! and the capability metadata policies read.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::vocab::wire_enum;

wire_enum! {
    /// Where a call comes from (its wire name is `surface`); each adapter fixes its own. Not
    /// the browser's `Surface`, the registry a page's components register on.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub enum CallSurface {
        /// A model's tool call, through any door (`/agent/chat`, `/agent/ai-sdk`,
        /// `/agent/ag-ui`). Its wire name `aiSdk` is the contract's (audit entries, approval
        /// records, capability `expose` lists).
        #[serde(rename = "aiSdk")]
        Model = "aiSdk",
        Mcp = "mcp",
        Direct = "direct",
        Workflow = "workflow",
        Test = "test",
    }
}

impl CallSurface {
    /// Surfaces on which a model, not a person, chooses the call.
    pub const fn is_model(self) -> bool {
        matches!(self, Self::Model | Self::Mcp)
    }
}

wire_enum! {
    /// What a capability does to the world; declared, never inferred.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[serde(rename_all = "lowercase")]
    pub enum SideEffect {
        None = "none",
        Read = "read",
        Write = "write",
        Destructive = "destructive",
        External = "external",
    }
}

impl SideEffect {
    /// `none` and `read` leave the world unchanged.
    pub const fn is_read_only(self) -> bool {
        matches!(self, Self::None | Self::Read)
    }
}

wire_enum! {
    /// How risky a capability is; drives nothing by itself, policies and audit target it.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[serde(rename_all = "lowercase")]
    pub enum Risk {
        Low = "low",
        Medium = "medium",
        High = "high",
        Critical = "critical",
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ActorKind {
    User,
    Service,
    Automation,
    Anonymous,
}

/// Who acts. Built from authenticated transport credentials, never from model output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Actor {
    /// Stable identity; for signed-in users, the email.
    pub id: String,
    pub kind: ActorKind,
    pub display_name: String,
    /// Application role, a free string (the demo uses `controller` and `analyst`).
    pub role: String,
    /// The user's email, when the identity source gives one apart from the id (a JWT claim,
    /// a proxy header); the demo's ids are emails already.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
    /// The `Authorization` header the request carried, for forwarding to the app's backend
    /// (`Bearer <token>` when `--auth jwt` read the token from its cookie). Never stored,
    /// serialised or printed.
    #[serde(skip)]
    pub authorization: Option<Credential>,
}

/// A credential taken from a request to be forwarded as is. Its `Debug` hides it.
#[derive(Clone, PartialEq, Eq)]
pub struct Credential(String);

impl Credential {
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The credential itself, for the one place that forwards it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Credential(…)")
    }
}

impl Actor {
    pub fn user(
        id: impl Into<String>,
        display_name: impl Into<String>,
        role: impl Into<String>,
    ) -> Self {
        Self {
            id: id.into(),
            kind: ActorKind::User,
            display_name: display_name.into(),
            role: role.into(),
            email: None,
            authorization: None,
        }
    }
}

/// What the caller knows about the prompt that proposed a call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CallContext {
    /// The prompt that proposed the call holds a result of an untrusted capability (U2): a
    /// call that is not read-only then needs an approval even where nothing else asks one.
    pub untrusted_content: bool,
}

/// Ids that tie a call to the conversation, turn, step and tool call that caused it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Correlation {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_id: Option<String>,
    /// The tool-call id on model surfaces, doubling as invocation id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invocation_id: Option<String>,
}

/// Everything about a capability that policies, discovery and audit may read.
#[derive(Debug, Clone)]
pub struct CapabilityMeta {
    pub id: String,
    pub description: String,
    pub side_effect: SideEffect,
    pub risk: Risk,
    pub tags: Vec<String>,
    /// Deny by default: only surfaces listed here can reach the capability.
    pub expose: Vec<CallSurface>,
    /// A static approval gate on every surface, in addition to policies.
    pub approval_required: bool,
    pub approval_expires_in: Option<Duration>,
    pub timeout: Duration,
    /// Returns untrusted content (U1): the app's own data typed by its users, pages from
    /// elsewhere. Its results reach the model fenced, and a change proposed beside them needs
    /// an approval (U2).
    pub untrusted: bool,
    pub input_schema: Value,
    pub output_schema: Value,
}

impl CapabilityMeta {
    pub fn exposed_on(&self, surface: CallSurface) -> bool {
        self.expose.contains(&surface)
    }
}
