//! Approval records: bound to actor, surface, capability and the SHA-256 of the canonical
//! input; decided once, consumed once, with expiry.

use std::collections::HashMap;
use std::sync::Mutex;

use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};
use time::OffsetDateTime;

use super::error::{CapabilityError, CapabilityErrorCode};
use super::types::{Actor, Risk, SideEffect, Surface};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ApprovalStatus {
    Pending,
    Approved,
    Rejected,
    Expired,
    Cancelled,
    Consumed,
}

impl ApprovalStatus {
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Approved => "approved",
            Self::Rejected => "rejected",
            Self::Expired => "expired",
            Self::Cancelled => "cancelled",
            Self::Consumed => "consumed",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalDecision {
    pub approved: bool,
    pub approver: Actor,
    #[serde(with = "time::serde::rfc3339")]
    pub decided_at: OffsetDateTime,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalRecord {
    /// `apr_<uuid>`.
    pub id: String,
    pub capability_id: String,
    pub surface: Surface,
    /// The requester; a resumed execution runs as this actor.
    pub actor: Actor,
    /// The validated input; this, never anything supplied later, is what executes.
    pub input: Value,
    pub input_hash: String,
    pub reasons: Vec<String>,
    pub types: Vec<String>,
    pub risk: Risk,
    pub side_effect: SideEffect,
    #[serde(with = "time::serde::rfc3339")]
    pub requested_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub expires_at: OffsetDateTime,
    pub status: ApprovalStatus,
    pub decision: Option<ApprovalDecision>,
    /// The execution that consumed the approval.
    pub consumed_by: Option<String>,
}

/// Canonical JSON: object keys sorted, no insignificant whitespace. `serde_json` numbers are
/// always finite, so every `Value` has exactly one canonical form.
pub fn canonical_json(value: &Value) -> String {
    fn write(v: &Value, out: &mut String) {
        match v {
            Value::Object(map) => {
                let mut entries: Vec<(&String, &Value)> = map.iter().collect();
                entries.sort_by(|a, b| a.0.cmp(b.0));
                out.push('{');
                for (i, (k, item)) in entries.into_iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&Value::String(k.clone()).to_string());
                    out.push(':');
                    write(item, out);
                }
                out.push('}');
            }
            Value::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write(item, out);
                }
                out.push(']');
            }
            other => out.push_str(&other.to_string()),
        }
    }
    let mut out = String::new();
    write(value, &mut out);
    out
}

/// Lower-case hex SHA-256 of the canonical JSON of `value`.
pub fn input_hash(value: &Value) -> String {
    hex::encode(Sha256::digest(canonical_json(value).as_bytes()))
}

/// Where approval records live. Implementations must make `consume` an atomic check-and-set.
pub trait ApprovalStore: Send + Sync {
    fn insert(&self, record: ApprovalRecord);
    /// The record, with an overdue pending record flipped to expired first.
    fn get(&self, id: &str, now: OffsetDateTime) -> Option<ApprovalRecord>;
    /// Records requested by `actor_id`, oldest first.
    fn list(&self, actor_id: &str, now: OffsetDateTime) -> Vec<ApprovalRecord>;
    /// Decides a pending, unexpired record.
    fn decide(
        &self,
        id: &str,
        decision: ApprovalDecision,
        now: OffsetDateTime,
    ) -> Result<ApprovalRecord, CapabilityError>;
    /// Marks an approved record consumed by `execution_id`; fails unless it is approved, unexpired
    /// and not yet consumed. Exactly one concurrent caller succeeds.
    fn consume(
        &self,
        id: &str,
        execution_id: &str,
        now: OffsetDateTime,
    ) -> Result<ApprovalRecord, CapabilityError>;
}

/// In-process approval records; they die with the process.
#[derive(Debug, Default)]
pub struct MemoryApprovalStore {
    records: Mutex<HashMap<String, ApprovalRecord>>,
}

fn expire_if_due(record: &mut ApprovalRecord, now: OffsetDateTime) {
    if record.status == ApprovalStatus::Pending && now >= record.expires_at {
        record.status = ApprovalStatus::Expired;
    }
}

/// The error a resume gets for a record in `status`.
pub(crate) fn status_error(status: ApprovalStatus) -> CapabilityError {
    CapabilityError::of(match status {
        ApprovalStatus::Pending => CapabilityErrorCode::ApprovalPending,
        ApprovalStatus::Rejected | ApprovalStatus::Cancelled => {
            CapabilityErrorCode::ApprovalRejected
        }
        ApprovalStatus::Expired => CapabilityErrorCode::ApprovalExpired,
        ApprovalStatus::Consumed | ApprovalStatus::Approved => {
            CapabilityErrorCode::ApprovalConsumed
        }
    })
}

impl MemoryApprovalStore {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, ApprovalRecord>> {
        // The map holds plain data; a panic elsewhere cannot leave it half-written.
        self.records
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl ApprovalStore for MemoryApprovalStore {
    fn insert(&self, record: ApprovalRecord) {
        self.lock().insert(record.id.clone(), record);
    }

    fn get(&self, id: &str, now: OffsetDateTime) -> Option<ApprovalRecord> {
        let mut map = self.lock();
        let record = map.get_mut(id)?;
        expire_if_due(record, now);
        Some(record.clone())
    }

    fn list(&self, actor_id: &str, now: OffsetDateTime) -> Vec<ApprovalRecord> {
        let mut map = self.lock();
        let mut out: Vec<ApprovalRecord> = map
            .values_mut()
            .filter(|r| r.actor.id == actor_id)
            .map(|r| {
                expire_if_due(r, now);
                r.clone()
            })
            .collect();
        out.sort_by(|a, b| {
            a.requested_at
                .cmp(&b.requested_at)
                .then_with(|| a.id.cmp(&b.id))
        });
        out
    }

    fn decide(
        &self,
        id: &str,
        decision: ApprovalDecision,
        now: OffsetDateTime,
    ) -> Result<ApprovalRecord, CapabilityError> {
        let mut map = self.lock();
        let record = map
            .get_mut(id)
            .ok_or_else(|| CapabilityError::of(CapabilityErrorCode::ApprovalNotFound))?;
        expire_if_due(record, now);
        match record.status {
            ApprovalStatus::Pending => {}
            ApprovalStatus::Expired => {
                return Err(CapabilityError::of(CapabilityErrorCode::ApprovalExpired))
            }
            other => {
                return Err(CapabilityError::with_message(
                    CapabilityErrorCode::ApprovalConsumed,
                    format!("This approval was already decided ({}).", other.as_str()),
                ))
            }
        }
        record.status = if decision.approved {
            ApprovalStatus::Approved
        } else {
            ApprovalStatus::Rejected
        };
        record.decision = Some(decision);
        Ok(record.clone())
    }

    fn consume(
        &self,
        id: &str,
        execution_id: &str,
        now: OffsetDateTime,
    ) -> Result<ApprovalRecord, CapabilityError> {
        let mut map = self.lock();
        let record = map
            .get_mut(id)
            .ok_or_else(|| CapabilityError::of(CapabilityErrorCode::ApprovalNotFound))?;
        if record.status != ApprovalStatus::Approved {
            expire_if_due(record, now);
            return Err(status_error(record.status));
        }
        if now >= record.expires_at {
            return Err(CapabilityError::of(CapabilityErrorCode::ApprovalExpired));
        }
        record.status = ApprovalStatus::Consumed;
        record.consumed_by = Some(execution_id.to_owned());
        Ok(record.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn canonical_json_is_key_order_independent() {
        let a = json!({"b": 1, "a": {"y": [1, 2], "x": "é"}});
        let b = json!({"a": {"x": "é", "y": [1, 2]}, "b": 1});
        assert_eq!(canonical_json(&a), r#"{"a":{"x":"é","y":[1,2]},"b":1}"#);
        assert_eq!(input_hash(&a), input_hash(&b));
        assert_ne!(input_hash(&a), input_hash(&json!({"b": 2})));
    }
}
