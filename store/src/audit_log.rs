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

use dpas_governance::audit_chain::{ChainFields, GENESIS};
use dpas_governance::{AuditEntry, AuditHub};

use crate::conn::{get, Arg, Conn};
use crate::db::{Db, LockKey};

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

/// The tenant whose chain the entries join: the deployment, as for budgets (every actor of
/// the servers on one database).
pub const TENANT: &str = "default";
/// Records one page of an export reads ([`AuditLog::export`]).
const EXPORT_PAGE: i64 = 500;

/// `at` of a chained record: UTC, microseconds, always this width
/// (`2026-01-02T03:04:05.123456Z`), so text order is time order.
const CHAIN_TIME: &[time::format_description::BorrowedFormatItem<'static>] = time::macros::format_description!(
    "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:6]Z"
);

/// `at` as a chained record's time ([`CHAIN_TIME`]).
pub fn chain_time(at: time::OffsetDateTime) -> String {
    at.to_offset(time::UtcOffset::UTC)
        .format(CHAIN_TIME)
        .unwrap_or_default()
}

/// An entry's RFC 3339 time as a chained record's; now when it does not parse.
fn chain_time_of(at: &str) -> String {
    let parsed = time::OffsetDateTime::parse(at, &time::format_description::well_known::Rfc3339);
    chain_time(parsed.unwrap_or_else(|_| time::OffsetDateTime::now_utc()))
}

/// Entries written per transaction at most.
const BATCH: usize = 256;
/// Rows one batch deletes at most: more than a batch adds, so a table over its limit (a
/// lowered `--audit-retention` on a file) shrinks a little with every batch.
const PRUNE_MAX: i64 = 4 * BATCH as i64;
/// The rows a row limit no longer keeps: rows more than `$1` behind the newest, and of those
/// the oldest `$2` only (the two bounds together are the smaller).
const PRUNED: &str = "seq <= (SELECT MAX(seq) FROM audit) - $1 \
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

/// The chained records an export covers: `lo..=hi` of the tenant, and the checkpoint line
/// that heads it (the seq and digest record `lo` follows), when known.
#[derive(Debug, Clone, PartialEq)]
pub struct ExportRange {
    pub lo: i64,
    pub hi: i64,
    pub checkpoint: Option<Value>,
}

impl AuditLog {
    /// The tenant's records from the first at or after `from` to the last before `to` (both
    /// [`chain_time`]s; `None` is open), every seq between them included, so the range has no
    /// gap even where replicas' clocks disagree; `None` when no record is in the range.
    pub async fn export_range(
        &self,
        from: Option<&str>,
        to: Option<&str>,
    ) -> Result<Option<ExportRange>, sqlx::Error> {
        let row = sqlx::query(
            "SELECT MIN(chain_seq) AS lo, MAX(chain_seq) AS hi FROM audit \
             WHERE tenant = $1 AND chain_seq IS NOT NULL AND at >= $2 AND ($3 IS NULL OR at < $3)",
        )
        .bind(TENANT)
        .bind(from.unwrap_or(""))
        .bind(to)
        .fetch_one(&*self.db)
        .await?;
        let (Some(lo), Some(hi)) = (
            row.try_get::<Option<i64>, _>("lo")?,
            row.try_get::<Option<i64>, _>("hi")?,
        ) else {
            return Ok(None);
        };
        let before = lo - 1;
        let mut digest = if before == 0 {
            Some(GENESIS.to_owned())
        } else {
            sqlx::query("SELECT digest FROM audit WHERE tenant = $1 AND chain_seq = $2")
                .bind(TENANT)
                .bind(before)
                .fetch_optional(&*self.db)
                .await?
                .map(|r| r.try_get::<String, _>("digest"))
                .transpose()?
        };
        if digest.is_none() {
            let mut conn = self.db.conn().await?;
            digest = checkpoint_of(&mut conn, TENANT)
                .await?
                .and_then(|(seq, digest)| (seq == before).then_some(digest));
        }
        Ok(Some(ExportRange {
            lo,
            hi,
            checkpoint: digest
                .map(|d| dpas_governance::audit_chain::checkpoint(TENANT, before, &d)),
        }))
    }

    /// The records of `range` as export lines, read a page at a time, oldest first.
    pub fn export(
        &self,
        range: ExportRange,
    ) -> impl futures_util::Stream<Item = Result<Value, sqlx::Error>> + 'static {
        let db = self.db.clone();
        let head = futures_util::stream::iter(range.checkpoint.map(Ok::<Value, sqlx::Error>));
        let pages = futures_util::stream::try_unfold(range.lo - 1, move |after| {
            let db = db.clone();
            async move {
                if after >= range.hi {
                    return Ok::<_, sqlx::Error>(None);
                }
                let rows = sqlx::query(
                    "SELECT chain_seq, at, prev, digest, entry FROM audit \
                     WHERE tenant = $1 AND chain_seq > $2 AND chain_seq <= $3 \
                     ORDER BY chain_seq LIMIT $4",
                )
                .bind(TENANT)
                .bind(after)
                .bind(range.hi)
                .bind(EXPORT_PAGE)
                .fetch_all(&*db)
                .await?;
                let mut lines = Vec::with_capacity(rows.len());
                let mut last = range.hi;
                for row in &rows {
                    let seq: i64 = row.try_get("chain_seq")?;
                    let (at, prev, digest, text): (String, String, String, String) = (
                        row.try_get("at")?,
                        row.try_get("prev")?,
                        row.try_get("digest")?,
                        row.try_get("entry")?,
                    );
                    let entry: Value = serde_json::from_str(&text)
                        .map_err(|e| sqlx::Error::Decode(Box::new(e)))?;
                    let fields = ChainFields {
                        seq,
                        tenant: TENANT,
                        at: &at,
                        prev: &prev,
                        entry: &entry,
                    };
                    lines.push(Ok(fields.record(&digest)));
                    last = seq;
                }
                // A page shorter than asked is the last (rows pruned meanwhile end it early).
                let next = if rows.len() < EXPORT_PAGE as usize {
                    range.hi
                } else {
                    last
                };
                Ok(Some((futures_util::stream::iter(lines), next)))
            }
        });
        futures_util::StreamExt::chain(head, futures_util::TryStreamExt::try_flatten(pages))
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

/// Stores a batch as the next records of the tenant's chain and, given a row limit `prune`,
/// prunes the table down to it, in one transaction: the chain's head is read and extended
/// under the audit lock (SQLite's write lock; on PostgreSQL the advisory lock every replica
/// takes), so two writers never give out one seq twice or fork the chain.
async fn write_batch(
    db: &Db,
    batch: &[(u64, Arc<AuditEntry>)],
    prune: Option<i64>,
) -> Result<(), sqlx::Error> {
    let mut values = Vec::with_capacity(batch.len());
    for (_, entry) in batch {
        values.push(
            serde_json::to_value(entry.as_ref()).map_err(|e| sqlx::Error::Encode(Box::new(e)))?,
        );
    }
    let mut conn = db.transaction().await?;
    db.lock_in(&mut conn, LockKey::Audit).await?;
    let (mut seq, mut prev) = head(&mut conn, TENANT).await?;
    let mut rows = Vec::with_capacity(batch.len());
    for ((_, entry), value) in batch.iter().zip(&values) {
        seq += 1;
        let at = chain_time_of(&entry.at);
        let fields = ChainFields {
            seq,
            tenant: TENANT,
            at: &at,
            prev: &prev,
            entry: value,
        };
        let digest = fields.digest();
        rows.push((seq, at, prev, value.to_string(), digest.clone()));
        prev = digest;
    }
    let sql = format!(
        "INSERT INTO audit (actor_id, entry, tenant, chain_seq, at, prev, digest) VALUES {}",
        Db::values_list(1, batch.len(), 7)
    );
    let mut args = Vec::with_capacity(batch.len() * 7);
    for ((_, entry), (seq, at, prev, text, digest)) in batch.iter().zip(&rows) {
        args.extend([
            Arg::from(entry.actor_id.as_deref()),
            text.as_str().into(),
            TENANT.into(),
            (*seq).into(),
            at.as_str().into(),
            prev.as_str().into(),
            digest.as_str().into(),
        ]);
    }
    conn.execute(&sql, &args).await?;
    if let Some(keep) = prune {
        prune_with_checkpoint(&mut conn, keep).await?;
    }
    conn.commit().await
}

/// The seq and digest the tenant's next record follows: its newest stored record's, else the
/// checkpoint's (every record pruned or none written yet), else the genesis.
async fn head(conn: &mut Conn, tenant: &str) -> Result<(i64, String), sqlx::Error> {
    let newest = conn
        .fetch(
            "SELECT chain_seq, digest FROM audit WHERE tenant = $1 AND chain_seq IS NOT NULL \
             ORDER BY chain_seq DESC LIMIT 1",
            &[tenant.into()],
            |row| Ok((get::<i64>(row, "chain_seq")?, get::<String>(row, "digest")?)),
        )
        .await?;
    if let Some(head) = newest.into_iter().next() {
        return Ok(head);
    }
    Ok(checkpoint_of(conn, tenant)
        .await?
        .unwrap_or_else(|| (0, GENESIS.to_owned())))
}

/// The tenant's checkpoint: the seq and digest of the last record pruned (seq 0 and the
/// genesis before any was).
async fn checkpoint_of(
    conn: &mut Conn,
    tenant: &str,
) -> Result<Option<(i64, String)>, sqlx::Error> {
    let rows = conn
        .fetch(
            "SELECT seq, digest FROM audit_checkpoint WHERE tenant = $1",
            &[tenant.into()],
            |row| Ok((get::<i64>(row, "seq")?, get::<String>(row, "digest")?)),
        )
        .await?;
    Ok(rows.into_iter().next())
}

/// Deletes what the row limit `keep` no longer keeps ([`PRUNE`]) and moves each tenant's
/// checkpoint to the last of its records deleted, so the oldest record kept still has a
/// known predecessor and an export from it verifies.
async fn prune_with_checkpoint(conn: &mut Conn, keep: i64) -> Result<(), sqlx::Error> {
    let bounds = [keep.into(), PRUNE_MAX.into()];
    let last_pruned = conn
        .fetch(
            &format!(
                "SELECT a.tenant, a.chain_seq, a.digest, a.at FROM audit a JOIN \
                 (SELECT tenant, MAX(chain_seq) AS last FROM audit \
                  WHERE {PRUNED} AND chain_seq IS NOT NULL GROUP BY tenant) p \
                 ON a.tenant = p.tenant AND a.chain_seq = p.last"
            ),
            &bounds,
            |row| {
                Ok((
                    get::<String>(row, "tenant")?,
                    get::<i64>(row, "chain_seq")?,
                    get::<String>(row, "digest")?,
                    get::<String>(row, "at")?,
                ))
            },
        )
        .await?;
    conn.execute(&format!("DELETE FROM audit WHERE {PRUNED}"), &bounds)
        .await?;
    for (tenant, seq, digest, at) in &last_pruned {
        conn.execute(
            "INSERT INTO audit_checkpoint (tenant, seq, digest, at) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (tenant) DO UPDATE SET seq = excluded.seq, digest = excluded.digest, \
             at = excluded.at",
            &[
                tenant.as_str().into(),
                (*seq).into(),
                digest.as_str().into(),
                at.as_str().into(),
            ],
        )
        .await?;
    }
    Ok(())
}
