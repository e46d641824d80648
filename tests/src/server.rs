//! A real `host-server` (library, real actix server, in-memory SQLite) on an ephemeral
//! 127.0.0.1 port, with `POST /agent/chat` mounted: the shared harness ([`crate::testing`])
//! started with a chosen model.

use std::sync::Arc;
use std::time::Duration;

use dpas_engine::{ChatConfig, ModelSet, ModelSpec};
use dpas_governance::{AuditHub, RuntimeBuilder};
use dpas_model::scripted::{Script, ScriptedProvider};
use dpas_model::ModelProvider;
use dpas_store::Db;
use host_server::config::ServerConfig;
use host_server::doors;
use time::Date;

pub const SECRET: &str = "chat-test-secret";
/// The day the reference traces were recorded; the ledger is seeded and read on it.
pub const TODAY: Date = crate::testing::DEMO_TODAY;

pub use crate::testing::{ChatReply, TestServer};

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

pub async fn start() -> TestServer {
    start_with(Options::default()).await
}

pub async fn start_script(script: &'static str) -> TestServer {
    start_with(Options {
        model: Model::Script(script),
        ..Options::default()
    })
    .await
}

pub async fn start_with(options: Options) -> TestServer {
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
        floors: Arc::new(dpas_demo::route_floors()),
        app_prompt: Arc::from(dpas_demo::APP_PROMPT),
        model_timeout: options.model_timeout,
    };
    let mut builder = crate::testing::demo_builder(config);
    if let Some(register) = options.register {
        builder = builder.register(register);
    }
    if let Some(hub) = options.audit {
        builder = builder.audit(hub);
    }
    crate::testing::serve(builder, doors::mount(chat_config)).await
}
