//! Usage rows and budgets in the database (tables `usage_rows`, `usage_budgets`,
//! `usage_holds`). Every addition is an atomic `… SET n = n + excluded.n` upsert, and an
//! admission is one transaction that locks each scope's row ([`Db::for_update`]; SQLite's
//! transaction holds the write lock), reads what is spent and held, and holds its share: two
//! replicas admitting steps against one budget take turns, so neither counts without the
//! other.

use dpas_governance::usage::{
    Admission, BudgetScope, Left, Spent, UsageFuture, UsageRow, UsageStore, UsageStoreError,
};

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::conn::{get, Arg, Cells, Conn};
use crate::db::{Backend, Db};

/// Usage and budgets on the server's database.
#[derive(Debug, Clone)]
pub struct SqlUsageStore {
    db: Db,
    /// Settles so far: picks each settle's shard in turn.
    settles: Arc<AtomicU64>,
}

/// The rows a usage key's totals are spread over on PostgreSQL (see `add_rows`); SQLite,
/// with one writer at a time, keeps one.
const PG_SHARDS: u64 = 16;

impl SqlUsageStore {
    /// Expects the usage tables of the crate's migrations.
    pub fn new(db: Db) -> Self {
        Self {
            db,
            settles: Arc::default(),
        }
    }
}

fn storage(e: impl std::fmt::Display) -> UsageStoreError {
    UsageStoreError(e.to_string())
}

fn int(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn count(row: &dyn Cells, column: &str) -> Result<u64, sqlx::Error> {
    Ok(u64::try_from(get::<i64>(row, column)?).unwrap_or(0))
}

/// What a scope's row says.
#[derive(Debug, Clone, Copy, Default)]
struct Ledger {
    tokens: u64,
    nano_usd: u64,
    step_tokens: u64,
    step_nano_usd: u64,
}

fn left_of(scope: &BudgetScope, ledger: Ledger) -> Left {
    Left {
        tokens: scope.tokens.map(|l| l.saturating_sub(ledger.tokens)),
        nano_usd: scope.nano_usd.map(|l| l.saturating_sub(ledger.nano_usd)),
        spent_tokens: ledger.tokens,
        spent_nano_usd: ledger.nano_usd,
    }
}

/// What a step holds of one dimension: the largest step seen, at most what is free; the whole
/// remainder before any step was seen. `None` when nothing is free.
fn share(limit: Option<u64>, spent: u64, held: u64, step: u64) -> Option<u64> {
    let Some(limit) = limit else { return Some(0) };
    let free = limit
        .checked_sub(spent.saturating_add(held))
        .filter(|f| *f > 0)?;
    Some(if step == 0 { free } else { step.min(free) })
}

async fn ledger(db: &Db, conn: &mut Conn, scope: &str) -> Result<Ledger, sqlx::Error> {
    let sql = format!(
        "SELECT tokens, nano_usd, step_tokens, step_nano_usd FROM usage_budgets WHERE scope = $1{}",
        db.for_update()
    );
    let rows = conn
        .fetch(&sql, &[scope.into()], |r| {
            Ok(Ledger {
                tokens: count(r, "tokens")?,
                nano_usd: count(r, "nano_usd")?,
                step_tokens: count(r, "step_tokens")?,
                step_nano_usd: count(r, "step_nano_usd")?,
            })
        })
        .await?;
    Ok(rows.first().copied().unwrap_or_default())
}

impl SqlUsageStore {
    async fn admit_in(
        &self,
        scopes: &[BudgetScope],
        hold: &str,
        now: i64,
        hold_until: i64,
    ) -> Result<Admission, sqlx::Error> {
        let mut conn = self.db.transaction().await?;
        let mut lefts = Vec::with_capacity(scopes.len());
        let mut shares = Vec::with_capacity(scopes.len());
        let mut exhausted = None;
        for (index, scope) in scopes.iter().enumerate() {
            let created = conn
                .execute(
                    "INSERT INTO usage_budgets (scope, expires_at) VALUES ($1, $2) \
                     ON CONFLICT DO NOTHING",
                    &[scope.key.as_str().into(), scope.expires_at.into()],
                )
                .await?;
            if created == 1 {
                // A new scope is rare: the time to drop the scopes and holds past their time.
                for sql in [
                    "DELETE FROM usage_budgets WHERE expires_at < $1",
                    "DELETE FROM usage_holds WHERE expires_at < $1",
                ] {
                    conn.execute(sql, &[now.into()]).await?;
                }
            }
            let ledger = ledger(&self.db, &mut conn, &scope.key).await?;
            conn.execute(
                "DELETE FROM usage_holds WHERE scope = $1 AND expires_at <= $2",
                &[scope.key.as_str().into(), now.into()],
            )
            .await?;
            let held = conn
                .fetch(
                    "SELECT COALESCE(CAST(SUM(tokens) AS BIGINT), 0) AS tokens, \
                     COALESCE(CAST(SUM(nano_usd) AS BIGINT), 0) AS nano_usd \
                     FROM usage_holds WHERE scope = $1",
                    &[scope.key.as_str().into()],
                    |r| Ok((count(r, "tokens")?, count(r, "nano_usd")?)),
                )
                .await?;
            let (held_tokens, held_usd) = held.first().copied().unwrap_or_default();
            lefts.push(left_of(scope, ledger));
            let tokens = share(scope.tokens, ledger.tokens, held_tokens, ledger.step_tokens);
            let usd = share(
                scope.nano_usd,
                ledger.nano_usd,
                held_usd,
                ledger.step_nano_usd,
            );
            match (tokens, usd) {
                (Some(t), Some(u)) => shares.push((t, u)),
                _ => {
                    exhausted.get_or_insert(index);
                }
            }
        }
        if let Some(index) = exhausted {
            // Rolled back: nothing is held.
            return Ok(Admission::Exhausted { index, left: lefts });
        }
        for (scope, (tokens, usd)) in scopes.iter().zip(shares) {
            conn.execute(
                "INSERT INTO usage_holds (scope, hold, tokens, nano_usd, expires_at) \
                 VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
                &[
                    scope.key.as_str().into(),
                    hold.into(),
                    int(tokens).into(),
                    int(usd).into(),
                    hold_until.into(),
                ],
            )
            .await?;
        }
        conn.commit().await?;
        Ok(Admission::Admitted(lefts))
    }

    async fn settle_in(
        &self,
        scopes: &[BudgetScope],
        hold: &str,
        spent: Spent,
        rows: &[UsageRow],
    ) -> Result<Vec<Left>, sqlx::Error> {
        let shard = match self.db.backend() {
            Backend::Postgres => self.settles.fetch_add(1, Ordering::Relaxed) % PG_SHARDS,
            Backend::Sqlite => 0,
        };
        if scopes.is_empty() {
            // No budget to settle: the rows are one statement, which commits by itself.
            let mut conn = self.db.conn().await?;
            add_rows(&mut conn, rows, shard).await?;
            return Ok(Vec::new());
        }
        let mut conn = self.db.transaction().await?;
        let mut lefts = Vec::with_capacity(scopes.len());
        let (tokens, usd) = (int(spent.tokens), int(spent.nano_usd));
        for scope in scopes {
            conn.execute(
                "DELETE FROM usage_holds WHERE scope = $1 AND hold = $2",
                &[scope.key.as_str().into(), hold.into()],
            )
            .await?;
            conn.execute(
                "INSERT INTO usage_budgets \
                 (scope, tokens, nano_usd, step_tokens, step_nano_usd, expires_at) \
                 VALUES ($1, $2, $3, $2, $3, $4) \
                 ON CONFLICT (scope) DO UPDATE SET \
                 tokens = usage_budgets.tokens + excluded.tokens, \
                 nano_usd = usage_budgets.nano_usd + excluded.nano_usd, \
                 step_tokens = CASE WHEN excluded.step_tokens > usage_budgets.step_tokens \
                   THEN excluded.step_tokens ELSE usage_budgets.step_tokens END, \
                 step_nano_usd = CASE WHEN excluded.step_nano_usd > usage_budgets.step_nano_usd \
                   THEN excluded.step_nano_usd ELSE usage_budgets.step_nano_usd END",
                &[
                    scope.key.as_str().into(),
                    tokens.into(),
                    usd.into(),
                    scope.expires_at.into(),
                ],
            )
            .await?;
            lefts.push(left_of(
                scope,
                ledger(&self.db, &mut conn, &scope.key).await?,
            ));
        }
        add_rows(&mut conn, rows, shard).await?;
        conn.commit().await?;
        Ok(lefts)
    }

    async fn rows_in(
        &self,
        actor: Option<&str>,
        day: Option<&str>,
    ) -> Result<Vec<UsageRow>, sqlx::Error> {
        let mut conn = self.db.conn().await?;
        let mut sql = "SELECT tenant, actor, day, model, tool, \
                       CAST(SUM(input_tokens) AS BIGINT) AS input_tokens, \
                       CAST(SUM(cached_input_tokens) AS BIGINT) AS cached_input_tokens, \
                       CAST(SUM(output_tokens) AS BIGINT) AS output_tokens, \
                       CAST(SUM(total_tokens) AS BIGINT) AS total_tokens, \
                       CAST(SUM(nano_usd) AS BIGINT) AS nano_usd, \
                       CAST(SUM(calls) AS BIGINT) AS calls FROM usage_rows WHERE 1 = 1"
            .to_owned();
        let mut args: Vec<Arg<'_>> = Vec::new();
        if let Some(actor) = actor {
            args.push(actor.into());
            sql.push_str(&format!(" AND actor = ${}", args.len()));
        }
        if let Some(day) = day {
            args.push(day.into());
            sql.push_str(&format!(" AND day = ${}", args.len()));
        }
        sql.push_str(" GROUP BY tenant, actor, day, model, tool ORDER BY day, actor, model, tool");
        conn.fetch(&sql, &args, |r| {
            Ok(UsageRow {
                tenant: get(r, "tenant")?,
                actor: get(r, "actor")?,
                day: get(r, "day")?,
                model: get(r, "model")?,
                tool: get(r, "tool")?,
                input_tokens: count(r, "input_tokens")?,
                cached_input_tokens: count(r, "cached_input_tokens")?,
                output_tokens: count(r, "output_tokens")?,
                total_tokens: count(r, "total_tokens")?,
                nano_usd: count(r, "nano_usd")?,
                calls: count(r, "calls")?,
            })
        })
        .await
    }
}

/// Adds `rows` to their totals in one statement, on `shard`'s rows: a key's totals are the
/// sum of its shards, so settles running at once on different shards take no lock from
/// each other. Rows of one key are summed first (one statement may not upsert a row twice on
/// PostgreSQL) and go in key order, so settles on one shard lock rows in the same order.
async fn add_rows(conn: &mut Conn, rows: &[UsageRow], shard: u64) -> Result<(), sqlx::Error> {
    fn key(r: &UsageRow) -> (&str, &str, &str, &str, &str) {
        (&r.tenant, &r.actor, &r.day, &r.model, &r.tool)
    }
    let mut merged: Vec<UsageRow> = Vec::with_capacity(rows.len());
    for row in rows {
        match merged.iter_mut().find(|m| key(m) == key(row)) {
            Some(m) => {
                m.input_tokens = m.input_tokens.saturating_add(row.input_tokens);
                m.cached_input_tokens = m
                    .cached_input_tokens
                    .saturating_add(row.cached_input_tokens);
                m.output_tokens = m.output_tokens.saturating_add(row.output_tokens);
                m.total_tokens = m.total_tokens.saturating_add(row.total_tokens);
                m.nano_usd = m.nano_usd.saturating_add(row.nano_usd);
                m.calls = m.calls.saturating_add(row.calls);
            }
            None => merged.push(row.clone()),
        }
    }
    if merged.is_empty() {
        return Ok(());
    }
    merged.sort_by(|a, b| key(a).cmp(&key(b)));
    let shard = int(shard);
    let mut args: Vec<Arg<'_>> = Vec::with_capacity(merged.len() * 12);
    for row in &merged {
        let cells: [Arg<'_>; 12] = [
            row.tenant.as_str().into(),
            row.actor.as_str().into(),
            row.day.as_str().into(),
            row.model.as_str().into(),
            row.tool.as_str().into(),
            int(row.input_tokens).into(),
            int(row.cached_input_tokens).into(),
            int(row.output_tokens).into(),
            int(row.total_tokens).into(),
            int(row.nano_usd).into(),
            int(row.calls).into(),
            shard.into(),
        ];
        args.extend(cells);
    }
    let sql = format!(
        "INSERT INTO usage_rows (tenant, actor, day, model, tool, input_tokens, \
         cached_input_tokens, output_tokens, total_tokens, nano_usd, calls, shard) \
         VALUES {} \
         ON CONFLICT (tenant, actor, day, model, tool, shard) DO UPDATE SET \
         input_tokens = usage_rows.input_tokens + excluded.input_tokens, \
         cached_input_tokens = usage_rows.cached_input_tokens + excluded.cached_input_tokens, \
         output_tokens = usage_rows.output_tokens + excluded.output_tokens, \
         total_tokens = usage_rows.total_tokens + excluded.total_tokens, \
         nano_usd = usage_rows.nano_usd + excluded.nano_usd, \
         calls = usage_rows.calls + excluded.calls",
        Db::values_list(1, merged.len(), 12)
    );
    conn.execute(&sql, &args).await?;
    Ok(())
}

impl UsageStore for SqlUsageStore {
    fn admit<'a>(
        &'a self,
        scopes: &'a [BudgetScope],
        hold: &'a str,
        now: i64,
        hold_until: i64,
    ) -> UsageFuture<'a, Admission> {
        Box::pin(async move {
            self.admit_in(scopes, hold, now, hold_until)
                .await
                .map_err(storage)
        })
    }

    fn settle<'a>(
        &'a self,
        scopes: &'a [BudgetScope],
        hold: &'a str,
        spent: Spent,
        rows: &'a [UsageRow],
    ) -> UsageFuture<'a, Vec<Left>> {
        Box::pin(async move {
            self.settle_in(scopes, hold, spent, rows)
                .await
                .map_err(storage)
        })
    }

    fn rows<'a>(
        &'a self,
        actor: Option<&'a str>,
        day: Option<&'a str>,
    ) -> UsageFuture<'a, Vec<UsageRow>> {
        Box::pin(async move { self.rows_in(actor, day).await.map_err(storage) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope(key: &str, tokens: u64) -> BudgetScope {
        BudgetScope {
            key: key.into(),
            tokens: Some(tokens),
            nano_usd: None,
            expires_at: 4_000_000_000,
        }
    }

    fn row(actor: &str, tool: &str, input: u64) -> UsageRow {
        UsageRow {
            tenant: "default".into(),
            actor: actor.into(),
            day: "2026-12-02".into(),
            model: "scripted".into(),
            tool: tool.into(),
            input_tokens: input,
            calls: 1,
            ..UsageRow::default()
        }
    }

    #[tokio::test]
    async fn a_step_holds_its_share_and_settles_what_it_spent() {
        let store = SqlUsageStore::new(crate::db::connect("sqlite::memory:").await.unwrap());
        let scopes = [scope("turn:a", 100)];
        // Before any step is seen, the first holds the whole remainder.
        let first = store.admit(&scopes, "h1", 10, 600).await.unwrap();
        assert!(matches!(first, Admission::Admitted(_)), "{first:?}");
        let second = store.admit(&scopes, "h2", 10, 600).await.unwrap();
        assert!(
            matches!(second, Admission::Exhausted { index: 0, .. }),
            "{second:?}"
        );
        let spent = Spent {
            tokens: 30,
            nano_usd: 0,
        };
        let left = store
            .settle(&scopes, "h1", spent, &[row("a", "", 30)])
            .await
            .unwrap();
        assert_eq!(left[0].tokens, Some(70));
        // Now a step holds 30 (the largest seen): three fit at once (30 + 30 + 10), not four.
        for hold in ["h3", "h4", "h5"] {
            let admitted = store.admit(&scopes, hold, 10, 600).await.unwrap();
            assert!(matches!(admitted, Admission::Admitted(_)), "{hold}");
        }
        let fourth = store.admit(&scopes, "h6", 10, 600).await.unwrap();
        assert!(matches!(fourth, Admission::Exhausted { .. }));
        // An expired hold frees its share.
        let later = store.admit(&scopes, "h7", 700, 1300).await.unwrap();
        assert!(matches!(later, Admission::Admitted(_)));

        store
            .settle(
                &scopes,
                "h3",
                spent,
                &[row("a", "", 30), row("a", "domain:x", 0)],
            )
            .await
            .unwrap();
        store
            .settle(&[], "", Spent::default(), &[row("b", "", 5)])
            .await
            .unwrap();
        let all = store.rows(None, None).await.unwrap();
        assert_eq!(all.len(), 3);
        let a: Vec<_> = store.rows(Some("a"), Some("2026-12-02")).await.unwrap();
        assert_eq!(a.len(), 2);
        assert_eq!(
            (a[0].tool.as_str(), a[0].input_tokens, a[0].calls),
            ("", 60, 2)
        );
        assert_eq!(a[1].tool, "domain:x");
        assert!(store
            .rows(Some("a"), Some("2026-12-01"))
            .await
            .unwrap()
            .is_empty());
    }

    #[tokio::test]
    async fn one_statement_adds_a_steps_rows_with_repeated_keys_summed() {
        let store = SqlUsageStore::new(crate::db::connect("sqlite::memory:").await.unwrap());
        let step = [
            row("a", "view:x", 0),
            row("a", "", 7),
            row("a", "view:x", 0),
            row("a", "domain:y", 0),
        ];
        for _ in 0..2 {
            let left = store
                .settle(&[], "", Spent::default(), &step)
                .await
                .unwrap();
            assert!(left.is_empty());
        }
        let rows = store.rows(Some("a"), None).await.unwrap();
        let got: Vec<_> = rows
            .iter()
            .map(|r| (r.tool.as_str(), r.input_tokens, r.calls))
            .collect();
        assert_eq!(got, [("", 14, 2), ("domain:y", 0, 2), ("view:x", 0, 4)]);
    }
}
