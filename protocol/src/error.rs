//! Host error codes: one exhaustive table of code ↔ HTTP status ↔ default message
//! (reference-behaviour K3, plus `UNAUTHENTICATED`, `REQUEST_TOO_LARGE` and the hardening
//! codes `REQUEST_TIMEOUT`, `RATE_LIMITED`, `UNSUPPORTED_MEDIA_TYPE`, `ORIGIN_REFUSED`,
//! `FORBIDDEN` and `APPROVAL_STALE`, and the identity codes `TOKEN_*` and `PROXY_UNTRUSTED`
//! of the server's `--auth jwt|proxy-header`, and the browser's `TURN_IN_PROGRESS`), the retry
//! vocabulary, and the tool-result error payloads both halves must write with the same words.

use crate::json::error_object;
use crate::json::Value;
use serde::{Deserialize, Serialize};

crate::error_codes! {
    /// Transport and runtime conditions of the host (distinct from capability errors). A
    /// status of `None` marks a frame-only code: it travels inside a 200 stream as an `error`
    /// frame, or is raised by the browser. Codes whose message carries figures
    /// (`CATALOG_TOO_LARGE`, `CATALOG_COLLISION`, `MODEL_TIMEOUT`, `RUN_LIMIT_EXCEEDED`) have
    /// constructors on [`HostError`] that build the exact text.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[serde(rename_all = "SCREAMING_SNAKE_CASE")]
    pub enum HostErrorCode: Option<u16> {
        ProtocolVersionMismatch = "PROTOCOL_VERSION_MISMATCH", Some(409),
            "The browser and server speak different host protocol versions. Reload the page.";
        ProtocolDecodeError = "PROTOCOL_DECODE_ERROR", Some(400), "Malformed chat step request.";
        CatalogTooLarge = "CATALOG_TOO_LARGE", Some(413), "The catalog is over its size limit.";
        CatalogCollision = "CATALOG_COLLISION", Some(409),
            "A capability is exposed through two paths.";
        ModelNotConfigured = "MODEL_NOT_CONFIGURED", Some(503),
            "No model provider is configured. Set ANTHROPIC_API_KEY or OPENROUTER_API_KEY in .env and restart.";
        Unauthenticated = "UNAUTHENTICATED", Some(401), "Sign in to continue.";
        RequestTooLarge = "REQUEST_TOO_LARGE", Some(413),
            "The request body is larger than this server accepts.";
        ModelTimeout = "MODEL_TIMEOUT", None,
            "The model produced no output for 45s; the run was stopped.";
        ModelError = "MODEL_ERROR", None, "The model call failed.";
        RunLimitExceeded = "RUN_LIMIT_EXCEEDED", None,
            "A run limit was reached; the run was stopped.";
        TransportFailed = "TRANSPORT_FAILED", None, "Could not reach the chat endpoint.";
        RequestTimeout = "REQUEST_TIMEOUT", Some(408),
            "The request did not arrive in time; the connection is closed.";
        RateLimited = "RATE_LIMITED", Some(429),
            "Too many requests; try again after the time in Retry-After.";
        UnsupportedMediaType = "UNSUPPORTED_MEDIA_TYPE", Some(415),
            "Request bodies must be application/json.";
        OriginRefused = "ORIGIN_REFUSED", Some(403), "Requests from this origin are refused.";
        Forbidden = "FORBIDDEN", Some(403), "Your role may not do this.";
        ApprovalStale = "APPROVAL_STALE", Some(409),
            "What this approval would act on changed since it was requested; nothing was done. Ask again.";
        TokenMissing = "TOKEN_MISSING", Some(401),
            "Sign in to continue: the request carries no token.";
        TokenInvalid = "TOKEN_INVALID", Some(401),
            "The token is malformed, or its signature or algorithm is not accepted.";
        TokenExpired = "TOKEN_EXPIRED", Some(401), "The token has expired. Sign in again.";
        TokenNotYetValid = "TOKEN_NOT_YET_VALID", Some(401), "The token is not valid yet.";
        TokenAudience = "TOKEN_AUDIENCE", Some(401), "The token is meant for another audience.";
        TokenIssuer = "TOKEN_ISSUER", Some(401),
            "The token comes from an issuer this server does not accept.";
        TokenClaims = "TOKEN_CLAIMS", Some(401),
            "The token lacks a claim this server needs, or has one of the wrong type.";
        ProxyUntrusted = "PROXY_UNTRUSTED", Some(401),
            "Identity headers are accepted only from the configured proxy.";
        TurnInProgress = "TURN_IN_PROGRESS", None,
            "A turn is already running in this conversation.";
    }
}

/// A typed host error: a code and a message that is safe to show to a client.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct HostError {
    pub code: HostErrorCode,
    pub message: String,
}

crate::wire_enum! {
    /// The plane named by a `CATALOG_TOO_LARGE` message.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum LimitPlane {
        Frontend = "frontend",
        Domain = "domain",
        Total = "total",
        Messages = "messages",
    }
}

impl HostError {
    pub fn new(code: HostErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }

    /// The error with its table message. Always inlined: with a constant code the browser
    /// build keeps that code's message only, not the whole table's text (+0.5 KB gzip).
    #[inline(always)]
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

crate::wire_enum! {
    /// The retry vocabulary of error results: the tool-result errors both halves write
    /// (`yes`, `no`, `after-refresh`) and the browser's capability errors (all six).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[serde(rename_all = "kebab-case")]
    pub enum Retry {
        No = "no",
        Yes = "yes",
        AfterRefresh = "after-refresh",
        AfterDelay = "after-delay",
        WithConfirmation = "with-confirmation",
        WithChanges = "with-changes",
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

    /// The serde derive and the table spell every value alike, and `parse` inverts `as_str`.
    macro_rules! assert_table {
        ($($ty:ty),+) => {$(
            for v in <$ty>::ALL {
                let text = v.as_str();
                assert_eq!(crate::test_support::to_value(v).unwrap(), text, "{}", stringify!($ty));
                assert_eq!(crate::test_support::from_value::<$ty>(text.into()).unwrap(), v);
                assert_eq!(<$ty>::parse(text), Some(v));
            }
            assert_eq!(<$ty>::parse("no such value"), None);
        )+};
    }

    #[test]
    fn every_table_matches_serde() {
        use crate::{CatalogMode, Confirmation, Executor, Lane, Plane, Role, TruncationReason};
        assert_table!(
            HostErrorCode,
            Retry,
            Lane,
            Executor,
            Role,
            Plane,
            Confirmation
        );
        assert_table!(CatalogMode, TruncationReason);
    }

    #[test]
    fn retry_spelling_is_its_serde_spelling() {
        assert_eq!(Value::from(Retry::AfterRefresh), "after-refresh");
        let texts = Retry::ALL.map(Retry::as_str);
        assert_eq!(
            texts,
            [
                "no",
                "yes",
                "after-refresh",
                "after-delay",
                "with-confirmation",
                "with-changes"
            ]
        );
    }

    /// The wire texts, statuses and frame-only codes as the contract gives them (the table
    /// in docs/protocol.md).
    #[test]
    fn host_codes_keep_their_text_and_status() {
        use HostErrorCode as C;
        let expected = [
            (
                C::ProtocolVersionMismatch,
                "PROTOCOL_VERSION_MISMATCH",
                Some(409),
            ),
            (C::ProtocolDecodeError, "PROTOCOL_DECODE_ERROR", Some(400)),
            (C::CatalogTooLarge, "CATALOG_TOO_LARGE", Some(413)),
            (C::CatalogCollision, "CATALOG_COLLISION", Some(409)),
            (C::ModelNotConfigured, "MODEL_NOT_CONFIGURED", Some(503)),
            (C::Unauthenticated, "UNAUTHENTICATED", Some(401)),
            (C::RequestTooLarge, "REQUEST_TOO_LARGE", Some(413)),
            (C::ModelTimeout, "MODEL_TIMEOUT", None),
            (C::ModelError, "MODEL_ERROR", None),
            (C::RunLimitExceeded, "RUN_LIMIT_EXCEEDED", None),
            (C::TransportFailed, "TRANSPORT_FAILED", None),
            (C::RequestTimeout, "REQUEST_TIMEOUT", Some(408)),
            (C::RateLimited, "RATE_LIMITED", Some(429)),
            (C::UnsupportedMediaType, "UNSUPPORTED_MEDIA_TYPE", Some(415)),
            (C::OriginRefused, "ORIGIN_REFUSED", Some(403)),
            (C::Forbidden, "FORBIDDEN", Some(403)),
            (C::ApprovalStale, "APPROVAL_STALE", Some(409)),
            (C::TokenMissing, "TOKEN_MISSING", Some(401)),
            (C::TokenInvalid, "TOKEN_INVALID", Some(401)),
            (C::TokenExpired, "TOKEN_EXPIRED", Some(401)),
            (C::TokenNotYetValid, "TOKEN_NOT_YET_VALID", Some(401)),
            (C::TokenAudience, "TOKEN_AUDIENCE", Some(401)),
            (C::TokenIssuer, "TOKEN_ISSUER", Some(401)),
            (C::TokenClaims, "TOKEN_CLAIMS", Some(401)),
            (C::ProxyUntrusted, "PROXY_UNTRUSTED", Some(401)),
            (C::TurnInProgress, "TURN_IN_PROGRESS", None),
        ];
        assert_eq!(C::ALL.len(), expected.len());
        for (code, text, status) in expected {
            assert_eq!((code.as_str(), code.http_status()), (text, status));
        }
        assert_eq!(
            C::ModelTimeout.default_message(),
            "The model produced no output for 45s; the run was stopped."
        );
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
