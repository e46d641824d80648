//! HTTP error bodies: always `{"error":{"code","message"}}`, never a panic or an unplanned 500.

use actix_web::http::header::RETRY_AFTER;
use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError};
use dpas_protocol::{HostError, HostErrorCode};
use serde_json::json;

dpas_protocol::error_codes! {
    /// The HTTP layer's own codes (beside the shared [`HostErrorCode`] table and the
    /// capability codes): one row each for the text, the status and the default message.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum ApiCode {
        BadRequest = "BAD_REQUEST", 400, "The request is not what this endpoint accepts.";
        NotFound = "NOT_FOUND", 404, "Not found.";
        MethodNotAllowed = "METHOD_NOT_ALLOWED", 405, "This method is not allowed here.";
        ShuttingDown = "SHUTTING_DOWN", 503, "The server is shutting down; try again in a moment.";
        StepConflict = "STEP_CONFLICT", 409, "This step was already posted with a different request; start a new turn or step.";
        StepInterrupted = "STEP_INTERRUPTED", 503, "The server running this step stopped before it finished; what it did is not known.";
        InternalError = "INTERNAL_ERROR", 500, "The server could not complete the request.";
    }
}

impl ApiCode {
    /// The answer with this code and its default message.
    pub fn response(self) -> HttpResponse {
        HttpResponse::build(status(self.http_status()))
            .json(json!({"error": {"code": self.as_str(), "message": self.default_message()}}))
    }
}

fn status(code: u16) -> StatusCode {
    StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}

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
    /// The shared table's `RATE_LIMITED` (its status and message), with the seconds to wait
    /// in `Retry-After`.
    #[error("rate limited for {retry_after_secs}s")]
    RateLimited { retry_after_secs: u64 },
    /// 503 `SHUTTING_DOWN`: the server is draining and starts no new steps.
    #[error("shutting down")]
    ShuttingDown,
    /// 409 `STEP_CONFLICT`: the step's ids were posted before with another body.
    #[error("step conflict")]
    StepConflict,
    /// 503 `STEP_INTERRUPTED`: the replica running the step stopped before it finished.
    #[error("step interrupted")]
    StepInterrupted,
    /// A server-side failure; the cause goes to the log, the client gets a generic message.
    #[error("internal: {0}")]
    Internal(String),
}

impl From<dpas_engine::Refusal> for ApiError {
    fn from(refusal: dpas_engine::Refusal) -> Self {
        match refusal {
            dpas_engine::Refusal::Host(e) => Self::Host(e),
            dpas_engine::Refusal::Busy { retry_after_secs } => {
                Self::RateLimited { retry_after_secs }
            }
            dpas_engine::Refusal::ShuttingDown => Self::ShuttingDown,
            dpas_engine::Refusal::StepConflict => Self::StepConflict,
            dpas_engine::Refusal::StepInterrupted => Self::StepInterrupted,
        }
    }
}

impl ApiError {
    /// The row of [`ApiCode`] this answer takes its status (and default message) from, when
    /// it is not a shared host code.
    fn api_code(&self) -> Option<ApiCode> {
        match self {
            Self::Host(_) | Self::Conflict { .. } | Self::RateLimited { .. } => None,
            Self::BadRequest(_) => Some(ApiCode::BadRequest),
            Self::NotFound => Some(ApiCode::NotFound),
            Self::ShuttingDown => Some(ApiCode::ShuttingDown),
            Self::StepConflict => Some(ApiCode::StepConflict),
            Self::StepInterrupted => Some(ApiCode::StepInterrupted),
            Self::Internal(_) => Some(ApiCode::InternalError),
        }
    }

    fn code(&self) -> &'static str {
        match self {
            Self::Host(h) => h.code.as_str(),
            Self::Conflict { code, .. } => code,
            Self::RateLimited { .. } => HostErrorCode::RateLimited.as_str(),
            other => other.api_code().unwrap_or(ApiCode::InternalError).as_str(),
        }
    }

    fn message(&self) -> String {
        match self {
            Self::Host(h) => h.message.clone(),
            Self::BadRequest(m) | Self::Conflict { message: m, .. } => m.clone(),
            Self::RateLimited { .. } => HostErrorCode::RateLimited.default_message().to_owned(),
            other => other
                .api_code()
                .unwrap_or(ApiCode::InternalError)
                .default_message()
                .to_owned(),
        }
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        match self {
            Self::Host(h) => h
                .http_status()
                .map_or(StatusCode::INTERNAL_SERVER_ERROR, status),
            Self::Conflict { .. } => StatusCode::CONFLICT,
            Self::RateLimited { .. } => HostErrorCode::RateLimited
                .http_status()
                .map_or(StatusCode::TOO_MANY_REQUESTS, status),
            other => status(other.api_code().map_or(500, ApiCode::http_status)),
        }
    }

    fn error_response(&self) -> HttpResponse {
        if let Self::Internal(cause) = self {
            tracing::error!(%cause, "request failed");
        }
        dpas_engine::metrics::error(self.code());
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The layer's codes as the clients have always seen them: text, status, message.
    #[test]
    fn the_http_layers_own_codes_answer_as_before() {
        let cases = [
            (
                ApiError::BadRequest("Invalid decision body.".into()),
                400,
                "BAD_REQUEST",
                "Invalid decision body.",
            ),
            (ApiError::NotFound, 404, "NOT_FOUND", "Not found."),
            (
                ApiError::ShuttingDown,
                503,
                "SHUTTING_DOWN",
                "The server is shutting down; try again in a moment.",
            ),
            (
                ApiError::Internal("disk on fire".into()),
                500,
                "INTERNAL_ERROR",
                "The server could not complete the request.",
            ),
            (
                ApiError::Conflict {
                    code: "APPROVAL_STALE",
                    message: "Changed.".into(),
                },
                409,
                "APPROVAL_STALE",
                "Changed.",
            ),
        ];
        for (error, status, code, message) in cases {
            assert_eq!(error.status_code().as_u16(), status, "{error}");
            assert_eq!((error.code(), error.message().as_str()), (code, message));
        }
        let refused = ApiCode::MethodNotAllowed.response();
        assert_eq!(refused.status().as_u16(), 405);
        for code in ApiCode::ALL {
            assert_eq!(ApiCode::parse(code.as_str()), Some(code));
        }
    }
}
