//! What an invocation answers (reference-behaviour E7), and its wire form.

use serde_json::{json, Value};

use super::CapabilityError;

/// The result of an invocation (reference-behaviour E7).
#[derive(Debug, Clone, PartialEq)]
pub enum Envelope {
    Ok {
        data: Value,
    },
    ApprovalRequired {
        approval_id: String,
        message: String,
    },
    Error(CapabilityError),
}

impl Envelope {
    /// `{status:"ok",data}` | `{status:"approval-required",approvalId,message}` |
    /// `{status:"error",error:{code,message,retryable,details?}}`.
    pub fn to_value(&self) -> Value {
        match self {
            Self::Ok { data } => json!({"status": "ok", "data": data}),
            Self::ApprovalRequired {
                approval_id,
                message,
            } => {
                json!({"status": "approval-required", "approvalId": approval_id, "message": message})
            }
            Self::Error(e) => json!({"status": "error", "error": e.to_public()}),
        }
    }

    pub fn is_ok(&self) -> bool {
        matches!(self, Self::Ok { .. })
    }
}

/// `completed`, `approval-required` or the error's code.
pub(super) fn outcome_of(envelope: &Envelope) -> &'static str {
    match envelope {
        Envelope::Ok { .. } => "completed",
        Envelope::ApprovalRequired { .. } => "approval-required",
        Envelope::Error(e) => e.code.as_str(),
    }
}
