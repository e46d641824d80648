//! How every step door opens: the actor and its step slot before the body, the body, the
//! door's decoding, the engine's checks ([`open_door`]).

use actix_web::web::Payload;
use actix_web::HttpRequest;
use dpas_engine::{ChatConfig, StepPermit, StepRun};
use dpas_governance::Actor;
use dpas_protocol::request::decode_request_value;
use dpas_protocol::{ChatStepRequest, HostError, HostErrorCode};
use serde_json::Value;

use crate::app::AppState;
use crate::http::error::ApiError;
use crate::http::{actor_of, read_limited, require_json};

/// What a step door takes as its body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyKind {
    /// Whatever the decoder reads (the NDJSON door decodes the contract's bytes itself).
    Any,
    /// `application/json` only (415 otherwise), checked before the body is read.
    Json,
}

/// A body that is not what the door takes: 400 `PROTOCOL_DECODE_ERROR`.
pub fn malformed() -> ApiError {
    ApiError::Host(HostError::of(HostErrorCode::ProtocolDecodeError))
}

/// A step request as a door has read it: who asks, their step slot, the decoded request and
/// what the door keeps for its encoder.
pub(crate) struct Opened<T> {
    pub(crate) actor: Actor,
    pub(crate) permit: StepPermit,
    pub(crate) request: ChatStepRequest,
    pub(crate) keep: T,
}

/// The start of every step door: the actor (401) and the actor's concurrent steps (429)
/// before the body, the body's kind (415), the body under the cap and the deadline (413/408)
/// and the door's `decode` into a step request (plus what its encoder keeps).
pub(crate) async fn open<T>(
    req: &HttpRequest,
    payload: Payload,
    state: &AppState,
    kind: BodyKind,
    decode: impl FnOnce(&[u8]) -> Result<(ChatStepRequest, T), ApiError>,
) -> Result<Opened<T>, ApiError> {
    // Nobody without a session gets their body read, let alone parsed.
    let actor = actor_of(req).await?;
    let permit = state.engine.steps.admit(&actor.id)?;
    if kind == BodyKind::Json {
        require_json(req)?;
    }
    let bytes = read_limited(req, payload, state.config.body_limit).await?;
    let (request, keep) = decode(&bytes)?;
    Ok(Opened {
        actor,
        permit,
        request,
        keep,
    })
}

/// [`open`], then the engine's checks: the run holds the step permit; nothing has streamed
/// yet.
pub async fn open_door<T>(
    req: &HttpRequest,
    payload: Payload,
    state: &AppState,
    chat: &ChatConfig,
    kind: BodyKind,
    decode: impl FnOnce(&[u8]) -> Result<(ChatStepRequest, T), ApiError>,
) -> Result<(StepRun, T), ApiError> {
    let opened = open(req, payload, state, kind, decode).await?;
    let run = state
        .engine
        .prepare(chat, opened.actor, opened.request, Some(opened.permit))?;
    Ok((run, opened.keep))
}

/// A JSON door's decoding: the body as JSON, the door's `translate` into a v2 step request
/// (plus what its encoder keeps), then the contract's own decoding and checks.
pub fn translated<T>(
    body: &[u8],
    translate: impl FnOnce(&Value) -> Result<(Value, T), ApiError>,
) -> Result<(ChatStepRequest, T), ApiError> {
    let body: Value = serde_json::from_slice(body).map_err(|_| malformed())?;
    let (request, keep) = translate(&body)?;
    Ok((decode_request_value(request)?, keep))
}
