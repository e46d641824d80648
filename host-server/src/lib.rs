//! DPAS host server as a library: the governed domain runtime, the demo receivables ledger,
//! sessions, threads and the HTTP API, plus a builder to assemble them (see `app`).

pub mod app;
pub mod appfiles;
pub mod audit_log;
pub mod auth;
pub mod chat;
pub mod config;
pub mod db;
pub mod demo;
pub mod http;
pub mod lifecycle;
pub mod logs;
pub mod mcp;
pub mod otlp;
pub mod runtime;
pub mod session;
pub mod telemetry;
#[cfg(feature = "testing")]
pub mod testing;
pub mod threads;

pub use app::{AppBuilder, AppState};
pub use config::{Cli, ModelSpec, ServerConfig};
/// The old name of [`runtime::CallSurface`].
#[allow(deprecated)]
pub use runtime::Surface;
pub use runtime::{Actor, CallSurface, Correlation, Envelope, Runtime};
