//! The pool and its dialect: [`connect`] (the URL's scheme picks SQLite or PostgreSQL, the
//! migrations run), [`Db`] (`begin`, `for_update`, `lock`, the step's [`Conn`]), readiness.

use crate::conn::{Arg, Conn, Direct};
use std::borrow::Cow;
use std::str::FromStr;
use std::time::Duration;

use futures_util::future::BoxFuture;
use sqlx::any::{AnyPoolOptions, AnyRow};
use sqlx::error::BoxDynError;
use sqlx::migrate::{Migration, MigrationSource, MigrationType, Migrator};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode};
use sqlx::{Any, AnyConnection, AnyPool, Connection, Transaction};

#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error("database: {0}")]
    Sql(#[from] sqlx::Error),
    #[error("migrations: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("cannot create the database directory {0}: {1}")]
    Dir(String, std::io::Error),
    /// The database could not be reached at start. Names the scheme only: the URL may hold a
    /// password.
    #[error("cannot reach the {scheme} database: {cause}")]
    Unreachable { scheme: &'static str, cause: String },
}

/// Which database a [`Db`] talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// One process owns the file.
    Sqlite,
    /// Shared: any number of replicas may use it at once.
    Postgres,
}

impl Backend {
    /// The backend a URL names, by its scheme.
    pub fn of_url(url: &str) -> Option<Self> {
        match url.split_once(':')?.0 {
            "sqlite" => Some(Self::Sqlite),
            "postgres" | "postgresql" => Some(Self::Postgres),
            _ => None,
        }
    }

    pub const fn scheme(self) -> &'static str {
        match self {
            Self::Sqlite => "sqlite",
            Self::Postgres => "postgres",
        }
    }

    /// Whether other processes may use the same database at the same time.
    pub const fn is_shared(self) -> bool {
        matches!(self, Self::Postgres)
    }
}

/// Migrations are listed here by hand rather than embedded with `sqlx::migrate!("…")`: that
/// macro needs sqlx's `macros` feature, whose proc-macro crate the `sqlite` and `postgres`
/// features build with both drivers again (SQLite's C sources included) for the host, a
/// second copy in every cold build. A new migration file needs one line below.
type Migrations = &'static [(i64, &'static str, &'static str)];

/// SQLite migrations compiled into the binary, in version order.
const SQLITE_MIGRATIONS: Migrations = &[
    (
        1,
        "ledger",
        include_str!("../migrations/sqlite/0001_ledger.sql"),
    ),
    (
        2,
        "threads",
        include_str!("../migrations/sqlite/0002_threads.sql"),
    ),
    (
        3,
        "approvals",
        include_str!("../migrations/sqlite/0003_approvals.sql"),
    ),
    (
        4,
        "thread rows",
        include_str!("../migrations/sqlite/0004_thread_rows.sql"),
    ),
    (
        5,
        "revoked sessions",
        include_str!("../migrations/sqlite/0005_revoked_sessions.sql"),
    ),
    (
        6,
        "approval status",
        include_str!("../migrations/sqlite/0006_approval_status.sql"),
    ),
    (
        7,
        "audit",
        include_str!("../migrations/sqlite/0007_audit.sql"),
    ),
    (
        8,
        "step records",
        include_str!("../migrations/sqlite/0008_step_records.sql"),
    ),
    (
        9,
        "usage",
        include_str!("../migrations/sqlite/0009_usage.sql"),
    ),
    (
        10,
        "audit chain",
        include_str!("../migrations/sqlite/0010_audit_chain.sql"),
    ),
    (
        11,
        "step cancel",
        include_str!("../migrations/sqlite/0011_step_cancel.sql"),
    ),
    (
        12,
        "usage shards",
        include_str!("../migrations/sqlite/0012_usage_shards.sql"),
    ),
];

/// PostgreSQL migrations: the SQLite schema as it stands, then what is added to both.
const POSTGRES_MIGRATIONS: Migrations = &[
    (
        1,
        "initial",
        include_str!("../migrations/postgres/0001_initial.sql"),
    ),
    (
        2,
        "audit",
        include_str!("../migrations/postgres/0002_audit.sql"),
    ),
    (
        3,
        "step records",
        include_str!("../migrations/postgres/0003_step_records.sql"),
    ),
    (
        4,
        "usage",
        include_str!("../migrations/postgres/0004_usage.sql"),
    ),
    (
        5,
        "audit chain",
        include_str!("../migrations/postgres/0005_audit_chain.sql"),
    ),
    (
        6,
        "step cancel",
        include_str!("../migrations/postgres/0006_step_cancel.sql"),
    ),
    (
        7,
        "usage shards",
        include_str!("../migrations/postgres/0007_usage_shards.sql"),
    ),
];

#[derive(Debug)]
struct Embedded(Migrations);

impl MigrationSource<'static> for Embedded {
    fn resolve(self) -> BoxFuture<'static, Result<Vec<Migration>, BoxDynError>> {
        Box::pin(async move {
            Ok(self
                .0
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

/// Advisory lock keys (PostgreSQL), one per thing writers must take turns at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i64)]
pub enum LockKey {
    /// Seeding or resetting the demo ledger.
    Ledger = 0x4450_4153_0001,
    /// Appending audit entries (so sequence order is commit order).
    Audit = 0x4450_4153_0002,
}

/// The pool and the backend it talks to. Cheap to clone; derefs to the `Any` pool for
/// plain statements.
#[derive(Debug, Clone)]
pub struct Db {
    pool: AnyPool,
    backend: Backend,
    /// SQLite's direct connection to the pool's database.
    direct: Option<Direct>,
}

impl std::ops::Deref for Db {
    type Target = AnyPool;
    fn deref(&self) -> &AnyPool {
        &self.pool
    }
}

impl Db {
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// Begins a transaction that will read and then write. SQLite takes its write lock at
    /// once (`BEGIN IMMEDIATE`), so concurrent writers queue on the busy timeout instead of
    /// failing to upgrade a read lock; PostgreSQL locks rows as they are read
    /// ([`Db::for_update`]) or by key ([`Db::lock`]).
    pub async fn begin(&self) -> Result<Transaction<'static, Any>, sqlx::Error> {
        match self.backend {
            Backend::Sqlite => self.pool.begin_with("BEGIN IMMEDIATE").await,
            Backend::Postgres => self.pool.begin().await,
        }
    }

    /// One connection for a run of statements outside a transaction (on SQLite the direct
    /// connection, held until it is dropped: keep it for a step's statements, not
    /// across waits for anything else).
    pub async fn conn(&self) -> Result<Conn, sqlx::Error> {
        match &self.direct {
            Some(direct) => Conn::direct(direct, false).await,
            None => Ok(Conn::pool(self.pool.acquire().await?)),
        }
    }

    /// [`Db::begin`] as a [`Conn`]: a read-then-write transaction, committed by
    /// [`Conn::commit`] and rolled back when dropped before.
    pub async fn transaction(&self) -> Result<Conn, sqlx::Error> {
        match &self.direct {
            Some(direct) => Conn::direct(direct, true).await,
            None => Ok(Conn::tx(self.begin().await?)),
        }
    }

    /// [`Db::lock`] inside a [`Db::transaction`].
    pub async fn lock_in(&self, conn: &mut Conn, key: LockKey) -> Result<(), sqlx::Error> {
        if self.backend == Backend::Postgres {
            conn.execute("SELECT pg_advisory_xact_lock($1)", &[Arg::from(key as i64)])
                .await?;
        }
        Ok(())
    }

    /// Appended to a `SELECT` inside [`Db::begin`]: locks the rows read until commit.
    /// SQLite needs nothing (the transaction holds the database's write lock).
    pub fn for_update(&self) -> &'static str {
        match self.backend {
            Backend::Sqlite => "",
            Backend::Postgres => " FOR UPDATE",
        }
    }

    /// Inside [`Db::begin`]: waits for, then holds until commit, the lock on `key`, so
    /// writers of the same thing on every replica take turns.
    pub async fn lock(&self, conn: &mut AnyConnection, key: LockKey) -> Result<(), sqlx::Error> {
        if self.backend == Backend::Postgres {
            sqlx::query("SELECT pg_advisory_xact_lock($1)")
                .bind(key as i64)
                .execute(conn)
                .await?;
        }
        Ok(())
    }

    /// Whether the database answers (for a readiness check).
    pub async fn ping(&self) -> Result<(), sqlx::Error> {
        sqlx::query("SELECT 1").execute(&self.pool).await.map(drop)
    }

    fn migrations(&self) -> Migrations {
        match self.backend {
            Backend::Sqlite => SQLITE_MIGRATIONS,
            Backend::Postgres => POSTGRES_MIGRATIONS,
        }
    }

    /// `count` rows of `width` placeholders each, numbered from `$first`:
    /// `($1, $2), ($3, $4)` (a multi-row `VALUES` list both backends read).
    pub fn values_list(first: usize, count: usize, width: usize) -> String {
        let mut out = String::new();
        for row in 0..count {
            if row > 0 {
                out.push_str(", ");
            }
            out.push('(');
            for col in 0..width {
                if col > 0 {
                    out.push_str(", ");
                }
                out.push('$');
                out.push_str(&(first + row * width + col).to_string());
            }
            out.push(')');
        }
        out
    }

    pub async fn close(&self) {
        self.pool.close().await;
    }
}

/// A row's column as `i64` on both backends.
pub fn int(row: &AnyRow, column: &str) -> Result<i64, sqlx::Error> {
    sqlx::Row::try_get(row, column)
}

/// Whether a SQLite URL names an in-memory database (`sqlite::memory:`, `mode=memory`).
pub fn is_memory(url: &str) -> bool {
    url.contains(":memory:") || url.contains("mode=memory")
}

/// A fresh in-memory database every connection of this process can open by name: the pool's
/// URL and the direct connection's filename.
fn memdb() -> (String, String) {
    // A `memdb` name that starts with `/` is shared by the process's connections.
    let name = format!("/dpas-{}", uuid::Uuid::new_v4().simple());
    (
        format!("sqlite:{name}?vfs=memdb"),
        format!("file:{name}?vfs=memdb"),
    )
}

/// How long a PostgreSQL connection may sit idle in the pool before it is pinged on its next
/// acquire (a failed ping closes it and the pool opens another).
const PING_AFTER_IDLE: Duration = Duration::from_secs(10);

/// Opens the database the URL names (creating a SQLite file if needed) and applies the
/// migrations. A PostgreSQL database that does not answer within a few seconds fails.
pub async fn connect(url: &str) -> Result<Db, DbError> {
    sqlx::any::install_default_drivers();
    let backend = Backend::of_url(url).ok_or_else(|| DbError::Unreachable {
        scheme: "unknown",
        cause: "the URL names no supported database".to_owned(),
    })?;
    // `test_before_acquire(false)` on SQLite: its ping only asks sqlx's worker thread whether
    // it is alive (a round trip per statement on the pool, no I/O). A SQLite connection is an
    // in-process handle with no socket or server to lose (a transaction dropped mid-way
    // queues its rollback on that worker ahead of any later statement). On PostgreSQL, whose
    // server may drop an idle connection, a connection is pinged before use only when it
    // has been idle for [`PING_AFTER_IDLE`]: one in steady use answered a statement moments
    // ago, and a ping on every acquire was a round trip for each of a step's statements.
    let mut direct = None;
    let pool = match backend {
        Backend::Sqlite if is_memory(url) => {
            let (pool_url, filename) = memdb();
            // The database lives while a connection to it is open: the pool keeps one.
            let pool = AnyPoolOptions::new()
                .test_before_acquire(false)
                .max_connections(1)
                .min_connections(1)
                .idle_timeout(None)
                .max_lifetime(None)
                .connect(&pool_url)
                .await?;
            direct = Some(filename);
            pool
        }
        Backend::Sqlite => {
            let filename = prepare_sqlite_file(url).await?;
            // Foreign keys are on and the busy timeout is 5 s by default on every connection.
            let pool = AnyPoolOptions::new()
                .test_before_acquire(false)
                .max_connections(4)
                .connect(url)
                .await?;
            direct = Some(filename);
            pool
        }
        Backend::Postgres => AnyPoolOptions::new()
            .max_connections(8)
            .test_before_acquire(false)
            .before_acquire(|conn, meta| {
                Box::pin(async move {
                    if meta.idle_for >= PING_AFTER_IDLE {
                        conn.ping().await?;
                    }
                    Ok(true)
                })
            })
            .acquire_timeout(Duration::from_secs(5))
            .connect(url)
            .await
            .map_err(|e| DbError::Unreachable {
                scheme: backend.scheme(),
                cause: safe_cause(&e),
            })?,
    };
    // sqlx's PostgreSQL migrator holds an advisory lock while it runs: replicas starting
    // together apply each migration once.
    Migrator::new(Embedded(match backend {
        Backend::Sqlite => SQLITE_MIGRATIONS,
        Backend::Postgres => POSTGRES_MIGRATIONS,
    }))
    .await?
    .run(&pool)
    .await?;
    let wal = !is_memory(url);
    let direct = direct
        .map(|filename| Direct::open(&filename, wal))
        .transpose()?;
    Ok(Db {
        pool,
        backend,
        direct,
    })
}

/// Creates the SQLite file (and its folder) and turns on write-ahead logging, which the file
/// keeps; the pool's connections then open it by URL. Answers the file's name as SQLite opens
/// it.
async fn prepare_sqlite_file(url: &str) -> Result<String, DbError> {
    let options = SqliteConnectOptions::from_str(url)?
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal);
    if let Some(dir) = std::path::Path::new(options.get_filename()).parent() {
        if !dir.as_os_str().is_empty() {
            std::fs::create_dir_all(dir).map_err(|e| DbError::Dir(dir.display().to_string(), e))?;
        }
    }
    let conn = sqlx::SqliteConnection::connect_with(&options).await?;
    conn.close().await?;
    options
        .get_filename()
        .to_str()
        .map(str::to_owned)
        .ok_or_else(|| {
            DbError::Dir(
                options.get_filename().display().to_string(),
                std::io::Error::other("the path is not UTF-8"),
            )
        })
}

/// A connection error without anything of the URL: sqlx's configuration errors may quote it.
fn safe_cause(e: &sqlx::Error) -> String {
    match e {
        sqlx::Error::Io(io) => io.to_string(),
        sqlx::Error::PoolTimedOut => "no connection within 5 s".to_owned(),
        sqlx::Error::Database(d) => d.message().to_owned(),
        sqlx::Error::Tls(_) => "TLS negotiation failed".to_owned(),
        sqlx::Error::Configuration(_) => "the URL is not a valid PostgreSQL URL".to_owned(),
        _ => "the connection failed".to_owned(),
    }
}

/// Readiness: the database answers and every migration this build knows is applied.
/// `Err` says what is missing, for the log (`GET /api/ready` answers 503 without it).
pub async fn ready(db: &Db) -> Result<(), String> {
    db.ping()
        .await
        .map_err(|e| format!("database unreachable: {e}"))?;
    let applied: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM _sqlx_migrations WHERE success = TRUE")
            .fetch_one(&**db)
            .await
            .map_err(|e| format!("migrations unreadable: {e}"))?;
    let known = i64::try_from(db.migrations().len()).unwrap_or(i64::MAX);
    if applied < known {
        return Err(format!("{applied} of {known} migrations applied"));
    }
    Ok(())
}

/// An in-memory SQLite database with no schema (tests of the migrations themselves).
#[cfg(test)]
pub(crate) async fn memory_without_migrations() -> Db {
    sqlx::any::install_default_drivers();
    let (pool_url, filename) = memdb();
    let pool = AnyPoolOptions::new()
        .max_connections(1)
        .min_connections(1)
        .idle_timeout(None)
        .max_lifetime(None)
        .connect(&pool_url)
        .await
        .expect("in-memory SQLite");
    Db {
        pool,
        backend: Backend::Sqlite,
        direct: Some(Direct::open(&filename, false).expect("direct connection")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_lists_number_their_placeholders() {
        assert_eq!(Db::values_list(3, 2, 2), "($3, $4), ($5, $6)");
        assert_eq!(Db::values_list(1, 1, 3), "($1, $2, $3)");
        assert_eq!(Db::values_list(1, 0, 3), "");
    }

    #[test]
    fn backends_come_from_the_scheme() {
        assert_eq!(Backend::of_url("sqlite::memory:"), Some(Backend::Sqlite));
        assert_eq!(Backend::of_url("postgres://h/d"), Some(Backend::Postgres));
        assert_eq!(Backend::of_url("postgresql://h/d"), Some(Backend::Postgres));
        assert_eq!(Backend::of_url("mysql://h/d"), None);
    }
}

#[cfg(test)]
mod direct_tests {
    use super::*;
    use crate::conn::get;

    async fn count(db: &Db, via_conn: bool) -> i64 {
        let sql = "SELECT COUNT(*) AS n FROM ledger_meta";
        if via_conn {
            let mut s = db.conn().await.unwrap();
            s.fetch(sql, &[], |r| get(r, "n")).await.unwrap()[0]
        } else {
            sqlx::query_scalar(sql).fetch_one(&**db).await.unwrap()
        }
    }

    /// The direct connection and the pool are one database: each sees what the other wrote.
    async fn both_see_one_database(db: &Db) {
        assert!(db.direct.is_some(), "SQLite has a direct connection");
        let mut s = db.transaction().await.unwrap();
        s.execute(
            "INSERT INTO ledger_meta (key, value) VALUES ($1, $2)",
            &["direct".into(), 1.into()],
        )
        .await
        .unwrap();
        s.commit().await.unwrap();
        assert_eq!(count(db, false).await, 1);
        sqlx::query("INSERT INTO ledger_meta (key, value) VALUES ('pool', 2)")
            .execute(&**db)
            .await
            .unwrap();
        assert_eq!(count(db, true).await, 2);
    }

    #[tokio::test]
    async fn memory_database_is_shared_by_the_pool_and_the_direct_connection() {
        let db = connect("sqlite::memory:").await.unwrap();
        both_see_one_database(&db).await;
        // The direct connection keeps a small page cache over the in-memory pages.
        let mut s = db.conn().await.unwrap();
        let kib: Vec<i64> = s
            .fetch("PRAGMA cache_size", &[], |r| get(r, "cache_size"))
            .await
            .unwrap();
        assert_eq!(kib, [-i64::from(crate::conn::MEMORY_CACHE_KIB)]);
        drop(s);
        // Another in-memory database is another database.
        let other = connect("sqlite::memory:").await.unwrap();
        assert_eq!(count(&other, true).await, 0);
        assert_eq!(count(&other, false).await, 0);
    }

    #[tokio::test]
    async fn file_database_is_shared_by_the_pool_and_the_direct_connection() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite:{}", dir.path().join("sub/host.db").display());
        let db = connect(&url).await.unwrap();
        both_see_one_database(&db).await;
        let mode: String = sqlx::query_scalar("PRAGMA journal_mode")
            .fetch_one(&*db)
            .await
            .unwrap();
        assert_eq!(mode, "wal");
        // Foreign keys are on for the direct connection as for the pool's.
        let mut s = db.conn().await.unwrap();
        let on: Vec<i64> = s
            .fetch("PRAGMA foreign_keys", &[], |r| get(r, "foreign_keys"))
            .await
            .unwrap();
        assert_eq!(on, [1]);
    }

    #[tokio::test]
    async fn a_transaction_dropped_before_commit_is_rolled_back() {
        let db = connect("sqlite::memory:").await.unwrap();
        let mut s = db.transaction().await.unwrap();
        s.execute(
            "INSERT INTO ledger_meta (key, value) VALUES ($1, $2)",
            &["gone".into(), 1.into()],
        )
        .await
        .unwrap();
        drop(s);
        assert_eq!(count(&db, true).await, 0);
        assert_eq!(count(&db, false).await, 0);
        // The connection is usable (not left inside the abandoned transaction).
        let s = db.transaction().await.unwrap();
        s.commit().await.unwrap();
    }

    /// A direct statement that finds the database locked waits without holding the runtime
    /// thread: on this one-thread runtime the writer could not commit otherwise, and the
    /// statement would fail after the busy timeout.
    #[tokio::test]
    async fn a_direct_statement_waits_for_a_pool_writer_without_holding_the_thread() {
        let db = connect("sqlite::memory:").await.unwrap();
        let mut writer = db.acquire().await.unwrap();
        sqlx::query("BEGIN IMMEDIATE")
            .execute(&mut *writer)
            .await
            .unwrap();
        sqlx::query("INSERT INTO ledger_meta (key, value) VALUES ('pool', 1)")
            .execute(&mut *writer)
            .await
            .unwrap();
        let direct = tokio::spawn({
            let db = db.clone();
            async move {
                let mut s = db.conn().await?;
                s.execute(
                    "INSERT INTO ledger_meta (key, value) VALUES ('direct', 2)",
                    &[],
                )
                .await
            }
        });
        // The direct statement's first attempt runs now and finds the writer's lock.
        tokio::task::yield_now().await;
        sqlx::query("COMMIT").execute(&mut *writer).await.unwrap();
        drop(writer);
        assert_eq!(direct.await.unwrap().unwrap(), 1);
        assert_eq!(count(&db, false).await, 2);
    }

    /// `$N` is the N-th argument wherever it first appears in the statement.
    #[tokio::test]
    async fn placeholders_bind_by_number_not_by_position() {
        let db = connect("sqlite::memory:").await.unwrap();
        let mut s = db.conn().await.unwrap();
        let row: Vec<(String, i64, Option<String>)> = s
            .fetch(
                "SELECT $3 AS a, $1 AS b, $2 AS c, $1 + 1 AS d",
                &[40.into(), Arg::Text(None), "x".into()],
                |r| Ok((get(r, "a")?, get::<i64>(r, "d")?, get(r, "c")?)),
            )
            .await
            .unwrap();
        assert_eq!(row, [("x".to_owned(), 41, None)]);
        // Columns are found by name whatever its case; a name the query lacks is an error.
        let upper: Vec<i64> = s
            .fetch("SELECT 7 AS n", &[], |r| get(r, "N"))
            .await
            .unwrap();
        assert_eq!(upper, [7]);
        let missing = s
            .fetch("SELECT 7 AS n", &[], |r| get::<i64>(r, "m"))
            .await
            .unwrap_err();
        assert!(missing.to_string().contains("m"), "{missing}");
    }

    #[tokio::test]
    async fn direct_errors_are_database_errors_with_their_kind() {
        let db = connect("sqlite::memory:").await.unwrap();
        let mut s = db.conn().await.unwrap();
        let insert = "INSERT INTO ledger_meta (key, value) VALUES ($1, $2)";
        s.execute(insert, &["k".into(), 1.into()]).await.unwrap();
        let e = s
            .execute(insert, &["k".into(), 2.into()])
            .await
            .unwrap_err();
        let sqlx::Error::Database(d) = e else {
            panic!("not a database error: {e:?}")
        };
        assert_eq!(d.kind(), sqlx::error::ErrorKind::UniqueViolation);
        assert!(d.message().contains("UNIQUE"), "{}", d.message());
        let e = s
            .execute(insert, &["n".into(), Arg::Int(None)])
            .await
            .unwrap_err();
        assert!(
            matches!(e, sqlx::Error::Database(ref d) if d.kind() == sqlx::error::ErrorKind::NotNullViolation),
            "{e:?}"
        );
    }
}
