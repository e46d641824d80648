//! One connection held for a run of statements ([`Db::conn`], [`Db::transaction`]), the
//! same code on both backends: SQLite's direct connection, or a connection (or transaction)
//! of the sqlx pool on PostgreSQL.
//!
//! Why SQLite has a direct connection: with sqlx 0.8 every statement on a SQLite pool is a
//! hand-off to the connection's worker thread and back (a channel send, a wake-up of that
//! thread, a wake-up of the task), plus a check-out and a check-in (itself a second round
//! trip). With an in-memory database behind one connection, a step's ~14 round trips held that
//! connection for milliseconds while the statements themselves took microseconds, and every
//! other step queued behind it: steps were serialised on hand-offs, not on work. The direct
//! connection runs each statement inline, on the task's own thread, behind an async mutex
//! (uncontended, taking it costs no hand-off; contended, the waiting task yields). A statement
//! is microseconds (an in-memory database, or WAL with `synchronous = NORMAL`, which does not
//! sync on commit), so running it inline costs the runtime thread less than handing it off.
//!
//! Values are bound as [`Arg`]s to `$N` placeholders (the statements' one dialect, see
//! [`crate::db`]) and rows are read through [`Cells`], so a store's statements are written
//! once for both.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;
use time::macros::format_description;
use time::Date;

use rusqlite::{Connection, OpenFlags};
use sqlx::any::AnyRow;
use sqlx::error::{DatabaseError, ErrorKind};
use sqlx::pool::PoolConnection;
use sqlx::{Any, Transaction};
use tokio::sync::{Mutex, OwnedMutexGuard};

/// SQLite's direct connection (see the module's comment). Cheap to clone.
#[derive(Debug, Clone)]
pub(super) struct Direct(Arc<Mutex<Connection>>);

/// The busy timeout sqlx sets on its SQLite connections, so both wait alike for a lock.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);
/// The pauses between attempts at a statement that found the database locked: SQLite's own
/// busy handler's, then its last one repeated, until [`BUSY_TIMEOUT`].
const BUSY_PAUSES_MS: [u64; 12] = [1, 2, 5, 10, 15, 20, 25, 25, 25, 50, 50, 100];
/// Distinct statements kept prepared (a step's are about ten; `VALUES` lists of other
/// lengths are other statements).
const STATEMENT_CACHE: usize = 64;

/// The direct connection's page cache over an in-memory database, in KiB (SQLite's default
/// is 2,000 KiB per connection).
pub(super) const MEMORY_CACHE_KIB: u32 = 256;

impl Direct {
    /// Opens `filename` (a path, or a `file:` URI such as an in-memory `memdb` name) with the
    /// settings the pool's connections have: foreign keys on, a 5 s busy timeout (and, in
    /// memory, a small page cache: `wal` is false only there). The wait for
    /// a lock another connection holds is ours ([`run`]), not SQLite's busy handler: that one
    /// sleeps on the calling thread, which here is a runtime thread other tasks need.
    pub(super) fn open(filename: &str, wal: bool) -> Result<Self, sqlx::Error> {
        let conn = Connection::open_with_flags(
            filename,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_URI
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(direct_error)?;
        conn.busy_timeout(Duration::ZERO).map_err(direct_error)?;
        conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
        conn.execute_batch("PRAGMA foreign_keys = ON")
            .map_err(direct_error)?;
        if wal {
            // In WAL mode NORMAL is still crash-safe (a power cut may lose the last commits,
            // never corrupt the file) and commits do not wait for a disk sync, which would
            // block the runtime thread the statement runs on.
            conn.execute_batch("PRAGMA synchronous = NORMAL")
                .map_err(direct_error)?;
        } else {
            // An in-memory (`memdb`) database is its own page store: every page the cache
            // holds is a second copy of one already in memory, and a miss is a copy of 4 KiB.
            conn.execute_batch(&format!("PRAGMA cache_size = -{MEMORY_CACHE_KIB}"))
                .map_err(direct_error)?;
        }
        Ok(Self(Arc::new(Mutex::new(conn))))
    }

    async fn lock(&self) -> OwnedMutexGuard<Connection> {
        Arc::clone(&self.0).lock_owned().await
    }
}

/// A value bound to a `$N` placeholder (the N-th of a statement's `args`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arg<'a> {
    Int(Option<i64>),
    Text(Option<&'a str>),
}

impl From<i64> for Arg<'_> {
    fn from(v: i64) -> Self {
        Self::Int(Some(v))
    }
}

impl From<Option<i64>> for Arg<'_> {
    fn from(v: Option<i64>) -> Self {
        Self::Int(v)
    }
}

impl<'a> From<&'a str> for Arg<'a> {
    fn from(v: &'a str) -> Self {
        Self::Text(Some(v))
    }
}

impl<'a> From<Option<&'a str>> for Arg<'a> {
    fn from(v: Option<&'a str>) -> Self {
        Self::Text(v)
    }
}

/// A row's columns, by name, on either backend.
pub trait Cells {
    fn int(&self, column: &str) -> Result<Option<i64>, sqlx::Error>;
    fn text(&self, column: &str) -> Result<Option<String>, sqlx::Error>;
}

impl Cells for AnyRow {
    fn int(&self, column: &str) -> Result<Option<i64>, sqlx::Error> {
        sqlx::Row::try_get(self, column)
    }
    fn text(&self, column: &str) -> Result<Option<String>, sqlx::Error> {
        sqlx::Row::try_get(self, column)
    }
}

/// A direct connection's row with its statement's column names, read once per query:
/// rusqlite's lookup by name asks SQLite for every column's name and checks it is UTF-8 on
/// every read, which the profile showed beside the statement itself.
struct DirectRow<'r, 's> {
    row: &'r rusqlite::Row<'s>,
    names: &'r [String],
}

impl DirectRow<'_, '_> {
    fn get<T: rusqlite::types::FromSql>(&self, column: &str) -> Result<T, sqlx::Error> {
        let index = self
            .names
            .iter()
            .position(|n| n.eq_ignore_ascii_case(column))
            .ok_or_else(|| direct_error(rusqlite::Error::InvalidColumnName(column.to_owned())))?;
        self.row.get(index).map_err(direct_error)
    }
}

impl Cells for DirectRow<'_, '_> {
    fn int(&self, column: &str) -> Result<Option<i64>, sqlx::Error> {
        self.get(column)
    }
    fn text(&self, column: &str) -> Result<Option<String>, sqlx::Error> {
        self.get(column)
    }
}

/// A type a column reads as ([`get`]).
pub trait Cell: Sized {
    fn read(row: &dyn Cells, column: &str) -> Result<Self, sqlx::Error>;
}

fn not_null<T>(column: &str, v: Option<T>) -> Result<T, sqlx::Error> {
    v.ok_or_else(|| sqlx::Error::ColumnDecode {
        index: column.to_owned(),
        source: "unexpected NULL".into(),
    })
}

impl Cell for i64 {
    fn read(row: &dyn Cells, column: &str) -> Result<Self, sqlx::Error> {
        not_null(column, row.int(column)?)
    }
}

impl Cell for Option<i64> {
    fn read(row: &dyn Cells, column: &str) -> Result<Self, sqlx::Error> {
        row.int(column)
    }
}

/// A column that is not one of the values its Rust type allows.
pub fn undecodable(column: &str, text: &str, what: &str) -> sqlx::Error {
    sqlx::Error::ColumnDecode {
        index: column.to_owned(),
        source: format!("{text:?} is not {what}").into(),
    }
}

/// A calendar date written `YYYY-MM-DD` (how date columns are stored).
pub fn parse_date(s: &str) -> Option<Date> {
    Date::parse(s, format_description!("[year]-[month]-[day]")).ok()
}

/// A date column's text as a date.
fn column_date(column: &str, text: &str) -> Result<Date, sqlx::Error> {
    parse_date(text).ok_or_else(|| undecodable(column, text, "a YYYY-MM-DD date"))
}

impl Cell for Date {
    fn read(row: &dyn Cells, column: &str) -> Result<Self, sqlx::Error> {
        column_date(column, &get::<String>(row, column)?)
    }
}

impl Cell for Option<Date> {
    fn read(row: &dyn Cells, column: &str) -> Result<Self, sqlx::Error> {
        row.text(column)?
            .map(|text| column_date(column, &text))
            .transpose()
    }
}

impl Cell for String {
    fn read(row: &dyn Cells, column: &str) -> Result<Self, sqlx::Error> {
        not_null(column, row.text(column)?)
    }
}

impl Cell for Option<String> {
    fn read(row: &dyn Cells, column: &str) -> Result<Self, sqlx::Error> {
        row.text(column)
    }
}

/// `column` of `row` as `T`.
pub fn get<T: Cell>(row: &dyn Cells, column: &str) -> Result<T, sqlx::Error> {
    T::read(row, column)
}

/// One connection for a run of statements; see [`Db::conn`](super::Db::conn) and
/// [`Db::transaction`](super::Db::transaction). Dropped without [`Conn::commit`], a
/// transaction is rolled back.
pub struct Conn {
    inner: Inner,
}

impl std::fmt::Debug for Conn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self.inner {
            Inner::Direct(_) => "Conn::Direct",
            Inner::Pool(_) => "Conn::Pool",
            Inner::Tx(_) => "Conn::Tx",
        })
    }
}

enum Inner {
    /// SQLite: the direct connection, locked.
    Direct(Locked),
    /// PostgreSQL, outside a transaction.
    Pool(PoolConnection<Any>),
    /// PostgreSQL, in a transaction.
    Tx(Transaction<'static, Any>),
}

/// The direct connection while a [`Conn`] holds it. A transaction still open when it is
/// released (an error, or a task dropped mid-way) is rolled back then, before the next
/// [`Conn`] can take the connection.
struct Locked(OwnedMutexGuard<Connection>);

impl Drop for Locked {
    fn drop(&mut self) {
        if !self.0.is_autocommit() {
            if let Err(e) = self.0.execute_batch("ROLLBACK") {
                tracing::error!(error = %e, "rolling back an abandoned SQLite transaction failed");
            }
        }
    }
}

impl Conn {
    pub(super) async fn direct(direct: &Direct, begin: bool) -> Result<Self, sqlx::Error> {
        let mut conn = Locked(direct.lock().await);
        if begin {
            // Takes the write lock at once (see `Db::begin`).
            run(&mut conn, |c| c.execute_batch("BEGIN IMMEDIATE")).await?;
        }
        Ok(Self {
            inner: Inner::Direct(conn),
        })
    }

    pub(super) fn pool(conn: PoolConnection<Any>) -> Self {
        Self {
            inner: Inner::Pool(conn),
        }
    }

    pub(super) fn tx(tx: Transaction<'static, Any>) -> Self {
        Self {
            inner: Inner::Tx(tx),
        }
    }

    /// Runs a statement; answers the number of rows it changed.
    pub async fn execute(&mut self, sql: &str, args: &[Arg<'_>]) -> Result<u64, sqlx::Error> {
        match &mut self.inner {
            Inner::Direct(conn) => run(conn, |c| direct_execute(c, sql, args)).await,
            Inner::Pool(conn) => bind(sql, args)
                .execute(&mut **conn)
                .await
                .map(|d| d.rows_affected()),
            Inner::Tx(tx) => bind(sql, args)
                .execute(&mut **tx)
                .await
                .map(|d| d.rows_affected()),
        }
    }

    /// Runs a query and reads each row it answers with `read`.
    pub async fn fetch<T>(
        &mut self,
        sql: &str,
        args: &[Arg<'_>],
        mut read: impl FnMut(&dyn Cells) -> Result<T, sqlx::Error>,
    ) -> Result<Vec<T>, sqlx::Error> {
        let rows = match &mut self.inner {
            Inner::Direct(conn) => {
                return run(conn, |c| direct_fetch(c, sql, args, &mut read)).await?;
            }
            Inner::Pool(conn) => bind(sql, args).fetch_all(&mut **conn).await?,
            Inner::Tx(tx) => bind(sql, args).fetch_all(&mut **tx).await?,
        };
        rows.iter().map(|r| read(r)).collect()
    }

    /// Commits the transaction this connection began (nothing outside one).
    pub async fn commit(self) -> Result<(), sqlx::Error> {
        match self.inner {
            Inner::Direct(mut conn) => {
                if !conn.0.is_autocommit() {
                    // On failure the transaction is still open: `Locked` rolls it back.
                    run(&mut conn, |c| c.execute_batch("COMMIT")).await?;
                }
                Ok(())
            }
            Inner::Pool(_) => Ok(()),
            Inner::Tx(tx) => tx.commit().await,
        }
    }
}

fn bind<'q>(
    sql: &'q str,
    args: &[Arg<'q>],
) -> sqlx::query::Query<'q, Any, sqlx::any::AnyArguments<'q>> {
    let mut query = sqlx::query(sql);
    for arg in args {
        query = match *arg {
            Arg::Int(v) => query.bind(v),
            Arg::Text(v) => query.bind(v),
        };
    }
    query
}

/// Runs `attempt` on the direct connection; while it finds the database locked by another
/// connection (`SQLITE_BUSY`: the pool's, or another process's on a file), tries again after
/// a pause that lets the runtime thread run other tasks, up to [`BUSY_TIMEOUT`]. A statement
/// that failed busy did nothing, and a `COMMIT` that did may be tried again (SQLite's
/// documented behaviour), so trying again is safe.
async fn run<T>(
    conn: &mut Locked,
    mut attempt: impl FnMut(&Connection) -> rusqlite::Result<T>,
) -> Result<T, sqlx::Error> {
    let mut waited = Duration::ZERO;
    let mut pauses = BUSY_PAUSES_MS.iter().copied();
    loop {
        match attempt(&conn.0) {
            Err(e) if is_busy(&e) && waited < BUSY_TIMEOUT => {
                let pause = Duration::from_millis(pauses.next().unwrap_or(100));
                tokio::time::sleep(pause).await;
                waited += pause;
            }
            done => return done.map_err(direct_error),
        }
    }
}

fn is_busy(e: &rusqlite::Error) -> bool {
    e.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseBusy)
}

/// The statement prepared (from the connection's cache) with `args` bound. `$N` becomes
/// SQLite's `?N`, the placeholder numbered N: SQLite reads `$1` as a parameter *named* "$1",
/// numbered in order of first appearance. The statements hold no `$` but placeholders.
fn prepare<'c>(
    conn: &'c Connection,
    sql: &str,
    args: &[Arg<'_>],
) -> rusqlite::Result<rusqlite::CachedStatement<'c>> {
    let mut stmt = conn.prepare_cached(&sql.replace('$', "?"))?;
    for (i, arg) in args.iter().enumerate() {
        match *arg {
            Arg::Int(v) => stmt.raw_bind_parameter(i + 1, v),
            Arg::Text(v) => stmt.raw_bind_parameter(i + 1, v),
        }?;
    }
    Ok(stmt)
}

fn direct_execute(conn: &Connection, sql: &str, args: &[Arg<'_>]) -> rusqlite::Result<u64> {
    let mut stmt = prepare(conn, sql, args)?;
    // `raw_execute` refuses a statement that answers rows (an `INSERT … RETURNING` is read
    // with `fetch`); `changes` is this statement's.
    stmt.raw_execute()?;
    Ok(conn.changes())
}

/// The rows' values, or the first error: a row `read` refuses is an `Ok(Err(_))`.
fn direct_fetch<T>(
    conn: &Connection,
    sql: &str,
    args: &[Arg<'_>],
    read: &mut impl FnMut(&dyn Cells) -> Result<T, sqlx::Error>,
) -> rusqlite::Result<Result<Vec<T>, sqlx::Error>> {
    let mut stmt = prepare(conn, sql, args)?;
    let names: Vec<String> = stmt.column_names().into_iter().map(str::to_owned).collect();
    let mut rows = stmt.raw_query();
    let mut out = Vec::new();
    while let Some(row) = rows.next()? {
        match read(&DirectRow { row, names: &names }) {
            Ok(v) => out.push(v),
            Err(e) => return Ok(Err(e)),
        }
    }
    Ok(Ok(out))
}

/// A direct connection's error as sqlx's database error, so callers see one error type.
#[derive(Debug)]
struct DirectError {
    message: String,
    kind: ErrorKind,
    source: rusqlite::Error,
}

impl std::fmt::Display for DirectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for DirectError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

impl DatabaseError for DirectError {
    fn message(&self) -> &str {
        &self.message
    }
    fn code(&self) -> Option<Cow<'_, str>> {
        self.source
            .sqlite_error()
            .map(|e| Cow::Owned(e.extended_code.to_string()))
    }
    fn as_error(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        self
    }
    fn as_error_mut(&mut self) -> &mut (dyn std::error::Error + Send + Sync + 'static) {
        self
    }
    fn into_error(self: Box<Self>) -> Box<dyn std::error::Error + Send + Sync + 'static> {
        self
    }
    fn kind(&self) -> ErrorKind {
        match self.kind {
            ErrorKind::UniqueViolation => ErrorKind::UniqueViolation,
            ErrorKind::ForeignKeyViolation => ErrorKind::ForeignKeyViolation,
            ErrorKind::NotNullViolation => ErrorKind::NotNullViolation,
            ErrorKind::CheckViolation => ErrorKind::CheckViolation,
            _ => ErrorKind::Other,
        }
    }
}

pub(super) fn direct_error(e: rusqlite::Error) -> sqlx::Error {
    use rusqlite::ffi;
    let kind = match e.sqlite_error().map(|s| s.extended_code) {
        Some(ffi::SQLITE_CONSTRAINT_UNIQUE | ffi::SQLITE_CONSTRAINT_PRIMARYKEY) => {
            ErrorKind::UniqueViolation
        }
        Some(ffi::SQLITE_CONSTRAINT_FOREIGNKEY) => ErrorKind::ForeignKeyViolation,
        Some(ffi::SQLITE_CONSTRAINT_NOTNULL) => ErrorKind::NotNullViolation,
        Some(ffi::SQLITE_CONSTRAINT_CHECK) => ErrorKind::CheckViolation,
        _ => ErrorKind::Other,
    };
    let message = match &e {
        rusqlite::Error::SqliteFailure(_, Some(m)) => m.clone(),
        other => other.to_string(),
    };
    sqlx::Error::Database(Box::new(DirectError {
        message,
        kind,
        source: e,
    }))
}
