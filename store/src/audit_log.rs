//! The audit table: every entry the runtime's [`AuditHub`] records is appended to it by one
//! writer task per process, and `GET /api/audit` reads it back by cursor.
//!
//! The cursor is the table's `seq`, which only grows. On PostgreSQL writers append under an
//! advisory lock ([`LockKey::Audit`]), so `seq` order is commit order on every replica and a
//! reader that asks for `seq > since` never skips a row that commits after it read.
//!
//! Retention (`--audit-retention`): with a row limit, the batch the writer stores once a 64th
//! of the limit has been written since the last prune also deletes the rows more than the
//! limit behind the newest, at most [`PRUNE_MAX`] at a time, so an in-memory database stops
//! growing and no step waits behind one long delete. A cursor older than the oldest row kept
//! reads on from that row.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use sqlx::Row;
use tokio::sync::{mpsc, watch};

use dpas_governance::{AuditEntry, AuditHub};

use crate::conn::Arg;
use crate::db::{Backend, Db, LockKey};

/// Default audit rows kept by an in-memory database (`sqlite::memory:`): the table lives in
/// the process, so it is bounded there; a file or PostgreSQL keeps every entry by default.
pub const DEFAULT_MEMORY_AUDIT_ROWS: std::num::NonZeroU64 =
    std::num::NonZeroU64::new(10_000).unwrap();

/// How many entries the audit table keeps (`--audit-retention`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuditRetention {
    /// Every entry, for good.
    All,
    /// The newest this many entries; older ones are deleted by the audit writer, a batch at
    /// a time (`audit_log`).
    Rows(std::num::NonZeroU64),
}

impl AuditRetention {
    /// The default for a database URL: [`DEFAULT_MEMORY_AUDIT_ROWS`] in memory, else all.
    pub fn default_for(database_url: &str) -> Self {
        if crate::db::is_memory(database_url) {
            Self::Rows(DEFAULT_MEMORY_AUDIT_ROWS)
        } else {
            Self::All
        }
    }
}

/// Entries written per transaction at most.
const BATCH: usize = 256;
/// Rows one batch deletes at most: more than a batch adds, so a table over its limit (a
/// lowered `--audit-retention` on a file) shrinks a little with every batch.
const PRUNE_MAX: i64 = 4 * BATCH as i64;
/// Deletes what a row limit no longer keeps: rows more than `$1` behind the newest, and of
/// those the oldest `$2` only (the two bounds together are the smaller).
const PRUNE: &str = "DELETE FROM audit WHERE seq <= (SELECT MAX(seq) FROM audit) - $1 \
     AND seq < (SELECT MIN(seq) FROM audit) + $2";
/// Attempts at writing one batch before it is given up (and logged).
const ATTEMPTS: u32 = 5;
/// Most entries one `GET /api/audit` returns.
pub const MAX_LIMIT: i64 = 500;
/// Entries a `GET /api/audit` without `limit` returns.
pub const DEFAULT_LIMIT: i64 = 100;

/// This process's audit writer: how far it has written.
#[derive(Debug, Clone)]
pub struct AuditLog {
    db: Db,
    hub: AuditHub,
    written: watch::Receiver<u64>,
}

/// One stored entry and its cursor.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredEntry {
    pub seq: i64,
    pub entry: Value,
}

impl AuditLog {
    /// Attaches a writer to `hub` that appends each entry it records to the audit table and
    /// keeps the table within `retention`. Must be called inside a Tokio runtime.
    pub fn start(db: Db, hub: &AuditHub, retention: AuditRetention) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        let (done, written) = watch::channel(hub.recorded());
        hub.attach_sink(tx);
        let keep = match retention {
            AuditRetention::All => None,
            AuditRetention::Rows(n) => Some(i64::try_from(n.get()).unwrap_or(i64::MAX)),
        };
        tokio::spawn(write_loop(db.clone(), rx, done, keep));
        Self {
            db,
            hub: hub.clone(),
            written,
        }
    }

    /// Waits (at most `deadline`) until every entry recorded in this process before the call
    /// is stored, so a reader sees what it just caused.
    pub async fn flush(&self, deadline: Duration) {
        let target = self.hub.recorded();
        let mut written = self.written.clone();
        // A timeout (or a stopped writer) only means the read may miss the newest entries.
        let _ = tokio::time::timeout(deadline, written.wait_for(|n| *n >= target)).await;
    }

    /// Up to `limit` entries after `since`, oldest first; only `actor`'s when given.
    pub async fn read(
        &self,
        actor: Option<&str>,
        since: i64,
        limit: i64,
    ) -> Result<Vec<StoredEntry>, sqlx::Error> {
        let rows = match actor {
            Some(actor) => {
                sqlx::query(
                    "SELECT seq, entry FROM audit WHERE actor_id = $1 AND seq > $2 \
                     ORDER BY seq LIMIT $3",
                )
                .bind(actor)
                .bind(since)
                .bind(limit)
                .fetch_all(&*self.db)
                .await?
            }
            None => {
                sqlx::query("SELECT seq, entry FROM audit WHERE seq > $1 ORDER BY seq LIMIT $2")
                    .bind(since)
                    .bind(limit)
                    .fetch_all(&*self.db)
                    .await?
            }
        };
        rows.iter()
            .map(|r| {
                let text: String = r.try_get("entry")?;
                Ok(StoredEntry {
                    seq: r.try_get("seq")?,
                    entry: serde_json::from_str(&text)
                        .map_err(|e| sqlx::Error::Decode(Box::new(e)))?,
                })
            })
            .collect()
    }
}

async fn write_loop(
    db: Db,
    mut rx: mpsc::UnboundedReceiver<(u64, Arc<AuditEntry>)>,
    done: watch::Sender<u64>,
    keep: Option<i64>,
) {
    // Rows stored since the last prune; the first batch prunes (a file kept from a run with
    // another limit).
    let mut unpruned = i64::MAX;
    while let Some(first) = rx.recv().await {
        let mut batch = vec![first];
        while batch.len() < BATCH {
            match rx.try_recv() {
                Ok(next) => batch.push(next),
                Err(_) => break,
            }
        }
        let last = batch.last().map_or(0, |(n, _)| *n);
        unpruned = unpruned.saturating_add(i64::try_from(batch.len()).unwrap_or(i64::MAX));
        let prune = keep.filter(|&keep| unpruned >= prune_every(keep));
        for attempt in 1..=ATTEMPTS {
            match write_batch(&db, &batch, prune).await {
                Ok(()) => {
                    if prune.is_some() {
                        unpruned = 0;
                    }
                    break;
                }
                Err(e) if attempt == ATTEMPTS => {
                    tracing::error!(error = %e, lost = batch.len(), "audit entries could not be stored");
                }
                Err(e) => {
                    tracing::warn!(error = %e, attempt, "storing audit entries failed; retrying");
                    tokio::time::sleep(Duration::from_millis(200 * u64::from(attempt))).await;
                }
            }
        }
        done.send_replace(last);
    }
}

/// How many rows are stored between two prunes under a limit of `keep` rows: a 64th of it,
/// at most a [`BATCH`] (so a prune deletes fewer than [`PRUNE_MAX`] and keeps up). The table
/// then holds at most about 1.6% more than `keep`, and a prune's statement is paid once per
/// many steps rather than on every batch.
fn prune_every(keep: i64) -> i64 {
    (keep / 64).clamp(1, BATCH as i64)
}

/// Stores a batch in one statement and, given a row limit `prune`, prunes the table down to
/// it in the same session (on PostgreSQL the same transaction, under the same lock).
async fn write_batch(
    db: &Db,
    batch: &[(u64, Arc<AuditEntry>)],
    prune: Option<i64>,
) -> Result<(), sqlx::Error> {
    let mut texts = Vec::with_capacity(batch.len());
    for (_, entry) in batch {
        texts.push(
            serde_json::to_string(entry.as_ref()).map_err(|e| sqlx::Error::Encode(Box::new(e)))?,
        );
    }
    let sql = format!(
        "INSERT INTO audit (actor_id, entry) VALUES {}",
        Db::values_list(1, batch.len(), 2)
    );
    let mut args = Vec::with_capacity(batch.len() * 2);
    for ((_, entry), text) in batch.iter().zip(&texts) {
        args.extend([Arg::from(entry.actor_id.as_deref()), text.as_str().into()]);
    }
    // One statement is its own transaction, and SQLite has one writer at a time anyway: on
    // SQLite the batch is one statement on the direct connection (and the prune a second:
    // neither needs the other to be atomic).
    let mut conn = match db.backend() {
        Backend::Sqlite => db.conn().await?,
        Backend::Postgres => {
            let mut tx = db.transaction().await?;
            db.lock_in(&mut tx, LockKey::Audit).await?;
            tx
        }
    };
    conn.execute(&sql, &args).await?;
    if let Some(keep) = prune {
        conn.execute(PRUNE, &[keep.into(), PRUNE_MAX.into()])
            .await?;
    }
    conn.commit().await
}
