//! DPAS host browser loop, the core: pure Rust over small platform traits, tested natively.
//! `host-wasm` is its binding: it wraps JS functions into these traits and converts values,
//! nothing more.
//!
//! Architecture invariant: this crate knows nothing of JavaScript. It depends on no
//! `wasm-bindgen`, `js-sys` or `web-sys` (`scripts/test.sh` checks its dependency tree), so
//! every rule here runs and is tested on the host machine.
//!
//! - [`registry`]: the Agent Surface registry (components, availability, events, invoke);
//! - [`capability`]: what a component declares, handlers, and the description prefix;
//! - [`schema`] and [`pattern`]: the JSON Schema subset, its validator, `reduceInputSchema`;
//! - [`turn::meta`] (beside direct dispatch): meta mode, the three `surface_*` tools
//!   executed against the registry;
//! - [`projection`]: direct-mode descriptors, `frontendState` and the wire-name map;
//! - [`envelope`]: the typed error envelope and invocation results;
//! - [`settle`]: the J6 settle-wait over clock/yield/change traits;
//! - [`guard`]: the J8 loop guard and J7 unexecuted results;
//! - [`conversation`]: the chat store reducer for assistant-ui (views, usage, inspector);
//! - [`driver`]: `ConversationDriver`, a conversation's turns, cancellation, generations, restore;
//! - [`turn`]: the J2 step loop (`runTurn`) and J5 dispatch over transport/UI traits;
//! - [`ids`] and [`canonical`]: id grammar and canonical JSON.

pub mod canonical;
pub mod capability;
pub mod cell;
pub mod conversation;
pub mod driver;
pub mod envelope;
pub mod guard;
pub mod ids;
pub mod pattern;
pub mod projection;
pub mod registry;
pub mod schema;
pub mod settle;
mod shared;
mod text;
pub mod turn;
mod vec_map;
mod version;

#[cfg(test)]
pub(crate) mod testing;

pub use capability::{
    ActionDef, Availability, ComponentDef, Confirmation, Effect, Handler, HandlerError,
    HandlerResult, InvocationContext, ObservationDef, ProcedureDef,
};
pub use envelope::{ErrorCode, InvocationResult, Outcome, Retry, SurfaceError};
pub use pattern::{NativePatterns, PatternEngine};
pub use projection::{project, Projection};
pub use registry::{
    ComponentHandle, ComponentUpdate, InvokeRequest, Surface, SurfaceEvent, SurfaceOptions,
};
pub use settle::{Clock, SettlePolicy, TaskYield};
pub use turn::{
    run_turn, AbortSignal, ConfirmRequest, Transport, TurnEnv, TurnEvent, TurnObserver,
    TurnOptions, TurnOutcome, TurnStatus, TurnUi,
};
pub use version::SurfaceVersion;
