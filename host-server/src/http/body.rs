//! Request bodies read under a cap and a deadline: the declared length is checked before
//! reading and the running total while reading, so an oversized body is refused without being
//! buffered whole; a body that has not arrived whole within the server's request timeout is
//! 408 `REQUEST_TIMEOUT` and its connection is closed (a trickled upload holds nothing for long).
//!
//! The small JSON endpoints (sign-in, approval decisions) read theirs with actix's `web::Json`
//! under a per-resource [`json_config`]; `/agent/chat`, `/rpc` and `/mcp` read raw bytes with
//! [`read_limited`] because their empty-body and malformed-body answers are contractual.

use actix_web::error::JsonPayloadError;
use actix_web::http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use actix_web::web::{self, Bytes, BytesMut, Payload};
use actix_web::{FromRequest, HttpRequest};
use dpas_protocol::{HostError, HostErrorCode};
use std::fmt::Display;

use futures_util::StreamExt;
use serde::de::DeserializeOwned;

use super::error::ApiError;
use crate::app::AppState;
use crate::config::DEFAULT_REQUEST_TIMEOUT_SECS;

fn too_large() -> ApiError {
    ApiError::Host(HostError::of(HostErrorCode::RequestTooLarge))
}

/// 415 `UNSUPPORTED_MEDIA_TYPE` unless the request declares `application/json` (any
/// parameters, such as a charset, allowed).
pub fn require_json(req: &HttpRequest) -> Result<(), ApiError> {
    let json = req
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|essence| essence.trim().eq_ignore_ascii_case("application/json"));
    if json {
        Ok(())
    } else {
        Err(ApiError::Host(HostError::of(
            HostErrorCode::UnsupportedMediaType,
        )))
    }
}

/// Reads at most `limit` bytes of body within the request timeout; 413 `REQUEST_TOO_LARGE`
/// beyond the cap, 408 `REQUEST_TIMEOUT` past the deadline.
pub async fn read_limited(
    req: &HttpRequest,
    payload: Payload,
    limit: usize,
) -> Result<Bytes, ApiError> {
    within_deadline(req, read_capped(req, payload, limit)).await
}

/// `body` unless the server's request timeout passes first (408 `REQUEST_TIMEOUT`).
async fn within_deadline<T, E: From<ApiError>>(
    req: &HttpRequest,
    body: impl std::future::Future<Output = Result<T, E>>,
) -> Result<T, E> {
    let deadline = req.app_data::<web::Data<AppState>>().map_or(
        std::time::Duration::from_secs(DEFAULT_REQUEST_TIMEOUT_SECS),
        |s| s.config.request_timeout,
    );
    tokio::time::timeout(deadline, body)
        .await
        .unwrap_or_else(
            |_| Err(ApiError::Host(HostError::of(HostErrorCode::RequestTimeout)).into()),
        )
}

async fn read_capped(
    req: &HttpRequest,
    mut payload: Payload,
    limit: usize,
) -> Result<Bytes, ApiError> {
    if let Some(declared) = req.headers().get(CONTENT_LENGTH) {
        let declared = declared
            .to_str()
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok());
        match declared {
            Some(n) if n > limit as u64 => return Err(too_large()),
            Some(_) => {}
            None => {
                return Err(ApiError::BadRequest(
                    "Invalid Content-Length header.".to_owned(),
                ))
            }
        }
    }
    let mut buf = BytesMut::new();
    while let Some(chunk) = payload.next().await {
        let chunk = chunk
            .map_err(|e| ApiError::BadRequest(format!("Could not read the request body: {e}")))?;
        // The cap holds at every step: nothing past `limit` is ever kept.
        if buf.len() + chunk.len() > limit {
            return Err(too_large());
        }
        buf.extend_from_slice(&chunk);
    }
    Ok(buf.freeze())
}

/// A `web::Json` failure as the contract answers it: 413 `REQUEST_TOO_LARGE` past the cap,
/// otherwise 400 `BAD_REQUEST`, with `bad_body(cause)` as the message of a body that does not
/// parse.
fn json_error(err: JsonPayloadError, bad_body: &dyn Fn(&dyn Display) -> String) -> ApiError {
    match err {
        JsonPayloadError::OverflowKnownLength { .. } | JsonPayloadError::Overflow { .. } => {
            too_large()
        }
        JsonPayloadError::Deserialize(e) => ApiError::BadRequest(bad_body(&e)),
        JsonPayloadError::Payload(e) => {
            ApiError::BadRequest(format!("Could not read the request body: {e}"))
        }
        // Not reached with any `Content-Type` accepted; refused as `harden` would.
        JsonPayloadError::ContentType => {
            ApiError::Host(HostError::of(HostErrorCode::UnsupportedMediaType))
        }
        other => ApiError::Internal(other.to_string()),
    }
}

fn malformed(cause: &dyn Display) -> String {
    format!("Malformed JSON body: {cause}.")
}

/// The `web::JsonConfig` of a small JSON endpoint: at most `limit` bytes (413
/// `REQUEST_TOO_LARGE`, by the declared length before reading and by the running total while
/// reading), any `Content-Type` (the `harden` middleware has already refused a body that is
/// not `application/json`), and a body that does not parse is 400 `BAD_REQUEST` with
/// `bad_body(cause)` as its message (`None`: "Malformed JSON body: <cause>.").
pub fn json_config(limit: usize, bad_body: Option<fn(&dyn Display) -> String>) -> web::JsonConfig {
    let bad_body = bad_body.unwrap_or(malformed);
    web::JsonConfig::default()
        .limit(limit)
        .content_type_required(false)
        .error_handler(move |err, _| json_error(err, &bad_body).into())
}

/// Reads the body with `web::Json` under the resource's [`json_config`], within the request
/// timeout. Called by the handler (not taken as an extractor) so that what it checks first
/// (the session, the sign-in rate limit, the approval's owner) is still checked before any
/// body is read.
pub async fn json_body<T: DeserializeOwned>(
    req: &HttpRequest,
    payload: Payload,
) -> actix_web::Result<T> {
    let mut payload = payload.into_inner();
    within_deadline(req, web::Json::<T>::from_request(req, &mut payload))
        .await
        .map(web::Json::into_inner)
}

/// Reads and parses a JSON body of at most `limit` bytes within the request timeout, for an
/// embedder's route without a [`json_config`]; the errors are those of [`json_config`]`(limit,
/// None)`.
pub async fn read_json<T: DeserializeOwned>(
    req: &HttpRequest,
    payload: Payload,
    limit: usize,
) -> Result<T, ApiError> {
    let mut payload = payload.into_inner();
    let body = web::JsonBody::<T>::new(req, &mut payload, None, false).limit(limit);
    within_deadline(req, async {
        body.await.map_err(|e| json_error(e, &malformed))
    })
    .await
}
