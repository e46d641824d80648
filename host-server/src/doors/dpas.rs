//! `POST /agent/chat`: one POST is one model step-run, streamed as NDJSON frames.
//!
//! Check order (reference-behaviour K4, DESIGN decisions 1 and 7, hardened): session (401,
//! from the headers, before a byte of the body is read) → the actor's concurrent steps (429)
//! → read under cap and deadline (413/408) → decode (400/409/413) → model configured (503) →
//! v1 collision (409) → limits (413) → compose → stream. Every refusal is decided before the
//! first byte of the stream.

use std::convert::Infallible;

use actix_web::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};
use dpas_engine::{spawn_run, ChatConfig, FrameSink, FRAME_BUFFER};
use dpas_protocol::decode_request;
use futures_util::StreamExt as _;
use tokio::sync::mpsc;

use super::open::{open_door, BodyKind};
use crate::http::error::ApiError;
use crate::AppState;

pub async fn agent_chat(
    req: HttpRequest,
    payload: web::Payload,
    state: web::Data<AppState>,
    chat: web::Data<ChatConfig>,
) -> Result<HttpResponse, ApiError> {
    let (run, version) = open_door(&req, payload, &state, &chat, BodyKind::Any, |body| {
        let request = decode_request(body)?;
        let version = request.version.as_u8();
        Ok((request, version))
    })
    .await?;
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
