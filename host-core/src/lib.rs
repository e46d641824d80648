//! DPAS host browser loop, the core: pure Rust over small platform traits, tested natively.
//! `host-wasm` is its binding: it wraps JS functions into these traits and converts values,
//! nothing more.
//!
//! Architecture Invariant: this crate knows nothing of JavaScript. It depends on no
//! `wasm-bindgen`, `js-sys` or `web-sys` (`scripts/test.sh` checks its dependency tree), so
//! every rule here runs and is tested on the host machine.
//!
//! Architecture Invariant (the size rule): this crate is part of the browser build, whose
//! gzip size has a budget (`scripts/build-wasm.sh`). In its crates, prefer loops to iterator
//! adaptors, `concat` to `format!`, one async body to nested futures, and types the build
//! already has to new ones (a `Vec` over a `VecDeque`, `u64`'s `Display` over `u16`'s): each
//! generic instance costs bytes. The measurements are in `host-wasm/README.md`, "Size".
//!
//! Architecture Invariant: no file imports a file that imports it (`scripts/check-imports.mjs`).
//! Value types sit in leaves (`version.rs`: `SurfaceVersion`; `text.rs`), the registry's
//! shared state in `registry/state.rs`, the step loop's platform traits in `turn/platform.rs`.
//!
//! The public API is the modules below and the re-exports at this root. Each path has one
//! name: [`turn::meta`] is reached through `turn` only, [`SurfaceVersion`] is also
//! `registry::SurfaceVersion`. The projection, the conversation store and canonical JSON are
//! private modules; their public types are re-exported here.
//!
//! - [`registry`]: the Agent Surface registry (components, availability, events, invoke);
//! - [`capability`]: what a component declares, handlers, and the description prefix;
//! - [`schema`] and [`pattern`]: the JSON Schema subset, its validator, `reduceInputSchema`;
//! - [`turn::meta`] (beside direct dispatch): meta mode, the three `surface_*` tools
//!   executed against the registry;
//! - [`project`] ([`Projection`], [`ToolBinding`]): direct-mode descriptors, `frontendState`
//!   and the wire-name map;
//! - [`envelope`]: the typed error envelope and invocation results;
//! - [`settle`]: the J6 settle-wait over clock/yield/change traits;
//! - [`guard`]: the J8 loop guard and J7 unexecuted results;
//! - [`Conversation`] ([`ConversationState`] and its views): the chat store reducer for
//!   assistant-ui (views, usage, inspector);
//! - [`driver`]: `ConversationDriver`, a conversation's turns, cancellation, generations, restore;
//! - [`turn`]: the J2 step loop (`runTurn`) and J5 dispatch over transport/UI traits;
//! - [`ids`]: id grammar.

#![warn(unreachable_pub)]

mod canonical;
pub mod capability;
pub mod cell;
mod conversation;
pub mod driver;
pub mod envelope;
pub mod guard;
pub mod ids;
pub mod pattern;
mod projection;
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
pub use conversation::{
    ChatMessageView, ChatPart, Conversation, ConversationState, InspectorEvent, Segment,
    ToolCallView,
};
pub use envelope::{ErrorCode, InvocationResult, Outcome, Retry, SurfaceError};
pub use pattern::{NativePatterns, PatternEngine};
pub use projection::{project, Projection, ToolBinding};
pub use registry::{
    ComponentHandle, ComponentUpdate, InvokeRequest, Surface, SurfaceEvent, SurfaceOptions,
};
pub use settle::{Clock, SettlePolicy, TaskYield};
pub use turn::{
    run_turn, AbortSignal, ConfirmRequest, Transport, TurnEnv, TurnEvent, TurnObserver,
    TurnOptions, TurnOutcome, TurnStatus, TurnUi,
};
pub use version::SurfaceVersion;
