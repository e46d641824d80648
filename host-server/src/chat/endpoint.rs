//! `POST /agent/chat`: one POST is one model step-run, streamed as NDJSON frames.
//!
//! Check order (reference-behaviour K4, DESIGN decisions 1 and 7): decode (400/409/413) →
//! session (401) → model configured (503) → v1 collision (409) → limits (413) → compose →
//! stream. Every refusal is decided before the first byte of the stream.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use actix_web::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};
use dpas_protocol::{decode_request, ChatStepRequest, HostError, HostErrorCode, RouteFloors};
use tokio::sync::mpsc;

use super::compose::compose;
use super::models::ModelSet;
use super::prompt::system_prompt;
use super::run::{FrameSink, StepRun};
use crate::http::actor_of;
use crate::http::body::read_limited;
use crate::http::error::ApiError;
use crate::runtime::Actor;
use crate::AppState;

/// Frames buffered between the run and a slow client; the run waits when it is full and
/// stops waiting (drops frames) once the client has gone.
pub const FRAME_BUFFER: usize = 64;

/// What the chat endpoint needs beyond the application state.
#[derive(Debug, Clone)]
pub struct ChatConfig {
    pub models: ModelSet,
    pub floors: Arc<RouteFloors>,
    /// The application's own preamble of the system prompt.
    pub app_prompt: Arc<str>,
    pub model_timeout: Duration,
}

/// Everything a step-request's run needs once the request is decoded, checked in the
/// contract's order after decoding: session (401), model (503), composition (409/413).
/// Every door into the step engine starts here.
pub fn prepare_run(
    req: &HttpRequest,
    state: &AppState,
    chat: &ChatConfig,
    request: ChatStepRequest,
) -> Result<StepRun, ApiError> {
    let actor = actor_of(req)?;
    prepare_run_for(state, chat, actor, request)
}

/// [`prepare_run`] for an actor the door has already authenticated.
pub fn prepare_run_for(
    state: &AppState,
    chat: &ChatConfig,
    actor: Actor,
    request: ChatStepRequest,
) -> Result<StepRun, ApiError> {
    let provider = chat
        .models
        .choose(request.model_id.as_deref())
        .ok_or_else(|| HostError::of(HostErrorCode::ModelNotConfigured))?;
    let composition = compose(&state.runtime, &actor, &request, &chat.floors)?;
    let audit = state.runtime.subscribe(Some(&actor.id));
    Ok(StepRun {
        runtime: Arc::clone(&state.runtime),
        threads: Arc::clone(&state.threads),
        model_name: provider
            .id()
            .split_once('/')
            .map_or("", |(_, m)| m)
            .to_owned(),
        provider,
        actor,
        system_prompt: system_prompt(&chat.app_prompt, composition.catalog_mode),
        composition,
        request,
        model_timeout: chat.model_timeout,
        audit,
    })
}

pub async fn agent_chat(
    req: HttpRequest,
    payload: web::Payload,
    state: web::Data<AppState>,
    chat: web::Data<ChatConfig>,
) -> Result<HttpResponse, ApiError> {
    let body = read_limited(&req, payload, state.config.body_limit).await?;
    let request = decode_request(&body)?;
    let version = request.version.as_u8();
    let run = prepare_run(&req, &state, &chat, request)?;
    let (tx, rx) = mpsc::channel::<Bytes>(FRAME_BUFFER);
    // The run is its own task: the response only reads its channel.
    actix_web::rt::spawn(run.run(FrameSink::new(tx)));
    let body = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|line| (Ok::<_, Infallible>(line), rx))
    });
    Ok(HttpResponse::Ok()
        .insert_header((CONTENT_TYPE, "application/x-ndjson; charset=utf-8"))
        .insert_header((CACHE_CONTROL, "no-store"))
        .insert_header(("x-dpas-protocol-version", version.to_string()))
        .streaming(body))
}
