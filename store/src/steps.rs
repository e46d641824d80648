//! Step records in the database (table `step_records`): one row per step an owner posted, kept
//! until its `expires_at`. A claim is one `INSERT … ON CONFLICT DO NOTHING`, so of any number
//! of replicas claiming one step at once exactly one inserts it. The statements run on the
//! step's connection ([`Db::conn`]: inline on SQLite), as the thread's do.
//!
//! On an in-memory database the server keeps at most [`MEMORY_STEP_ROWS`] records, the newest
//! ([`SqlStepStore::capped`]): the database lives in the process, and a step's record holds its
//! whole response.

use dpas_governance::steps::{
    CancelTarget, Claim, StepKey, StepRecord, StepState, StepStore, StepStoreError,
};
use futures_util::future::BoxFuture;
use time::OffsetDateTime;

use crate::conn::{get, Arg, Cells};
use crate::db::Db;

/// Step records an in-memory database keeps at most (older ones go as new ones are claimed).
pub const MEMORY_STEP_ROWS: i64 = 2_000;
/// An in-memory database trims its records every this many claims.
const TRIM_EVERY: u64 = 64;

/// Step records on the server's database.
#[derive(Debug)]
pub struct SqlStepStore {
    db: Db,
    /// `Some(rows)` on an in-memory database: the most records kept.
    cap: Option<i64>,
    claims: std::sync::atomic::AtomicU64,
}

impl SqlStepStore {
    /// Expects the `step_records` table of the crate's migrations.
    pub fn new(db: Db) -> Self {
        Self {
            db,
            cap: None,
            claims: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// The same store keeping at most `rows` records, the newest ([`MEMORY_STEP_ROWS`] for an
    /// in-memory database).
    pub fn capped(self, rows: i64) -> Self {
        Self {
            cap: Some(rows.max(1)),
            ..self
        }
    }
}

fn storage(e: impl std::fmt::Display) -> StepStoreError {
    StepStoreError(e.to_string())
}

fn nanos(t: OffsetDateTime) -> i64 {
    i64::try_from(t.unix_timestamp_nanos()).unwrap_or(i64::MAX)
}

fn index(key: &StepKey) -> i64 {
    i64::try_from(key.step_index).unwrap_or(i64::MAX)
}

fn key_args(key: &StepKey) -> [Arg<'_>; 4] {
    [
        key.owner.as_str().into(),
        key.conversation_id.as_str().into(),
        key.turn_id.as_str().into(),
        index(key).into(),
    ]
}

const KEY: &str = "owner = $1 AND conversation_id = $2 AND turn_id = $3 AND step_index = $4";

fn record_from(row: &dyn Cells) -> Result<StepRecord, sqlx::Error> {
    let state: String = get(row, "state")?;
    let frames: Option<String> = get(row, "frames")?;
    let heartbeat: i64 = get(row, "heartbeat_at")?;
    Ok(StepRecord {
        digest: get(row, "digest")?,
        state: if state == "done" {
            StepState::Done
        } else {
            StepState::Running
        },
        frames: frames.map(String::into_bytes).unwrap_or_default(),
        replica: get(row, "replica")?,
        heartbeat_at: OffsetDateTime::from_unix_timestamp_nanos(i128::from(heartbeat))
            .unwrap_or(OffsetDateTime::UNIX_EPOCH),
    })
}

impl SqlStepStore {
    async fn read(&self, key: &StepKey) -> Result<Option<StepRecord>, StepStoreError> {
        let mut conn = self.db.conn().await.map_err(storage)?;
        let sql = format!(
            "SELECT digest, state, frames, replica, heartbeat_at FROM step_records WHERE {KEY}"
        );
        let mut rows = conn
            .fetch(&sql, &key_args(key), record_from)
            .await
            .map_err(storage)?;
        Ok(rows.pop())
    }

    /// On an in-memory database, every [`TRIM_EVERY`] claims: the records past the newest
    /// [`MEMORY_STEP_ROWS`] go.
    async fn trim(&self) -> Result<(), StepStoreError> {
        let Some(cap) = self.cap else { return Ok(()) };
        let n = self
            .claims
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if n % TRIM_EVERY != TRIM_EVERY - 1 {
            return Ok(());
        }
        let mut conn = self.db.conn().await.map_err(storage)?;
        conn.execute(
            "DELETE FROM step_records WHERE heartbeat_at < \
             (SELECT heartbeat_at FROM step_records ORDER BY heartbeat_at DESC LIMIT 1 OFFSET $1)",
            &[(cap - 1).into()],
        )
        .await
        .map_err(storage)?;
        Ok(())
    }
}

impl StepStore for SqlStepStore {
    fn claim<'a>(
        &'a self,
        key: &'a StepKey,
        digest: &'a str,
        replica: &'a str,
        now: OffsetDateTime,
        expires_at: OffsetDateTime,
    ) -> BoxFuture<'a, Result<Claim, StepStoreError>> {
        Box::pin(async move {
            self.trim().await?;
            let [owner, conversation, turn, step] = key_args(key);
            let args = [
                owner,
                conversation,
                turn,
                step,
                digest.into(),
                replica.into(),
                nanos(now).into(),
                expires_at.unix_timestamp().into(),
            ];
            // A record released between a refused insert and the read is claimed again.
            for _ in 0..3 {
                let inserted = {
                    let mut conn = self.db.conn().await.map_err(storage)?;
                    conn.execute(
                        "INSERT INTO step_records \
                         (owner, conversation_id, turn_id, step_index, digest, state, replica, \
                          heartbeat_at, expires_at) \
                         VALUES ($1, $2, $3, $4, $5, 'running', $6, $7, $8) \
                         ON CONFLICT DO NOTHING",
                        &args,
                    )
                    .await
                    .map_err(storage)?
                };
                if inserted == 1 {
                    return Ok(Claim::Claimed);
                }
                if let Some(record) = self.read(key).await? {
                    return Ok(Claim::Existing(record));
                }
            }
            Err(StepStoreError(
                "the step's record changed under three claims in a row".to_owned(),
            ))
        })
    }

    fn get<'a>(
        &'a self,
        key: &'a StepKey,
    ) -> BoxFuture<'a, Result<Option<StepRecord>, StepStoreError>> {
        Box::pin(self.read(key))
    }

    fn heartbeat<'a>(
        &'a self,
        key: &'a StepKey,
        replica: &'a str,
        now: OffsetDateTime,
    ) -> BoxFuture<'a, Result<bool, StepStoreError>> {
        Box::pin(async move {
            let [owner, conversation, turn, step] = key_args(key);
            let mut conn = self.db.conn().await.map_err(storage)?;
            let asked = conn
                .fetch(
                    &format!(
                        "UPDATE step_records SET heartbeat_at = $5 \
                         WHERE {KEY} AND replica = $6 AND state = 'running' \
                         RETURNING cancel_requested"
                    ),
                    &[
                        owner,
                        conversation,
                        turn,
                        step,
                        nanos(now).into(),
                        replica.into(),
                    ],
                    |row| get::<i64>(row, "cancel_requested"),
                )
                .await
                .map_err(storage)?;
            Ok(asked.first().is_some_and(|a| *a != 0))
        })
    }

    fn request_cancel<'a>(
        &'a self,
        target: &'a CancelTarget,
    ) -> BoxFuture<'a, Result<Vec<StepKey>, StepStoreError>> {
        Box::pin(async move {
            let step = target
                .step_index
                .map(|s| i64::try_from(s).unwrap_or(i64::MAX));
            let mut args: Vec<Arg<'_>> = vec![
                target.owner.as_str().into(),
                target.conversation_id.as_str().into(),
            ];
            let mut sql = String::from(
                "UPDATE step_records SET cancel_requested = 1 \
                 WHERE owner = $1 AND conversation_id = $2 AND state = 'running'",
            );
            if let Some(turn) = &target.turn_id {
                args.push(turn.as_str().into());
                sql.push_str(&format!(" AND turn_id = ${}", args.len()));
            }
            if let Some(step) = step {
                args.push(step.into());
                sql.push_str(&format!(" AND step_index = ${}", args.len()));
            }
            sql.push_str(" RETURNING turn_id, step_index");
            let mut conn = self.db.conn().await.map_err(storage)?;
            conn.fetch(&sql, &args, |row| {
                let index: i64 = get(row, "step_index")?;
                Ok(StepKey {
                    owner: target.owner.clone(),
                    conversation_id: target.conversation_id.clone(),
                    turn_id: get(row, "turn_id")?,
                    step_index: u64::try_from(index).unwrap_or_default(),
                })
            })
            .await
            .map_err(storage)
        })
    }

    fn finish<'a>(
        &'a self,
        key: &'a StepKey,
        frames: &'a [u8],
        now: OffsetDateTime,
    ) -> BoxFuture<'a, Result<(), StepStoreError>> {
        Box::pin(async move {
            // NDJSON of JSON values is UTF-8; anything else is stored as the lossy text.
            let text = String::from_utf8_lossy(frames);
            let [owner, conversation, turn, step] = key_args(key);
            let mut conn = self.db.conn().await.map_err(storage)?;
            conn.execute(
                &format!(
                    "UPDATE step_records SET state = 'done', frames = $5, heartbeat_at = $6 \
                     WHERE {KEY}"
                ),
                &[
                    owner,
                    conversation,
                    turn,
                    step,
                    text.as_ref().into(),
                    nanos(now).into(),
                ],
            )
            .await
            .map_err(storage)?;
            Ok(())
        })
    }

    fn release<'a>(&'a self, key: &'a StepKey) -> BoxFuture<'a, Result<(), StepStoreError>> {
        Box::pin(async move {
            let mut conn = self.db.conn().await.map_err(storage)?;
            conn.execute(
                &format!("DELETE FROM step_records WHERE {KEY} AND state = 'running'"),
                &key_args(key),
            )
            .await
            .map_err(storage)?;
            Ok(())
        })
    }

    fn purge(&self, now: OffsetDateTime) -> BoxFuture<'_, Result<u64, StepStoreError>> {
        Box::pin(async move {
            let mut conn = self.db.conn().await.map_err(storage)?;
            conn.execute(
                "DELETE FROM step_records WHERE expires_at < $1",
                &[now.unix_timestamp().into()],
            )
            .await
            .map_err(storage)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(step: u64) -> StepKey {
        StepKey {
            owner: "carla@example.com".into(),
            conversation_id: "cnv_1".into(),
            turn_id: "trn_1".into(),
            step_index: step,
        }
    }

    #[tokio::test]
    async fn a_step_is_claimed_once_finished_once_and_purged_after_its_time() {
        let store = SqlStepStore::new(crate::db::connect("sqlite::memory:").await.unwrap());
        let t0 = OffsetDateTime::from_unix_timestamp(1_800_000_000).unwrap();
        let later = t0 + std::time::Duration::from_secs(600);
        assert_eq!(
            store
                .claim(&key(0), "d1", "rpl_a", t0, later)
                .await
                .unwrap(),
            Claim::Claimed
        );
        let Claim::Existing(running) = store
            .claim(&key(0), "d2", "rpl_b", t0, later)
            .await
            .unwrap()
        else {
            panic!("a second claim finds the first");
        };
        assert_eq!(
            (
                running.digest.as_str(),
                running.state,
                running.replica.as_str()
            ),
            ("d1", StepState::Running, "rpl_a")
        );
        assert!(running.frames.is_empty());

        let beat = t0 + std::time::Duration::from_secs(2);
        assert!(!store.heartbeat(&key(0), "rpl_b", beat).await.unwrap());
        assert_eq!(
            store.get(&key(0)).await.unwrap().unwrap().heartbeat_at,
            t0,
            "not b's"
        );
        assert!(!store.heartbeat(&key(0), "rpl_a", beat).await.unwrap());
        assert_eq!(
            store.get(&key(0)).await.unwrap().unwrap().heartbeat_at,
            beat
        );

        // A cancel names the owner's running steps only; the next heartbeat hears it.
        let mut target = CancelTarget {
            owner: "someone@example.com".into(),
            conversation_id: "cnv_1".into(),
            turn_id: None,
            step_index: None,
        };
        assert!(store.request_cancel(&target).await.unwrap().is_empty());
        target.owner = "carla@example.com".into();
        target.turn_id = Some("trn_2".into());
        assert!(store.request_cancel(&target).await.unwrap().is_empty());
        target.turn_id = Some("trn_1".into());
        target.step_index = Some(0);
        assert_eq!(store.request_cancel(&target).await.unwrap(), vec![key(0)]);
        assert!(store.heartbeat(&key(0), "rpl_a", beat).await.unwrap());

        store
            .finish(&key(0), b"{\"type\":\"step-finish\"}\n", beat)
            .await
            .unwrap();
        let done = store.get(&key(0)).await.unwrap().unwrap();
        assert_eq!(done.state, StepState::Done);
        assert_eq!(done.frames, b"{\"type\":\"step-finish\"}\n");
        // A finished step is not marked by a cancel.
        assert!(store.request_cancel(&target).await.unwrap().is_empty());
        // A finished record is not released.
        store.release(&key(0)).await.unwrap();
        assert!(store.get(&key(0)).await.unwrap().is_some());

        // Released, a running claim is gone and the step can be claimed again.
        assert_eq!(
            store
                .claim(&key(1), "d1", "rpl_a", t0, later)
                .await
                .unwrap(),
            Claim::Claimed
        );
        store.release(&key(1)).await.unwrap();
        assert_eq!(store.get(&key(1)).await.unwrap(), None);

        assert_eq!(
            store.purge(later).await.unwrap(),
            0,
            "kept until expires_at"
        );
        assert_eq!(
            store
                .purge(later + std::time::Duration::from_secs(1))
                .await
                .unwrap(),
            1
        );
        assert_eq!(store.get(&key(0)).await.unwrap(), None);
    }

    #[tokio::test]
    async fn an_in_memory_database_keeps_the_newest_records_only() {
        let store = SqlStepStore::new(crate::db::connect("sqlite::memory:").await.unwrap())
            .capped(MEMORY_STEP_ROWS);
        let t0 = OffsetDateTime::from_unix_timestamp(1_800_000_000).unwrap();
        let claims = MEMORY_STEP_ROWS as u64 + 2 * TRIM_EVERY;
        for i in 0..claims {
            let at = t0 + std::time::Duration::from_secs(i);
            store
                .claim(
                    &key(i),
                    "d",
                    "rpl_a",
                    at,
                    at + std::time::Duration::from_secs(600),
                )
                .await
                .unwrap();
        }
        // The step's connection is one at a time on SQLite: let go of it before the reads below.
        let count = {
            let mut conn = store.db.conn().await.unwrap();
            let n = conn
                .fetch("SELECT COUNT(*) AS n FROM step_records", &[], |r| {
                    get::<i64>(r, "n")
                })
                .await
                .unwrap();
            n[0]
        };
        assert!(count <= MEMORY_STEP_ROWS + TRIM_EVERY as i64, "{count}");
        assert!(count >= MEMORY_STEP_ROWS, "{count}");
        assert_eq!(store.get(&key(0)).await.unwrap(), None, "the oldest went");
        assert!(store.get(&key(claims - 1)).await.unwrap().is_some());
    }
}
