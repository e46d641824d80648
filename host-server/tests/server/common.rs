//! A real server on an ephemeral 127.0.0.1 port over an in-memory SQLite database, and a thin
//! HTTP client around it.

use std::net::TcpListener;
use std::sync::Arc;

use host_server::config::ServerConfig;
use host_server::demo::{ANALYST, CONTROLLER};
use host_server::{http, Actor, AppBuilder, AppState, CallSurface, Correlation};
use reqwest::header::{COOKIE, SET_COOKIE, WWW_AUTHENTICATE};
use serde_json::Value;
use time::macros::date;
use time::Date;

pub const SECRET: &str = "integration-test-secret";
/// The ledger is seeded and read on this day, so figures never drift across midnight.
pub const TODAY: Date = date!(2026 - 11 - 29);

pub struct TestServer {
    pub base: String,
    pub addr: std::net::SocketAddr,
    pub state: AppState,
    pub http: reqwest::Client,
}

pub fn carla() -> Actor {
    CONTROLLER.actor()
}

pub fn ada() -> Actor {
    ANALYST.actor()
}

/// The default test builder: demo on, pinned day, in-memory database.
pub fn builder() -> AppBuilder {
    AppBuilder::new(ServerConfig::for_tests(SECRET)).ledger_today(Arc::new(|| TODAY))
}

pub async fn start() -> TestServer {
    start_with(builder()).await
}

pub async fn start_with(builder: AppBuilder) -> TestServer {
    start_with_routes(builder, |_| {}).await
}

/// Starts the server with extra routes mounted the way the chat endpoint will be.
pub async fn start_with_routes<F>(builder: AppBuilder, extra: F) -> TestServer
where
    F: Fn(&mut actix_web::web::ServiceConfig) + Clone + Send + 'static,
{
    let state = builder.build().await.expect("app state builds");
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind an ephemeral port");
    let addr = listener.local_addr().expect("local addr");
    let server = http::serve_with(state.clone(), listener, 1, extra).expect("server starts");
    actix_web::rt::spawn(server);
    TestServer {
        base: format!("http://{addr}"),
        addr,
        state,
        http: reqwest::Client::new(),
    }
}

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
            .invoke(&carla(), surface, capability, input, Correlation::default())
            .await;
        assert_eq!(env["status"], "approval-required", "{env}");
        env["approvalId"].as_str().expect("approval id").to_owned()
    }

    /// Signs in as a demo role and returns the `Cookie` header value to send back.
    pub async fn sign_in(&self, role: &str) -> String {
        let reply = self
            .post("/api/session", None, serde_json::json!({ "role": role }))
            .await;
        assert_eq!(reply.status, 200, "sign-in as {role}: {}", reply.body);
        let set = reply.set_cookie.expect("sign-in sets a cookie");
        set.split(';').next().expect("name=value").to_owned()
    }

    /// Calls a capability over `/rpc` and returns status and envelope.
    pub async fn rpc(&self, cookie: &str, id: &str, input: Value) -> (u16, Value) {
        let reply = self.post(&format!("/rpc/{id}"), Some(cookie), input).await;
        (reply.status, reply.body)
    }
}
