//! A throwaway PostgreSQL cluster for the tests: `initdb` in a temporary folder, `pg_ctl` on
//! a free 127.0.0.1 port (as the `postgres` user when the tests run as root), one cluster per
//! test binary and a fresh database per test.
//!
//! The cluster is removed by a small watchdog process that waits for this process to close a
//! pipe: it stops and deletes the cluster when the [`Cluster`] is dropped, and equally when
//! the test binary ends, panics or is killed (the operating system closes the pipe).
//!
//! Without the PostgreSQL server binaries the PostgreSQL tests print one line and return; under
//! CI (`CI` set) they fail instead.

use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use sqlx::Connection;

/// A running cluster; stopped and removed on drop.
pub struct Cluster {
    port: u16,
    watchdog: Child,
    /// Closing this tells the watchdog to stop and delete the cluster.
    pipe: Option<ChildStdin>,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        drop(self.pipe.take());
        let _ = self.watchdog.wait();
    }
}

/// The folder holding `initdb` and `pg_ctl`: `$DPAS_PG_BIN`, else the newest
/// `/usr/lib/postgresql/*/bin` (Debian's layout).
fn bin_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("DPAS_PG_BIN") {
        return Some(PathBuf::from(dir));
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(Result::ok)
        .filter_map(|e| {
            let v = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").is_file().then_some((v, bin))
        })
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin)| bin)
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.trim_ascii() == b"0")
}

/// `program args…`, as the `postgres` user when we are root (PostgreSQL refuses root).
fn as_postgres(program: &Path) -> Command {
    if is_root() {
        let mut cmd = Command::new("runuser");
        cmd.args(["-u", "postgres", "--"]).arg(program);
        cmd
    } else {
        Command::new(program)
    }
}

/// `pg_ctl`, prefixed as [`as_postgres`] prefixes it, as words for a shell's `"$@"`.
fn pg_ctl_command(bin: &Path) -> Vec<std::ffi::OsString> {
    let cmd = as_postgres(&bin.join("pg_ctl"));
    std::iter::once(cmd.get_program().to_owned())
        .chain(cmd.get_args().map(ToOwned::to_owned))
        .collect()
}

fn run(cmd: &mut Command, what: &str) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

impl Cluster {
    /// Starts a new cluster, or `None` (after one line on stderr) when PostgreSQL is not
    /// installed outside CI.
    pub fn start() -> Option<Self> {
        let Some(bin) = bin_dir() else {
            assert!(
                std::env::var_os("CI").is_none(),
                "PostgreSQL is missing under CI: no initdb in /usr/lib/postgresql/*/bin (set DPAS_PG_BIN)"
            );
            static SAID: std::sync::Once = std::sync::Once::new();
            SAID.call_once(|| {
                use std::io::Write;
                let _ = writeln!(
                    std::io::stderr(),
                    "PostgreSQL tests skipped: no initdb in /usr/lib/postgresql/*/bin (install postgresql, or set DPAS_PG_BIN)"
                );
            });
            return None;
        };
        let dir = tempfile::Builder::new()
            .prefix("dpas-pg-")
            .tempdir()
            .expect("a temporary folder")
            .keep();
        if is_root() {
            run(
                Command::new("chown").arg("postgres:postgres").arg(&dir),
                "chown",
            );
        }
        let data = dir.join("data");
        run(
            as_postgres(&bin.join("initdb"))
                .args([
                    "-A",
                    "trust",
                    "-U",
                    "postgres",
                    "--no-sync",
                    "-E",
                    "UTF8",
                    "-D",
                ])
                .arg(&data),
            "initdb",
        );
        let port = free_port();
        let options = format!(
            "-p {port} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200",
            dir.display()
        );
        // The watchdog: waits for its stdin to close, then stops the cluster and removes it.
        let mut watchdog = Command::new("sh")
            .arg("-c")
            .arg(r#"cat >/dev/null; "$@" stop -m immediate -D "$DATA" >/dev/null 2>&1; rm -rf "$DIR""#)
            .arg("watchdog")
            .args(pg_ctl_command(&bin))
            .env("DATA", &data)
            .env("DIR", &dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("the cluster's watchdog starts");
        let pipe = watchdog.stdin.take();
        let cluster = Self {
            port,
            watchdog,
            pipe,
        };
        run(
            as_postgres(&bin.join("pg_ctl"))
                .args(["start", "-w", "-t", "60", "-D"])
                .arg(&data)
                .arg("-l")
                .arg(dir.join("log"))
                .arg("-o")
                .arg(&options),
            "pg_ctl start",
        );
        Some(cluster)
    }

    /// A URL of the cluster's database `name`.
    pub fn url(&self, name: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{name}", self.port)
    }

    /// A new, empty database; its URL.
    pub async fn fresh_database(&self) -> String {
        static N: AtomicUsize = AtomicUsize::new(0);
        let name = format!(
            "t{}_{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        );
        let mut admin = sqlx::PgConnection::connect(&self.url("postgres"))
            .await
            .expect("the cluster answers");
        sqlx::query(&format!("CREATE DATABASE {name}"))
            .execute(&mut admin)
            .await
            .expect("a database is created");
        admin.close().await.ok();
        self.url(&name)
    }
}

/// The cluster this test binary shares, started by the first test that asks.
pub fn shared() -> Option<&'static Cluster> {
    static CLUSTER: OnceLock<Option<Cluster>> = OnceLock::new();
    CLUSTER.get_or_init(Cluster::start).as_ref()
}

/// A fresh database on the shared cluster, or `None` when PostgreSQL is not installed
/// (outside CI).
pub async fn fresh_database() -> Option<String> {
    match shared() {
        Some(c) => Some(c.fresh_database().await),
        None => None,
    }
}

/// The database URLs a store test runs against: in-memory SQLite, then a fresh PostgreSQL
/// database when there is one.
pub async fn backends() -> Vec<String> {
    let mut urls = vec!["sqlite::memory:".to_owned()];
    urls.extend(fresh_database().await);
    urls
}
