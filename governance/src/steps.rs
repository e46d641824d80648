//! The record of a step request's run, kept for a configured time so that the same step posted
//! again (a dropped connection, a reload, a second tab) is answered from it instead of running
//! the model again. A step is named by its owner and the request's `(conversationId, turnId,
//! stepIndex)`; its body's digest tells a retry from a different request under the same ids.

use futures_util::future::BoxFuture;
use time::OffsetDateTime;

/// One step of one owner's conversation.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct StepKey {
    /// The actor id the step ran for: another owner's steps are never seen.
    pub owner: String,
    pub conversation_id: String,
    pub turn_id: String,
    pub step_index: u64,
}

/// Where a recorded step stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepState {
    /// A replica is running it (`replica`, alive as of `heartbeat_at`).
    Running,
    /// Finished: `frames` is the whole response body.
    Done,
}

/// A step as the store holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepRecord {
    /// The digest of the request body that started it.
    pub digest: String,
    pub state: StepState,
    /// The response body (NDJSON lines), whole once [`StepState::Done`]; empty before.
    pub frames: Vec<u8>,
    /// The replica running or having run it.
    pub replica: String,
    /// When its replica last said it was still running it.
    pub heartbeat_at: OffsetDateTime,
}

/// The steps a cancel names: one owner's running steps of one conversation, narrowed to one
/// turn and one step when those are given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CancelTarget {
    pub owner: String,
    pub conversation_id: String,
    pub turn_id: Option<String>,
    pub step_index: Option<u64>,
}

impl CancelTarget {
    /// Whether `key` is one of the steps named.
    pub fn names(&self, key: &StepKey) -> bool {
        key.owner == self.owner
            && key.conversation_id == self.conversation_id
            && self.turn_id.as_ref().is_none_or(|t| *t == key.turn_id)
            && self.step_index.is_none_or(|s| s == key.step_index)
    }
}

/// What claiming a step found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// Nobody had it: the caller runs it.
    Claimed,
    /// It was there already (running or done, with this digest or another).
    Existing(StepRecord),
}

/// A step store's failure (the cause, for the log).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("step records: {0}")]
pub struct StepStoreError(pub String);

type StepFuture<'a, T> = BoxFuture<'a, Result<T, StepStoreError>>;

/// Where step records live. `claim` is an atomic insert-if-absent: of any number of replicas
/// claiming one key at once, exactly one gets [`Claim::Claimed`].
pub trait StepStore: Send + Sync {
    /// Claims `key` for a run of the body with `digest` on `replica`, kept until `expires_at`.
    fn claim<'a>(
        &'a self,
        key: &'a StepKey,
        digest: &'a str,
        replica: &'a str,
        now: OffsetDateTime,
        expires_at: OffsetDateTime,
    ) -> StepFuture<'a, Claim>;
    /// The record of `key`, if any.
    fn get<'a>(&'a self, key: &'a StepKey) -> StepFuture<'a, Option<StepRecord>>;
    /// Says that `replica` is still running `key`; answers whether a cancel was asked for it
    /// since ([`StepStore::request_cancel`], from any replica).
    fn heartbeat<'a>(
        &'a self,
        key: &'a StepKey,
        replica: &'a str,
        now: OffsetDateTime,
    ) -> StepFuture<'a, bool>;
    /// Marks every running step `target` names as asked to stop; the keys marked. A finished
    /// step, or another owner's, is never marked.
    fn request_cancel<'a>(&'a self, target: &'a CancelTarget) -> StepFuture<'a, Vec<StepKey>>;
    /// Stores the finished step's whole response body.
    fn finish<'a>(
        &'a self,
        key: &'a StepKey,
        frames: &'a [u8],
        now: OffsetDateTime,
    ) -> StepFuture<'a, ()>;
    /// Forgets a claim whose run never started (it was refused after the claim).
    fn release<'a>(&'a self, key: &'a StepKey) -> StepFuture<'a, ()>;
    /// Deletes the records kept past their time; how many went.
    fn purge(&self, now: OffsetDateTime) -> StepFuture<'_, u64>;
}
