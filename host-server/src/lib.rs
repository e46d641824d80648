//! DPAS host server as a library: the governed domain runtime, the demo receivables ledger,
//! sessions, threads and the HTTP API, plus a builder to assemble them (see `app`).

pub mod app;
pub mod appfiles;
pub mod auth;
pub mod config;
pub mod doors;
pub mod http;
pub mod lifecycle;
pub mod logs;
pub mod otlp;
pub mod routes;
pub mod session;
pub mod telemetry;

pub use app::{AppBuilder, AppState};
pub use config::{Cli, ModelSpec, ServerConfig};
pub use dpas_governance::{Actor, CallSurface, Correlation, Envelope, Runtime};
pub use routes::{app, app_with, serve, serve_with, serve_with_signals};
