//! Approval records in the database (table `approvals`).

use dpas_governance::approval::{
    apply_consume, apply_decide_consume, apply_decision, apply_transition, expire_if_due,
    is_pending_of, not_found, oldest_first, StoreFuture,
};
use dpas_governance::{
    ApprovalDecision, ApprovalRecord, ApprovalStatus, ApprovalStore, CapabilityError,
    CapabilityErrorCode,
};
use time::OffsetDateTime;

use crate::db::Db;

/// Approval records in the database (table `approvals`), so pending approvals survive a
/// restart and every replica sees the same ones. Each change is a read-modify-write of one
/// row inside a transaction that holds the row's lock (SQLite: the write lock; PostgreSQL:
/// `SELECT … FOR UPDATE`), so racing decisions from any number of replicas apply one by one
/// and exactly one claims a run.
#[derive(Debug, Clone)]
pub struct SqlApprovalStore {
    db: Db,
}

fn storage(e: impl std::fmt::Display) -> CapabilityError {
    tracing::error!(error = %e, "approval storage failed");
    CapabilityError::of(CapabilityErrorCode::InternalError)
}

impl SqlApprovalStore {
    /// Expects the `approvals` table of the crate's migrations.
    pub fn new(db: Db) -> Self {
        Self { db }
    }

    async fn write(
        conn: &mut sqlx::AnyConnection,
        record: &ApprovalRecord,
    ) -> Result<(), CapabilityError> {
        let text = serde_json::to_string(record).map_err(storage)?;
        sqlx::query(
            "INSERT INTO approvals (id, actor_id, requested_at, record, status, expires_at)
             VALUES ($1, $2, $3, $4, $5, $6)
             ON CONFLICT (id) DO UPDATE SET record = excluded.record, status = excluded.status",
        )
        .bind(&record.id)
        .bind(&record.actor.id)
        .bind(i64::try_from(record.requested_at.unix_timestamp_nanos()).unwrap_or(i64::MAX))
        .bind(text)
        .bind(record.status.as_str())
        .bind(record.expires_at.unix_timestamp())
        .execute(&mut *conn)
        .await
        .map_err(storage)?;
        Ok(())
    }

    fn parse_rows(rows: Vec<sqlx::any::AnyRow>) -> Result<Vec<ApprovalRecord>, CapabilityError> {
        use sqlx::Row;
        rows.into_iter()
            .map(|r| {
                let text: String = r.try_get("record").map_err(storage)?;
                serde_json::from_str(&text).map_err(storage)
            })
            .collect()
    }

    /// Reads (locking the row), changes and writes one record in one transaction: the
    /// check-and-set.
    async fn update(
        &self,
        id: &str,
        f: impl FnOnce(&mut ApprovalRecord) -> Result<(), CapabilityError>,
    ) -> Result<ApprovalRecord, CapabilityError> {
        let mut tx = self.db.begin().await.map_err(storage)?;
        let rows = sqlx::query(&format!(
            "SELECT record FROM approvals WHERE id = $1{}",
            self.db.for_update()
        ))
        .bind(id)
        .fetch_all(&mut *tx)
        .await
        .map_err(storage)?;
        let mut record = Self::parse_rows(rows)?.pop().ok_or_else(not_found)?;
        let before = record.clone();
        let outcome = f(&mut record);
        // A lazily expired record is written back even when the change itself was refused.
        if record != before {
            Self::write(&mut tx, &record).await?;
        }
        tx.commit().await.map_err(storage)?;
        outcome.map(|()| record)
    }
}

impl ApprovalStore for SqlApprovalStore {
    fn insert(&self, record: ApprovalRecord) -> StoreFuture<'_, ()> {
        Box::pin(async move {
            let mut conn = self.db.acquire().await.map_err(storage)?;
            Self::write(&mut conn, &record).await
        })
    }

    fn get<'a>(
        &'a self,
        id: &'a str,
        now: OffsetDateTime,
    ) -> StoreFuture<'a, Option<ApprovalRecord>> {
        Box::pin(async move {
            match self
                .update(id, |r| {
                    expire_if_due(r, now);
                    Ok(())
                })
                .await
            {
                Ok(r) => Ok(Some(r)),
                Err(e) if e.code == CapabilityErrorCode::ApprovalNotFound => Ok(None),
                Err(e) => Err(e),
            }
        })
    }

    fn list<'a>(
        &'a self,
        actor_id: &'a str,
        now: OffsetDateTime,
    ) -> StoreFuture<'a, Vec<ApprovalRecord>> {
        Box::pin(async move {
            use sqlx::Row;
            let rows = sqlx::query(
                "SELECT id FROM approvals WHERE actor_id = $1 ORDER BY requested_at, id",
            )
            .bind(actor_id)
            .fetch_all(&*self.db)
            .await
            .map_err(storage)?;
            let mut out = Vec::with_capacity(rows.len());
            for row in rows {
                let id: String = row.try_get("id").map_err(storage)?;
                if let Some(r) = self.get(&id, now).await? {
                    out.push(r);
                }
            }
            Ok(out)
        })
    }

    fn decide<'a>(
        &'a self,
        id: &'a str,
        decision: ApprovalDecision,
        now: OffsetDateTime,
    ) -> StoreFuture<'a, ApprovalRecord> {
        Box::pin(self.update(id, move |r| apply_decision(r, decision, now)))
    }

    fn consume<'a>(
        &'a self,
        id: &'a str,
        execution_id: &'a str,
        now: OffsetDateTime,
    ) -> StoreFuture<'a, ApprovalRecord> {
        Box::pin(self.update(id, move |r| apply_consume(r, execution_id, now)))
    }

    fn decide_and_consume<'a>(
        &'a self,
        id: &'a str,
        decision: ApprovalDecision,
        execution_id: &'a str,
        now: OffsetDateTime,
    ) -> StoreFuture<'a, ApprovalRecord> {
        Box::pin(self.update(id, move |r| {
            apply_decide_consume(r, decision, execution_id, now)
        }))
    }

    fn transition<'a>(
        &'a self,
        id: &'a str,
        from: &'a [ApprovalStatus],
        to: ApprovalStatus,
        now: OffsetDateTime,
    ) -> StoreFuture<'a, ApprovalRecord> {
        Box::pin(self.update(id, move |r| apply_transition(r, from, to, now)))
    }

    fn finish<'a>(&'a self, id: &'a str, outcome: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            self.update(id, |r| {
                r.outcome = Some(outcome.to_owned());
                Ok(())
            })
            .await
            .map(drop)
        })
    }

    fn with_status<'a>(
        &'a self,
        statuses: &'a [ApprovalStatus],
        now: OffsetDateTime,
    ) -> StoreFuture<'a, Vec<ApprovalRecord>> {
        Box::pin(async move {
            let mut out = Vec::new();
            for status in statuses {
                let rows = sqlx::query("SELECT record FROM approvals WHERE status = $1")
                    .bind(status.as_str())
                    .fetch_all(&*self.db)
                    .await
                    .map_err(storage)?;
                for mut record in Self::parse_rows(rows)? {
                    expire_if_due(&mut record, now);
                    if statuses.contains(&record.status) {
                        out.push(record);
                    }
                }
            }
            oldest_first(&mut out);
            Ok(out)
        })
    }

    fn pending_of<'a>(
        &'a self,
        actor_id: &'a str,
        now: OffsetDateTime,
    ) -> StoreFuture<'a, Vec<ApprovalRecord>> {
        Box::pin(async move {
            // A plain indexed read: no transaction, no lazy-expiry write-back, and only
            // pending records are touched however many decided ones are stored.
            let rows = sqlx::query(
                "SELECT record FROM approvals WHERE actor_id = $1 AND status = 'pending'
                 AND expires_at > $2 ORDER BY requested_at, id",
            )
            .bind(actor_id)
            .bind(now.unix_timestamp())
            .fetch_all(&*self.db)
            .await
            .map_err(storage)?;
            let records = Self::parse_rows(rows)?;
            Ok(records
                .into_iter()
                .filter(|r| is_pending_of(r, actor_id, now))
                .collect())
        })
    }

    fn purge(&self, cutoff: OffsetDateTime) -> StoreFuture<'_, u64> {
        Box::pin(async move {
            let done = sqlx::query("DELETE FROM approvals WHERE expires_at < $1")
                .bind(cutoff.unix_timestamp())
                .execute(&*self.db)
                .await
                .map_err(storage)?;
            Ok(done.rows_affected())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn sqlite_store_life_cycle() {
        let db = crate::db::connect("sqlite::memory:").await.expect("db");
        dpas_governance::approval::conformance::life_cycle(&SqlApprovalStore::new(db)).await;
    }
}
