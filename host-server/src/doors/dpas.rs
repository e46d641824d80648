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
use dpas_engine::steps::{Admission, Followed};
use dpas_engine::{spawn_run, ChatConfig, FrameSink, StepRun, FRAME_BUFFER};
use dpas_governance::steps::{CancelTarget, StepKey};
use dpas_protocol::decode_request;
use dpas_protocol::limits::{MAX_ID_LEN, MAX_STEP_INDEX};
use futures_util::StreamExt as _;
use tokio::sync::mpsc;

use sha2::{Digest, Sha256};

use super::open::{open, BodyKind};
use crate::http::error::ApiError;
use crate::http::Caller;
use crate::AppState;

pub async fn agent_chat(
    req: HttpRequest,
    payload: web::Payload,
    state: web::Data<AppState>,
    chat: web::Data<ChatConfig>,
) -> Result<HttpResponse, ApiError> {
    let opened = open(&req, payload, &state, BodyKind::Any, |body| {
        let request = decode_request(body)?;
        let version = request.version.as_u8();
        Ok((request, (version, hex::encode(Sha256::digest(body)))))
    })
    .await?;
    let (version, digest) = opened.keep;
    let Some(log) = state.engine.step_log.clone() else {
        let run = state
            .engine
            .prepare(&chat, opened.actor, opened.request, Some(opened.permit))?;
        return Ok(stream_run(run, version).await);
    };
    let key = StepKey {
        owner: opened.actor.id.clone(),
        conversation_id: opened.request.conversation_id.clone(),
        turn_id: opened.request.turn_id.clone(),
        step_index: u64::from(opened.request.step_index),
    };
    // A claim given up elsewhere (its run refused there) is admitted again: at most twice.
    for _ in 0..3 {
        match log.admit(key.clone(), &digest).await? {
            Admission::Run(recording) => {
                let prepared =
                    state
                        .engine
                        .prepare(&chat, opened.actor, opened.request, Some(opened.permit));
                return match prepared {
                    Ok(mut run) => {
                        run.recording = Some(recording);
                        Ok(stream_run(run, version).await)
                    }
                    Err(refusal) => {
                        recording.refuse(&refusal).await;
                        Err(refusal.into())
                    }
                };
            }
            Admission::Unrecorded => {
                let run = state.engine.prepare(
                    &chat,
                    opened.actor,
                    opened.request,
                    Some(opened.permit),
                )?;
                return Ok(stream_run(run, version).await);
            }
            Admission::Follow(follower) => match follower.lines().await? {
                Followed::Lines(lines) => {
                    return Ok(ndjson(version)
                        .insert_header((STEP_REPLAY, "true"))
                        .streaming(lines.map(Ok::<_, Infallible>)))
                }
                Followed::Again => continue,
            },
        }
    }
    Err(dpas_engine::Refusal::StepInterrupted.into())
}

/// The largest body `POST /agent/chat/cancel` reads.
const CANCEL_BODY_LIMIT: usize = 1024;

/// What `POST /agent/chat/cancel` names: the caller's running steps of one conversation,
/// narrowed to a turn and a step when given.
#[derive(Debug, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct CancelBody {
    conversation_id: String,
    turn_id: Option<String>,
    step_index: Option<u64>,
}

/// `POST /agent/chat/cancel`: stops the caller's running steps the body names, on this
/// replica or another sharing the step records, and answers once each run has ended, with
/// how it ended. Another actor's steps, finished steps and unknown ids are not in the answer
/// (`{"steps":[]}`, the same for each).
pub async fn agent_chat_cancel(
    Caller(actor): Caller,
    req: HttpRequest,
    payload: web::Payload,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let body: CancelBody = crate::http::read_json(&req, payload, CANCEL_BODY_LIMIT).await?;
    let id_ok = |id: &str| !id.is_empty() && id.encode_utf16().count() <= MAX_ID_LEN;
    if !id_ok(&body.conversation_id) || !body.turn_id.as_deref().is_none_or(id_ok) {
        return Err(ApiError::BadRequest(format!(
            "conversationId and turnId are 1 to {MAX_ID_LEN} characters."
        )));
    }
    if body.step_index.is_some_and(|s| s > MAX_STEP_INDEX) {
        return Err(ApiError::BadRequest(format!(
            "stepIndex is at most {MAX_STEP_INDEX}."
        )));
    }
    let Some(log) = state.engine.step_log.clone() else {
        return Ok(HttpResponse::Ok().json(serde_json::json!({"steps": []})));
    };
    let target = CancelTarget {
        owner: actor.id,
        conversation_id: body.conversation_id,
        turn_id: body.turn_id,
        step_index: body.step_index,
    };
    let ended = log.cancel(&target).await?;
    let steps: Vec<serde_json::Value> = ended
        .iter()
        .map(|c| {
            serde_json::json!({
                "turnId": c.key.turn_id,
                "stepIndex": c.key.step_index,
                "outcome": c.outcome.as_str(),
            })
        })
        .collect();
    Ok(HttpResponse::Ok().json(serde_json::json!({ "steps": steps })))
}

/// The header that marks an answer given from a step's record or its run in progress, not
/// from a run of this request.
pub const STEP_REPLAY: &str = "dpas-step-replay";

/// The head of a step's NDJSON response.
fn ndjson(version: u8) -> actix_web::HttpResponseBuilder {
    let mut head = HttpResponse::Ok();
    head.insert_header((CONTENT_TYPE, "application/x-ndjson; charset=utf-8"))
        .insert_header((CACHE_CONTROL, "no-store"))
        .insert_header(("x-dpas-protocol-version", version.to_string()));
    head
}

/// Runs `run` in its own task and streams its lines.
async fn stream_run(run: StepRun, version: u8) -> HttpResponse {
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
    ndjson(version).streaming(body)
}
