//! The SQLite pool and the embedded migrations.

use std::borrow::Cow;
use std::str::FromStr;
use std::time::Duration;

use futures_util::future::BoxFuture;
use sqlx::error::BoxDynError;
use sqlx::migrate::{Migration, MigrationSource, MigrationType, Migrator};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions};
use sqlx::SqlitePool;

#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error("database: {0}")]
    Sql(#[from] sqlx::Error),
    #[error("migrations: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("cannot create the database directory {0}: {1}")]
    Dir(String, std::io::Error),
}

/// Migrations compiled into the binary, in version order.
const MIGRATIONS: &[(i64, &str, &str)] = &[
    (1, "ledger", include_str!("../migrations/0001_ledger.sql")),
    (2, "threads", include_str!("../migrations/0002_threads.sql")),
    (
        3,
        "approvals",
        include_str!("../migrations/0003_approvals.sql"),
    ),
    (
        4,
        "thread rows",
        include_str!("../migrations/0004_thread_rows.sql"),
    ),
    (
        5,
        "revoked sessions",
        include_str!("../migrations/0005_revoked_sessions.sql"),
    ),
    (
        6,
        "approval status",
        include_str!("../migrations/0006_approval_status.sql"),
    ),
];

#[derive(Debug)]
struct Embedded;

impl MigrationSource<'static> for Embedded {
    fn resolve(self) -> BoxFuture<'static, Result<Vec<Migration>, BoxDynError>> {
        Box::pin(async {
            Ok(MIGRATIONS
                .iter()
                .map(|(v, d, sql)| {
                    Migration::new(
                        *v,
                        Cow::Borrowed(*d),
                        MigrationType::Simple,
                        Cow::Borrowed(*sql),
                        false,
                    )
                })
                .collect())
        })
    }
}

fn is_memory(url: &str) -> bool {
    url.contains(":memory:") || url.contains("mode=memory")
}

/// Opens (creating if needed) the database and applies the migrations.
///
/// Every read-then-write transaction in this crate begins `IMMEDIATE`, so concurrent writers
/// queue on the busy timeout instead of failing to upgrade a read lock.
pub async fn connect(url: &str) -> Result<SqlitePool, DbError> {
    let mut options = SqliteConnectOptions::from_str(url)?
        .create_if_missing(true)
        .foreign_keys(true);
    let pool = if is_memory(url) {
        // Every connection to `:memory:` is its own database: keep exactly one, forever.
        SqlitePoolOptions::new()
            .max_connections(1)
            .min_connections(1)
            .idle_timeout(None)
            .max_lifetime(None)
            .connect_with(options)
            .await?
    } else {
        if let Some(dir) = std::path::Path::new(options.get_filename()).parent() {
            if !dir.as_os_str().is_empty() {
                std::fs::create_dir_all(dir)
                    .map_err(|e| DbError::Dir(dir.display().to_string(), e))?;
            }
        }
        options = options
            .journal_mode(SqliteJournalMode::Wal)
            .busy_timeout(Duration::from_secs(5));
        SqlitePoolOptions::new()
            .max_connections(4)
            .connect_with(options)
            .await?
    };
    Migrator::new(Embedded).await?.run(&pool).await?;
    Ok(pool)
}

/// Readiness: the database answers and every migration this build knows is applied.
/// `Err` says what is missing, for the log (`GET /api/ready` answers 503 without it).
pub async fn ready(pool: &SqlitePool) -> Result<(), String> {
    sqlx::query("SELECT 1")
        .execute(pool)
        .await
        .map_err(|e| format!("database unreachable: {e}"))?;
    let applied: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM _sqlx_migrations WHERE success = 1")
            .fetch_one(pool)
            .await
            .map_err(|e| format!("migrations unreadable: {e}"))?;
    let known = i64::try_from(MIGRATIONS.len()).unwrap_or(i64::MAX);
    if applied < known {
        return Err(format!("{applied} of {known} migrations applied"));
    }
    Ok(())
}
