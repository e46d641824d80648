//! `POST /agent/chat`: one POST is one model step-run, streamed as NDJSON frames.
//!
//! Check order (reference-behaviour K4, DESIGN decisions 1 and 7, hardened): session (401,
//! from the headers, before a byte of the body is read) → the actor's concurrent steps (429)
//! → read under cap and deadline (413/408) → decode (400/409/413) → model configured (503) →
//! v1 collision (409) → limits (413) → compose → stream. Every refusal is decided before the
//! first byte of the stream.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use actix_web::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};
use dpas_protocol::frame::{host_inspector, step_correlation};
use dpas_protocol::{decode_request, ChatStepRequest, HostError, HostErrorCode, RouteFloors};
use futures_util::StreamExt as _;
use tokio::sync::mpsc;

use super::compose::compose;
use super::models::ModelSet;
use super::prompt::system_prompt;
use super::run::{FrameSink, StepRun};
use crate::http::actor_of;
use crate::http::body::read_limited;
use crate::http::error::ApiError;
use crate::AppState;
use dpas_governance::Actor;

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
pub async fn prepare_run(
    req: &HttpRequest,
    state: &AppState,
    chat: &ChatConfig,
    request: ChatStepRequest,
) -> Result<StepRun, ApiError> {
    let actor = actor_of(req).await?;
    prepare_run_for(state, chat, actor, request)
}

/// [`prepare_run`] for an actor the door has already authenticated.
pub fn prepare_run_for(
    state: &AppState,
    chat: &ChatConfig,
    actor: Actor,
    mut request: ChatStepRequest,
) -> Result<StepRun, ApiError> {
    if state.drain.is_draining() {
        return Err(ApiError::ShuttingDown);
    }
    let provider = chat
        .models
        .choose(request.model_id.as_deref())
        .ok_or_else(|| HostError::of(HostErrorCode::ModelNotConfigured))?;
    let mut composition = compose(
        &state.runtime,
        &state.catalogs,
        &actor,
        &mut request,
        &chat.floors,
    )?;
    if let Some(requested) = request.model_id.as_deref() {
        if !chat.models.serves(requested) {
            let correlation = step_correlation(
                &request.conversation_id,
                &request.turn_id,
                &composition.step_id,
            );
            let frame = host_inspector::model_fallback(requested, provider.id(), correlation);
            composition.host_frames.push(frame);
        }
    }
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
        permit: None,
        drain: Some(state.drain.track()),
    })
}

/// Runs a step in its own task, holding the actor's step permit (if the door took one) for
/// the run's whole life, not the response's: a client that leaves early does not free a slot
/// while its step still works. `closing` (a clone of the sink's sender) is dropped after the
/// permit, so a client that saw the end of the stream can start its next step at once.
pub fn spawn_run<C: 'static>(mut run: StepRun, sink: FrameSink, closing: C) {
    let permit = run.permit.take();
    actix_web::rt::spawn(async move {
        run.run(sink).await;
        drop(permit);
        drop(closing);
    });
}

pub async fn agent_chat(
    req: HttpRequest,
    payload: web::Payload,
    state: web::Data<AppState>,
    chat: web::Data<ChatConfig>,
) -> Result<HttpResponse, ApiError> {
    // Nobody without a session gets their body read, let alone parsed.
    let actor = actor_of(&req).await?;
    let permit = state.steps.admit(&actor.id)?;
    let body = read_limited(&req, payload, state.config.body_limit).await?;
    let request = decode_request(&body)?;
    let version = request.version.as_u8();
    let mut run = prepare_run_for(&state, &chat, actor, request)?;
    run.permit = Some(permit);
    let (tx, mut rx) = mpsc::channel::<Bytes>(FRAME_BUFFER);
    // The run is its own task: the response only reads its channel.
    let closing = tx.clone();
    spawn_run(run, FrameSink::new(tx), closing);
    // The head waits for `step-start` (the run's first send, before anything can make it
    // wait), so it goes out in one write with the frames the run has ready, not alone.
    let first = rx.recv().await;
    let rest = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|line| (line, rx))
    });
    let body = futures_util::stream::iter(first)
        .chain(rest)
        .map(Ok::<_, Infallible>);
    Ok(HttpResponse::Ok()
        .insert_header((CONTENT_TYPE, "application/x-ndjson; charset=utf-8"))
        .insert_header((CACHE_CONTROL, "no-store"))
        .insert_header(("x-dpas-protocol-version", version.to_string()))
        .streaming(body))
}
