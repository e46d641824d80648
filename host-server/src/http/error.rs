//! HTTP error bodies: always `{"error":{"code","message"}}`, never a panic or an unplanned 500.

use actix_web::http::header::RETRY_AFTER;
use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError};
use dpas_protocol::{HostError, HostErrorCode};
use serde_json::json;

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// A host error from the shared table (401, 413, 503, ...).
    #[error(transparent)]
    Host(#[from] HostError),
    /// The body is not what the endpoint accepts (malformed JSON included).
    #[error("{0}")]
    BadRequest(String),
    /// Unknown, or not this actor's (the two are indistinguishable).
    #[error("not found")]
    NotFound,
    #[error("{message}")]
    Conflict { code: &'static str, message: String },
    /// 429 `RATE_LIMITED`, with the seconds to wait in `Retry-After`.
    #[error("rate limited for {retry_after_secs}s")]
    RateLimited { retry_after_secs: u64 },
    /// The body is not `application/json` where only JSON is taken.
    #[error("unsupported media type")]
    UnsupportedMediaType,
    /// 503 `SHUTTING_DOWN`: the server is draining and starts no new steps.
    #[error("shutting down")]
    ShuttingDown,
    /// A server-side failure; the cause goes to the log, the client gets a generic message.
    #[error("internal: {0}")]
    Internal(String),
}

impl ApiError {
    fn code(&self) -> &'static str {
        match self {
            Self::Host(h) => h.code.as_str(),
            Self::BadRequest(_) => "BAD_REQUEST",
            Self::NotFound => "NOT_FOUND",
            Self::Conflict { code, .. } => code,
            Self::RateLimited { .. } => HostErrorCode::RateLimited.as_str(),
            Self::UnsupportedMediaType => HostErrorCode::UnsupportedMediaType.as_str(),
            Self::ShuttingDown => "SHUTTING_DOWN",
            Self::Internal(_) => "INTERNAL_ERROR",
        }
    }

    fn message(&self) -> String {
        match self {
            Self::Host(h) => h.message.clone(),
            Self::BadRequest(m) | Self::Conflict { message: m, .. } => m.clone(),
            Self::NotFound => "Not found.".to_owned(),
            Self::RateLimited { .. } => HostErrorCode::RateLimited.default_message().to_owned(),
            Self::UnsupportedMediaType => HostErrorCode::UnsupportedMediaType
                .default_message()
                .to_owned(),
            Self::ShuttingDown => "The server is shutting down; try again in a moment.".to_owned(),
            Self::Internal(_) => "The server could not complete the request.".to_owned(),
        }
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        match self {
            Self::Host(h) => h
                .http_status()
                .and_then(|s| StatusCode::from_u16(s).ok())
                .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            Self::BadRequest(_) => StatusCode::BAD_REQUEST,
            Self::NotFound => StatusCode::NOT_FOUND,
            Self::Conflict { .. } => StatusCode::CONFLICT,
            Self::RateLimited { .. } => StatusCode::TOO_MANY_REQUESTS,
            Self::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Self::ShuttingDown => StatusCode::SERVICE_UNAVAILABLE,
            Self::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn error_response(&self) -> HttpResponse {
        if let Self::Internal(cause) = self {
            tracing::error!(%cause, "request failed");
        }
        crate::telemetry::error(self.code());
        let mut response = HttpResponse::build(self.status_code());
        match self {
            Self::RateLimited { retry_after_secs } => {
                response.insert_header((RETRY_AFTER, retry_after_secs.to_string()));
            }
            // A body that did not arrive in time: answer, then drop the connection.
            Self::Host(h) if h.code == HostErrorCode::RequestTimeout => {
                response.force_close();
            }
            _ => {}
        }
        response.json(json!({"error": {"code": self.code(), "message": self.message()}}))
    }
}
