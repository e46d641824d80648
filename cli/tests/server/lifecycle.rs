//! Health, readiness and shutdown of the real binary: SIGTERM drains in-flight steps (also
//! those whose client left) within the deadline and exits 0; a step the deadline cuts is
//! saved with its open calls settled; new connections are refused once the drain begins.

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::Duration;

use futures_util::StreamExt;
use serde_json::{json, Value};
use tokio::sync::mpsc;

use crate::cli::clean_command;
use crate::common::start;

/// The binary, started with `args` and `--listen 127.0.0.1:0`, and its stdout lines.
pub(crate) struct Process {
    child: Option<std::process::Child>,
    pub addr: String,
    /// The first line the server printed.
    pub startup: String,
    lines: mpsc::UnboundedReceiver<String>,
    http: reqwest::Client,
}

const PATIENCE: Duration = Duration::from_secs(30);

impl Process {
    pub fn start(args: &[&str]) -> Self {
        Self::start_with_env(args, &[])
    }

    /// Like [`Process::start`], with these environment variables set.
    pub fn start_with_env(args: &[&str], env: &[(&str, &str)]) -> Self {
        let mut cmd = clean_command();
        cmd.envs(env.iter().copied())
            .args(["--listen", "127.0.0.1:0"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let mut child = cmd.spawn().expect("spawn host-server");
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut first = String::new();
        stdout.read_line(&mut first).expect("startup line");
        let addr = first
            .trim()
            .strip_prefix("listening on http://")
            .and_then(|r| r.split(' ').next())
            .unwrap_or_else(|| panic!("startup line shape: {first:?}"))
            .to_owned();
        let (tx, lines) = mpsc::unbounded_channel();
        std::thread::spawn(move || {
            for line in stdout.lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Self {
            child: Some(child),
            addr,
            startup: first.trim().to_owned(),
            lines,
            http: reqwest::Client::new(),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// The next line the server prints.
    pub async fn line(&mut self) -> String {
        tokio::time::timeout(PATIENCE, self.lines.recv())
            .await
            .expect("the server prints a line")
            .expect("stdout is open")
    }

    pub async fn sign_in(&self, role: &str) -> String {
        let signed_in = self
            .http
            .post(self.url("/api/session"))
            .json(&json!({"role": role}))
            .send()
            .await
            .expect("sign in");
        signed_in.headers()["set-cookie"]
            .to_str()
            .expect("cookie")
            .split(';')
            .next()
            .expect("cookie pair")
            .to_owned()
    }

    pub async fn get(&self, path: &str, cookie: &str) -> (u16, Value) {
        let resp = self
            .http
            .get(self.url(path))
            .header("cookie", cookie)
            .send()
            .await
            .expect("answered");
        let status = resp.status().as_u16();
        (status, resp.json().await.unwrap_or(Value::Null))
    }

    /// Posts a step and returns its frames as they arrive.
    pub async fn step(&self, cookie: &str, conversation: &str) -> Frames {
        let resp = self
            .http
            .post(self.url("/agent/chat"))
            .header("cookie", cookie)
            .json(&step_request(conversation))
            .send()
            .await
            .expect("the step is answered");
        assert_eq!(resp.status().as_u16(), 200);
        Frames {
            stream: Box::pin(resp.bytes_stream()),
            buffer: Vec::new(),
        }
    }

    pub fn sigterm(&self) {
        let pid = self.child.as_ref().expect("running").id();
        let status = std::process::Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status()
            .expect("kill runs");
        assert!(status.success());
    }

    /// The exit code, once the process has exited by itself.
    pub async fn exit_code(mut self) -> Option<i32> {
        let mut child = self.child.take().expect("running");
        let waited = tokio::task::spawn_blocking(move || child.wait());
        tokio::time::timeout(PATIENCE, waited)
            .await
            .expect("the server exits by itself")
            .expect("join")
            .expect("wait")
            .code()
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn step_request(conversation: &str) -> Value {
    json!({
        "protocolVersion": 2,
        "conversationId": conversation,
        "turnId": "trn_1",
        "stepIndex": 0,
        "pathname": "/receivables/pending",
        "messages": [{"role": "user", "content": "How are we doing?"}],
        "catalog": {"mode": "direct", "frontendTools": []}
    })
}

type ByteStream = std::pin::Pin<
    Box<dyn futures_util::Stream<Item = reqwest::Result<actix_web::web::Bytes>> + Send>,
>;

/// A step's NDJSON frames, read as they arrive.
pub(crate) struct Frames {
    stream: ByteStream,
    buffer: Vec<u8>,
}

impl Frames {
    /// The next frame; `None` when the stream ended (or broke).
    pub async fn next(&mut self) -> Option<Value> {
        loop {
            if let Some(end) = self.buffer.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.buffer.drain(..=end).collect();
                return Some(serde_json::from_slice(&line).expect("a frame is JSON"));
            }
            match tokio::time::timeout(PATIENCE, self.stream.next())
                .await
                .expect("frames keep coming")
            {
                Some(Ok(chunk)) => self.buffer.extend_from_slice(&chunk),
                Some(Err(_)) | None => return None,
            }
        }
    }

    /// Reads up to and including the first frame of type `kind`.
    pub async fn until(&mut self, kind: &str) -> Vec<Value> {
        let mut seen = Vec::new();
        while let Some(frame) = self.next().await {
            let done = frame["type"] == kind;
            seen.push(frame);
            if done {
                return seen;
            }
        }
        panic!("the stream ended before a {kind} frame: {seen:?}");
    }
}

pub(crate) fn script(dir: &std::path::Path, turns: Value) -> String {
    let path = dir.join("script.json");
    std::fs::write(&path, json!({ "turns": turns }).to_string()).expect("write script");
    format!("scripted:{}", path.display())
}

#[actix_web::test]
async fn ready_answers_beside_health() {
    let srv = start().await;
    let ready = srv.get("/api/ready", None).await;
    assert_eq!((ready.status, ready.body), (200, json!({"ok": true})));
    assert_eq!(srv.get("/api/health", None).await.status, 200);

    // A database that no longer answers is not ready; the process is still alive.
    srv.state.close().await;
    let ready = srv.get("/api/ready", None).await;
    assert_eq!(ready.status, 503, "{}", ready.body);
    assert_eq!(ready.body["error"]["code"], "NOT_READY");
    assert_eq!(srv.get("/api/health", None).await.status, 200);
}

#[actix_web::test]
async fn ready_needs_every_migration() {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!("sqlite://{}/ready.sqlite3", dir.path().display());
    let srv = crate::common::start_with(
        crate::common::builder().with_config(|c| c.database_url = url.clone()),
    )
    .await;
    assert_eq!(srv.get("/api/ready", None).await.status, 200);
    sqlx::query(
        "DELETE FROM _sqlx_migrations WHERE version = (SELECT MAX(version) FROM _sqlx_migrations)",
    )
    .execute(&*srv.state.pool)
    .await
    .expect("forget the last migration");
    let ready = srv.get("/api/ready", None).await;
    assert_eq!(ready.status, 503, "{}", ready.body);
}

#[actix_web::test]
async fn sigterm_refuses_new_connections_finishes_in_flight_steps_and_exits_0() {
    let dir = tempfile::tempdir().expect("tempdir");
    let database = format!("sqlite://{}/drain.sqlite3", dir.path().display());
    let model = script(
        dir.path(),
        json!([{"delayMs": 3000, "text": ["All done."]}]),
    );
    let mut server = Process::start(&["--demo", "--database", &database, "--model", &model]);
    let cookie = server.sign_in("controller").await;
    let mut stays = server.step(&cookie, "cnv_stays").await;
    stays.until("step-start").await;
    // This client reads the start and leaves: its run goes on without it.
    let mut leaves = server.step(&cookie, "cnv_leaves").await;
    leaves.until("step-start").await;
    drop(leaves);

    server.sigterm();
    let draining = server.line().await;
    assert!(draining.starts_with("draining: "), "{draining}");
    let refused = tokio::net::TcpStream::connect(&server.addr).await;
    assert_eq!(
        refused.map(|_| ()).map_err(|e| e.kind()),
        Err(std::io::ErrorKind::ConnectionRefused),
        "no new connection once the drain began"
    );

    let rest = stays.until("step-finish").await;
    assert!(
        rest.iter()
            .any(|f| f["type"] == "text-delta" && f["text"] == "All done."),
        "{rest:?}"
    );
    assert_eq!(server.exit_code().await, Some(0));

    // Both runs were saved before the process ended, the departed client's too.
    let after = Process::start(&["--demo", "--database", &database, "--model", &model]);
    let cookie = after.sign_in("controller").await;
    for conversation in ["cnv_stays", "cnv_leaves"] {
        let (status, messages) = after
            .get(
                &format!("/api/threads/{conversation}/model-messages"),
                &cookie,
            )
            .await;
        assert_eq!(status, 200, "{conversation}: {messages}");
        assert!(
            messages.to_string().contains("All done."),
            "{conversation}: {messages}"
        );
    }
}

#[actix_web::test]
async fn a_step_cut_by_the_drain_deadline_is_saved_with_its_open_calls_settled() {
    let dir = tempfile::tempdir().expect("tempdir");
    let database = format!("sqlite://{}/cut.sqlite3", dir.path().display());
    let model = script(
        dir.path(),
        json!([{
            "text": ["Checking."],
            "toolCalls": [{"name": "domain_receivables-summary", "input": {}}],
            "silentAfterCalls": true
        }]),
    );
    let args = [
        "--demo",
        "--database",
        &database,
        "--model",
        &model,
        "--model-timeout",
        "600",
        "--drain-timeout",
        "1",
    ];
    let mut server = Process::start(&args);
    let cookie = server.sign_in("controller").await;
    let mut step = server.step(&cookie, "cnv_cut").await;
    let call = step.until("tool-call").await.pop().expect("the call");
    let call_id = call["toolCallId"].as_str().expect("call id").to_owned();

    // The model never finishes; the deadline cuts the step.
    server.sigterm();
    assert!(server.line().await.starts_with("draining: 1 step(s)"));
    let rest = step.until("step-finish").await;
    let error = rest
        .iter()
        .find(|f| f["type"] == "error")
        .unwrap_or_else(|| panic!("an error frame: {rest:?}"));
    assert_eq!(error["error"]["code"], "RUN_LIMIT_EXCEEDED");
    assert!(error["error"]["message"]
        .as_str()
        .is_some_and(|m| m.contains("shutting down")));
    let settled = rest
        .iter()
        .find(|f| f["type"] == "tool-result" && f["toolCallId"] == call_id.as_str())
        .unwrap_or_else(|| panic!("the open call is settled: {rest:?}"));
    assert_eq!(settled["ok"], false);
    assert_eq!(settled["result"]["error"]["code"], "TOOL_NOT_EXECUTED");
    assert_eq!(rest.last().expect("finish")["finishReason"], "error");
    assert_eq!(server.exit_code().await, Some(0));

    let after = Process::start(&["--demo", "--database", &database, "--model", &model]);
    let cookie = after.sign_in("controller").await;
    let (status, messages) = after
        .get("/api/threads/cnv_cut/model-messages", &cookie)
        .await;
    assert_eq!(status, 200, "{messages}");
    let roles: Vec<&str> = messages
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| m["role"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(roles, ["user", "assistant", "tool"], "{messages}");
    let stored = messages.to_string();
    assert!(
        stored.contains("Checking.") && stored.contains(&call_id),
        "{stored}"
    );
    assert!(stored.contains("TOOL_NOT_EXECUTED"), "{stored}");
}
