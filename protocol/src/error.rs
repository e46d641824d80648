//! Host error codes: one exhaustive table of code ↔ HTTP status ↔ default message
//! (reference-behaviour K3, plus `UNAUTHENTICATED`, `REQUEST_TOO_LARGE` and the hardening
//! codes `REQUEST_TIMEOUT`, `RATE_LIMITED`, `UNSUPPORTED_MEDIA_TYPE`, `ORIGIN_REFUSED`,
//! `FORBIDDEN` and `APPROVAL_STALE`, and the identity codes `TOKEN_*` and `PROXY_UNTRUSTED`
//! of the server's `--auth jwt|proxy-header`), and the tool-result error payloads both halves must write with the same words.

use crate::json::error_object;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Transport and runtime conditions of the host (distinct from capability errors).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum HostErrorCode {
    ProtocolVersionMismatch,
    ProtocolDecodeError,
    CatalogTooLarge,
    CatalogCollision,
    ModelNotConfigured,
    Unauthenticated,
    RequestTooLarge,
    ModelTimeout,
    ModelError,
    RunLimitExceeded,
    TransportFailed,
    RequestTimeout,
    RateLimited,
    UnsupportedMediaType,
    OriginRefused,
    Forbidden,
    ApprovalStale,
    TokenMissing,
    TokenInvalid,
    TokenExpired,
    TokenNotYetValid,
    TokenAudience,
    TokenIssuer,
    TokenClaims,
    ProxyUntrusted,
}

impl HostErrorCode {
    /// Every code, in table order (used by tests and docs).
    pub const ALL: [HostErrorCode; 25] = [
        Self::ProtocolVersionMismatch,
        Self::ProtocolDecodeError,
        Self::CatalogTooLarge,
        Self::CatalogCollision,
        Self::ModelNotConfigured,
        Self::Unauthenticated,
        Self::RequestTooLarge,
        Self::ModelTimeout,
        Self::ModelError,
        Self::RunLimitExceeded,
        Self::TransportFailed,
        Self::RequestTimeout,
        Self::RateLimited,
        Self::UnsupportedMediaType,
        Self::OriginRefused,
        Self::Forbidden,
        Self::ApprovalStale,
        Self::TokenMissing,
        Self::TokenInvalid,
        Self::TokenExpired,
        Self::TokenNotYetValid,
        Self::TokenAudience,
        Self::TokenIssuer,
        Self::TokenClaims,
        Self::ProxyUntrusted,
    ];

    /// The code as it appears on the wire.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::ProtocolVersionMismatch => "PROTOCOL_VERSION_MISMATCH",
            Self::ProtocolDecodeError => "PROTOCOL_DECODE_ERROR",
            Self::CatalogTooLarge => "CATALOG_TOO_LARGE",
            Self::CatalogCollision => "CATALOG_COLLISION",
            Self::ModelNotConfigured => "MODEL_NOT_CONFIGURED",
            Self::Unauthenticated => "UNAUTHENTICATED",
            Self::RequestTooLarge => "REQUEST_TOO_LARGE",
            Self::ModelTimeout => "MODEL_TIMEOUT",
            Self::ModelError => "MODEL_ERROR",
            Self::RunLimitExceeded => "RUN_LIMIT_EXCEEDED",
            Self::TransportFailed => "TRANSPORT_FAILED",
            Self::RequestTimeout => "REQUEST_TIMEOUT",
            Self::RateLimited => "RATE_LIMITED",
            Self::UnsupportedMediaType => "UNSUPPORTED_MEDIA_TYPE",
            Self::OriginRefused => "ORIGIN_REFUSED",
            Self::Forbidden => "FORBIDDEN",
            Self::ApprovalStale => "APPROVAL_STALE",
            Self::TokenMissing => "TOKEN_MISSING",
            Self::TokenInvalid => "TOKEN_INVALID",
            Self::TokenExpired => "TOKEN_EXPIRED",
            Self::TokenNotYetValid => "TOKEN_NOT_YET_VALID",
            Self::TokenAudience => "TOKEN_AUDIENCE",
            Self::TokenIssuer => "TOKEN_ISSUER",
            Self::TokenClaims => "TOKEN_CLAIMS",
            Self::ProxyUntrusted => "PROXY_UNTRUSTED",
        }
    }

    /// Parses a wire code; `None` for codes this table does not know.
    pub fn parse(code: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.as_str() == code)
    }

    /// HTTP status when the error answers a request; `None` for frame-only codes, which
    /// travel inside a 200 stream as an `error` frame (or are raised by the browser).
    pub const fn http_status(self) -> Option<u16> {
        match self {
            Self::ProtocolVersionMismatch | Self::CatalogCollision | Self::ApprovalStale => {
                Some(409)
            }
            Self::RequestTimeout => Some(408),
            Self::RateLimited => Some(429),
            Self::UnsupportedMediaType => Some(415),
            Self::OriginRefused | Self::Forbidden => Some(403),
            Self::ProtocolDecodeError => Some(400),
            Self::CatalogTooLarge | Self::RequestTooLarge => Some(413),
            Self::ModelNotConfigured => Some(503),
            Self::Unauthenticated
            | Self::TokenMissing
            | Self::TokenInvalid
            | Self::TokenExpired
            | Self::TokenNotYetValid
            | Self::TokenAudience
            | Self::TokenIssuer
            | Self::TokenClaims
            | Self::ProxyUntrusted => Some(401),
            Self::ModelTimeout
            | Self::ModelError
            | Self::RunLimitExceeded
            | Self::TransportFailed => None,
        }
    }

    /// The message used when the situation supplies no more specific one. Codes whose
    /// message carries figures (`CATALOG_TOO_LARGE`, `CATALOG_COLLISION`, `MODEL_TIMEOUT`,
    /// `RUN_LIMIT_EXCEEDED`) have constructors on [`HostError`] that build the exact text.
    pub const fn default_message(self) -> &'static str {
        match self {
            Self::ProtocolVersionMismatch => {
                "The browser and server speak different host protocol versions. Reload the page."
            }
            Self::ProtocolDecodeError => "Malformed chat step request.",
            Self::CatalogTooLarge => "The catalog is over its size limit.",
            Self::CatalogCollision => "A capability is exposed through two paths.",
            Self::ModelNotConfigured => {
                "No model provider is configured. Set ANTHROPIC_API_KEY or OPENROUTER_API_KEY in .env and restart."
            }
            Self::Unauthenticated => "Sign in to continue.",
            Self::RequestTooLarge => "The request body is larger than this server accepts.",
            Self::ModelTimeout => "The model produced no output for 45s; the run was stopped.",
            Self::ModelError => "The model call failed.",
            Self::RunLimitExceeded => "A run limit was reached; the run was stopped.",
            Self::TransportFailed => "Could not reach the chat endpoint.",
            Self::RequestTimeout => "The request did not arrive in time; the connection is closed.",
            Self::RateLimited => "Too many requests; try again after the time in Retry-After.",
            Self::UnsupportedMediaType => "Request bodies must be application/json.",
            Self::OriginRefused => "Requests from this origin are refused.",
            Self::Forbidden => "Your role may not do this.",
            Self::ApprovalStale => {
                "What this approval would act on changed since it was requested; nothing was done. Ask again."
            }
            Self::TokenMissing => "Sign in to continue: the request carries no token.",
            Self::TokenInvalid => {
                "The token is malformed, or its signature or algorithm is not accepted."
            }
            Self::TokenExpired => "The token has expired. Sign in again.",
            Self::TokenNotYetValid => "The token is not valid yet.",
            Self::TokenAudience => "The token is meant for another audience.",
            Self::TokenIssuer => "The token comes from an issuer this server does not accept.",
            Self::TokenClaims => "The token lacks a claim this server needs, or has one of the wrong type.",
            Self::ProxyUntrusted => "Identity headers are accepted only from the configured proxy.",
        }
    }
}

impl std::fmt::Display for HostErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A typed host error: a code and a message that is safe to show to a client.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct HostError {
    pub code: HostErrorCode,
    pub message: String,
}

/// The plane named by a `CATALOG_TOO_LARGE` message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitPlane {
    Frontend,
    Domain,
    Total,
    Messages,
}

impl LimitPlane {
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Frontend => "frontend",
            Self::Domain => "domain",
            Self::Total => "total",
            Self::Messages => "messages",
        }
    }
}

impl HostError {
    pub fn new(code: HostErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }

    /// The error with its table message.
    pub fn of(code: HostErrorCode) -> Self {
        Self::new(code, code.default_message())
    }

    /// `CATALOG_TOO_LARGE` naming plane, count and limit (reference-behaviour E4).
    pub fn catalog_too_large(plane: LimitPlane, count: usize, limit: usize) -> Self {
        Self::new(
            HostErrorCode::CatalogTooLarge,
            format!(
                "The {} catalog has {count} entries, over the limit of {limit}. Scope the route to fewer capabilities, or switch the catalog to meta mode.",
                plane.as_str()
            ),
        )
    }

    /// v1 `CATALOG_COLLISION` naming the doubly exposed operations (reference-behaviour E3).
    pub fn catalog_collision<S: AsRef<str>>(ids: &[S]) -> Self {
        let joined = ids.iter().map(AsRef::as_ref).collect::<Vec<_>>().join(", ");
        Self::new(
            HostErrorCode::CatalogCollision,
            format!(
                "Domain operation(s) exposed through two paths: {joined}. A capability must be either a direct server tool or a contextual surface reference, never both."
            ),
        )
    }

    /// `MODEL_TIMEOUT` for an inactivity window of `seconds` (reference-behaviour F4).
    pub fn model_timeout(seconds: u64) -> Self {
        Self::new(
            HostErrorCode::ModelTimeout,
            format!("The model produced no output for {seconds}s; the run was stopped."),
        )
    }

    /// `RUN_LIMIT_EXCEEDED` with a message that says which limit.
    pub fn run_limit(message: impl Into<String>) -> Self {
        Self::new(HostErrorCode::RunLimitExceeded, message)
    }

    /// The HTTP status, for codes that answer requests.
    pub fn http_status(&self) -> Option<u16> {
        self.code.http_status()
    }

    /// The JSON error body of reference-behaviour K5: `{"error":{"code","message"}}`.
    pub fn to_body(&self) -> Value {
        error_object([
            ("code", self.code.as_str().into()),
            ("message", self.message.as_str().into()),
        ])
    }
}

/// The retry vocabulary of tool-result errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Retry {
    Yes,
    No,
    AfterRefresh,
}

impl Retry {
    /// The wire spelling (`yes`, `no`, `after-refresh`).
    pub fn as_str(self) -> &'static str {
        match self {
            Retry::Yes => "yes",
            Retry::No => "no",
            Retry::AfterRefresh => "after-refresh",
        }
    }
}

impl From<Retry> for Value {
    fn from(retry: Retry) -> Self {
        Value::from(retry.as_str())
    }
}

/// Tool-result error payloads (these are tool *results*, not frames; K3).
pub mod tool_results {
    use super::*;

    pub const TOOL_NOT_EXECUTED_MESSAGE: &str =
        "The run ended before this tool produced a result. Call it again.";
    pub const EXECUTION_FAILED_MESSAGE: &str =
        "The capability threw instead of returning a result.";

    /// `NO_SUCH_TOOL`: the model named a tool in neither plane (F4).
    pub fn no_such_tool(wire_name: &str) -> Value {
        error_object([
            ("code", "NO_SUCH_TOOL".into()),
            ("message", no_such_tool_message(wire_name).into()),
            ("retry", Retry::No.into()),
        ])
    }

    pub fn no_such_tool_message(wire_name: &str) -> String {
        format!(
            "There is no tool named \"{wire_name}\". The tools defined for this step are the complete set that exists right now — do not guess a name and do not retry this one. If none of them does what the user asked, say so plainly."
        )
    }

    /// `TOOL_NOT_EXECUTED`: a call the run never answered (F7, J7).
    pub fn tool_not_executed() -> Value {
        error_object([
            ("code", "TOOL_NOT_EXECUTED".into()),
            ("message", TOOL_NOT_EXECUTED_MESSAGE.into()),
            ("retry", Retry::Yes.into()),
        ])
    }

    /// `TOOL_FAILED`: a known server tool errored (F4); carries no retry key.
    pub fn tool_failed(sanitised_message: &str) -> Value {
        error_object([
            ("code", "TOOL_FAILED".into()),
            ("message", sanitised_message.into()),
        ])
    }

    /// `CAPABILITY_NOT_FOUND` from browser dispatch (J5).
    pub fn capability_not_found(wire_name: &str) -> Value {
        error_object([
            ("code", "CAPABILITY_NOT_FOUND".into()),
            (
                "message",
                format!("Tool {wire_name} is not present on the current surface.").into(),
            ),
            ("retry", Retry::AfterRefresh.into()),
        ])
    }

    /// `EXECUTION_FAILED`: a browser handler threw (J5).
    pub fn execution_failed() -> Value {
        error_object([
            ("code", "EXECUTION_FAILED".into()),
            ("message", EXECUTION_FAILED_MESSAGE.into()),
            ("retry", Retry::No.into()),
        ])
    }

    /// Whether a result is error-shaped: an object with `status:"error"` or with an `error`
    /// key at all (F4: JS `error !== undefined`, so `null` counts too).
    pub fn is_error_shaped(result: &Value) -> bool {
        match result.as_object() {
            Some(obj) => {
                obj.get("status").and_then(Value::as_str) == Some("error")
                    || obj.contains_key("error")
            }
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_spelling_is_its_serde_spelling() {
        for retry in [Retry::Yes, Retry::No, Retry::AfterRefresh] {
            assert_eq!(serde_json::to_value(retry).unwrap(), Value::from(retry));
        }
        assert_eq!(Value::from(Retry::AfterRefresh), "after-refresh");
    }

    #[test]
    fn tool_result_payloads_keep_their_key_order() {
        let text = serde_json::to_string(&tool_results::capability_not_found("view_x")).unwrap();
        assert_eq!(
            text,
            r#"{"error":{"code":"CAPABILITY_NOT_FOUND","message":"Tool view_x is not present on the current surface.","retry":"after-refresh"}}"#
        );
        let body = HostError::of(HostErrorCode::ModelTimeout).to_body();
        assert_eq!(body["error"]["code"], "MODEL_TIMEOUT");
    }
}
