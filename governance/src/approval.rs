//! Approval records: bound to actor, surface, capability, the SHA-256 of the canonical input
//! and, when the capability can read it, a snapshot of its target as the human saw it; decided
//! once, consumed once, with expiry. An execution that started is finished with its outcome;
//! one that never finished (the process died) is found at start and marked interrupted.

use std::collections::HashMap;
use std::sync::Mutex;

use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use time::OffsetDateTime;

use crate::error::{CapabilityError, CapabilityErrorCode};
use crate::types::{Actor, CallSurface, Risk, SideEffect};
use crate::vocab::wire_enum;

/// The approval reason of a change proposed beside untrusted content (U2).
pub const UNTRUSTED_CONTENT_REASON: &str =
    "UNTRUSTED_CONTENT: the model read untrusted content before proposing this change";

wire_enum! {
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(rename_all = "lowercase")]
    pub enum ApprovalStatus {
        Pending = "pending",
        Approved = "approved",
        Rejected = "rejected",
        Expired = "expired",
        Cancelled = "cancelled",
        Consumed = "consumed",
        /// The target changed between request and decision or execution; nothing ran.
        Stale = "stale",
        /// Execution started and the process stopped before it finished.
        Interrupted = "interrupted",
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalDecision {
    pub approved: bool,
    pub approver: Actor,
    #[serde(with = "time::serde::rfc3339")]
    pub decided_at: OffsetDateTime,
    /// The conversation the decision was made in, where a later receipt (say, of a run the
    /// process's death interrupted) belongs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalRecord {
    /// `apr_<uuid>`.
    pub id: String,
    pub capability_id: String,
    pub surface: CallSurface,
    /// The requester; a resumed execution runs as this actor.
    pub actor: Actor,
    /// The conversation the call was requested in, when its surface has one (a model step's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation_id: Option<String>,
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
    /// When it was consumed (a run that has not finished long after this was cut short).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "time::serde::rfc3339::option"
    )]
    pub consumed_at: Option<OffsetDateTime>,
    /// The target's state when the approval was requested (what the card shows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<Value>,
    /// SHA-256 of the canonical JSON of `target`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_hash: Option<String>,
    /// How the execution that consumed it ended (`completed`, `failed`); `None` while running.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
}

/// The RFC 8785 (JCS) canonical JSON of `value`: object keys sorted by UTF-16 code units, no
/// insignificant whitespace, numbers as ECMAScript prints them (`1.0` is `1`, `-0.0` is `0`,
/// `1e21` is `1e+21`); integers are written exactly (`canon-json` does not round them through
/// an `f64`). `serde_json` numbers are always finite, so every `Value` has one.
pub fn canonical_json(value: &Value) -> String {
    use canon_json::CanonJsonSerialize;
    // Writing a `Value` into a `Vec` fails only on a non-finite number, which a `Value` cannot
    // hold; the empty string would still be a digest nothing else matches.
    value.to_canon_json_string().unwrap_or_default()
}

/// The tag of a digest over [`canonical_json`]. A stored digest without it was made before
/// the server used RFC 8785, over [`legacy_canonical_json`].
const JCS_DIGEST: &str = "jcs:";

/// `jcs:` and the lower-case hex SHA-256 of the RFC 8785 canonical JSON of `value`.
pub fn input_hash(value: &Value) -> String {
    format!(
        "{JCS_DIGEST}{}",
        hex::encode(Sha256::digest(canonical_json(value).as_bytes()))
    )
}

/// Whether `stored` (an [`input_hash`], or an untagged digest stored by an earlier server) is
/// the digest of `value`.
pub fn hash_matches(value: &Value, stored: &str) -> bool {
    match stored.strip_prefix(JCS_DIGEST) {
        Some(_) => input_hash(value) == stored,
        None => hex::encode(Sha256::digest(legacy_canonical_json(value).as_bytes())) == stored,
    }
}

/// The canonical form approvals were digested over before RFC 8785: keys sorted by UTF-8
/// bytes, numbers as `serde_json` prints them (`1.0` stays `1.0`). Kept only so that an
/// approval stored by an earlier server still verifies; it agrees with [`canonical_json`]
/// except on floats written differently and on keys beyond U+FFFF sorted against keys in
/// U+E000–U+FFFF (see the tests). Once no untagged record can still be pending or approved
/// (all expired), it can go.
fn legacy_canonical_json(value: &Value) -> String {
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

/// What an [`ApprovalStore`] method returns.
pub type StoreFuture<'a, T> = BoxFuture<'a, Result<T, CapabilityError>>;

/// Where approval records live. Implementations must make `decide` and `consume` atomic
/// check-and-sets; storage failures surface as `INTERNAL_ERROR`.
pub trait ApprovalStore: Send + Sync {
    fn insert(&self, record: ApprovalRecord) -> StoreFuture<'_, ()>;
    /// The record, with an overdue pending record flipped to expired first.
    fn get<'a>(
        &'a self,
        id: &'a str,
        now: OffsetDateTime,
    ) -> StoreFuture<'a, Option<ApprovalRecord>>;
    /// Records requested by `actor_id`, oldest first.
    fn list<'a>(
        &'a self,
        actor_id: &'a str,
        now: OffsetDateTime,
    ) -> StoreFuture<'a, Vec<ApprovalRecord>>;
    /// Decides a pending, unexpired record.
    fn decide<'a>(
        &'a self,
        id: &'a str,
        decision: ApprovalDecision,
        now: OffsetDateTime,
    ) -> StoreFuture<'a, ApprovalRecord>;
    /// Marks an approved record consumed by `execution_id`; fails unless it is approved, unexpired
    /// and not yet consumed. Exactly one concurrent caller succeeds.
    fn consume<'a>(
        &'a self,
        id: &'a str,
        execution_id: &'a str,
        now: OffsetDateTime,
    ) -> StoreFuture<'a, ApprovalRecord>;
    /// Decides a pending record and, when approved, consumes it for `execution_id`, in one
    /// atomic step: there is no moment where it is approved but not yet claimed by a run.
    fn decide_and_consume<'a>(
        &'a self,
        id: &'a str,
        decision: ApprovalDecision,
        execution_id: &'a str,
        now: OffsetDateTime,
    ) -> StoreFuture<'a, ApprovalRecord>;
    /// Moves a record in one of `from` to `to` (e.g. pending → stale); fails with the status
    /// error of its current status otherwise.
    fn transition<'a>(
        &'a self,
        id: &'a str,
        from: &'a [ApprovalStatus],
        to: ApprovalStatus,
        now: OffsetDateTime,
    ) -> StoreFuture<'a, ApprovalRecord>;
    /// Records how the execution of a consumed record ended.
    fn finish<'a>(&'a self, id: &'a str, outcome: &'a str) -> StoreFuture<'a, ()>;
    /// Every record in one of `statuses` (any actor), oldest first.
    fn with_status<'a>(
        &'a self,
        statuses: &'a [ApprovalStatus],
        now: OffsetDateTime,
    ) -> StoreFuture<'a, Vec<ApprovalRecord>>;
    /// `actor_id`'s pending, unexpired records, oldest first, without writing anything.
    fn pending_of<'a>(
        &'a self,
        actor_id: &'a str,
        now: OffsetDateTime,
    ) -> StoreFuture<'a, Vec<ApprovalRecord>>;
    /// Deletes records that expired before `cutoff` (decided or not, they can no longer act);
    /// returns how many.
    fn purge(&self, cutoff: OffsetDateTime) -> StoreFuture<'_, u64>;
}

pub fn expire_if_due(record: &mut ApprovalRecord, now: OffsetDateTime) {
    if record.status == ApprovalStatus::Pending && now >= record.expires_at {
        record.status = ApprovalStatus::Expired;
    }
}

/// The error for a record in `status` that cannot do what was asked: the code says what
/// happened to it.
pub fn status_error(status: ApprovalStatus) -> CapabilityError {
    CapabilityError::of(match status {
        ApprovalStatus::Pending => CapabilityErrorCode::ApprovalPending,
        ApprovalStatus::Rejected => CapabilityErrorCode::ApprovalRejected,
        ApprovalStatus::Cancelled => CapabilityErrorCode::ApprovalCancelled,
        ApprovalStatus::Expired => CapabilityErrorCode::ApprovalExpired,
        ApprovalStatus::Consumed | ApprovalStatus::Approved => {
            CapabilityErrorCode::ApprovalConsumed
        }
        ApprovalStatus::Stale => CapabilityErrorCode::ApprovalStale,
        ApprovalStatus::Interrupted => CapabilityErrorCode::ApprovalInterrupted,
    })
}

/// Applies a decision to a record in memory; the rules every store shares.
pub fn apply_decision(
    record: &mut ApprovalRecord,
    decision: ApprovalDecision,
    now: OffsetDateTime,
) -> Result<(), CapabilityError> {
    expire_if_due(record, now);
    match record.status {
        ApprovalStatus::Pending => {}
        status @ (ApprovalStatus::Approved | ApprovalStatus::Consumed) => {
            return Err(CapabilityError::with_message(
                CapabilityErrorCode::ApprovalConsumed,
                format!("This approval was already decided ({}).", status.as_str()),
            ))
        }
        other => return Err(status_error(other)),
    }
    record.status = if decision.approved {
        ApprovalStatus::Approved
    } else {
        ApprovalStatus::Rejected
    };
    record.decision = Some(decision);
    Ok(())
}

/// Marks a record consumed in memory; the rules every store shares.
pub fn apply_consume(
    record: &mut ApprovalRecord,
    execution_id: &str,
    now: OffsetDateTime,
) -> Result<(), CapabilityError> {
    if record.status != ApprovalStatus::Approved {
        expire_if_due(record, now);
        return Err(status_error(record.status));
    }
    if now >= record.expires_at {
        return Err(CapabilityError::of(CapabilityErrorCode::ApprovalExpired));
    }
    record.status = ApprovalStatus::Consumed;
    record.consumed_by = Some(execution_id.to_owned());
    record.consumed_at = Some(now);
    Ok(())
}

/// Decides and, when approved, consumes; the rules every store shares.
pub fn apply_decide_consume(
    record: &mut ApprovalRecord,
    decision: ApprovalDecision,
    execution_id: &str,
    now: OffsetDateTime,
) -> Result<(), CapabilityError> {
    let approved = decision.approved;
    apply_decision(record, decision, now)?;
    if approved {
        apply_consume(record, execution_id, now)?;
    }
    Ok(())
}

pub fn apply_transition(
    record: &mut ApprovalRecord,
    from: &[ApprovalStatus],
    to: ApprovalStatus,
    now: OffsetDateTime,
) -> Result<(), CapabilityError> {
    expire_if_due(record, now);
    if !from.contains(&record.status) {
        return Err(status_error(record.status));
    }
    record.status = to;
    Ok(())
}

pub fn is_pending_of(record: &ApprovalRecord, actor_id: &str, now: OffsetDateTime) -> bool {
    record.actor.id == actor_id
        && record.status == ApprovalStatus::Pending
        && now < record.expires_at
}

pub fn oldest_first(records: &mut [ApprovalRecord]) {
    records.sort_by(|a, b| {
        a.requested_at
            .cmp(&b.requested_at)
            .then_with(|| a.id.cmp(&b.id))
    });
}

pub fn not_found() -> CapabilityError {
    CapabilityError::of(CapabilityErrorCode::ApprovalNotFound)
}

/// In-process approval records; they die with the process.
#[derive(Debug, Default)]
pub struct MemoryApprovalStore {
    records: Mutex<HashMap<String, ApprovalRecord>>,
}

impl MemoryApprovalStore {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, ApprovalRecord>> {
        // The map holds plain data; a panic elsewhere cannot leave it half-written.
        self.records
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn update(
        &self,
        id: &str,
        f: impl FnOnce(&mut ApprovalRecord) -> Result<(), CapabilityError>,
    ) -> Result<ApprovalRecord, CapabilityError> {
        let mut map = self.lock();
        let record = map.get_mut(id).ok_or_else(not_found)?;
        f(record)?;
        Ok(record.clone())
    }
}

impl ApprovalStore for MemoryApprovalStore {
    fn insert(&self, record: ApprovalRecord) -> StoreFuture<'_, ()> {
        self.lock().insert(record.id.clone(), record);
        Box::pin(async { Ok(()) })
    }

    fn get<'a>(
        &'a self,
        id: &'a str,
        now: OffsetDateTime,
    ) -> StoreFuture<'a, Option<ApprovalRecord>> {
        let found = self.update(id, |r| {
            expire_if_due(r, now);
            Ok(())
        });
        Box::pin(async move { Ok(found.ok()) })
    }

    fn list<'a>(
        &'a self,
        actor_id: &'a str,
        now: OffsetDateTime,
    ) -> StoreFuture<'a, Vec<ApprovalRecord>> {
        let mut map = self.lock();
        let mut out: Vec<ApprovalRecord> = map
            .values_mut()
            .filter(|r| r.actor.id == actor_id)
            .map(|r| {
                expire_if_due(r, now);
                r.clone()
            })
            .collect();
        drop(map);
        oldest_first(&mut out);
        Box::pin(async move { Ok(out) })
    }

    fn decide<'a>(
        &'a self,
        id: &'a str,
        decision: ApprovalDecision,
        now: OffsetDateTime,
    ) -> StoreFuture<'a, ApprovalRecord> {
        let result = self.update(id, |r| apply_decision(r, decision, now));
        Box::pin(async move { result })
    }

    fn consume<'a>(
        &'a self,
        id: &'a str,
        execution_id: &'a str,
        now: OffsetDateTime,
    ) -> StoreFuture<'a, ApprovalRecord> {
        let result = self.update(id, |r| apply_consume(r, execution_id, now));
        Box::pin(async move { result })
    }

    fn decide_and_consume<'a>(
        &'a self,
        id: &'a str,
        decision: ApprovalDecision,
        execution_id: &'a str,
        now: OffsetDateTime,
    ) -> StoreFuture<'a, ApprovalRecord> {
        let result = self.update(id, |r| apply_decide_consume(r, decision, execution_id, now));
        Box::pin(async move { result })
    }

    fn transition<'a>(
        &'a self,
        id: &'a str,
        from: &'a [ApprovalStatus],
        to: ApprovalStatus,
        now: OffsetDateTime,
    ) -> StoreFuture<'a, ApprovalRecord> {
        let result = self.update(id, |r| apply_transition(r, from, to, now));
        Box::pin(async move { result })
    }

    fn finish<'a>(&'a self, id: &'a str, outcome: &'a str) -> StoreFuture<'a, ()> {
        let result = self
            .update(id, |r| {
                r.outcome = Some(outcome.to_owned());
                Ok(())
            })
            .map(drop);
        Box::pin(async move { result })
    }

    fn with_status<'a>(
        &'a self,
        statuses: &'a [ApprovalStatus],
        now: OffsetDateTime,
    ) -> StoreFuture<'a, Vec<ApprovalRecord>> {
        let mut out: Vec<ApprovalRecord> = self
            .lock()
            .values_mut()
            .filter_map(|r| {
                expire_if_due(r, now);
                statuses.contains(&r.status).then(|| r.clone())
            })
            .collect();
        oldest_first(&mut out);
        Box::pin(async move { Ok(out) })
    }

    fn pending_of<'a>(
        &'a self,
        actor_id: &'a str,
        now: OffsetDateTime,
    ) -> StoreFuture<'a, Vec<ApprovalRecord>> {
        let mut out: Vec<ApprovalRecord> = self
            .lock()
            .values()
            .filter(|r| is_pending_of(r, actor_id, now))
            .cloned()
            .collect();
        oldest_first(&mut out);
        Box::pin(async move { Ok(out) })
    }

    fn purge(&self, cutoff: OffsetDateTime) -> StoreFuture<'_, u64> {
        let mut map = self.lock();
        let before = map.len();
        map.retain(|_, r| r.expires_at >= cutoff);
        let purged = u64::try_from(before - map.len()).unwrap_or(u64::MAX);
        Box::pin(async move { Ok(purged) })
    }
}

/// The behaviour every [`ApprovalStore`] must share, for a store's own tests (feature
/// `testing`): `life_cycle(&store)` runs one record's whole life and panics where the store
/// differs from [`MemoryApprovalStore`].
#[cfg(any(test, feature = "testing"))]
pub mod conformance {
    use super::*;
    use serde_json::json;

    pub fn record(id: &str, now: OffsetDateTime) -> ApprovalRecord {
        let input = json!({"id": 5});
        ApprovalRecord {
            id: id.to_owned(),
            capability_id: "issue-invoice".into(),
            surface: CallSurface::Model,
            actor: Actor::user("carla@example.com", "Carla Controller", "controller"),
            conversation_id: None,
            input_hash: input_hash(&input),
            input,
            reasons: vec!["r".into()],
            types: vec!["human-confirmation".into()],
            risk: Risk::High,
            side_effect: SideEffect::Destructive,
            requested_at: now,
            expires_at: now + std::time::Duration::from_secs(60),
            status: ApprovalStatus::Pending,
            decision: None,
            consumed_by: None,
            consumed_at: None,
            target: None,
            target_hash: None,
            outcome: None,
        }
    }

    /// The life cycle every store must implement identically.
    pub async fn life_cycle(store: &dyn ApprovalStore) {
        let t0 = OffsetDateTime::from_unix_timestamp(1_800_000_000).expect("time");
        let carla = Actor::user("carla@example.com", "Carla Controller", "controller");
        let decision = |approved| ApprovalDecision {
            approved,
            approver: carla.clone(),
            decided_at: t0,
            thread_id: None,
        };
        store.insert(record("apr_a", t0)).await.expect("insert");
        store
            .insert(record("apr_b", t0 + std::time::Duration::from_secs(1)))
            .await
            .expect("insert");

        let code = |r: Result<ApprovalRecord, CapabilityError>| r.err().map(|e| e.code);
        assert_eq!(
            code(store.consume("apr_a", "exe_1", t0).await),
            Some(CapabilityErrorCode::ApprovalPending)
        );
        let decided = store
            .decide("apr_a", decision(true), t0)
            .await
            .expect("decide");
        assert_eq!(decided.status, ApprovalStatus::Approved);
        assert_eq!(
            code(store.decide("apr_a", decision(false), t0).await),
            Some(CapabilityErrorCode::ApprovalConsumed)
        );
        let consumed = store.consume("apr_a", "exe_1", t0).await.expect("consume");
        assert_eq!(
            (consumed.status, consumed.consumed_by.as_deref()),
            (ApprovalStatus::Consumed, Some("exe_1"))
        );
        assert_eq!(
            code(store.consume("apr_a", "exe_2", t0).await),
            Some(CapabilityErrorCode::ApprovalConsumed)
        );
        assert_eq!(
            code(store.consume("apr_x", "exe_2", t0).await),
            Some(CapabilityErrorCode::ApprovalNotFound)
        );

        let later = t0 + std::time::Duration::from_secs(61);
        assert_eq!(
            store
                .get("apr_b", later)
                .await
                .expect("get")
                .map(|r| r.status),
            Some(ApprovalStatus::Expired)
        );
        assert_eq!(
            code(store.decide("apr_b", decision(true), later).await),
            Some(CapabilityErrorCode::ApprovalExpired)
        );
        let ids: Vec<String> = store
            .list("carla@example.com", later)
            .await
            .expect("list")
            .into_iter()
            .map(|r| r.id)
            .collect();
        assert_eq!(ids, ["apr_a", "apr_b"]);
        assert!(store
            .list("ada@example.com", later)
            .await
            .expect("list")
            .is_empty());
        assert_eq!(store.get("apr_x", later).await.expect("get"), None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn memory_store_life_cycle() {
        conformance::life_cycle(&MemoryApprovalStore::default()).await;
    }

    /// Inputs as the server produces them (strings in any script, integers, booleans, nulls,
    /// nesting, keys in the Basic Multilingual Plane): RFC 8785 writes them exactly as the
    /// earlier canonical form did.
    #[test]
    fn rfc_8785_agrees_with_the_earlier_form_on_the_inputs_we_produce() {
        let values = [
            json!({"id": 42, "amount": 129_900, "reason": "Kündigung — Überfällig"}),
            json!({"b": [1, -2, 0, i64::MIN, u64::MAX], "a": {"z": null, "y": true, "x": false}}),
            json!({"note": "日本語のメモ 😀", "ctl": "tab\tnl\nquote\"bs\\\u{1}\u{7f}"}),
            json!({"é": 1, "e": 2, "E": 3, "ß": 4, "ü": 5, "": 6, "10": 7, "9": 8}),
            json!([{"k": "v"}, [], {}, "", 0]),
            json!(9_007_199_254_740_993_u64),
            json!([1e21, 2.5, -0.125, 1e-7]),
        ];
        for v in &values {
            assert_eq!(canonical_json(v), legacy_canonical_json(v), "{v}");
            let legacy = hex::encode(Sha256::digest(legacy_canonical_json(v).as_bytes()));
            assert!(hash_matches(v, &legacy), "{v}");
            assert!(hash_matches(v, &input_hash(v)), "{v}");
        }
    }

    /// Where the two differ, RFC 8785 is what the server writes now (expected strings from
    /// the RFC's rules: ECMAScript number printing, UTF-16 key order), and a record stored
    /// with the earlier digest still verifies.
    #[test]
    fn where_the_forms_differ_rfc_8785_wins_and_old_digests_still_verify() {
        let cases = [
            (
                json!({"amount": 12.0}),
                r#"{"amount":12}"#,
                r#"{"amount":12.0}"#,
            ),
            (json!(-0.0), "0", "-0.0"),
            (json!(0.000001), "0.000001", "1e-6"),
            // U+E000 is one UTF-16 unit above the surrogates that encode U+1F600.
            (
                json!({"\u{e000}": 1, "😀": 2}),
                "{\"😀\":2,\"\u{e000}\":1}",
                "{\"\u{e000}\":1,\"😀\":2}",
            ),
        ];
        for (v, jcs, legacy) in &cases {
            assert_eq!(canonical_json(v), *jcs);
            assert_eq!(legacy_canonical_json(v), *legacy);
            let stored = hex::encode(Sha256::digest(legacy.as_bytes()));
            assert!(hash_matches(v, &stored), "{v}");
            assert!(hash_matches(v, &input_hash(v)), "{v}");
            assert_ne!(input_hash(v).trim_start_matches(JCS_DIGEST), stored);
        }
        assert!(!hash_matches(
            &json!({"amount": 13}),
            &input_hash(&json!({"amount": 12.0}))
        ));
        let stored = hex::encode(Sha256::digest(br#"{"amount":12.0}"#));
        assert!(!hash_matches(&json!({"amount": 12}), &stored));
    }

    #[test]
    fn canonical_json_is_key_order_independent() {
        let a = json!({"b": 1, "a": {"y": [1, 2], "x": "é"}});
        let b = json!({"a": {"x": "é", "y": [1, 2]}, "b": 1});
        assert_eq!(canonical_json(&a), r#"{"a":{"x":"é","y":[1,2]},"b":1}"#);
        assert_eq!(input_hash(&a), input_hash(&b));
        assert_ne!(input_hash(&a), input_hash(&json!({"b": 2})));
        assert!(input_hash(&a).starts_with("jcs:"));
    }
}
