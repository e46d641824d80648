#![warn(unreachable_pub)]

//! The database: SQLite (embedded, the default) or PostgreSQL (shared by replicas), chosen by
//! the URL's scheme, behind one pool type, and the SQL stores of `dpas-governance`'s traits.
//!
//! # API
//! - [`connect`] → [`Db`] (migrated), [`ready`], [`Conn`] (a run of a step's statements), the
//!   row readers ([`get`], [`Cell`], [`Cells`]).
//! - [`SqlApprovalStore`], [`SqlThreadStore`], [`SqlUsageStore`], [`AuditLog`] (the audit table's writer and
//!   reader, [`AuditRetention`]), [`revocations`] (signed-out sessions).
//!
//! # Invariants
//! - No HTTP (no actix-web in its tree).
//! - One set of statements for both backends (sqlx `Any`, `$N` placeholders); the dialect
//!   differences are in [`Db`] and nowhere else.
//! - Every change that must not race (an approval's decision, a thread's append, an audit
//!   batch) is one transaction holding its row's or its table's lock, so replicas on one
//!   PostgreSQL database act as one.
//!
//! Every store is written once against sqlx's `Any` driver: the statements use `$N`
//! placeholders and SQL both backends read the same way, so there is one set of semantics.
//! What differs is said here and nowhere else: how a read-then-write transaction begins
//! ([`Db::begin`]), how it locks the row it read ([`Db::for_update`]) and how it serialises
//! with other writers of the same thing ([`Db::lock`]).
//!
//! The statements a chat step runs go through a [`Conn`] ([`Db::conn`],
//! [`Db::transaction`]): on SQLite that is a direct connection that runs them inline, on
//! PostgreSQL a connection of the pool (see `conn.rs` for why). Both see one database:
//! a file by its path; an in-memory database (`sqlite::memory:`) is opened as a named
//! database of SQLite's `memdb` VFS, which every connection of the process that names it
//! shares, with SQLite's ordinary locking between them (and no write-ahead log: `memdb` keeps
//! its rollback journal in memory). Routing every SQLite statement through the direct
//! connection instead would have rewritten every store for a few rare statements.

pub mod approvals;
pub mod audit_log;
mod conn;
mod db;
pub mod revocations;
pub mod steps;
pub mod threads;
pub mod usage;

pub use approvals::SqlApprovalStore;
pub use audit_log::{AuditLog, AuditRetention, DEFAULT_MEMORY_AUDIT_ROWS};
pub use conn::{get, parse_date, undecodable, Arg, Cell, Cells, Conn};
pub use db::{connect, int, is_memory, ready, Backend, Db, DbError, LockKey};
pub use steps::SqlStepStore;
pub use threads::SqlThreadStore;
pub use usage::SqlUsageStore;
