//! Capability-level errors (the governed runtime's own codes) and their model-visible shapes.

use serde_json::{json, Value};

/// Stable capability error codes; they may be added to, never repurposed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CapabilityErrorCode {
    CapabilityNotFound,
    InputInvalid,
    Unauthenticated,
    Forbidden,
    PolicyDenied,
    PolicyFailed,
    ApprovalNotFound,
    ApprovalPending,
    ApprovalRejected,
    ApprovalExpired,
    ApprovalConsumed,
    ApprovalSelfApproval,
    ApprovalInputMismatch,
    ApprovalUnserializableInput,
    ApprovalResumeMismatch,
    ApprovalCancelled,
    ApprovalStale,
    ApprovalInterrupted,
    ExecutionFailed,
    OutputInvalid,
    Timeout,
    Cancelled,
    InternalError,
}

impl CapabilityErrorCode {
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::CapabilityNotFound => "CAPABILITY_NOT_FOUND",
            Self::InputInvalid => "INPUT_INVALID",
            Self::Unauthenticated => "UNAUTHENTICATED",
            Self::Forbidden => "FORBIDDEN",
            Self::PolicyDenied => "POLICY_DENIED",
            Self::PolicyFailed => "POLICY_FAILED",
            Self::ApprovalNotFound => "APPROVAL_NOT_FOUND",
            Self::ApprovalPending => "APPROVAL_PENDING",
            Self::ApprovalRejected => "APPROVAL_REJECTED",
            Self::ApprovalExpired => "APPROVAL_EXPIRED",
            Self::ApprovalConsumed => "APPROVAL_CONSUMED",
            Self::ApprovalSelfApproval => "APPROVAL_SELF_APPROVAL",
            Self::ApprovalInputMismatch => "APPROVAL_INPUT_MISMATCH",
            Self::ApprovalUnserializableInput => "APPROVAL_UNSERIALIZABLE_INPUT",
            Self::ApprovalResumeMismatch => "APPROVAL_RESUME_MISMATCH",
            Self::ApprovalCancelled => "APPROVAL_CANCELLED",
            Self::ApprovalStale => "APPROVAL_STALE",
            Self::ApprovalInterrupted => "APPROVAL_INTERRUPTED",
            Self::ExecutionFailed => "EXECUTION_FAILED",
            Self::OutputInvalid => "OUTPUT_INVALID",
            Self::Timeout => "TIMEOUT",
            Self::Cancelled => "CANCELLED",
            Self::InternalError => "INTERNAL_ERROR",
        }
    }

    /// Whether the code and its message may reach a model or a client as they are.
    pub const fn exposed(self) -> bool {
        !matches!(
            self,
            Self::PolicyFailed
                | Self::ApprovalInputMismatch
                | Self::ApprovalUnserializableInput
                | Self::OutputInvalid
                | Self::InternalError
        )
    }

    pub const fn retryable(self) -> bool {
        matches!(self, Self::ApprovalPending | Self::Timeout)
    }

    pub const fn default_message(self) -> &'static str {
        match self {
            Self::CapabilityNotFound => "Capability not found.",
            Self::InputInvalid => "Input validation failed.",
            Self::Unauthenticated => "Authentication is required.",
            Self::Forbidden => "The operation is not permitted.",
            Self::PolicyDenied => "The operation was denied by policy.",
            Self::ApprovalNotFound | Self::ApprovalResumeMismatch => "Approval not found.",
            Self::ApprovalPending => "The approval decision is still pending.",
            Self::ApprovalRejected => "The approval was rejected.",
            Self::ApprovalExpired => "The approval has expired.",
            Self::ApprovalConsumed => "The approval has already been used.",
            Self::ApprovalSelfApproval => "The requester cannot approve their own request.",
            Self::ApprovalCancelled => "The approval was cancelled (the demo ledger was reset); nothing was done.",
            // The one wording, from the host error table.
            Self::ApprovalStale => dpas_protocol::HostErrorCode::ApprovalStale.default_message(),
            Self::ApprovalInterrupted => {
                "The server stopped while this approved action was running, so it may or may not have happened; check before asking again."
            }
            Self::Timeout => "The operation timed out.",
            Self::Cancelled => "The operation was cancelled.",
            Self::PolicyFailed
            | Self::ApprovalInputMismatch
            | Self::ApprovalUnserializableInput
            | Self::ExecutionFailed
            | Self::OutputInvalid
            | Self::InternalError => "The operation failed.",
        }
    }
}

impl std::fmt::Display for CapabilityErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A governed failure: a code, a public message and optional public details.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct CapabilityError {
    pub code: CapabilityErrorCode,
    pub message: String,
    pub retryable: bool,
    /// Only `INPUT_INVALID` carries details (issue paths and messages, never values).
    pub details: Option<Value>,
}

impl CapabilityError {
    pub fn of(code: CapabilityErrorCode) -> Self {
        Self {
            code,
            message: code.default_message().to_owned(),
            retryable: code.retryable(),
            details: None,
        }
    }

    pub fn with_message(code: CapabilityErrorCode, message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            ..Self::of(code)
        }
    }

    pub fn not_found() -> Self {
        Self::of(CapabilityErrorCode::CapabilityNotFound)
    }

    /// `INPUT_INVALID` with `details.issues = [{path, message}]`.
    pub fn input_invalid(issues: Vec<InputIssue>) -> Self {
        let issues: Vec<Value> = issues
            .into_iter()
            .map(|i| json!({"path": i.path, "message": i.message}))
            .collect();
        Self {
            details: Some(json!({ "issues": issues })),
            ..Self::of(CapabilityErrorCode::InputInvalid)
        }
    }

    /// The code as a client or model sees it: unexposed codes collapse to `INTERNAL_ERROR`, and a
    /// resume mismatch looks exactly like an unknown approval.
    pub fn public_code(&self) -> CapabilityErrorCode {
        match self.code {
            CapabilityErrorCode::ApprovalResumeMismatch => CapabilityErrorCode::ApprovalNotFound,
            c if c.exposed() => c,
            _ => CapabilityErrorCode::InternalError,
        }
    }

    /// The `error` object of the E7 envelope: `{code, message, retryable, details?}`.
    pub fn to_public(&self) -> Value {
        let code = self.public_code();
        if code != self.code {
            return json!({"code": code.as_str(), "message": code.default_message(), "retryable": false});
        }
        let mut v =
            json!({"code": code.as_str(), "message": self.message, "retryable": self.retryable});
        if let (Some(details), CapabilityErrorCode::InputInvalid) = (&self.details, code) {
            v["details"] = details.clone();
        }
        v
    }
}

/// One schema violation: a JSON Pointer into the input and a message without the value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputIssue {
    pub path: String,
    pub message: String,
}

/// What a capability handler may fail with.
#[derive(Debug, Clone, thiserror::Error)]
pub enum HandlerError {
    /// A domain rule refused the call; the message is written for the caller and is shown.
    #[error("{0}")]
    Rejected(String),
    /// Anything else; the cause is logged, the caller sees "The operation failed.".
    #[error("internal: {0}")]
    Internal(String),
    /// A failure the handler has already classified with a governed code (an executor that
    /// keeps its own deadline answers `TIMEOUT`, a backend's broken answer `EXECUTION_FAILED`).
    #[error("{0}")]
    Governed(CapabilityError),
}

impl HandlerError {
    pub fn internal(e: impl std::fmt::Display) -> Self {
        Self::Internal(e.to_string())
    }
}
