//! The doors into the step engine, each a translation of its clients' wire around the same
//! run: `POST /agent/chat` (the contract's NDJSON, [`dpas`]), `/agent/ai-sdk` (the AI SDK's
//! UI message stream, [`ai_sdk`]), `/agent/ag-ui` (AG-UI events, [`ag_ui`]), MCP at `/mcp`
//! ([`mcp`]), and `GET /agent/manifest` ([`manifest`]), which describes them.
//!
//! Every step door opens the same way ([`open_door`]): the actor (401) and the actor's
//! concurrent steps (429) before a byte of the body is read, then the body under the cap
//! and the deadline (413/408), the door's decoding into a step request, and the engine's
//! checks. Nothing has streamed when any of them refuses.

pub mod ag_ui;
pub mod ai_sdk;
pub mod dpas;
pub mod manifest;
pub mod mcp;
mod open;
mod sse;

use actix_web::web;
pub use dpas_engine::{ChatConfig, ModelSet, ModelSetupError};
use dpas_protocol::RouteFloors;

use crate::appfiles::{AppFiles, SHELL_SCOPE};
use crate::config::ServerConfig;
pub use open::{malformed, open_door, translated, BodyKind};

/// The chat configuration of an application of your own: the models of `config` (every
/// `--model`, the first the default), your route → scope table and the preamble your
/// system prompt starts with (the host's tool rules follow it). Mount it with [`mount`].
pub fn for_app(
    config: &ServerConfig,
    floors: RouteFloors,
    app_prompt: &str,
) -> Result<ChatConfig, ModelSetupError> {
    ChatConfig::new(
        std::iter::once(&config.model).chain(&config.more_models),
        floors,
        app_prompt,
        config.model_timeout,
    )
}

/// The chat configuration of the binary without the demo: the app's prompt and routes files
/// when given; otherwise no preamble and no route floors (every capability offered
/// everywhere).
pub fn configured(config: &ServerConfig, files: &AppFiles) -> Result<ChatConfig, ModelSetupError> {
    let floors = files
        .routes
        .clone()
        .unwrap_or_else(|| RouteFloors::new(SHELL_SCOPE, Vec::<(String, Vec<String>)>::new()));
    for_app(config, floors, files.prompt.as_deref().unwrap_or(""))
}

/// Mounts the step doors (`POST /agent/chat` and its `/cancel`, `/agent/ai-sdk`, `/agent/ag-ui`) and
/// `GET /agent/manifest` with their configuration (for `http::serve_with`/`app_with`).
pub fn mount(chat: ChatConfig) -> impl Fn(&mut web::ServiceConfig) + Clone + Send + 'static {
    move |cfg: &mut web::ServiceConfig| {
        cfg.app_data(web::Data::new(chat.clone()))
            .service(crate::http::resource("/agent/chat").route(web::post().to(dpas::agent_chat)))
            .service(
                crate::http::resource("/agent/chat/cancel")
                    .route(web::post().to(dpas::agent_chat_cancel)),
            )
            .service(
                crate::http::resource("/agent/ai-sdk").route(web::post().to(ai_sdk::agent_ai_sdk)),
            )
            .service(
                crate::http::resource("/agent/ag-ui").route(web::post().to(ag_ui::agent_ag_ui)),
            )
            .service(
                crate::http::resource("/agent/manifest")
                    .route(web::get().to(manifest::agent_manifest)),
            );
    }
}
