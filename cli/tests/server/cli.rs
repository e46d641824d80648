//! The binary's contract: flags, environment fallbacks, the startup line, and a file database
//! that keeps the ledger across restarts.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use serde_json::json;

use crate::common::{builder, carla, start_with};

const BIN: &str = env!("CARGO_BIN_EXE_host-server");

/// A child process that is killed when the test ends, whatever happens.
pub(crate) struct Child(pub(crate) std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub(crate) fn clean_command() -> Command {
    let mut cmd = Command::new(BIN);
    // Every flag has a `DPAS_*` fallback: none of the caller's may leak in, nor the
    // OpenTelemetry exporter's own `OTEL_*` variables.
    for (var, _) in std::env::vars_os() {
        let name = var.to_string_lossy();
        if name.starts_with("DPAS_") || name.starts_with("OTEL_") {
            cmd.env_remove(&var);
        }
    }
    cmd.env("RUST_LOG", "warn");
    cmd
}

#[actix_web::test]
async fn the_binary_prints_its_startup_line_and_serves() {
    let mut cmd = clean_command();
    cmd.args([
        "--listen",
        "127.0.0.1:0",
        "--database",
        "sqlite::memory:",
        "--demo",
    ])
    .stdout(Stdio::piped())
    .stderr(Stdio::null());
    let mut child = Child(cmd.spawn().expect("spawn host-server"));
    let stdout = child.0.stdout.take().expect("stdout");
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .expect("startup line");
    let rest = line
        .trim()
        .strip_prefix("listening on http://")
        .expect("startup line shape");
    let (addr, tail) = rest.split_once(' ').expect("address then details");
    assert_eq!(tail, "database=sqlite::memory: model=scripted demo=on");
    let health = reqwest::get(format!("http://{addr}/api/health"))
        .await
        .expect("health answers");
    assert_eq!(
        health.json::<serde_json::Value>().await.expect("json"),
        json!({"ok": true})
    );
}

/// `--listen-backlog` sizes the listening socket's queue (read back from the kernel with `ss`,
/// whose Send-Q column is a listening socket's backlog) and the server serves on it; 0 is
/// refused at start.
#[actix_web::test]
async fn the_listen_backlog_flag_sizes_the_socket_and_the_server_serves() {
    let server = crate::lifecycle::Process::start(&[
        "--demo",
        "--database",
        "sqlite::memory:",
        "--listen-backlog",
        "300",
    ]);
    let port = server.addr.rsplit_once(':').expect("host:port").1;
    let ss = Command::new("ss")
        .args(["-Hltn", &format!("sport = :{port}")])
        .output()
        .expect("ss (iproute2, scripts/setup.sh installs it)");
    let listing = String::from_utf8_lossy(&ss.stdout);
    // State, Recv-Q, Send-Q (the backlog), local address, peer address.
    let columns: Vec<&str> = listing.split_whitespace().collect();
    assert_eq!(columns.get(2), Some(&"300"), "ss: {listing}");
    let health = reqwest::get(server.url("/api/health"))
        .await
        .expect("health answers");
    assert_eq!(health.status(), 200);

    let out = clean_command()
        .args(["--demo", "--listen-backlog", "0"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2), "a backlog of 0 is refused");
}

#[test]
fn flags_are_validated_with_environment_fallbacks() {
    let out = clean_command()
        .args(["--database", "sqlite::memory:"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--auth is required without --demo"),
        "an identity source is required without --demo"
    );
    let proxied = ["--auth", "proxy-header", "--trusted-proxy", "127.0.0.1"];
    let out = clean_command()
        .args(["--database", "sqlite::memory:"])
        .args(proxied)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--session-secret"),
        "a secret is required without --demo"
    );

    let out = clean_command()
        .args(["--demo", "--model", "gpt-4"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("invalid model spec"));

    let out = clean_command()
        .env("DPAS_MODEL", "openai:")
        .arg("--demo")
        .output()
        .expect("run");
    assert_eq!(
        out.status.code(),
        Some(2),
        "the environment is validated like the flag"
    );

    // The probe's 1-character secret, and anything short of 32 bytes, is refused at start.
    for secret in ["x", "0123456789abcdef0123456789abcde"] {
        let out = clean_command()
            .args(["--database", "sqlite::memory:", "--session-secret", secret])
            .args(proxied)
            .output()
            .expect("run");
        assert_eq!(out.status.code(), Some(2), "{secret}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("at least 32 bytes"),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let out = clean_command()
        .args(["--demo", "--allowed-origin", "https://example.com/path"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not an origin"));

    let out = clean_command()
        .env("DPAS_LISTEN", "not-an-address")
        .arg("--demo")
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
}

/// Before, sqlx took any string as a SQLite file name: the server started on a new empty
/// file in a folder called `postgres:`.
#[test]
fn a_database_url_of_another_kind_fails_the_start_and_creates_nothing() {
    let dir = tempfile::tempdir().expect("temp dir");
    for (url, says) in [
        (
            "mysql://app:hunter2@127.0.0.1/dpas",
            "scheme is not a database",
        ),
        ("postgres:dpas", "PostgreSQL URL starts with //"),
        ("dpas.sqlite3", "not a database URL"),
    ] {
        let out = clean_command()
            .current_dir(dir.path())
            .args(["--demo", "--listen", "127.0.0.1:0", "--database", url])
            .stdin(Stdio::null())
            .output()
            .expect("run");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{url}: {stderr}");
        assert!(stderr.contains(says), "{url}: {stderr}");
        assert!(stderr.contains("supported: sqlite:"), "{url}: {stderr}");
        assert!(stderr.contains("postgres://"), "{url}: {stderr}");
        assert!(
            !stderr.contains("hunter2"),
            "the password is not echoed: {stderr}"
        );
        assert!(out.stdout.is_empty(), "{url}: nothing listened");
    }
    let left: Vec<_> = std::fs::read_dir(dir.path()).expect("dir").collect();
    assert!(left.is_empty(), "nothing was created: {left:?}");
}

/// A PostgreSQL URL is accepted; a database that does not answer fails the start with a
/// non-zero exit naming the scheme only, and nothing listens or is created.
#[test]
fn an_unreachable_postgres_fails_the_start_naming_the_scheme_only() {
    let dir = tempfile::tempdir().expect("temp dir");
    // A port nothing listens on: bound, then released.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port();
    for scheme in ["postgres", "postgresql"] {
        let url = format!("{scheme}://app:hunter2@127.0.0.1:{port}/dpas");
        let out = clean_command()
            .current_dir(dir.path())
            .args(["--demo", "--listen", "127.0.0.1:0", "--database", &url])
            .stdin(Stdio::null())
            .output()
            .expect("run");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{url}: {stderr}");
        assert!(
            stderr.contains("cannot reach the postgres database"),
            "{url}: {stderr}"
        );
        assert!(!stderr.contains("hunter2"), "{stderr}");
        assert!(!stderr.contains("app@"), "{stderr}");
        assert!(out.stdout.is_empty(), "{url}: nothing listened");
    }
    let left: Vec<_> = std::fs::read_dir(dir.path()).expect("dir").collect();
    assert!(left.is_empty(), "nothing was created: {left:?}");
}

/// The binary on a real PostgreSQL: it starts, says which database by scheme only, and
/// serves the seeded ledger.
#[actix_web::test]
async fn the_binary_runs_on_postgres() {
    let Some(url) = crate::pg::fresh_database().await else {
        return;
    };
    let mut cmd = clean_command();
    cmd.args(["--listen", "127.0.0.1:0", "--demo", "--database", &url])
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = Child(cmd.spawn().expect("spawn"));
    let mut line = String::new();
    BufReader::new(child.0.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("startup line");
    assert!(line.contains("database=postgres://…"), "{line}");
    assert!(!line.contains("postgres@"), "{line}");
    let base = line.split_whitespace().nth(2).expect("address").to_owned();
    let health = reqwest::get(format!("{base}/api/health"))
        .await
        .expect("health");
    assert_eq!(health.status(), 200);
}

#[actix_web::test]
async fn a_file_database_keeps_the_ledger_across_restarts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!("sqlite://{}/nested/ledger.sqlite3", dir.path().display());
    let first = start_with(builder().with_config(|c| c.database_url = url.clone())).await;
    let carla = first.sign_in("controller").await;
    // Concurrent writers on several connections queue up; each gets its own id.
    let creates = (0..8).map(|_| {
        first.rpc(
            &carla,
            "create-invoice",
            json!({"clientId": 3, "amount": 4200}),
        )
    });
    let created = futures_util::future::join_all(creates).await;
    let mut ids: Vec<i64> = created
        .iter()
        .map(|(status, env)| {
            assert_eq!(*status, 200, "{env}");
            env["data"]["id"].as_i64().unwrap_or_default()
        })
        .collect();
    ids.sort_unstable();
    assert_eq!(ids, (25..33).collect::<Vec<i64>>());
    first.state.close().await;

    // Not empty, so not re-seeded: the new draft is still there.
    let second = start_with(builder().with_config(|c| c.database_url = url.clone())).await;
    let carla = second.sign_in("controller").await;
    let (_, summary) = second.rpc(&carla, "receivables-summary", json!({})).await;
    assert_eq!(summary["data"]["invoiceCount"], 32);
    assert_eq!(summary["data"]["draft"], 6_490_000 + 8 * 4200);
}

#[actix_web::test]
async fn approvals_survive_a_restart_and_resume_exactly_once() {
    use host_server::{CallSurface, Correlation};

    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!("sqlite://{}/approvals.sqlite3", dir.path().display());
    let first = start_with(builder().with_config(|c| c.database_url = url.clone())).await;
    let approval_id = first
        .carla_awaits_approval(CallSurface::Model, "issue-invoice", json!({"id": 5}))
        .await;
    first.state.close().await;

    let second = start_with(builder().with_config(|c| c.database_url = url.clone())).await;
    let cookie = second.sign_in("controller").await;
    let cards = second.get("/api/approvals", Some(&cookie)).await.body;
    assert_eq!(
        cards[0]["id"],
        json!(approval_id),
        "the pending record outlived the process"
    );
    second
        .state
        .runtime
        .decide(&approval_id, &carla(), true)
        .await
        .expect("decide");

    // Several connections race on the file database; the check-and-set lets one through.
    let rt = &second.state.runtime;
    let requester = carla();
    let (a, b, c) = tokio::join!(
        rt.resume(
            &approval_id,
            &requester,
            CallSurface::Model,
            Correlation::default()
        ),
        rt.resume(
            &approval_id,
            &requester,
            CallSurface::Model,
            Correlation::default()
        ),
        rt.resume(
            &approval_id,
            &requester,
            CallSurface::Model,
            Correlation::default()
        )
    );
    assert_eq!(
        [&a, &b, &c].iter().filter(|e| e.is_ok()).count(),
        1,
        "{a:?} {b:?} {c:?}"
    );
    let (_, summary) = second.rpc(&cookie, "receivables-summary", json!({})).await;
    assert_eq!(summary["data"]["outstanding"], 20_050_000 + 1_275_000);
}

#[actix_web::test]
async fn a_kill_between_decide_and_run_leaves_the_approval_interrupted_not_stranded() {
    use host_server::CallSurface;

    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("crash.sqlite3");
    let url = format!("sqlite://{}", path.display());
    // The approval is requested through a first server, which then stops cleanly.
    let first = start_with(builder().with_config(|c| c.database_url = url.clone())).await;
    let approval_id = first
        .carla_awaits_approval(CallSurface::Model, "issue-invoice", json!({"id": 5}))
        .await;
    first.state.close().await;

    // The binary decides it and stops dead right after the decision is committed.
    let mut cmd = clean_command();
    cmd.args(["--listen", "127.0.0.1:0", "--database", &url, "--demo"])
        .env("DPAS_FAULT_HOOK", "after-decide")
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(dir.path().join("stderr.log")).expect("stderr file"));
    let mut child = Child(cmd.spawn().expect("spawn host-server"));
    let stdout = BufReader::new(child.0.stdout.take().expect("stdout"));
    // Read off the runtime's thread: a blocking read here would stall this process's own
    // tasks while the binary starts.
    let (mut stdout, line) = tokio::task::spawn_blocking(move || {
        let mut stdout = stdout;
        let mut line = String::new();
        stdout.read_line(&mut line).expect("startup line");
        (stdout, line)
    })
    .await
    .expect("join");
    let addr = line
        .trim()
        .strip_prefix("listening on http://")
        .and_then(|r| r.split(' ').next())
        .unwrap_or_else(|| {
            panic!(
                "startup line shape: {line:?}; stderr: {}",
                std::fs::read_to_string(dir.path().join("stderr.log")).unwrap_or_default()
            )
        })
        .to_owned();
    let client = reqwest::Client::new();
    let signed_in = client
        .post(format!("http://{addr}/api/session"))
        .json(&json!({"role": "controller"}))
        .send()
        .await
        .expect("sign in");
    let cookie = signed_in.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let decide = client
        .post(format!("http://{addr}/api/approvals/{approval_id}"))
        .header("cookie", cookie)
        .json(&json!({"approved": true, "threadId": "cnv_crash"}))
        .send();
    let pending_answer = actix_web::rt::spawn(decide);
    let hook = tokio::task::spawn_blocking(move || {
        let mut line = String::new();
        stdout.read_line(&mut line).map(|_| line)
    });
    let announced = tokio::time::timeout(std::time::Duration::from_secs(20), hook)
        .await
        .expect("the server reaches the point after the decision")
        .expect("join")
        .expect("read");
    assert_eq!(announced.trim(), "fault-hook: after-decide");
    // kill -9, between the committed decision and the run.
    child.0.kill().expect("SIGKILL");
    child.0.wait().expect("reaped");
    assert!(
        pending_answer.await.expect("join").is_err(),
        "the decision's answer never came"
    );

    // On the next start the record is found and marked: not stranded, not re-run.
    let second = start_with(builder().with_config(|c| c.database_url = url.clone())).await;
    let carla = second.sign_in("controller").await;
    let card = second
        .get(&format!("/api/approvals/{approval_id}"), Some(&carla))
        .await
        .body;
    assert_eq!(card["status"], "interrupted", "{card}");
    assert!(card["message"]
        .as_str()
        .unwrap_or_default()
        .contains("may or may not have happened"));
    assert_eq!(
        second.get("/api/approvals", Some(&carla)).await.body,
        json!([])
    );
    let again = second
        .post(
            &format!("/api/approvals/{approval_id}"),
            Some(&carla),
            json!({"approved": true}),
        )
        .await;
    assert_eq!(
        (again.status, again.body["error"]["code"].clone()),
        (409, json!("APPROVAL_INTERRUPTED"))
    );
    let (_, all) = second
        .rpc(&carla, "list-invoices", json!({"kind": "all"}))
        .await;
    let five = all["data"]
        .as_array()
        .and_then(|rows| rows.iter().find(|r| r["id"] == 5).cloned())
        .unwrap_or_default();
    assert_eq!(
        five["status"], "draft",
        "the run never happened and was not re-run"
    ); // The conversation the approval was given in says so too.
    let thread = second
        .get("/api/threads/cnv_crash/model-messages", Some(&carla))
        .await
        .body;
    assert!(
        thread.to_string().contains("may or may not have happened"),
        "{thread}"
    );
}

/// Runs the binary with `args` and returns its exit code and error output.
fn refused_start(args: &[&str]) -> (Option<i32>, String) {
    let out = clean_command().args(args).output().expect("run");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[actix_web::test]
async fn identity_flags_are_checked_at_start() {
    let secret = "0123456789abcdef0123456789abcdef";
    for (args, expected) in [
        (vec!["--auth", "demo"], "works only with --demo"),
        (vec!["--auth", "jwt"], "needs --jwt-secret"),
        (
            vec!["--auth", "jwt", "--jwt-secret", "short"],
            "at least 32 bytes",
        ),
        (
            vec![
                "--auth",
                "jwt",
                "--jwt-secret",
                secret,
                "--jwt-jwks",
                "k.json",
            ],
            "not both",
        ),
        (
            vec![
                "--auth",
                "jwt",
                "--jwt-secret",
                secret,
                "--trusted-proxy",
                "10.0.0.1",
            ],
            "need --auth proxy-header",
        ),
        (
            vec!["--demo", "--auth", "proxy-header", "--jwt-secret", secret],
            "need --auth jwt",
        ),
        (vec!["--auth", "proxy-header"], "needs --trusted-proxy"),
        (
            vec!["--auth", "proxy-header", "--trusted-proxy", "10.0.0.300"],
            "neither an IP address nor a CIDR range",
        ),
        (
            vec!["--auth", "jwt", "--jwt-jwks", "/nonexistent/jwks.json"],
            "--jwt-jwks /nonexistent/jwks.json",
        ),
        (vec!["--auth", "magic"], "invalid value 'magic'"),
    ] {
        let mut all = vec!["--listen", "127.0.0.1:0", "--database", "sqlite::memory:"];
        all.extend(&args);
        let (code, stderr) = refused_start(&all);
        assert_ne!(code, Some(0), "{args:?}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
        assert!(
            !stderr.contains(secret),
            "{args:?} echoes the secret: {stderr}"
        );
    }

    // `--auth jwt` needs no session secret, and reads its flags from the environment too.
    let mut cmd = clean_command();
    cmd.env("DPAS_AUTH", "jwt")
        .env("DPAS_JWT_SECRET", secret)
        .args(["--listen", "127.0.0.1:0", "--database", "sqlite::memory:"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = Child(cmd.spawn().expect("spawn host-server"));
    let mut line = String::new();
    BufReader::new(child.0.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("startup line");
    let addr = line
        .trim()
        .strip_prefix("listening on http://")
        .and_then(|rest| rest.split(' ').next())
        .expect("startup line shape")
        .to_owned();
    let session = reqwest::get(format!("http://{addr}/api/session"))
        .await
        .expect("answered");
    assert_eq!(session.status(), 401);
    let body: serde_json::Value = session.json().await.expect("json");
    assert_eq!(body["error"]["code"], "TOKEN_MISSING");
    let sign_in = reqwest::Client::new()
        .post(format!("http://{addr}/api/session"))
        .json(&json!({"role": "controller"}))
        .send()
        .await
        .expect("answered");
    assert_eq!(sign_in.status(), 404, "no demo sign-in outside --demo");
}
