//! The test harness the server's suites share (`cli/tests/server/`, `tests/`): a real
//! server on an ephemeral 127.0.0.1 port, and a thin HTTP client around it.

use std::net::TcpListener;

use dpas_protocol::ndjson::decode_all;
use dpas_protocol::Frame;
use reqwest::header::{COOKIE, SET_COOKIE, WWW_AUTHENTICATE};
use serde_json::Value;

use dpas_demo::ledger::Ledger;
use dpas_demo::{Demo, ANALYST, CONTROLLER};
use dpas_governance::{CallSurface, Correlation};
use host_server::config::ServerConfig;
use host_server::{AppBuilder, AppState};
use time::macros::date;
use time::Date;

/// The day the demo's ledger is seeded and read on in tests (the day the reference traces
/// were recorded), so figures never drift across midnight.
pub const DEMO_TODAY: Date = date!(2026 - 11 - 29);

/// The demo with its ledger on [`DEMO_TODAY`].
pub fn demo() -> Demo {
    Demo::with_today(std::sync::Arc::new(|| DEMO_TODAY))
}

/// A builder for `config` with the demo installed ([`demo`]), as the binary builds one under
/// `--demo`.
pub fn demo_builder(config: ServerConfig) -> AppBuilder {
    demo().install(AppBuilder::new(config))
}

/// A server the test started; it stops with the test's runtime.
pub struct TestServer {
    pub base: String,
    pub addr: std::net::SocketAddr,
    pub state: AppState,
    pub http: reqwest::Client,
}

/// Builds `builder`'s state and serves it with one worker, `extra` mounted ahead of the
/// built-in routes (as the binary mounts the chat endpoint), and the demo's endpoints (its
/// ledger on [`DEMO_TODAY`]) when its configuration says `demo` (as the binary mounts them
/// under `--demo`).
pub async fn serve<F>(builder: AppBuilder, extra: F) -> TestServer
where
    F: Fn(&mut actix_web::web::ServiceConfig) + Clone + Send + 'static,
{
    let state = builder.build().await.expect("app state builds");
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind an ephemeral port");
    let addr = listener.local_addr().expect("local addr");
    let server = if state.config.demo {
        let ledger = Ledger::with_today(state.pool.clone(), std::sync::Arc::new(|| DEMO_TODAY));
        let routes = dpas_demo::http::with_demo(ledger, extra);
        host_server::serve_with(state.clone(), listener, 1, routes)
    } else {
        host_server::serve_with(state.clone(), listener, 1, extra)
    }
    .expect("server starts");
    actix_web::rt::spawn(server);
    TestServer {
        base: format!("http://{addr}"),
        addr,
        state,
        http: reqwest::Client::new(),
    }
}

/// An answer: status, the headers tests read, and the body (JSON, or the text as a string).
pub struct Reply {
    pub status: u16,
    pub set_cookie: Option<String>,
    pub www_authenticate: Option<String>,
    pub body: Value,
}

impl Reply {
    /// The body as the server sent it (a body that is not JSON is kept as a string).
    pub fn text(&self) -> String {
        match &self.body {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        }
    }

    /// Status and error code, for refusals.
    pub fn refusal(&self) -> (u16, Option<&str>) {
        (self.status, self.body["error"]["code"].as_str())
    }
}

/// A chat reply: status, the headers we check, and either frames or an error body.
#[derive(Debug)]
pub struct ChatReply {
    pub status: u16,
    pub content_type: Option<String>,
    pub cache_control: Option<String>,
    pub version: Option<String>,
    pub frames: Vec<Frame>,
    pub body: Value,
}

impl ChatReply {
    /// The frames as JSON values.
    pub fn frame_values(&self) -> Vec<Value> {
        self.frames
            .iter()
            .map(|f| serde_json::to_value(f).expect("frame"))
            .collect()
    }

    pub fn types(&self) -> Vec<String> {
        self.frames
            .iter()
            .map(|f| f.frame_type().to_owned())
            .collect()
    }

    pub fn finish(&self) -> &dpas_protocol::StepFinish {
        self.frames
            .iter()
            .find_map(|f| match f {
                Frame::StepFinish(s) => Some(s),
                _ => None,
            })
            .expect("a step-finish frame")
    }

    /// The `tool-result` frames, in order.
    pub fn tool_results(&self) -> Vec<&dpas_protocol::ToolResultFrame> {
        self.frames
            .iter()
            .filter_map(|f| match f {
                Frame::ToolResult(r) => Some(r),
                _ => None,
            })
            .collect()
    }

    /// The `error` frames' bodies, in order.
    pub fn errors(&self) -> Vec<&dpas_protocol::ErrorBody> {
        self.frames
            .iter()
            .filter_map(|f| match f {
                Frame::Error { error } => Some(error),
                _ => None,
            })
            .collect()
    }

    pub fn text(&self) -> String {
        self.frames
            .iter()
            .filter_map(|f| match f {
                Frame::TextDelta { text } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }
}

impl TestServer {
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    pub async fn send(
        &self,
        method: &str,
        path: &str,
        cookie: Option<&str>,
        body: Option<String>,
    ) -> Reply {
        let cookie = cookie.map(|c| (COOKIE.as_str(), c));
        self.send_with_headers(method, path, cookie.as_slice(), body)
            .await
    }

    /// [`TestServer::send`] with any request headers.
    pub async fn send_with_headers(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<String>,
    ) -> Reply {
        let method = reqwest::Method::from_bytes(method.as_bytes()).expect("method");
        let mut req = self.http.request(method, self.url(path));
        for (name, value) in headers {
            req = req.header(*name, *value);
        }
        if let Some(b) = body {
            req = req.header("content-type", "application/json").body(b);
        }
        let resp = req.send().await.expect("request is answered");
        let status = resp.status().as_u16();
        let header = |name| {
            resp.headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let set_cookie = header(SET_COOKIE);
        let www_authenticate = header(WWW_AUTHENTICATE);
        let text = resp.text().await.expect("body");
        let body = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        };
        Reply {
            status,
            set_cookie,
            www_authenticate,
            body,
        }
    }

    pub async fn get(&self, path: &str, cookie: Option<&str>) -> Reply {
        self.send("GET", path, cookie, None).await
    }

    pub async fn post(&self, path: &str, cookie: Option<&str>, body: Value) -> Reply {
        self.send("POST", path, cookie, Some(body.to_string()))
            .await
    }

    /// Carla asks for an approval-gated capability over `surface`; the approval it waits on.
    pub async fn carla_awaits_approval(
        &self,
        surface: CallSurface,
        capability: &str,
        input: Value,
    ) -> String {
        let env = self
            .state
            .runtime
            .invoke(
                &CONTROLLER.actor(),
                surface,
                capability,
                input,
                Correlation::default(),
            )
            .await;
        assert_eq!(env["status"], "approval-required", "{env}");
        env["approvalId"].as_str().expect("approval id").to_owned()
    }

    /// Signs in through the demo's `POST /api/session` and returns the `Cookie` header value
    /// to send back.
    pub async fn sign_in(&self, role: &str) -> String {
        let reply = self
            .post("/api/session", None, serde_json::json!({ "role": role }))
            .await;
        assert_eq!(reply.status, 200, "sign-in as {role}: {}", reply.body);
        let set = reply.set_cookie.expect("sign-in sets a cookie");
        set.split(';').next().expect("name=value").to_owned()
    }

    /// The `Cookie` header value of a demo user (`controller` or `analyst`), signed with the
    /// server's keys, without a request.
    pub fn cookie(&self, role: &str) -> String {
        let user = if role == "analyst" {
            ANALYST
        } else {
            CONTROLLER
        };
        let cookie = self.state.sessions.set_cookie(&user.actor());
        format!("{}={}", cookie.name(), cookie.value())
    }

    /// Calls a capability over `/rpc` and returns status and envelope.
    pub async fn rpc(&self, cookie: &str, id: &str, input: Value) -> (u16, Value) {
        let reply = self.post(&format!("/rpc/{id}"), Some(cookie), input).await;
        (reply.status, reply.body)
    }

    /// Posts `body` to `/agent/chat`; the frames when it streams, the error body when not.
    pub async fn chat_bytes(&self, body: Vec<u8>, cookie: Option<&str>) -> ChatReply {
        let mut req = self
            .http
            .post(self.url("/agent/chat"))
            .header("content-type", "application/json")
            .body(body);
        if let Some(c) = cookie {
            req = req.header("cookie", c);
        }
        let resp = req.send().await.expect("the server answers");
        let header = |name: &str| {
            resp.headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let status = resp.status().as_u16();
        let content_type = header("content-type");
        let cache_control = header("cache-control");
        let version = header("x-dpas-protocol-version");
        let bytes = resp.bytes().await.expect("the body");
        let (frames, body) = if content_type
            .as_deref()
            .is_some_and(|c| c.starts_with("application/x-ndjson"))
        {
            let (frames, end) = decode_all(&bytes);
            assert!(end.is_ok(), "the stream ends on a newline");
            (frames, Value::Null)
        } else {
            (
                Vec::new(),
                serde_json::from_slice(&bytes).unwrap_or(Value::Null),
            )
        };
        ChatReply {
            status,
            content_type,
            cache_control,
            version,
            frames,
            body,
        }
    }

    /// A chat step as a demo user ([`TestServer::cookie`]).
    pub async fn chat(&self, body: &Value, role: &str) -> ChatReply {
        let cookie = self.cookie(role);
        self.chat_bytes(serde_json::to_vec(body).expect("json"), Some(&cookie))
            .await
    }

    /// `POST path` as a demo user: status and JSON body (`null` when not JSON).
    pub async fn post_json(&self, path: &str, role: &str, body: &Value) -> (u16, Value) {
        let req = self.http.post(self.url(path)).json(body);
        self.as_user(req, role).await
    }

    /// `GET path` as a demo user: status and JSON body (`null` when not JSON).
    pub async fn get_json(&self, path: &str, role: &str) -> (u16, Value) {
        self.as_user(self.http.get(self.url(path)), role).await
    }

    async fn as_user(&self, req: reqwest::RequestBuilder, role: &str) -> (u16, Value) {
        let resp = req
            .header("cookie", self.cookie(role))
            .send()
            .await
            .expect("the server answers");
        let status = resp.status().as_u16();
        (status, resp.json().await.unwrap_or(Value::Null))
    }
}
