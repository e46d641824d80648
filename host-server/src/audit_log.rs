//! The audit table: every entry the runtime's [`AuditHub`] records is appended to it by one
//! writer task per process, and `GET /api/audit` reads it back by cursor.
//!
//! The cursor is the table's `seq`, which only grows. On PostgreSQL writers append under an
//! advisory lock ([`LockKey::Audit`]), so `seq` order is commit order on every replica and a
//! reader that asks for `seq > since` never skips a row that commits after it read.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use sqlx::Row;
use tokio::sync::{mpsc, watch};

use crate::db::{Arg, Backend, Db, LockKey};
use crate::runtime::{AuditEntry, AuditHub};

/// Entries written per transaction at most.
const BATCH: usize = 256;
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
    /// Attaches a writer to `hub` that appends each entry it records to the audit table.
    /// Must be called inside a Tokio runtime.
    pub fn start(db: Db, hub: &AuditHub) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        let (done, written) = watch::channel(hub.recorded());
        hub.attach_sink(tx);
        tokio::spawn(write_loop(db.clone(), rx, done));
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
) {
    while let Some(first) = rx.recv().await {
        let mut batch = vec![first];
        while batch.len() < BATCH {
            match rx.try_recv() {
                Ok(next) => batch.push(next),
                Err(_) => break,
            }
        }
        let last = batch.last().map_or(0, |(n, _)| *n);
        for attempt in 1..=ATTEMPTS {
            match write_batch(&db, &batch).await {
                Ok(()) => break,
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

async fn write_batch(db: &Db, batch: &[(u64, Arc<AuditEntry>)]) -> Result<(), sqlx::Error> {
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
    // SQLite the batch is one statement on the direct connection.
    let mut session = match db.backend() {
        Backend::Sqlite => db.session().await?,
        Backend::Postgres => {
            let mut tx = db.transaction().await?;
            db.lock_in(&mut tx, LockKey::Audit).await?;
            tx
        }
    };
    session.execute(&sql, &args).await?;
    session.commit().await
}
