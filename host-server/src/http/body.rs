//! Request bodies read under a cap and a deadline: the declared length is checked before
//! reading and the running total while reading, so an oversized body is refused without being
//! buffered whole; a body that has not arrived whole within the server's request timeout is
//! 408 `REQUEST_TIMEOUT` and its connection is closed (a trickled upload holds nothing for long).

use actix_web::http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use actix_web::web::{self, Bytes, BytesMut, Payload};
use actix_web::HttpRequest;
use dpas_protocol::{HostError, HostErrorCode};
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
        Err(ApiError::UnsupportedMediaType)
    }
}

/// Reads at most `limit` bytes of body within the request timeout; 413 `REQUEST_TOO_LARGE`
/// beyond the cap, 408 `REQUEST_TIMEOUT` past the deadline.
pub async fn read_limited(
    req: &HttpRequest,
    payload: Payload,
    limit: usize,
) -> Result<Bytes, ApiError> {
    let deadline = req.app_data::<web::Data<AppState>>().map_or(
        std::time::Duration::from_secs(DEFAULT_REQUEST_TIMEOUT_SECS),
        |s| s.config.request_timeout,
    );
    tokio::time::timeout(deadline, read_capped(req, payload, limit))
        .await
        .unwrap_or_else(|_| Err(ApiError::Host(HostError::of(HostErrorCode::RequestTimeout))))
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

/// Parses a JSON body; malformed JSON is a typed 400.
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    serde_json::from_slice(bytes)
        .map_err(|e| ApiError::BadRequest(format!("Malformed JSON body: {e}.")))
}

/// Reads and parses a JSON body under the cap.
pub async fn read_json<T: DeserializeOwned>(
    req: &HttpRequest,
    payload: Payload,
    limit: usize,
) -> Result<T, ApiError> {
    let bytes = read_limited(req, payload, limit).await?;
    parse_json(&bytes)
}
