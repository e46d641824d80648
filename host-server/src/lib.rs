#![warn(unreachable_pub)]

//! The DPAS host server as a library: the actix-web application around the governed runtime
//! (`dpas-governance`), its stores (`dpas-store`) and the step engine (`dpas-engine`).
//!
//! # API
//! - [`AppBuilder`] → [`AppState`]: the database, the runtime with the embedder's
//!   registrations (and a capabilities file's), threads, identity, the engine.
//! - [`serve_with`] (and [`serve`], [`serve_with_signals`], [`app`], [`app_with`],
//!   [`configure`]): the routes of [`http`] and the MCP door, with the embedder's routes ahead.
//! - [`doors`]: the step doors (`/agent/chat`, `/agent/ai-sdk`, `/agent/ag-ui`, the manifest)
//!   to mount ([`doors::mount`], [`doors::for_app`]), and MCP.
//! - [`config`] (flags and environment, [`ServerConfig`]), [`auth`] (who a request's user is),
//!   [`session`] (signed session cookies), [`appfiles`] (capabilities, prompt and routes files),
//!   [`lifecycle`] (the drain), [`telemetry`], [`otlp`] and [`logs`] (what the process reports).
//!
//! # Invariants
//! - The only crate of the server that knows HTTP; below it nothing names `ApiError`.
//! - It knows no domain: a server with no registration serves none (the demo is `dpas-demo`,
//!   an embedder built on this API).
//! - Every refusal a client sees is `{"error":{code,message}}` with a safe message
//!   ([`http::error::ApiError`]); every route but health and a mounted sign-in reads the
//!   actor from the headers before a byte of the body.

pub mod app;
pub mod appfiles;
pub mod auth;
pub mod config;
pub mod doors;
pub mod http;
pub mod lifecycle;
pub mod logs;
pub mod otlp;
mod routes;
pub mod session;
pub mod telemetry;

pub use app::{AppBuilder, AppState};
pub use config::{Cli, ModelSpec, ServerConfig};
pub use dpas_governance::{Actor, CallSurface, Correlation, Envelope, Runtime};
pub use routes::{app, app_with, configure, serve, serve_with, serve_with_signals};
