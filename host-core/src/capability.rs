//! What a component declares: capabilities, their effects, confirmation levels, availability
//! and handlers. Handlers are boxed local futures so the wasm layer can wrap JS functions
//! (single-threaded: `Rc`, no `Send`).

use crate::ids::Plane;
use dpas_protocol::json::{Map, Value};
use futures_util::future::LocalBoxFuture;
use futures_util::FutureExt;
use serde::{Deserialize, Serialize};
use std::future::Future;
use std::rc::Rc;

use crate::envelope::SurfaceError;

dpas_protocol::wire_enum! {
    /// What a capability does to the world.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[serde(rename_all = "kebab-case")]
    pub enum Effect {
        Read = "read",
        LocalState = "local-state",
        Navigation = "navigation",
        ServerQuery = "server-query",
        ServerMutation = "server-mutation",
        ExternalSideEffect = "external-side-effect",
        Destructive = "destructive",
    }
}

impl Effect {
    /// Effects a view action may declare.
    pub fn is_view_action_effect(self) -> bool {
        matches!(self, Self::LocalState | Self::Navigation)
    }

    /// Effects a domain procedure reference may declare.
    pub fn is_domain_effect(self) -> bool {
        matches!(
            self,
            Self::ServerQuery | Self::ServerMutation | Self::ExternalSideEffect | Self::Destructive
        )
    }

    /// The confirmation floor of a domain effect (agent-surface §3.3 defaults table).
    pub fn confirmation_floor(self) -> Confirmation {
        match self {
            Self::ServerMutation => Confirmation::Optional,
            Self::ExternalSideEffect | Self::Destructive => Confirmation::Required,
            _ => Confirmation::Never,
        }
    }
}

pub use dpas_protocol::tool::Confirmation;

/// The stricter of two confirmation levels (`never < optional < required`); levels only
/// ever escalate.
pub fn escalate(a: Confirmation, b: Confirmation) -> Confirmation {
    let rank = |c: Confirmation| match c {
        Confirmation::Never => 0,
        Confirmation::Optional => 1,
        Confirmation::Required => 2,
    };
    if rank(b) > rank(a) {
        b
    } else {
        a
    }
}

/// The stable description prefix: `[<plane> · <effect>] `, with ` · requires confirmation`
/// inside the brackets when confirmation is required (U+00B7 separators).
pub fn description_prefix(plane: Plane, effect: Effect, confirmation: Confirmation) -> String {
    let confirm = if confirmation == Confirmation::Required {
        " · requires confirmation"
    } else {
        ""
    };
    format!("[{} · {}{confirm}] ", plane.as_str(), effect.as_str())
}

/// A tool description: the prefix, then the authored text. No live state ever goes here.
pub fn tool_description(
    plane: Plane,
    effect: Effect,
    confirmation: Confirmation,
    authored: &str,
) -> String {
    description_prefix(plane, effect, confirmation) + authored
}

/// Why a handler did not produce an output.
#[derive(Debug, Clone, PartialEq)]
pub enum HandlerError {
    /// The handler threw or rejected; the cause stays local and becomes `EXECUTION_FAILED`.
    Threw(String),
    /// The handler answered with a typed error (e.g. `PRECONDITION_FAILED`), passed through.
    Failed(SurfaceError),
}

/// What a handler settles to: an optional JSON output, or an error.
pub type HandlerResult = Result<Option<Value>, HandlerError>;

/// What a handler is told about the call it serves.
#[derive(Debug, Clone, PartialEq)]
pub struct InvocationContext {
    pub invocation_id: String,
    pub capability_id: String,
    pub registration_id: String,
    /// The user approved this call through the host's confirm callback.
    pub confirmed: bool,
    /// The caller's cancellation, handed through to the handler (see [`CancelToken`]).
    pub cancel: Option<CancelToken>,
    /// A procedure's own deadline (`ProcedureDef::timeout_ms`); `None` for the default.
    pub timeout_ms: Option<u32>,
}

/// The caller's cancellation as the platform has it (in the browser, the turn's
/// `AbortSignal`). The core only carries it from the turn to the handler, which links its
/// own abort to it; it never looks inside.
#[derive(Clone)]
pub struct CancelToken(pub Rc<dyn std::any::Any>);

impl std::fmt::Debug for CancelToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CancelToken")
    }
}

impl PartialEq for CancelToken {
    fn eq(&self, other: &Self) -> bool {
        Rc::ptr_eq(&self.0, &other.0)
    }
}

type HandlerFn = dyn Fn(Value, InvocationContext) -> LocalBoxFuture<'static, HandlerResult>;

/// An async capability handler (`read`, `execute`, or the procedure executor).
#[derive(Clone)]
pub struct Handler(Rc<HandlerFn>);

impl std::fmt::Debug for Handler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Handler")
    }
}

impl Handler {
    /// Wraps an async function of `(input, context)`.
    pub fn new<F, Fut>(f: F) -> Self
    where
        F: Fn(Value, InvocationContext) -> Fut + 'static,
        Fut: Future<Output = HandlerResult> + 'static,
    {
        Self(Rc::new(move |input, ctx| f(input, ctx).boxed_local()))
    }

    /// Wraps a synchronous function of `(input, context)`.
    pub fn sync<F>(f: F) -> Self
    where
        F: Fn(Value, InvocationContext) -> HandlerResult + 'static,
    {
        Self(Rc::new(move |input, ctx| {
            std::future::ready(f(input, ctx)).boxed_local()
        }))
    }

    pub fn call(
        &self,
        input: Value,
        ctx: InvocationContext,
    ) -> LocalBoxFuture<'static, HandlerResult> {
        (self.0)(input, ctx)
    }
}

/// A `when` predicate; `Err` is a predicate that threw (reason `when-error`).
pub type Predicate = Rc<dyn Fn() -> Result<bool, String>>;

/// The unavailable-reason text, computed when asked (a string or a function in JS).
pub type ReasonFn = Rc<dyn Fn() -> String>;

/// Availability gates of one capability.
#[derive(Clone, Default)]
pub struct Availability {
    pub when: Option<Predicate>,
    pub unavailable_reason: Option<ReasonFn>,
}

impl std::fmt::Debug for Availability {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Availability")
            .field("when", &self.when.is_some())
            .field("unavailable_reason", &self.unavailable_reason.is_some())
            .finish()
    }
}

impl Availability {
    /// Available exactly when `f` returns true.
    pub fn when(f: impl Fn() -> bool + 'static) -> Self {
        Self {
            when: Some(Rc::new(move || Ok(f()))),
            unavailable_reason: None,
        }
    }

    /// The same gates with a fixed reason text.
    pub fn reason(mut self, text: impl Into<String>) -> Self {
        let text = text.into();
        self.unavailable_reason = Some(Rc::new(move || text.clone()));
        self
    }
}

/// An observation: reads view state; its output schema is mandatory.
#[derive(Debug, Clone)]
pub struct ObservationDef {
    pub name: String,
    pub description: String,
    pub output_schema: Value,
    pub read: Handler,
    pub availability: Availability,
    /// Reads untrusted content (U1): fenced for the model, and an action proposed after it
    /// in the turn waits for the user (U3).
    pub untrusted: bool,
}

/// A view action: changes view state (`local-state` or `navigation`).
#[derive(Debug, Clone)]
pub struct ActionDef {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
    pub output_schema: Option<Value>,
    pub effect: Effect,
    pub confirmation: Confirmation,
    pub idempotent: bool,
    pub execute: Handler,
    pub availability: Availability,
    /// Its result is untrusted content (U1).
    pub untrusted: bool,
}

impl ActionDef {
    /// A non-idempotent action that needs no confirmation and is always available.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        effect: Effect,
        input_schema: Value,
        execute: Handler,
    ) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            input_schema,
            output_schema: None,
            effect,
            confirmation: Confirmation::Never,
            idempotent: false,
            execute,
            availability: Availability::default(),
            untrusted: false,
        }
    }
}

/// `bind()`: the input keys the live UI supplies; `Err` is a binding that threw.
pub type BindFn = Rc<dyn Fn() -> Result<Map<String, Value>, String>>;

/// A contextual reference to a backend procedure (`domain:<path>`), executed through the
/// surface's procedure executor.
#[derive(Clone)]
pub struct ProcedureDef {
    pub path: String,
    pub description: String,
    pub input_schema: Value,
    pub output_schema: Option<Value>,
    pub effect: Effect,
    /// Escalate-only: the effective level is at least the effect's floor.
    pub confirmation: Confirmation,
    pub bind: Option<BindFn>,
    /// Bound keys the agent may override; every other bound key is locked.
    pub overridable_fields: Vec<String>,
    /// Live contextual text (`describe()`), shown as the volatile `note`, never in the description.
    pub describe: Option<Rc<dyn Fn() -> Option<String>>>,
    pub availability: Availability,
    /// How long the executor may run this reference before the call is answered `TIMEOUT`
    /// (the platform's default when `None`). Like a handler, not part of the structure.
    pub timeout_ms: Option<u32>,
}

impl std::fmt::Debug for ProcedureDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProcedureDef")
            .field("path", &self.path)
            .field("effect", &self.effect)
            .finish()
    }
}

impl ProcedureDef {
    /// A reference with no binding, no live note, always available, and the effect's floor.
    pub fn new(
        path: impl Into<String>,
        description: impl Into<String>,
        effect: Effect,
        input_schema: Value,
    ) -> Self {
        Self {
            path: path.into(),
            description: description.into(),
            input_schema,
            output_schema: None,
            effect,
            confirmation: Confirmation::Never,
            bind: None,
            overridable_fields: Vec::new(),
            describe: None,
            availability: Availability::default(),
            timeout_ms: None,
        }
    }

    /// The declared level, lifted to the effect's floor.
    pub fn effective_confirmation(&self) -> Confirmation {
        escalate(self.confirmation, self.effect.confirmation_floor())
    }
}

/// A component definition, as registered while it is mounted.
#[derive(Debug, Clone)]
pub struct ComponentDef {
    pub component_type: String,
    pub instance_id: Option<String>,
    pub description: String,
    /// Snapshot order: higher first, then type, then instance id.
    pub priority: i32,
    pub enabled: bool,
    pub observations: Vec<ObservationDef>,
    pub actions: Vec<ActionDef>,
    pub procedures: Vec<ProcedureDef>,
}

impl ComponentDef {
    /// An enabled component with no capabilities yet.
    pub fn new(component_type: impl Into<String>, description: impl Into<String>) -> Self {
        Self {
            component_type: component_type.into(),
            instance_id: None,
            description: description.into(),
            priority: 0,
            enabled: true,
            observations: Vec::new(),
            actions: Vec::new(),
            procedures: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_use_the_middle_dot() {
        assert_eq!(
            description_prefix(Plane::View, Effect::Read, Confirmation::Never),
            "[view \u{b7} read] "
        );
        assert_eq!(
            tool_description(
                Plane::View,
                Effect::LocalState,
                Confirmation::Never,
                "Narrow this table."
            ),
            "[view · local-state] Narrow this table."
        );
        assert_eq!(
            description_prefix(
                Plane::Domain,
                Effect::ServerMutation,
                Confirmation::Optional
            ),
            "[domain · server-mutation] "
        );
        assert_eq!(
            description_prefix(Plane::Domain, Effect::Destructive, Confirmation::Required),
            "[domain · destructive · requires confirmation] "
        );
    }

    #[test]
    fn confirmation_floors_follow_the_effect() {
        assert_eq!(
            Effect::ServerQuery.confirmation_floor(),
            Confirmation::Never
        );
        assert_eq!(
            Effect::ServerMutation.confirmation_floor(),
            Confirmation::Optional
        );
        assert_eq!(
            Effect::ExternalSideEffect.confirmation_floor(),
            Confirmation::Required
        );
        assert_eq!(
            Effect::Destructive.confirmation_floor(),
            Confirmation::Required
        );
        assert_eq!(
            escalate(Confirmation::Required, Confirmation::Optional),
            Confirmation::Required
        );
        assert_eq!(
            escalate(Confirmation::Never, Confirmation::Optional),
            Confirmation::Optional
        );
        assert_eq!(
            dpas_protocol::test_support::to_value(Effect::LocalState).unwrap(),
            "local-state"
        );
    }

    #[test]
    fn effects_are_their_serde_spelling() {
        for effect in Effect::ALL {
            assert_eq!(
                dpas_protocol::test_support::to_value(effect).unwrap(),
                effect.as_str()
            );
            assert_eq!(Effect::parse(effect.as_str()), Some(effect));
        }
        assert_eq!(Effect::ALL.len(), 7);
        assert_eq!(Effect::parse("external"), None);
    }
}
