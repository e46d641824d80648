//! A real `host-server` (library, real actix server, in-memory SQLite) on an ephemeral
//! 127.0.0.1 port, with `POST /agent/chat` mounted, and a client for it.

use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use dpas_model::scripted::{Script, ScriptedProvider};
use dpas_model::ModelProvider;
use dpas_protocol::ndjson::decode_all;
use dpas_protocol::Frame;
use host_server::chat::{self, prompt, ChatConfig, ModelSet};
use host_server::config::{ModelSpec, ServerConfig};
use host_server::db::Db;
use host_server::demo::{ANALYST, CONTROLLER};
use host_server::runtime::{AuditHub, RuntimeBuilder};
use host_server::{http, AppBuilder, AppState};
use serde_json::Value;
use time::macros::date;
use time::Date;

pub const SECRET: &str = "chat-test-secret";
/// The day the reference traces were recorded; the ledger is seeded and read on it.
pub const TODAY: Date = date!(2026 - 11 - 29);

pub struct ChatServer {
    pub base: String,
    pub addr: std::net::SocketAddr,
    pub state: AppState,
    pub http: reqwest::Client,
}

/// What to run the model on.
pub enum Model {
    Golden,
    Script(&'static str),
    /// Any provider, e.g. one that records what it was asked.
    Custom(Arc<dyn ModelProvider>),
    /// Several providers, the first the default (`--model` repeated).
    Several(Vec<Arc<dyn ModelProvider>>),
    None,
}

/// Capabilities and policies a test adds next to the demo domain.
pub type Registration = Box<dyn FnOnce(RuntimeBuilder, &Db) -> RuntimeBuilder + Send>;

pub struct Options {
    pub model: Model,
    pub model_timeout: Duration,
    pub register: Option<Registration>,
    /// The audit hub, when the test records entries itself.
    pub audit: Option<AuditHub>,
    /// Adjusts the server configuration (deadlines, limits) before the server starts.
    pub configure: Option<fn(&mut ServerConfig)>,
    /// The request body limit (and so the stored thread's byte cap), when not the default.
    pub body_limit: Option<usize>,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            model: Model::Golden,
            model_timeout: Duration::from_secs(45),
            register: None,
            audit: None,
            configure: None,
            body_limit: None,
        }
    }
}

pub async fn start() -> ChatServer {
    start_with(Options::default()).await
}

pub async fn start_script(script: &'static str) -> ChatServer {
    start_with(Options {
        model: Model::Script(script),
        ..Options::default()
    })
    .await
}

pub async fn start_with(options: Options) -> ChatServer {
    let mut config = ServerConfig::for_tests(SECRET);
    config.model_timeout = options.model_timeout;
    if let Some(configure) = options.configure {
        configure(&mut config);
    }
    if let Some(limit) = options.body_limit {
        config.body_limit = limit;
    }
    let providers: Vec<Arc<dyn ModelProvider>> = match options.model {
        Model::Golden => vec![ScriptedProvider::golden().into_arc()],
        Model::Script(json) => {
            let script = Script::from_json(json.as_bytes()).expect("valid test script");
            vec![ScriptedProvider::from_script(script).into_arc()]
        }
        Model::Custom(provider) => vec![provider],
        Model::Several(providers) => providers,
        Model::None => {
            config.model = ModelSpec::None;
            Vec::new()
        }
    };
    let chat_config = ChatConfig {
        models: ModelSet::new(providers),
        floors: Arc::new(host_server::demo::route_floors()),
        app_prompt: Arc::from(prompt::DEMO_APP_PROMPT),
        model_timeout: options.model_timeout,
    };
    let mut builder = AppBuilder::new(config).ledger_today(Arc::new(|| TODAY));
    if let Some(register) = options.register {
        builder = builder.register(register);
    }
    if let Some(hub) = options.audit {
        builder = builder.audit(hub);
    }
    let state = builder.build().await.expect("app state builds");
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind an ephemeral port");
    let addr = listener.local_addr().expect("local addr");
    let server = http::serve_with(state.clone(), listener, 1, chat::mount(chat_config))
        .expect("server starts");
    actix_web::rt::spawn(server);
    ChatServer {
        base: format!("http://{addr}"),
        addr,
        state,
        http: reqwest::Client::new(),
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

impl ChatServer {
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// The `Cookie` header value of a signed-in demo user (`controller` or `analyst`).
    pub fn cookie(&self, role: &str) -> String {
        let user = if role == "analyst" {
            ANALYST
        } else {
            CONTROLLER
        };
        let cookie = self.state.sessions.set_cookie(&user.actor());
        format!("{}={}", cookie.name(), cookie.value())
    }

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

    pub async fn chat(&self, body: &Value, role: &str) -> ChatReply {
        let cookie = self.cookie(role);
        self.chat_bytes(serde_json::to_vec(body).expect("json"), Some(&cookie))
            .await
    }

    pub async fn post_json(&self, path: &str, role: &str, body: &Value) -> (u16, Value) {
        let resp = self
            .http
            .post(self.url(path))
            .header("cookie", self.cookie(role))
            .json(body)
            .send()
            .await
            .expect("the server answers");
        let status = resp.status().as_u16();
        (status, resp.json().await.unwrap_or(Value::Null))
    }

    pub async fn get_json(&self, path: &str, role: &str) -> (u16, Value) {
        let resp = self
            .http
            .get(self.url(path))
            .header("cookie", self.cookie(role))
            .send()
            .await
            .expect("the server answers");
        let status = resp.status().as_u16();
        (status, resp.json().await.unwrap_or(Value::Null))
    }
}
