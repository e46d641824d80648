//! Shared test support: the recorded fixtures, a vendor stand-in (a raw HTTP/1.1 server on
//! 127.0.0.1 whose chunk boundaries the test controls), and event collection.

#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dpas_model::{
    AnthropicConfig, AnthropicProvider, EventStream, HttpSettings, ModelError, ModelEvent,
    ModelProvider, ModelRequest, OpenAiConfig, OpenAiProvider, RetryPolicy,
};
use futures_util::StreamExt;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

pub const OPENAI_KEY: &str = "sk-test-Zq8vK2mN4pR7tW1xY5bC3dF6";
pub const ANTHROPIC_KEY: &str = "sk-ant-test-Hj4kL7nP0qS3uV6wX9zA2cE5";

/// In a `Reply::Status` body, replaced by the stand-in's own base URL when served.
pub const BASE_PLACEHOLDER: &str = "{BASE}";

/// Recorded vendor streams (`fixtures/provider-streams/`, see its README): real traffic from
/// each vendor, kept in the repository.
pub fn fixtures_dir() -> PathBuf {
    dpas_protocol::test_support::fixtures_dir().join("provider-streams")
}

/// Every replayable fixture file name (`.sse` and `.chunks.jsonl`), sorted.
pub fn fixture_names() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(fixtures_dir())
        .expect("provider fixtures directory")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".sse") || n.ends_with(".chunks.jsonl"))
        .collect();
    names.sort();
    names
}

/// A fixture as the vendor's body bytes: `.sse` unchanged, `.chunks.jsonl` lines wrapped as
/// `data: <line>\n\n` (no `[DONE]`, as the README says).
pub fn fixture_body(name: &str) -> Vec<u8> {
    let raw = std::fs::read(fixtures_dir().join(name)).expect("fixture");
    if name.ends_with(".sse") {
        return raw;
    }
    let text = String::from_utf8(raw).expect("utf-8 fixture");
    let mut body = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        body.extend_from_slice(b"data: ");
        body.extend_from_slice(line.as_bytes());
        body.extend_from_slice(b"\n\n");
    }
    body
}

/// The JSON payloads of a `.chunks.jsonl` fixture (an oracle independent of the adapter).
pub fn fixture_lines(name: &str) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(fixtures_dir().join(name)).expect("fixture");
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect()
}

/// Splits `bytes` at the given boundaries (sorted, deduplicated, in range).
pub fn split_at(bytes: &[u8], cuts: &[usize]) -> Vec<Vec<u8>> {
    let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
    cuts.sort_unstable();
    cuts.dedup();
    let mut out = Vec::new();
    let mut start = 0;
    for cut in cuts.into_iter().chain([bytes.len()]) {
        if cut > start {
            out.push(bytes[start..cut].to_vec());
            start = cut;
        }
    }
    out
}

pub fn byte_by_byte(bytes: &[u8]) -> Vec<Vec<u8>> {
    bytes.iter().map(|b| vec![*b]).collect()
}

/// Deterministic pseudo-random cuts (a small LCG), so failures reproduce.
pub fn random_cuts(len: usize, seed: u64, n: usize) -> Vec<usize> {
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 33) as usize) % (len + 1)
        })
        .collect()
}

/// What the stand-in answers to one request.
#[derive(Debug, Clone)]
pub enum Reply {
    /// 200 `text/event-stream`, the body written as these HTTP chunks, then `end`.
    Sse { chunks: Vec<Vec<u8>>, end: End },
    /// Any status with a body (and `retry-after` when given).
    Status {
        status: u16,
        body: Vec<u8>,
        retry_after: Option<String>,
    },
    /// Reads the request and then never answers.
    Silent,
}

impl Reply {
    pub fn sse(body: &[u8]) -> Self {
        Self::Sse {
            chunks: vec![body.to_vec()],
            end: End::Complete,
        }
    }

    pub fn status(status: u16, body: &str) -> Self {
        Self::Status {
            status,
            body: body.as_bytes().to_vec(),
            retry_after: None,
        }
    }
}

/// How an SSE reply ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// The terminating chunk, then close.
    Complete,
    /// Close without the terminating chunk (a connection cut mid-body).
    Cut,
    /// Keep the connection open and send nothing more (a silent vendor).
    Hang,
}

/// One request the stand-in received.
#[derive(Debug, Clone)]
pub struct Captured {
    pub request_line: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Captured {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).expect("request body is JSON")
    }
}

/// A vendor stand-in on 127.0.0.1 answering requests with `replies` in order.
pub struct StandIn {
    pub base_url: String,
    captured: Arc<Mutex<Vec<Captured>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for StandIn {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl StandIn {
    pub async fn start(replies: Vec<Reply>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let captured = Arc::new(Mutex::new(Vec::new()));
        let sink = captured.clone();
        let task = tokio::spawn(async move {
            let mut replies = replies.into_iter();
            loop {
                let Ok((socket, _)) = listener.accept().await else {
                    return;
                };
                let reply = replies.next().unwrap_or_else(|| {
                    Reply::status(500, "{\"error\":{\"message\":\"no more replies\"}}")
                });
                let sink = sink.clone();
                tokio::spawn(serve(socket, reply, sink, format!("http://{addr}")));
            }
        });
        Self {
            base_url: format!("http://{addr}"),
            captured,
            task,
        }
    }

    pub fn requests(&self) -> Vec<Captured> {
        self.captured.lock().expect("lock").clone()
    }
}

/// Reads one request (its head and a `content-length` body) off `socket`.
pub async fn read_request(socket: &mut TcpStream) -> Option<Captured> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(pos) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break pos + 4;
        }
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap_or_default().to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = buf[head_end..].to_vec();
    while body.len() < length {
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    Some(Captured {
        request_line,
        headers,
        body,
    })
}

async fn serve(
    mut socket: TcpStream,
    reply: Reply,
    sink: Arc<Mutex<Vec<Captured>>>,
    base_url: String,
) {
    let _ = socket.set_nodelay(true);
    let Some(request) = read_request(&mut socket).await else {
        return;
    };
    sink.lock().expect("lock").push(request);
    match reply {
        Reply::Silent => std::future::pending::<()>().await,
        Reply::Status {
            status,
            body,
            retry_after,
        } => {
            let body = String::from_utf8_lossy(&body)
                .replace(BASE_PLACEHOLDER, &base_url)
                .into_bytes();
            let mut head = format!(
                "HTTP/1.1 {status} Status\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
                body.len()
            );
            if let Some(after) = retry_after {
                head.push_str(&format!("retry-after: {after}\r\n"));
            }
            head.push_str("\r\n");
            let _ = socket.write_all(head.as_bytes()).await;
            let _ = socket.write_all(&body).await;
            let _ = socket.shutdown().await;
        }
        Reply::Sse { chunks, end } => {
            let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n";
            if socket.write_all(head.as_bytes()).await.is_err() {
                return;
            }
            for chunk in chunks.iter().filter(|c| !c.is_empty()) {
                let mut frame = format!("{:x}\r\n", chunk.len()).into_bytes();
                frame.extend_from_slice(chunk);
                frame.extend_from_slice(b"\r\n");
                if socket.write_all(&frame).await.is_err() {
                    return;
                }
                let _ = socket.flush().await;
                tokio::task::yield_now().await;
            }
            match end {
                End::Complete => {
                    let _ = socket.write_all(b"0\r\n\r\n").await;
                }
                End::Cut => {}
                End::Hang => std::future::pending::<()>().await,
            }
            let _ = socket.shutdown().await;
        }
    }
}

/// Decodes a body given as exact chunks, without HTTP (Anthropic's decoder or OpenAI's).
pub fn decode(anthropic: bool, chunks: Vec<Vec<u8>>) -> EventStream {
    let body = futures_util::stream::iter(chunks.into_iter().map(Ok));
    if anthropic {
        dpas_model::providers::anthropic::decode_body(body)
    } else {
        dpas_model::providers::openai::decode_body(body)
    }
}

/// Runs a future on a fresh current-thread runtime (for proptest bodies).
pub fn block_on<T>(future: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime")
        .block_on(future)
}

/// HTTP settings for tests: short timeouts, millisecond retry delays.
pub fn fast_http() -> HttpSettings {
    HttpSettings {
        connect_timeout: Duration::from_secs(2),
        response_timeout: Duration::from_secs(10),
        retry: RetryPolicy {
            delays: vec![Duration::from_millis(1), Duration::from_millis(1)],
            max_retry_after: Duration::from_millis(5),
        },
        http2_prior_knowledge: false,
    }
}

pub fn openai(base_url: &str) -> OpenAiProvider {
    OpenAiProvider::new(OpenAiConfig {
        api_key: Some(OPENAI_KEY.to_owned()),
        base_url: format!("{base_url}/v1"),
        model: "gpt-test".to_owned(),
        http: fast_http(),
    })
    .expect("provider")
}

pub fn anthropic(base_url: &str) -> AnthropicProvider {
    AnthropicProvider::new(AnthropicConfig {
        api_key: ANTHROPIC_KEY.to_owned(),
        base_url: base_url.to_owned(),
        model: "claude-test".to_owned(),
        max_tokens: 1024,
        thinking_budget: None,
        http: fast_http(),
    })
    .expect("provider")
}

pub fn simple_request() -> ModelRequest {
    ModelRequest {
        model: String::new(),
        system: "You are a test.".to_owned(),
        messages: vec![dpas_protocol::WireModelMessage::user_text("hi")],
        tools: Vec::new().into(),
    }
}

/// Every event of a stream and its error, if it ended with one.
pub async fn collect(mut stream: EventStream) -> (Vec<ModelEvent>, Option<ModelError>) {
    let mut events = Vec::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(event) => events.push(event),
            Err(error) => {
                assert!(
                    stream.next().await.is_none(),
                    "the stream ends after an error"
                );
                return (events, Some(error));
            }
        }
    }
    (events, None)
}

/// Runs one step against a provider and collects it; a start error comes back as the error.
pub async fn run(
    provider: &dyn ModelProvider,
    request: ModelRequest,
) -> (Vec<ModelEvent>, Option<ModelError>) {
    match provider.stream(request).await {
        Ok(stream) => collect(stream).await,
        Err(error) => (Vec::new(), Some(error)),
    }
}

/// The joined text deltas.
pub fn text_of(events: &[ModelEvent]) -> String {
    joined(events, |e| match e {
        ModelEvent::TextDelta(t) => Some(t),
        _ => None,
    })
}

/// The joined reasoning deltas.
pub fn reasoning_of(events: &[ModelEvent]) -> String {
    joined(events, |e| match e {
        ModelEvent::ReasoningDelta(t) => Some(t),
        _ => None,
    })
}

fn joined(events: &[ModelEvent], pick: impl Fn(&ModelEvent) -> Option<&String>) -> String {
    events.iter().filter_map(pick).map(String::as_str).collect()
}

pub fn calls_of(events: &[ModelEvent]) -> Vec<dpas_model::ToolCall> {
    events
        .iter()
        .filter_map(|e| match e {
            ModelEvent::ToolCall(c) => Some(c.clone()),
            _ => None,
        })
        .collect()
}
