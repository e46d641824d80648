//! `POST /agent/chat/cancel` against a step that is really mid-stream: the vendor is a local
//! OpenAI-compatible stand-in that streams a server call and a browser call and then holds its
//! connection open, so the step waits on the model when the cancel lands. On SQLite, and on
//! two replicas sharing a throwaway PostgreSQL.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use dpas_protocol::ndjson::FrameDecoder;
use dpas_protocol::Frame;
use futures_util::StreamExt as _;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::Notify;

use crate::common::{builder, TestServer};

#[path = "../../../model/tests/common/mod.rs"]
mod stand_in;

const SERVER_CALL: &str = "call_aging";
const BROWSER_CALL: &str = "call_filter";

/// An OpenAI-compatible vendor: its first reply streams text and two calls and then neither
/// finishes nor closes; every later reply is a whole text answer.
struct SlowVendor {
    base_url: String,
    /// Request bodies, in arrival order.
    requests: Arc<Mutex<Vec<Value>>>,
    /// Held replies whose connection the server closed.
    closed: Arc<AtomicUsize>,
    closed_now: Arc<Notify>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for SlowVendor {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn chunk(data: &Value) -> String {
    let text = format!("data: {data}\n\n");
    format!("{:x}\r\n{text}\r\n", text.len())
}

fn held_reply() -> String {
    let mut out = String::from(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n",
    );
    out.push_str(&chunk(&json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": "Let me look."}}]})));
    out.push_str(&chunk(&json!({"choices": [{"index": 0, "delta": {"tool_calls": [
        {"index": 0, "id": SERVER_CALL, "type": "function", "function": {"name": "domain_collections-aging", "arguments": "{}"}},
        {"index": 1, "id": BROWSER_CALL, "type": "function", "function": {"name": "view_invoices__pending__setFilters", "arguments": "{\"due\":\"overdue\"}"}}
    ]}, "finish_reason": "tool_calls"}]})));
    out
}

fn whole_reply() -> String {
    let mut out = String::from(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n",
    );
    out.push_str(&chunk(&json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": "Stopped as you asked."}}]})));
    out.push_str(&chunk(
        &json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
    ));
    let done = "data: [DONE]\n\n";
    out.push_str(&format!("{:x}\r\n{done}\r\n0\r\n\r\n", done.len()));
    out
}

impl SlowVendor {
    async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let base_url = format!("http://{}", listener.local_addr().expect("addr"));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let closed = Arc::new(AtomicUsize::new(0));
        let closed_now = Arc::new(Notify::new());
        let (seen, gone, told) = (requests.clone(), closed.clone(), closed_now.clone());
        let task = tokio::spawn(async move {
            loop {
                let Ok((mut socket, _)) = listener.accept().await else {
                    return;
                };
                let (seen, gone, told) = (seen.clone(), gone.clone(), told.clone());
                tokio::spawn(async move {
                    let Some(request) = stand_in::read_request(&mut socket).await else {
                        return;
                    };
                    let body = request.json();
                    let first = {
                        let mut seen = seen.lock().expect("lock");
                        seen.push(body);
                        seen.len() == 1
                    };
                    if !first {
                        let _ = socket.write_all(whole_reply().as_bytes()).await;
                        let _ = socket.shutdown().await;
                        return;
                    }
                    if socket.write_all(held_reply().as_bytes()).await.is_err() {
                        return;
                    }
                    // Held: nothing more is written; the server closing the connection ends it.
                    let mut buf = [0u8; 1024];
                    while matches!(socket.read(&mut buf).await, Ok(n) if n > 0) {}
                    gone.fetch_add(1, Ordering::SeqCst);
                    told.notify_waiters();
                });
            }
        });
        Self {
            base_url,
            requests,
            closed,
            closed_now,
            task,
        }
    }

    fn provider(&self) -> Arc<dyn dpas_model::ModelProvider> {
        let http = dpas_model::HttpSettings {
            connect_timeout: Duration::from_secs(2),
            response_timeout: Duration::from_secs(10),
            retry: dpas_model::RetryPolicy {
                delays: Vec::new(),
                max_retry_after: Duration::from_millis(5),
            },
            http2_prior_knowledge: false,
        };
        Arc::new(
            dpas_model::OpenAiProvider::new(dpas_model::OpenAiConfig {
                api_key: Some("sk-test-cancel".to_owned()),
                base_url: format!("{}/v1", self.base_url),
                model: "gpt-test".to_owned(),
                http,
            })
            .expect("provider"),
        )
    }

    /// Waits (up to 10 s) until the server has closed the held reply's connection.
    async fn wait_closed(&self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let told = self.closed_now.notified();
            tokio::pin!(told);
            told.as_mut().enable();
            if self.closed.load(Ordering::SeqCst) > 0 {
                return;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(
                tokio::time::timeout(left, told).await.is_ok(),
                "the vendor's connection was never closed"
            );
        }
    }

    fn requests(&self) -> Vec<Value> {
        self.requests.lock().expect("lock").clone()
    }
}

/// A server on `database_url` (SQLite in memory when `None`) whose steps run on `vendor`.
async fn server(vendor: &SlowVendor, database_url: Option<&str>) -> TestServer {
    let chat = dpas_engine::ChatConfig {
        models: dpas_engine::ModelSet::new(vec![vendor.provider()]),
        floors: Arc::new(dpas_demo::route_floors()),
        app_prompt: Arc::from(dpas_demo::APP_PROMPT),
        model_timeout: Duration::from_secs(45),
    };
    let mut builder = builder();
    if let Some(url) = database_url {
        let url = url.to_owned();
        builder = builder.with_config(move |c| c.database_url = url);
    }
    crate::common::start_with_routes(builder, host_server::doors::mount(chat)).await
}

fn step0() -> Value {
    let body = dpas_tests::read_trace_request("browser-carla-step0").expect("the trace");
    let mut body: Value = serde_json::from_slice(&body).expect("json");
    // The step runs on the stand-in, whatever model the trace asked for.
    body.as_object_mut().expect("object").remove("modelId");
    body
}

/// A step's response as it streams: its bytes so far, read frame by frame.
struct Streaming {
    stream: futures_util::stream::BoxStream<'static, reqwest::Result<Vec<u8>>>,
    decoder: FrameDecoder,
    bytes: Vec<u8>,
    frames: Vec<Frame>,
}

impl Streaming {
    /// Posts `body` as a step; whether it was answered from the step's record, and its body.
    async fn post(server: &TestServer, cookie: &str, body: &Value) -> (bool, Self) {
        let resp = post(server, "/agent/chat", cookie, body).await;
        assert_eq!(resp.status(), 200);
        let replayed = resp.headers().get("dpas-step-replay").is_some();
        let stream = resp.bytes_stream().map(|c| c.map(|b| b.to_vec()));
        (
            replayed,
            Self {
                stream: Box::pin(stream),
                decoder: FrameDecoder::new(),
                bytes: Vec::new(),
                frames: Vec::new(),
            },
        )
    }

    /// Reads until a frame `until` accepts has arrived (or the stream ends).
    async fn read_until(&mut self, until: impl Fn(&Frame) -> bool) {
        while !self.frames.iter().any(&until) {
            let Some(chunk) = self.stream.next().await else {
                return;
            };
            let chunk = chunk.expect("the stream reads");
            self.bytes.extend_from_slice(&chunk);
            self.frames.extend(self.decoder.push(&chunk));
        }
    }

    async fn read_to_end(&mut self) {
        self.read_until(|_| false).await;
    }
}

fn has_tool_calls(frame: &Frame) -> bool {
    matches!(frame, Frame::ToolCall(c) if c.tool_call_id == BROWSER_CALL)
}

fn is_finish(frame: &Frame) -> bool {
    matches!(frame, Frame::StepFinish(_))
}

async fn post(server: &TestServer, path: &str, cookie: &str, body: &Value) -> reqwest::Response {
    server
        .http
        .post(server.url(path))
        .header("content-type", "application/json")
        .header("cookie", cookie)
        .body(body.to_string())
        .send()
        .await
        .expect("the server answers")
}

async fn cancel(server: &TestServer, cookie: &str, body: &Value) -> (u16, Value) {
    let resp = post(server, "/agent/chat/cancel", cookie, body).await;
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(Value::Null))
}

/// Carla cancels the step `ids` names through `server`: the answer comes once the run has
/// ended, the vendor's connection is closed, and the stream ends as a cancelled step's.
async fn cancel_and_see_it_end(
    server: &TestServer,
    carla: &str,
    ids: &Value,
    vendor: &SlowVendor,
    step: &mut Streaming,
) {
    let (status, answer) = cancel(server, carla, ids).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        answer,
        json!({"steps": [{"turnId": ids["turnId"], "stepIndex": 0, "outcome": "cancelled"}]})
    );
    vendor.wait_closed().await;
    step.read_to_end().await;
    assert_cancelled_frames(&step.frames);
}

/// The cancelled step posted again is answered from its record, byte for byte, and the model
/// is not called again.
async fn assert_answered_from_the_record(
    server: &TestServer,
    carla: &str,
    body: &Value,
    step: &Streaming,
    vendor: &SlowVendor,
) {
    let (replayed, mut again) = Streaming::post(server, carla, body).await;
    again.read_to_end().await;
    assert!(replayed);
    assert_eq!(again.bytes, step.bytes);
    assert_eq!(vendor.requests().len(), 1, "the model ran once");
}

/// What the cancelled step streamed: it ends `cancelled`, answers both calls as not run, and
/// leaves nothing pending.
fn assert_cancelled_frames(frames: &[Frame]) {
    let Some(Frame::StepFinish(finish)) = frames.iter().rev().find(|f| is_finish(f)) else {
        panic!("the step finishes: {frames:?}");
    };
    assert_eq!(finish.finish_reason, "cancelled");
    assert!(
        finish.pending_tool_calls.is_empty(),
        "nothing is left pending"
    );
    assert!(
        !frames.iter().any(|f| matches!(f, Frame::Error { .. })),
        "a cancel is not an error"
    );
    for id in [SERVER_CALL, BROWSER_CALL] {
        let result = frames
            .iter()
            .find_map(|f| match f {
                Frame::ToolResult(r) if r.tool_call_id == id => Some(r),
                _ => None,
            })
            .unwrap_or_else(|| panic!("{id} is answered"));
        assert!(!result.ok);
        assert_eq!(result.result["error"]["code"], "TOOL_NOT_EXECUTED");
        assert_eq!(
            result.result["error"]["message"],
            dpas_engine::run::CANCELLED_MESSAGE
        );
    }
    let cancelled = frames
        .iter()
        .find_map(|f| match f {
            Frame::Inspector(i) if i.event_type == "step.cancelled" => Some(i),
            _ => None,
        })
        .expect("a step.cancelled inspector frame");
    assert_eq!(
        cancelled.data,
        Some(json!({"notRun": [SERVER_CALL, BROWSER_CALL]}))
    );
}

/// Every tool call in `messages` has its result.
fn assert_no_orphan(messages: &[Value]) {
    let parts = || {
        messages
            .iter()
            .filter_map(|m| m["content"].as_array())
            .flatten()
    };
    let calls: Vec<&str> = parts()
        .filter(|p| p["type"] == "tool-call")
        .filter_map(|p| p["toolCallId"].as_str())
        .collect();
    assert_eq!(calls, [SERVER_CALL, BROWSER_CALL], "{messages:?}");
    for call in calls {
        assert!(
            parts().any(|p| p["type"] == "tool-result" && p["toolCallId"] == call),
            "{call} has a result: {messages:?}"
        );
    }
}

async fn stored_thread(server: &TestServer, cookie: &str, conversation: &str) -> Vec<Value> {
    let resp = server
        .http
        .get(server.url(&format!("/api/threads/{conversation}/model-messages")))
        .header("cookie", cookie)
        .send()
        .await
        .expect("answered");
    assert_eq!(resp.status(), 200);
    let body: Value = resp.json().await.expect("json");
    body["messages"]
        .as_array()
        .or_else(|| body.as_array())
        .cloned()
        .unwrap_or_else(|| panic!("a thread's messages: {body}"))
}

/// The request the vendor got for the next turn pairs every call with its result.
fn assert_vendor_request_well_formed(request: &Value) {
    let messages = request["messages"].as_array().expect("messages");
    let mut open: Vec<&str> = Vec::new();
    for m in messages {
        if let Some(calls) = m["tool_calls"].as_array() {
            assert!(open.is_empty(), "a call without a result: {open:?}");
            open.extend(calls.iter().filter_map(|c| c["id"].as_str()));
        } else if m["role"] == "tool" {
            let id = m["tool_call_id"].as_str().expect("tool_call_id");
            open.retain(|c| *c != id);
        } else {
            assert!(open.is_empty(), "a call without a result: {open:?}");
        }
    }
    assert!(open.is_empty(), "a call without a result: {open:?}");
    assert!(
        messages.iter().any(|m| m["tool_call_id"] == SERVER_CALL),
        "the cancelled step is in the next request: {messages:?}"
    );
}

#[actix_web::test]
async fn a_cancel_stops_the_step_mid_stream_and_leaves_a_well_formed_thread() {
    let vendor = SlowVendor::start().await;
    let server = server(&vendor, None).await;
    let carla = server.sign_in("controller").await;
    let ada = server.sign_in("analyst").await;
    let mut audit = server.state.runtime.subscribe(None);
    let body = step0();
    let ids = json!({
        "conversationId": body["conversationId"],
        "turnId": body["turnId"],
        "stepIndex": 0,
    });

    let (replayed, mut step) = Streaming::post(&server, &carla, &body).await;
    assert!(!replayed);
    step.read_until(has_tool_calls).await;
    assert_eq!(vendor.requests().len(), 1);

    // Another owner naming Carla's step gets what unknown ids get, and her step runs on.
    let (status, answer) = cancel(&server, &ada, &ids).await;
    assert_eq!((status, answer), (200, json!({"steps": []})));
    let unknown = json!({"conversationId": "cnv_nobody", "turnId": "trn_nobody"});
    assert_eq!(
        cancel(&server, &carla, &unknown).await,
        (200, json!({"steps": []}))
    );
    assert_eq!(vendor.closed.load(Ordering::SeqCst), 0, "still streaming");

    cancel_and_see_it_end(&server, &carla, &ids, &vendor, &mut step).await;

    // No server operation ran: the runtime never saw the server call.
    let ran: Vec<_> = audit
        .drain()
        .into_iter()
        .filter(|e| e.correlation.invocation_id.as_deref() == Some(SERVER_CALL))
        .collect();
    assert!(ran.is_empty(), "the server call never ran: {ran:?}");

    // The stored thread has no call without a result.
    let conversation = body["conversationId"].as_str().expect("id");
    let stored = stored_thread(&server, &carla, conversation).await;
    assert_no_orphan(&stored);

    // The same step posted again is answered from its record, not run again.
    assert_answered_from_the_record(&server, &carla, &body, &step, &vendor).await;

    // A cancel of a step that has ended names nothing.
    assert_eq!(
        cancel(&server, &carla, &ids).await,
        (200, json!({"steps": []}))
    );

    // The next turn, on the stored history, is a request both vendors accept, and succeeds.
    let mut next = step0();
    let mut messages = stored;
    messages.push(json!({"role": "user", "content": "Never mind. What is due this week?"}));
    next["turnId"] = json!("trn_after_cancel");
    next["messages"] = Value::Array(messages);
    let (_, mut after) = Streaming::post(&server, &carla, &next).await;
    after.read_to_end().await;
    let Some(Frame::StepFinish(finish)) = after.frames.iter().rev().find(|f| is_finish(f)) else {
        panic!("the next step finishes: {:?}", after.frames);
    };
    assert_eq!(finish.finish_reason, "stop", "{:?}", after.frames);
    let requests = vendor.requests();
    assert_eq!(requests.len(), 2);
    assert_vendor_request_well_formed(&requests[1]);
}

#[actix_web::test]
async fn a_cancel_refuses_what_is_not_a_step_name() {
    let vendor = SlowVendor::start().await;
    let server = server(&vendor, None).await;
    let carla = server.sign_in("controller").await;
    for bad in [
        json!({}),
        json!({"conversationId": ""}),
        json!({"conversationId": "c".repeat(65)}),
        json!({"conversationId": "c", "stepIndex": -1}),
        json!({"conversationId": "c", "stepIndex": 65}),
        json!({"conversationId": 7}),
    ] {
        let (status, answer) = cancel(&server, &carla, &bad).await;
        assert_eq!(status, 400, "{bad}: {answer}");
        assert_eq!(answer["error"]["code"], "BAD_REQUEST", "{bad}: {answer}");
    }
    let resp = server
        .http
        .post(server.url("/agent/chat/cancel"))
        .header("content-type", "application/json")
        .body(json!({"conversationId": "c"}).to_string())
        .send()
        .await
        .expect("answered");
    assert_eq!(resp.status(), 401, "a cancel needs a session");
}

/// Two replicas on one PostgreSQL database: a step running on A is cancelled through B.
#[actix_web::test]
async fn a_cancel_through_another_replica_reaches_the_run() {
    let Some(url) = crate::pg::fresh_database().await else {
        return;
    };
    let vendor = SlowVendor::start().await;
    let (a, b) = tokio::join!(server(&vendor, Some(&url)), server(&vendor, Some(&url)));
    let carla = a.sign_in("controller").await;
    let ada = b.sign_in("analyst").await;
    let body = step0();
    let ids = json!({"conversationId": body["conversationId"], "turnId": body["turnId"]});

    let (_, mut step) = Streaming::post(&a, &carla, &body).await;
    step.read_until(has_tool_calls).await;

    assert_eq!(cancel(&b, &ada, &ids).await, (200, json!({"steps": []})));
    assert_eq!(vendor.closed.load(Ordering::SeqCst), 0, "still streaming");

    // B answers once A's run has heard the cancel (from its record) and ended.
    cancel_and_see_it_end(&b, &carla, &ids, &vendor, &mut step).await;

    // The thread both replicas read has no call without a result; B answers the record.
    let conversation = body["conversationId"].as_str().expect("id");
    assert_no_orphan(&stored_thread(&b, &carla, conversation).await);
    assert_answered_from_the_record(&b, &carla, &body, &step, &vendor).await;
}
