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
use dpas_protocol::{decode_request, HostError, HostErrorCode, RouteFloors};
use tokio::sync::mpsc;

use super::compose::compose;
use super::models::ModelSet;
use super::prompt::system_prompt;
use super::run::{FrameSink, StepRun};
use crate::http::actor_of;
use crate::http::body::read_limited;
use crate::http::error::ApiError;
use crate::AppState;

/// Frames buffered between the run and a slow client; the run waits when it is full and
/// stops waiting (drops frames) once the client has gone.
const FRAME_BUFFER: usize = 64;

/// What the chat endpoint needs beyond the application state.
#[derive(Debug, Clone)]
pub struct ChatConfig {
    pub models: ModelSet,
    pub floors: Arc<RouteFloors>,
    /// The application's own preamble of the system prompt.
    pub app_prompt: Arc<str>,
    pub model_timeout: Duration,
}

pub async fn agent_chat(
    req: HttpRequest,
    payload: web::Payload,
    state: web::Data<AppState>,
    chat: web::Data<ChatConfig>,
) -> Result<HttpResponse, ApiError> {
    // Nobody without a session gets their body read, let alone parsed.
    let actor = actor_of(&req)?;
    let permit = state.steps.admit(&actor.id)?;
    let body = read_limited(&req, payload, state.config.body_limit).await?;
    let request = decode_request(&body)?;
    let provider = chat
        .models
        .choose(request.model_id.as_deref())
        .ok_or_else(|| HostError::of(HostErrorCode::ModelNotConfigured))?;
    let composition = compose(&state.runtime, &actor, &request, &chat.floors)?;
    let audit = state.runtime.subscribe(Some(&actor.id));
    let version = request.version.as_u8();
    let run = StepRun {
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
    };
    let (tx, rx) = mpsc::channel::<Bytes>(FRAME_BUFFER);
    // The run is its own task: the response only reads its channel.
    // The permit lives as long as the run, not the response: a client that leaves early does
    // not free a slot while its step is still working. A second sender keeps the stream open
    // until the permit is gone, so a client that saw the end can start its next step at once.
    let closing = tx.clone();
    actix_web::rt::spawn(async move {
        run.run(FrameSink::new(tx)).await;
        drop(permit);
        drop(closing);
    });
    let body = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|line| (Ok::<_, Infallible>(line), rx))
    });
    Ok(HttpResponse::Ok()
        .insert_header((CONTENT_TYPE, "application/x-ndjson; charset=utf-8"))
        .insert_header((CACHE_CONTROL, "no-store"))
        .insert_header(("x-dpas-protocol-version", version.to_string()))
        .streaming(body))
}
