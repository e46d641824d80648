//! The audit stream: one broadcast channel; each subscriber reads through its own bounded
//! buffer that counts what it had to drop and discloses only its actor's entries.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde::Serialize;
use serde_json::Value;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;
use tokio::sync::broadcast;

use super::types::Correlation;

/// `type` of the entry that says how a governed call ended (every call the pipeline answers,
/// and every approved run): its surface, outcome, error code and the digest of its input.
/// Kept for the audit trail only: a step does not forward it as an inspector frame.
pub const OPERATION_OUTCOME: &str = "operation.outcome";
/// `type` of the entry that says what one step's catalog offered the model, and what it
/// withheld and why.
pub const CATALOG_COMPOSED: &str = "catalog.composed";
/// `type` of the entry of a browser tool's result, recorded once: when the thread first
/// stores it as the answer to its call.
pub const BROWSER_RESULT: &str = "browser.result";

/// Most entries a subscriber keeps unread; beyond this they are counted as dropped.
pub const SUBSCRIBER_CAPACITY: usize = 200;
/// Ring size of the shared channel; a subscriber that falls this far behind loses entries.
pub const CHANNEL_CAPACITY: usize = 4096;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AuditSource {
    /// The application's own domain facts.
    Domain,
    /// The governed runtime's pipeline events.
    Runtime,
    /// Host-loop facts (catalog reductions and the like).
    Host,
}

/// One audit entry. Carries no input or output payloads.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditEntry {
    /// `aud_<n>`, increasing per process.
    pub id: String,
    pub at: String,
    pub source: AuditSource,
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actor_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capability_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub execution_id: Option<String>,
    pub correlation: Correlation,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

/// What a caller supplies to record an entry; id and timestamp are added by the hub.
#[derive(Debug, Clone)]
pub struct AuditDraft {
    pub source: AuditSource,
    pub kind: String,
    pub actor_id: Option<String>,
    pub capability_id: Option<String>,
    pub execution_id: Option<String>,
    pub correlation: Correlation,
    pub data: Option<Value>,
}

impl AuditDraft {
    pub fn new(source: AuditSource, kind: impl Into<String>) -> Self {
        Self {
            source,
            kind: kind.into(),
            actor_id: None,
            capability_id: None,
            execution_id: None,
            correlation: Correlation::default(),
            data: None,
        }
    }
}

/// Where entries are also sent to be stored, each with its number in this hub.
pub type AuditSinkSender = tokio::sync::mpsc::UnboundedSender<(u64, Arc<AuditEntry>)>;

/// The fan-out point. Cheap to clone.
#[derive(Debug, Clone)]
pub struct AuditHub {
    tx: broadcast::Sender<Arc<AuditEntry>>,
    seq: Arc<AtomicU64>,
    /// The store's queue, once attached ([`AuditHub::attach_sink`]). Numbering and sending
    /// happen under its lock, so the store receives entries in number order.
    sink: Arc<Mutex<Option<AuditSinkSender>>>,
}

impl Default for AuditHub {
    fn default() -> Self {
        Self::new()
    }
}

impl AuditHub {
    pub fn new() -> Self {
        let (tx, _) = broadcast::channel(CHANNEL_CAPACITY);
        Self {
            tx,
            seq: Arc::new(AtomicU64::new(0)),
            sink: Arc::default(),
        }
    }

    /// Sends every entry recorded from now on to `sink` too (the audit table's writer).
    pub fn attach_sink(&self, sink: AuditSinkSender) {
        *self
            .sink
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(sink);
    }

    /// How many entries this hub has numbered so far.
    pub fn recorded(&self) -> u64 {
        self.seq.load(Ordering::Acquire)
    }

    /// Records an entry; with no subscriber it is simply not delivered (best effort).
    pub fn record(&self, draft: AuditDraft) -> Arc<AuditEntry> {
        let sink = self
            .sink
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let n = self.seq.fetch_add(1, Ordering::AcqRel) + 1;
        let at = OffsetDateTime::now_utc()
            .format(&Rfc3339)
            .unwrap_or_default();
        let entry = Arc::new(AuditEntry {
            id: format!("aud_{n}"),
            at,
            source: draft.source,
            kind: draft.kind,
            actor_id: draft.actor_id,
            capability_id: draft.capability_id,
            execution_id: draft.execution_id,
            correlation: draft.correlation,
            data: draft.data,
        });
        tracing::debug!(target: "audit", id = %entry.id, kind = %entry.kind, capability = ?entry.capability_id, actor = ?entry.actor_id);
        if let Some(sink) = sink.as_ref() {
            // An error only means the writer has stopped (the runtime is shutting down).
            let _ = sink.send((n, Arc::clone(&entry)));
        }
        drop(sink);
        // An error only means nobody is listening.
        let _ = self.tx.send(Arc::clone(&entry));
        entry
    }

    /// A reader that sees entries recorded from now on. With `actor_id`, only that actor's
    /// entries are disclosed and actor-less ones never are.
    pub fn subscribe(&self, actor_id: Option<&str>) -> AuditReader {
        AuditReader {
            rx: self.tx.subscribe(),
            actor_id: actor_id.map(str::to_owned),
            pending: VecDeque::new(),
            dropped: 0,
            capacity: SUBSCRIBER_CAPACITY,
            only: None,
        }
    }
}

/// A bounded, filtering view of the audit stream for one subscriber.
#[derive(Debug)]
pub struct AuditReader {
    rx: broadcast::Receiver<Arc<AuditEntry>>,
    actor_id: Option<String>,
    pending: VecDeque<Arc<AuditEntry>>,
    dropped: u64,
    capacity: usize,
    /// Entries outside it are neither kept nor counted as dropped.
    only: Option<fn(&AuditEntry) -> bool>,
}

impl AuditReader {
    /// The same reader, admitting only the entries `admit` accepts (those it refuses are
    /// neither kept nor counted as dropped).
    pub fn only(mut self, admit: fn(&AuditEntry) -> bool) -> Self {
        self.only = Some(admit);
        self
    }

    fn admits(&self, entry: &AuditEntry) -> bool {
        if self.only.is_some_and(|admit| !admit(entry)) {
            return false;
        }
        match &self.actor_id {
            None => true,
            Some(actor) => entry.actor_id.as_deref() == Some(actor.as_str()),
        }
    }

    fn accept(&mut self, entry: Arc<AuditEntry>) {
        if !self.admits(&entry) {
            return;
        }
        if self.pending.len() < self.capacity {
            self.pending.push_back(entry);
        } else {
            self.dropped += 1;
        }
    }

    /// Moves everything delivered so far into the bounded buffer.
    fn pump(&mut self) {
        loop {
            match self.rx.try_recv() {
                Ok(entry) => self.accept(entry),
                // Entries overwritten in the shared ring are lost to this reader; count them.
                Err(broadcast::error::TryRecvError::Lagged(n)) => self.dropped += n,
                Err(
                    broadcast::error::TryRecvError::Empty | broadcast::error::TryRecvError::Closed,
                ) => break,
            }
        }
    }

    /// The next admitted entry if one is already available.
    pub fn try_next(&mut self) -> Option<Arc<AuditEntry>> {
        self.pump();
        self.pending.pop_front()
    }

    /// Every admitted entry available now, oldest first.
    pub fn drain(&mut self) -> Vec<Arc<AuditEntry>> {
        self.pump();
        self.pending.drain(..).collect()
    }

    /// Waits for the next admitted entry; `None` once the hub is gone.
    pub async fn next(&mut self) -> Option<Arc<AuditEntry>> {
        if let Some(e) = self.try_next() {
            return Some(e);
        }
        loop {
            match self.rx.recv().await {
                Ok(entry) => {
                    self.accept(entry);
                    if let Some(e) = self.pending.pop_front() {
                        return Some(e);
                    }
                }
                Err(broadcast::error::RecvError::Lagged(n)) => self.dropped += n,
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    }

    /// How many admitted entries this reader could not keep, counting everything delivered so far.
    pub fn dropped(&mut self) -> u64 {
        self.pump();
        self.dropped
    }
}
