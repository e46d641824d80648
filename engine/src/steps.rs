//! Steps that survive: the same step request posted again is answered from its run, never run
//! twice. A step is named by its owner and `(conversationId, turnId, stepIndex)`; the digest of
//! its body tells a retry from a different request under the same ids (409 `STEP_CONFLICT`).
//!
//! On one replica every request for a step meets at one [`LiveStep`]: the first claims the
//! step in the [`StepStore`] and runs it, recording every NDJSON line; the others follow it,
//! getting the lines already written and then the rest as they are written. On another
//! replica the claim finds the record: a finished step is answered from it; a running one is
//! waited for (the record is read every [`POLL`] while its replica's heartbeat, written every
//! [`HEARTBEAT`], is younger than [`STALE`]); a stale one is 503 `STEP_INTERRUPTED`, since its
//! replica stopped mid-step and what the step did is not known.
//!
//! A cancel ([`StepLog::cancel`]) names one owner's running steps: on this replica it reaches
//! the run at once; on another, through the record's `cancel_requested`, which that replica's
//! heartbeat reads. Either way the answer waits for the run to end and says how it ended.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use dpas_governance::steps::{CancelTarget, Claim, StepKey, StepState, StepStore};
use time::OffsetDateTime;
use tokio::sync::watch;

use crate::refusal::Refusal;

/// How often the replica running a step says so in its record.
pub const HEARTBEAT: Duration = Duration::from_secs(2);
/// A running record whose heartbeat is older than this is taken as its replica's death.
pub const STALE: Duration = Duration::from_secs(10);
/// How often a replica waiting on another's step reads its record.
pub const POLL: Duration = Duration::from_millis(100);

/// The step records and the steps running on this replica.
pub struct StepLog {
    store: Arc<dyn StepStore>,
    live: Mutex<HashMap<StepKey, Arc<LiveStep>>>,
    replica: String,
    retention: Duration,
    /// Requests waiting now for a step another replica runs.
    waiting: std::sync::atomic::AtomicUsize,
}

impl std::fmt::Debug for StepLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StepLog")
            .field("replica", &self.replica)
            .field("retention", &self.retention)
            .finish_non_exhaustive()
    }
}

/// Where one step stands, as the requests for it on this replica see it.
#[derive(Debug, Clone)]
enum Phase {
    /// Its claim is being made.
    Claiming,
    /// Running here: the lines so far.
    Running,
    /// Finished (here, or found finished in the record).
    Done,
    /// Another request's body under the same ids.
    Conflict,
    /// Refused before its run started (the refusal every request for it gets).
    Refused(Refusal),
    /// Another replica has it.
    Elsewhere,
    /// Its claim was given up without a run: every request for it is admitted again.
    Released,
}

/// One step as this replica's requests for it share it.
#[derive(Debug)]
pub struct LiveStep {
    digest: String,
    state: Mutex<(Phase, Vec<Bytes>)>,
    changed: watch::Sender<u64>,
    /// Set once a cancel reached the step; its run watches it.
    cancel: watch::Sender<bool>,
}

impl LiveStep {
    fn new(digest: &str) -> Arc<Self> {
        Arc::new(Self {
            digest: digest.to_owned(),
            state: Mutex::new((Phase::Claiming, Vec::new())),
            changed: watch::channel(0).0,
            cancel: watch::channel(false).0,
        })
    }

    fn lock(&self) -> MutexGuard<'_, (Phase, Vec<Bytes>)> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn set(&self, phase: Phase, lines: Option<Vec<Bytes>>) {
        {
            let mut state = self.lock();
            state.0 = phase;
            if let Some(lines) = lines {
                state.1 = lines;
            }
        }
        self.changed.send_modify(|n| *n += 1);
    }

    /// Records one line of the running step's response.
    pub(crate) fn push(&self, line: &Bytes) {
        self.lock().1.push(line.clone());
        self.changed.send_modify(|n| *n += 1);
    }

    /// Waits for the step's run here to end, then how it ended; `None` when its claim came to
    /// no run here (refused, a conflict, or another replica's).
    async fn ended(&self) -> Option<CancelOutcome> {
        let mut changed = self.changed.subscribe();
        loop {
            let phase = self.lock().0.clone();
            match phase {
                Phase::Claiming | Phase::Running => {}
                Phase::Done => return Some(CancelOutcome::of(&self.body())),
                _ => return None,
            }
            if changed.changed().await.is_err() {
                return Some(CancelOutcome::Interrupted);
            }
        }
    }

    /// The signal a cancel sets for this step's run.
    pub(crate) fn cancel_signal(&self) -> watch::Receiver<bool> {
        self.cancel.subscribe()
    }

    fn body(&self) -> Vec<u8> {
        let state = self.lock();
        let mut out = Vec::with_capacity(state.1.iter().map(Bytes::len).sum());
        for line in &state.1 {
            out.extend_from_slice(line);
        }
        out
    }
}

/// How a cancelled step's run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelOutcome {
    /// The cancel stopped it: its response ends with `finishReason` `cancelled`.
    Cancelled,
    /// It ended on its own before the cancel reached it.
    Finished,
    /// Its replica stopped before it ended: what it did is not known.
    Interrupted,
}

impl CancelOutcome {
    /// The outcome's name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Cancelled => "cancelled",
            Self::Finished => "finished",
            Self::Interrupted => "interrupted",
        }
    }

    /// How a step whose response is `body` ended, by its last `step-finish`.
    fn of(body: &[u8]) -> Self {
        let finish = body
            .split(|b| *b == b'\n')
            .rev()
            .filter_map(|line| serde_json::from_slice::<serde_json::Value>(line).ok())
            .find(|frame| frame["type"] == "step-finish");
        match finish {
            Some(frame) if frame["finishReason"] == "cancelled" => Self::Cancelled,
            Some(_) => Self::Finished,
            None => Self::Interrupted,
        }
    }
}

/// One step a cancel named, and how its run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cancelled {
    pub key: StepKey,
    pub outcome: CancelOutcome,
}

/// What a request for a step does.
#[derive(Debug)]
pub enum Admission {
    /// Nobody has run it: run it, recording into this ([`crate::run::StepRun::recording`]).
    Run(Recording),
    /// Answer with the step as it was or is being run ([`Follower::lines`]).
    Follow(Follower),
    /// The record could not be read or written: run the step unrecorded (said in the log).
    Unrecorded,
}

impl StepLog {
    /// Records kept `retention` in `store`, this process being `replica`.
    pub fn new(store: Arc<dyn StepStore>, replica: impl Into<String>, retention: Duration) -> Self {
        Self {
            store,
            live: Mutex::default(),
            replica: replica.into(),
            retention,
            waiting: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    /// Requests waiting now for a step another replica runs.
    pub fn waiting_elsewhere(&self) -> usize {
        self.waiting.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// How long a finished step stays answerable.
    pub fn retention(&self) -> Duration {
        self.retention
    }

    fn live(&self) -> MutexGuard<'_, HashMap<StepKey, Arc<LiveStep>>> {
        self.live.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Decides what a request for `key` with a body of `digest` does.
    pub async fn admit(self: &Arc<Self>, key: StepKey, digest: &str) -> Result<Admission, Refusal> {
        let (step, first) = {
            let mut live = self.live();
            match live.get(&key) {
                Some(step) => (Arc::clone(step), false),
                None => {
                    let step = LiveStep::new(digest);
                    live.insert(key.clone(), Arc::clone(&step));
                    (step, true)
                }
            }
        };
        if !first {
            return if step.digest == digest {
                Ok(Admission::Follow(self.follower(key, step)))
            } else {
                Err(Refusal::StepConflict)
            };
        }
        let now = OffsetDateTime::now_utc();
        let claim = self
            .store
            .claim(&key, digest, &self.replica, now, now + self.retention)
            .await;
        match claim {
            Ok(Claim::Claimed) => {
                step.set(Phase::Running, None);
                Ok(Admission::Run(Recording {
                    log: Arc::clone(self),
                    key,
                    step,
                }))
            }
            Ok(Claim::Existing(record)) => {
                let phase = if record.digest != digest {
                    Phase::Conflict
                } else if record.state == StepState::Done {
                    step.set(Phase::Done, Some(vec![Bytes::from(record.frames)]));
                    Phase::Done
                } else {
                    Phase::Elsewhere
                };
                if !matches!(phase, Phase::Done) {
                    step.set(phase.clone(), None);
                }
                self.live().remove(&key);
                match phase {
                    Phase::Conflict => Err(Refusal::StepConflict),
                    _ => Ok(Admission::Follow(self.follower(key, step))),
                }
            }
            Err(e) => {
                tracing::error!(error = %e, "the step's record could not be claimed; running it unrecorded");
                // Requests that met here meanwhile each try again on their own.
                step.set(Phase::Released, None);
                self.live().remove(&key);
                Ok(Admission::Unrecorded)
            }
        }
    }

    fn follower(self: &Arc<Self>, key: StepKey, step: Arc<LiveStep>) -> Follower {
        Follower {
            log: Arc::clone(self),
            key,
            step,
        }
    }

    /// Stops every running step `target` names, on this replica or another sharing the
    /// records, and waits for each run to end: how each ended, in no particular order. A step
    /// that is not running (finished, unknown, another owner's) is not in the answer.
    pub async fn cancel(&self, target: &CancelTarget) -> Result<Vec<Cancelled>, Refusal> {
        let local: Vec<(StepKey, Arc<LiveStep>)> = self
            .live()
            .iter()
            .filter(|(key, step)| {
                target.names(key) && matches!(step.lock().0, Phase::Claiming | Phase::Running)
            })
            .map(|(key, step)| (key.clone(), Arc::clone(step)))
            .collect();
        for (_, step) in &local {
            step.cancel.send_replace(true);
        }
        let marked = self.store.request_cancel(target).await.map_err(|e| {
            tracing::error!(error = %e, "a cancel could not be stored");
            Refusal::StepInterrupted
        })?;
        let mut ended = Vec::with_capacity(marked.len().max(local.len()));
        for (key, step) in local {
            if let Some(outcome) = step.ended().await {
                ended.push(Cancelled { key, outcome });
            }
        }
        for key in marked {
            if ended.iter().any(|c| c.key == key) {
                continue;
            }
            if let Some(outcome) = self.ended_elsewhere(&key).await {
                ended.push(Cancelled { key, outcome });
            }
        }
        Ok(ended)
    }

    /// How a step running on another replica ended, once it has: `None` when its record went.
    async fn ended_elsewhere(&self, key: &StepKey) -> Option<CancelOutcome> {
        loop {
            let record = match self.store.get(key).await {
                Ok(record) => record?,
                Err(_) => return Some(CancelOutcome::Interrupted),
            };
            if record.state == StepState::Done {
                return Some(CancelOutcome::of(&record.frames));
            }
            if OffsetDateTime::now_utc() - record.heartbeat_at > STALE {
                return Some(CancelOutcome::Interrupted);
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Deletes the records kept past their retention.
    pub async fn purge(&self) -> Result<u64, dpas_governance::steps::StepStoreError> {
        self.store.purge(OffsetDateTime::now_utc()).await
    }
}

/// The run of a claimed step: what it writes goes to the step's followers and, once it ends,
/// to the record.
#[derive(Debug)]
pub struct Recording {
    log: Arc<StepLog>,
    key: StepKey,
    step: Arc<LiveStep>,
}

impl Recording {
    pub(crate) fn live(&self) -> Arc<LiveStep> {
        Arc::clone(&self.step)
    }

    /// What the run watches for a cancel ([`StepLog::cancel`]).
    pub(crate) fn cancel_signal(&self) -> watch::Receiver<bool> {
        self.step.cancel_signal()
    }

    /// The step was refused before its run started: its claim is given up, and every request
    /// following it gets the same refusal.
    pub async fn refuse(self, refusal: &Refusal) {
        if let Err(e) = self.log.store.release(&self.key).await {
            tracing::warn!(error = %e, "a refused step's claim could not be released");
        }
        self.step.set(Phase::Refused(refusal.clone()), None);
        self.log.live().remove(&self.key);
    }

    /// Says in the record, every [`HEARTBEAT`] until the run ends, that this replica still
    /// runs the step (spawned on the current task set).
    pub(crate) fn spawn_heartbeat(&self) {
        let (log, key, mut changed) = (
            Arc::clone(&self.log),
            self.key.clone(),
            self.step.changed.subscribe(),
        );
        let step = Arc::clone(&self.step);
        tokio::task::spawn_local(async move {
            let mut ticks = tokio::time::interval(HEARTBEAT);
            ticks.tick().await;
            loop {
                tokio::select! {
                    _ = ticks.tick() => {
                        let now = OffsetDateTime::now_utc();
                        match log.store.heartbeat(&key, &log.replica, now).await {
                            // Asked through another replica: the run stops as if asked here.
                            Ok(true) => {
                                step.cancel.send_replace(true);
                            }
                            Ok(false) => {}
                            Err(e) => {
                                tracing::warn!(error = %e, "a running step's heartbeat was not stored");
                            }
                        }
                    }
                    changed = changed.changed() => if changed.is_err() { return },
                }
                if !matches!(step.lock().0, Phase::Running) {
                    return;
                }
            }
        });
    }

    /// The run has ended: its whole response goes to the record, then the step is done.
    pub(crate) async fn finish(self) {
        let body = self.step.body();
        let now = OffsetDateTime::now_utc();
        if let Err(e) = self.log.store.finish(&self.key, &body, now).await {
            tracing::error!(error = %e, "a finished step's record was not stored");
        }
        self.step.set(Phase::Done, None);
        self.log.live().remove(&self.key);
    }
}

/// A request for a step someone else claimed.
#[derive(Debug)]
pub struct Follower {
    log: Arc<StepLog>,
    key: StepKey,
    step: Arc<LiveStep>,
}

/// What a follower answers.
pub enum Followed {
    /// The step's lines: those already written, then the rest as the run writes them.
    Lines(futures_util::stream::BoxStream<'static, Bytes>),
    /// Its claim was given up elsewhere (its run was refused there): admit the request again.
    Again,
}

impl std::fmt::Debug for Followed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Lines(_) => "Lines",
            Self::Again => "Again",
        })
    }
}

impl Follower {
    /// The step's response body, once it is known what the step is: refused, a conflict, or
    /// lines to stream (from this replica's run or another's record).
    pub async fn lines(self) -> Result<Followed, Refusal> {
        let mut changed = self.step.changed.subscribe();
        loop {
            let phase = self.step.lock().0.clone();
            match phase {
                Phase::Claiming => {
                    if changed.changed().await.is_err() {
                        return Err(Refusal::StepInterrupted);
                    }
                }
                Phase::Conflict => return Err(Refusal::StepConflict),
                Phase::Refused(r) => return Err(r),
                Phase::Running | Phase::Done => return Ok(Followed::Lines(self.stream(changed))),
                Phase::Elsewhere => return self.elsewhere().await,
                Phase::Released => return Ok(Followed::Again),
            }
        }
    }

    fn stream(
        self,
        changed: watch::Receiver<u64>,
    ) -> futures_util::stream::BoxStream<'static, Bytes> {
        let step = self.step;
        Box::pin(futures_util::stream::unfold(
            (step, changed, 0usize),
            |(step, mut changed, next)| async move {
                loop {
                    let (line, done) = {
                        let state = step.lock();
                        (state.1.get(next).cloned(), matches!(state.0, Phase::Done))
                    };
                    if let Some(line) = line {
                        return Some((line, (step, changed, next + 1)));
                    }
                    if done || changed.changed().await.is_err() {
                        return None;
                    }
                }
            },
        ))
    }

    /// Another replica runs the step: its record, once finished.
    async fn elsewhere(self) -> Result<Followed, Refusal> {
        let waiting = &self.log.waiting;
        waiting.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let answer = self.wait_elsewhere().await;
        waiting.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
        answer
    }

    async fn wait_elsewhere(&self) -> Result<Followed, Refusal> {
        loop {
            let record = self
                .log
                .store
                .get(&self.key)
                .await
                .map_err(|_| Refusal::StepInterrupted)?;
            let Some(record) = record else {
                return Ok(Followed::Again);
            };
            if record.state == StepState::Done {
                let body = Bytes::from(record.frames);
                return Ok(Followed::Lines(Box::pin(futures_util::stream::iter([
                    body,
                ]))));
            }
            let age = OffsetDateTime::now_utc() - record.heartbeat_at;
            if age > STALE {
                return Err(Refusal::StepInterrupted);
            }
            tokio::time::sleep(POLL).await;
        }
    }
}
