//! Capability-level errors (the governed runtime's own codes) and their model-visible shapes.

use serde_json::{json, Value};

use super::vocab::error_codes;

error_codes! {
    /// Stable capability error codes; they may be added to, never repurposed. The status is
    /// what `/rpc` answers for the code when it is public (codes that are not `exposed` are
    /// answered as `INTERNAL_ERROR`); domain rules refusing the current state of the
    /// ledger and approvals that cannot run are 409.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum CapabilityErrorCode {
        CapabilityNotFound = "CAPABILITY_NOT_FOUND", 404, "Capability not found.";
        InputInvalid = "INPUT_INVALID", 400, "Input validation failed.";
        Unauthenticated = "UNAUTHENTICATED", 401, "Authentication is required.";
        Forbidden = "FORBIDDEN", 403, "The operation is not permitted.";
        PolicyDenied = "POLICY_DENIED", 403, "The operation was denied by policy.";
        PolicyFailed = "POLICY_FAILED", 409, "The operation failed.";
        ApprovalNotFound = "APPROVAL_NOT_FOUND", 404, "Approval not found.";
        ApprovalPending = "APPROVAL_PENDING", 409, "The approval decision is still pending.";
        ApprovalRejected = "APPROVAL_REJECTED", 409, "The approval was rejected.";
        ApprovalExpired = "APPROVAL_EXPIRED", 409, "The approval has expired.";
        ApprovalConsumed = "APPROVAL_CONSUMED", 409, "The approval has already been used.";
        ApprovalSelfApproval = "APPROVAL_SELF_APPROVAL", 409,
            "The requester cannot approve their own request.";
        ApprovalInputMismatch = "APPROVAL_INPUT_MISMATCH", 409, "The operation failed.";
        ApprovalUnserializableInput = "APPROVAL_UNSERIALIZABLE_INPUT", 409,
            "The operation failed.";
        ApprovalResumeMismatch = "APPROVAL_RESUME_MISMATCH", 409, "Approval not found.";
        ApprovalCancelled = "APPROVAL_CANCELLED", 409,
            "The approval was cancelled (the demo ledger was reset); nothing was done.";
        // The one wording, from the host error table.
        ApprovalStale = "APPROVAL_STALE", 409,
            dpas_protocol::HostErrorCode::ApprovalStale.default_message();
        ApprovalInterrupted = "APPROVAL_INTERRUPTED", 409,
            "The server stopped while this approved action was running, so it may or may not have happened; check before asking again.";
        ExecutionFailed = "EXECUTION_FAILED", 409, "The operation failed.";
        OutputInvalid = "OUTPUT_INVALID", 409, "The operation failed.";
        Timeout = "TIMEOUT", 504, "The operation timed out.";
        Cancelled = "CANCELLED", 409, "The operation was cancelled.";
        InternalError = "INTERNAL_ERROR", 500, "The operation failed.";
    }
}

impl CapabilityErrorCode {
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
