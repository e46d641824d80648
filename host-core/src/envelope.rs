//! The typed error envelope of the Agent Surface (agent-surface §3.12) and invocation results.
//!
//! Errors are agent-facing: a closed code enum, an agent-safe message, a retry hint and
//! optional details. A handler's own error text never reaches this envelope.

use crate::version::SurfaceVersion;
use dpas_protocol::json::object;
use dpas_protocol::json::{Map, Value};
use serde::{Deserialize, Serialize};

dpas_protocol::wire_enum! {
    /// The agent-facing capability error codes (a closed enum).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[serde(rename_all = "SCREAMING_SNAKE_CASE")]
    pub enum ErrorCode {
        CapabilityNotFound = "CAPABILITY_NOT_FOUND",
        CapabilityNotAvailable = "CAPABILITY_NOT_AVAILABLE",
        AmbiguousInstance = "AMBIGUOUS_INSTANCE",
        ComponentUnmounted = "COMPONENT_UNMOUNTED",
        StaleCapability = "STALE_CAPABILITY",
        InvocationConflict = "INVOCATION_CONFLICT",
        InvalidInput = "INVALID_INPUT",
        NotAuthenticated = "NOT_AUTHENTICATED",
        NotAuthorized = "NOT_AUTHORIZED",
        PreconditionFailed = "PRECONDITION_FAILED",
        ConfirmationRequired = "CONFIRMATION_REQUIRED",
        ConfirmationInvalid = "CONFIRMATION_INVALID",
        RateLimited = "RATE_LIMITED",
        Timeout = "TIMEOUT",
        Cancelled = "CANCELLED",
        ExecutionFailed = "EXECUTION_FAILED",
    }
}

impl ErrorCode {
    /// Whether a result with this code is cached as terminal by invocation dedupe.
    pub const fn is_terminal(self) -> bool {
        !matches!(
            self,
            Self::InvocationConflict | Self::ConfirmationRequired | Self::RateLimited
        )
    }
}

/// The retry vocabulary of capability errors: the protocol's one table of six.
pub use dpas_protocol::Retry;

/// Longest agent-facing message.
pub const MAX_MESSAGE_CHARS: usize = 300;

/// A capability error: `{code, message, retry, details?}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SurfaceError {
    pub code: ErrorCode,
    pub message: String,
    pub retry: Retry,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
}

/// `text`'s first [`MAX_MESSAGE_CHARS`] `char`s (all of it when shorter), cut in place.
pub(crate) fn capped(mut text: String) -> String {
    if let Some((end, _)) = text.char_indices().nth(MAX_MESSAGE_CHARS) {
        text.truncate(end);
    }
    text
}

impl SurfaceError {
    /// An error with a message capped at [`MAX_MESSAGE_CHARS`].
    pub fn new(code: ErrorCode, retry: Retry, message: impl Into<String>) -> Self {
        Self {
            code,
            message: capped(message.into()),
            retry,
            details: None,
        }
    }

    /// The same error with details attached.
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    /// The same error with another retry hint.
    pub fn with_retry(mut self, retry: Retry) -> Self {
        self.retry = retry;
        self
    }

    /// Hidden or nonexistent: the message never reveals which.
    pub fn not_found(capability_id: &str) -> Self {
        Self::new(
            ErrorCode::CapabilityNotFound,
            Retry::AfterRefresh,
            format!("{capability_id} is not on the current surface. Refresh the catalog before calling it."),
        )
    }

    /// The component that owned the capability is no longer mounted.
    pub fn unmounted(capability_id: &str) -> Self {
        Self::new(
            ErrorCode::ComponentUnmounted,
            Retry::AfterRefresh,
            format!("The component that owned {capability_id} is no longer mounted. Refresh the catalog before calling it."),
        )
        .with_details(object([("phase", "resolve".into())]))
    }

    /// Re-registered since the catalog was taken (`replaced`: by a registration that replaced
    /// the catalog's; otherwise the surface reloaded); `live_id` is the registration now.
    pub fn re_registered(capability_id: &str, replaced: bool, live_id: &str) -> Self {
        Self::new(
            ErrorCode::StaleCapability,
            Retry::AfterRefresh,
            format!("{capability_id} was re-registered since the catalog was taken. Refresh the catalog and call it again."),
        )
        .with_details(object([
            (
                "reason",
                if replaced { "registration-replaced" } else { "surface-reloaded" }.into(),
            ),
            ("liveRegistrationId", live_id.into()),
        ]))
    }

    /// Mounted more than once and no instance named: `instances` lists them.
    pub fn ambiguous(capability_id: &str, instances: Vec<Value>) -> Self {
        Self::new(
            ErrorCode::AmbiguousInstance,
            Retry::WithChanges,
            format!("{capability_id} is mounted more than once. Call it again with one of the listed instanceIds."),
        )
        .with_details(object([("instances", instances.into())]))
    }

    /// A guarded procedure offered on a surface version that is no longer current.
    pub fn screen_changed(capability_id: &str) -> Self {
        Self::new(
            ErrorCode::StaleCapability,
            Retry::AfterRefresh,
            format!("The screen changed since {capability_id} was offered. Refresh the catalog and call it again."),
        )
        .with_details(object([("reason", "surface-version-mismatch".into())]))
    }

    /// Registered but unavailable in the current view state.
    pub fn not_available(capability_id: &str, reason: &str) -> Self {
        Self::new(
            ErrorCode::CapabilityNotAvailable,
            Retry::AfterRefresh,
            format!("{capability_id} is not available right now: {reason}"),
        )
        .with_details(object([("reason", reason.into())]))
    }

    /// Input failed the schema; `issues` are `{path, message}` objects.
    pub fn invalid_input(capability_id: &str, issues: Vec<Value>) -> Self {
        Self::new(
            ErrorCode::InvalidInput,
            Retry::WithChanges,
            format!("The input does not match the input schema of {capability_id}. Fix the listed issues and call it again."),
        )
        .with_details(object([("issues", issues.into())]))
    }

    /// The agent supplied keys the UI binds and locks.
    pub fn locked_fields(capability_id: &str, fields: Vec<String>) -> Self {
        Self::new(
            ErrorCode::InvalidInput,
            Retry::WithChanges,
            format!(
                "{capability_id} takes {} from the current view; leave {} out of the input.",
                fields.join(", "),
                if fields.len() == 1 { "it" } else { "them" }
            ),
        )
        .with_details(object([("lockedFields", fields.into())]))
    }

    /// A precondition the author checks (also `binding-failed` for procedure bindings).
    pub fn precondition_failed(message: impl Into<String>, details: Option<Value>) -> Self {
        let error = Self::new(ErrorCode::PreconditionFailed, Retry::WithChanges, message);
        match details {
            Some(details) => error.with_details(details),
            None => error,
        }
    }

    /// The handler threw or rejected: the cause is never relayed.
    pub fn handler_threw() -> Self {
        Self::new(
            ErrorCode::ExecutionFailed,
            Retry::No,
            dpas_protocol::error::tool_results::EXECUTION_FAILED_MESSAGE,
        )
        .with_details(object([("reason", "handler-error".into())]))
    }

    /// The user declined a confirmation: a typed result, never a silent success.
    pub fn confirmation_denied(capability_id: &str) -> Self {
        Self::new(
            ErrorCode::ConfirmationInvalid,
            Retry::No,
            format!("The user declined to run {capability_id}. Do not call it again unless the user asks."),
        )
        .with_details(object([("reason", "denied".into())]))
    }

    /// Whether a tool value is the denial [`SurfaceError::confirmation_denied`] produces.
    pub fn is_confirmation_denial(value: &Value) -> bool {
        let error = &value["error"];
        error["code"] == ErrorCode::ConfirmationInvalid.as_str()
            && error["details"]["reason"] == "denied"
    }

    /// The wire form, `{code, message, retry, details?}`.
    pub fn to_value(&self) -> Value {
        let mut map = Map::new();
        map.insert("code".into(), Value::from(self.code.as_str()));
        map.insert("message".into(), Value::from(self.message.clone()));
        map.insert("retry".into(), Value::from(self.retry.as_str()));
        if let Some(details) = &self.details {
            map.insert("details".into(), details.clone());
        }
        Value::Object(map)
    }
}

/// The outcome half of an invocation result.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The handler returned, with its output when it has one.
    Ok(Option<Value>),
    Error(SurfaceError),
}

/// What `invoke` resolves to; never an exception.
#[derive(Debug, Clone, PartialEq)]
pub struct InvocationResult {
    pub invocation_id: String,
    pub capability_id: String,
    pub outcome: Outcome,
    /// The surface version when the invocation settled.
    pub surface_version: SurfaceVersion,
    /// The version moved while the invocation ran: the agent should re-discover.
    pub surface_changed: bool,
}

impl InvocationResult {
    pub fn is_ok(&self) -> bool {
        matches!(self.outcome, Outcome::Ok(_))
    }

    pub fn error(&self) -> Option<&SurfaceError> {
        match &self.outcome {
            Outcome::Error(error) => Some(error),
            Outcome::Ok(_) => None,
        }
    }

    /// The value a tool message carries (J5): the output, `{done:true}` when there is none,
    /// or `{error:<envelope>}`.
    pub fn tool_value(&self) -> Value {
        match &self.outcome {
            Outcome::Ok(Some(output)) => output.clone(),
            Outcome::Ok(None) => object([("done", true.into())]),
            Outcome::Error(error) => object([("error", error.to_value())]),
        }
    }

    /// The registry's result shape: `{status:"ok"|"error", invocationId, capabilityId, …}`.
    pub fn to_value(&self) -> Value {
        let mut map = Map::new();
        let status = if self.is_ok() { "ok" } else { "error" };
        map.insert("status".into(), Value::from(status));
        map.insert(
            "invocationId".into(),
            Value::from(self.invocation_id.clone()),
        );
        map.insert(
            "capabilityId".into(),
            Value::from(self.capability_id.clone()),
        );
        match &self.outcome {
            Outcome::Ok(Some(output)) => {
                map.insert("output".into(), output.clone());
            }
            Outcome::Ok(None) => {}
            Outcome::Error(error) => {
                map.insert("error".into(), error.to_value());
            }
        }
        map.insert("surfaceVersion".into(), Value::from(self.surface_version));
        if self.surface_changed {
            map.insert("surfaceChanged".into(), Value::Bool(true));
        }
        Value::Object(map)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dpas_protocol::test_json as json;

    #[test]
    fn error_codes_are_their_serde_spelling() {
        for code in ErrorCode::ALL {
            assert_eq!(
                dpas_protocol::test_support::to_value(code).unwrap(),
                code.as_str()
            );
            assert_eq!(ErrorCode::parse(code.as_str()), Some(code));
        }
        assert_eq!(ErrorCode::ALL.len(), 16);
        assert_eq!(ErrorCode::StaleCapability.as_str(), "STALE_CAPABILITY");
        assert_eq!(ErrorCode::parse("stale_capability"), None);
    }

    #[test]
    fn terminal_codes_match_the_error_matrix() {
        assert!(!ErrorCode::ConfirmationRequired.is_terminal());
        assert!(!ErrorCode::RateLimited.is_terminal());
        assert!(!ErrorCode::InvocationConflict.is_terminal());
        assert!(ErrorCode::ExecutionFailed.is_terminal());
        assert!(ErrorCode::CapabilityNotFound.is_terminal());
        assert_eq!(
            dpas_protocol::test_support::to_value(ErrorCode::CapabilityNotAvailable).unwrap(),
            "CAPABILITY_NOT_AVAILABLE"
        );
    }

    #[test]
    fn envelope_serialises_losslessly() {
        let error = SurfaceError::not_available("view:a.b", "Open a dialog first");
        let value = error.to_value();
        assert_eq!(value["code"], "CAPABILITY_NOT_AVAILABLE");
        assert_eq!(value["retry"], "after-refresh");
        assert_eq!(value["details"], json!({ "reason": "Open a dialog first" }));
        let back: SurfaceError = dpas_protocol::test_support::from_value(value).unwrap();
        assert_eq!(back, error);
    }

    #[test]
    fn thrown_handlers_use_the_reference_wording() {
        let value = SurfaceError::handler_threw().to_value();
        assert_eq!(
            value["message"],
            "The capability threw instead of returning a result."
        );
        assert_eq!(value["retry"], "no");
        assert_eq!(
            json!({ "error": { "code": value["code"], "message": value["message"], "retry": value["retry"] } }),
            dpas_protocol::error::tool_results::execution_failed()
        );
    }

    #[test]
    fn messages_are_capped() {
        let error = SurfaceError::new(ErrorCode::Timeout, Retry::No, "x".repeat(400));
        assert_eq!(error.message.chars().count(), MAX_MESSAGE_CHARS);
    }

    #[test]
    fn results_project_to_tool_values() {
        let mut result = InvocationResult {
            invocation_id: "tc_1".into(),
            capability_id: "view:a.b".into(),
            outcome: Outcome::Ok(None),
            surface_version: SurfaceVersion(3),
            surface_changed: false,
        };
        assert_eq!(result.tool_value(), json!({ "done": true }));
        assert_eq!(
            result.to_value(),
            json!({ "status": "ok", "invocationId": "tc_1", "capabilityId": "view:a.b", "surfaceVersion": "3" })
        );
        result.outcome = Outcome::Ok(Some(json!([1])));
        assert_eq!(result.tool_value(), json!([1]));
        result.outcome = Outcome::Error(SurfaceError::not_found("view:a.b"));
        result.surface_changed = true;
        assert_eq!(result.tool_value()["error"]["code"], "CAPABILITY_NOT_FOUND");
        assert_eq!(result.to_value()["surfaceChanged"], true);
        assert_eq!(result.to_value()["status"], "error");
    }
}
