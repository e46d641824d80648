//! Command-line and environment configuration (the binary's contract) and the model spec.

use dpas_store::AuditRetention;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;

/// Default request body cap.
pub const DEFAULT_BODY_LIMIT: usize = 4 * 1024 * 1024;
/// Default time a client has to send a request's head, and then its body, in seconds.
pub const DEFAULT_REQUEST_TIMEOUT_SECS: u64 = 10;
/// Default number of chat steps one actor may have running at once.
pub const DEFAULT_MAX_CONCURRENT_STEPS: usize = 4;
/// Default session lifetime, in seconds (12 h).
pub const DEFAULT_SESSION_TTL_SECS: u64 = 12 * 3600;
/// Default sign-in attempts per client address per minute.
pub const DEFAULT_SIGN_IN_PER_MINUTE: u32 = 60;
/// Default time decided and expired approvals are kept after their expiry, in seconds (7 days).
pub const DEFAULT_APPROVAL_RETENTION_SECS: u64 = 7 * 24 * 3600;
/// Default time a step's record answers the same step posted again, in seconds (10 minutes).
pub const DEFAULT_STEP_RETENTION_SECS: u64 = 600;
/// Default time in-flight steps get to finish after SIGTERM, in seconds.
pub const DEFAULT_DRAIN_TIMEOUT_SECS: u64 = 30;
/// Default length of the listening socket's queue of connections not yet accepted.
pub const DEFAULT_LISTEN_BACKLOG: u32 = 2048;

pub use crate::auth::config::{
    AuthConfig, AuthKind, ClaimNames, IdentityArgs, IdentityError, JwtConfig, JwtKeys, ProxyConfig,
    DEFAULT_JWKS_REFRESH, MIN_SECRET_BYTES,
};
pub use dpas_engine::{BudgetLimits, ModelSpec, ModelSpecError, PriceTable};
pub use dpas_model::{Vendor, VendorSpec};

/// `host-server` command line; every flag has an environment fallback.
#[derive(Debug, Clone, Parser)]
#[command(name = "host-server", version, about = "DPAS agent host server")]
pub struct Cli {
    /// Address to listen on.
    #[arg(long, env = "DPAS_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// Connections the listening socket queues before they are accepted (the kernel caps it
    /// at `net.core.somaxconn`).
    #[arg(long, env = "DPAS_LISTEN_BACKLOG", default_value_t = DEFAULT_LISTEN_BACKLOG, value_parser = clap::value_parser!(u32).range(1..=i32::MAX as i64))]
    pub listen_backlog: u32,
    /// Database URL (SQLite); `sqlite::memory:` keeps everything in memory.
    #[arg(long, env = "DPAS_DATABASE_URL")]
    pub database: Option<String>,
    /// scripted | scripted:<file> | openai:<model> | anthropic:<model> | none. Repeat it to
    /// serve several (a request's `modelId` picks one); the first is the default.
    #[arg(long, env = "DPAS_MODEL")]
    pub model: Vec<ModelSpec>,
    /// Inactivity window between model chunks, in seconds.
    #[arg(long, env = "DPAS_MODEL_TIMEOUT", default_value_t = 45, value_parser = clap::value_parser!(u64).range(1..))]
    pub model_timeout: u64,
    /// Seed the demo ledger when empty, enable demo sign-in and reset, default the model to scripted.
    #[arg(long, env = "DPAS_DEMO")]
    pub demo: bool,
    /// Serve the built web app from this directory (SPA fallback to index.html).
    #[arg(long = "static", env = "DPAS_STATIC_DIR", value_name = "DIR")]
    pub static_dir: Option<PathBuf>,
    /// The app's capabilities, executed over HTTP by its backend, and their policies (JSON,
    /// or TOML by the `.toml` extension; schema: host-server/schema/capabilities.schema.json).
    #[arg(long = "capabilities", env = "DPAS_CAPABILITIES", value_name = "FILE")]
    pub capabilities_file: Option<PathBuf>,
    /// The app's preamble of the system prompt (replaces the demo's), as plain text.
    #[arg(long = "prompt-file", env = "DPAS_PROMPT_FILE", value_name = "FILE")]
    pub prompt_file: Option<PathBuf>,
    /// Route → scope floor, the JSON object the browser package takes as `routeScopes`.
    #[arg(long = "routes", env = "DPAS_ROUTES", value_name = "FILE")]
    pub routes_file: Option<PathBuf>,
    /// Secret for signing session cookies; required without --demo.
    #[arg(long, env = "DPAS_SESSION_SECRET", hide_env_values = true)]
    pub session_secret: Option<String>,
    /// Largest accepted request body, in bytes.
    #[arg(long, env = "DPAS_BODY_LIMIT", default_value_t = DEFAULT_BODY_LIMIT)]
    pub body_limit: usize,
    /// Seconds a client has to send a request's head, and again its whole body (408 and the
    /// connection closed past it).
    #[arg(long, env = "DPAS_REQUEST_TIMEOUT", default_value_t = DEFAULT_REQUEST_TIMEOUT_SECS, value_parser = clap::value_parser!(u64).range(1..))]
    pub request_timeout: u64,
    /// Chat steps one signed-in user may have running at once (429 `RATE_LIMITED` past it).
    #[arg(long, env = "DPAS_MAX_CONCURRENT_STEPS", default_value_t = DEFAULT_MAX_CONCURRENT_STEPS, value_parser = parse_positive)]
    pub max_concurrent_steps: usize,
    /// Sign-in requests one client address may make per minute (429 `RATE_LIMITED` past it).
    #[arg(long, env = "DPAS_SIGN_IN_PER_MINUTE", default_value_t = DEFAULT_SIGN_IN_PER_MINUTE, value_parser = clap::value_parser!(u32).range(1..))]
    pub sign_in_per_minute: u32,
    /// Session lifetime, in seconds.
    #[arg(long, env = "DPAS_SESSION_TTL", default_value_t = DEFAULT_SESSION_TTL_SECS, value_parser = clap::value_parser!(u64).range(60..))]
    pub session_ttl: u64,
    /// Mark session cookies `Secure` (HTTPS only). Default: on unless listening on loopback.
    #[arg(long, env = "DPAS_SECURE_COOKIES", num_args = 0..=1, default_missing_value = "true", value_name = "BOOL")]
    pub secure_cookies: Option<bool>,
    /// Seconds approvals are kept after they expire (decided or not); purged at start and hourly.
    #[arg(long, env = "DPAS_APPROVAL_RETENTION", default_value_t = DEFAULT_APPROVAL_RETENTION_SECS)]
    pub approval_retention: u64,
    /// Seconds a step's record answers the same step posted again (a dropped connection, a
    /// reload) instead of a second run; 0 keeps no records (every post runs).
    #[arg(long, env = "DPAS_STEP_RETENTION", default_value_t = DEFAULT_STEP_RETENTION_SECS)]
    pub step_retention: u64,
    /// Audit entries the `audit` table keeps: the newest ROWS (older ones are deleted as new
    /// ones are stored), or `all`. Default: 10000 with `sqlite::memory:`, else all.
    #[arg(long, env = "DPAS_AUDIT_RETENTION", value_name = "ROWS|all", value_parser = parse_audit_retention)]
    pub audit_retention: Option<AuditRetention>,
    /// An origin (`scheme://host[:port]`) other than the server's own whose browser requests
    /// may write; repeatable (the env var takes a comma-separated list).
    #[arg(
        long = "allowed-origin",
        env = "DPAS_ALLOWED_ORIGINS",
        value_delimiter = ','
    )]
    pub allowed_origins: Vec<String>,
    /// The app's public origin (`https://app.example.com`), for links handed to other
    /// clients such as MCP approval deep links; without it the request's own origin is used.
    #[arg(long, env = "DPAS_PUBLIC_URL", value_parser = parse_public_url)]
    pub public_url: Option<String>,
    /// Serve `GET /metrics` on this address instead of on `--listen`.
    #[arg(long, env = "DPAS_METRICS_LISTEN")]
    pub metrics_listen: Option<SocketAddr>,
    /// Seconds in-flight steps get to finish after SIGTERM; steps still running then are
    /// stopped and saved with their open calls settled.
    #[arg(long, env = "DPAS_DRAIN_TIMEOUT", default_value_t = DEFAULT_DRAIN_TIMEOUT_SECS)]
    pub drain_timeout: u64,
    /// Tokens one turn may use across its steps; a model step past it is not started
    /// (`BUDGET_EXHAUSTED`).
    #[arg(long, env = "DPAS_BUDGET_TURN_TOKENS", value_name = "TOKENS", value_parser = clap::value_parser!(u64).range(1..))]
    pub budget_turn_tokens: Option<u64>,
    /// US dollars one turn may spend, by `--prices`.
    #[arg(long, env = "DPAS_BUDGET_TURN_USD", value_name = "USD", value_parser = parse_usd)]
    pub budget_turn_usd: Option<f64>,
    /// Tokens one actor may use per day (UTC).
    #[arg(long, env = "DPAS_BUDGET_ACTOR_DAY_TOKENS", value_name = "TOKENS", value_parser = clap::value_parser!(u64).range(1..))]
    pub budget_actor_day_tokens: Option<u64>,
    /// US dollars one actor may spend per day (UTC), by `--prices`.
    #[arg(long, env = "DPAS_BUDGET_ACTOR_DAY_USD", value_name = "USD", value_parser = parse_usd)]
    pub budget_actor_day_usd: Option<f64>,
    /// Tokens all actors together may use per day (UTC).
    #[arg(long, env = "DPAS_BUDGET_TENANT_DAY_TOKENS", value_name = "TOKENS", value_parser = clap::value_parser!(u64).range(1..))]
    pub budget_tenant_day_tokens: Option<u64>,
    /// US dollars all actors together may spend per day (UTC), by `--prices`.
    #[arg(long, env = "DPAS_BUDGET_TENANT_DAY_USD", value_name = "USD", value_parser = parse_usd)]
    pub budget_tenant_day_usd: Option<f64>,
    /// Prices per model id, in US dollars per million input, cached-input and output tokens
    /// (JSON: `{"<model id>": {"input", "cachedInput", "output"}}`).
    #[arg(long = "prices", env = "DPAS_PRICES", value_name = "FILE")]
    pub prices: Option<PathBuf>,
    #[command(flatten)]
    pub identity: IdentityArgs,
}

fn parse_usd(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err("expected an amount of US dollars above 0, such as 0.50".to_owned()),
    }
}

fn parse_audit_retention(s: &str) -> Result<AuditRetention, String> {
    if s == "all" {
        return Ok(AuditRetention::All);
    }
    s.parse::<std::num::NonZeroU64>()
        .map(AuditRetention::Rows)
        .map_err(|_| "expected a whole number of rows of at least 1, or all".to_owned())
}

fn parse_positive(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err("expected a whole number of at least 1".to_owned()),
    }
}

/// An `http(s)://host[:port]` origin with an optional path prefix, kept without a trailing `/`.
fn parse_public_url(s: &str) -> Result<String, String> {
    let rest = s
        .strip_prefix("https://")
        .or_else(|| s.strip_prefix("http://"))
        .ok_or_else(|| "must start with http:// or https://".to_owned())?;
    let host = rest.split('/').next().unwrap_or_default();
    if host.is_empty() || s.contains(['?', '#']) || s.chars().any(char::is_whitespace) {
        return Err("must be an origin such as https://app.example.com".to_owned());
    }
    Ok(s.trim_end_matches('/').to_owned())
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("--session-secret (or DPAS_SESSION_SECRET) is required without --demo (except with --auth jwt)")]
    MissingSecret,
    #[error("the session secret must be at least {MIN_SECRET_BYTES} bytes (it has {0}); generate one with e.g. `openssl rand -hex 32`")]
    ShortSecret(usize),
    #[error("--allowed-origin {0:?} is not an origin: expected scheme://host[:port] with no path")]
    BadOrigin(String),
    #[error("--model none cannot be combined with other models")]
    NoneWithOthers,
    #[error("--model {0} is given twice")]
    RepeatedModel(String),
    #[error("--database {0:?}: {1}; supported: sqlite:PATH, sqlite://PATH, sqlite::memory:, postgres://… or postgresql://…")]
    UnsupportedDatabase(String, &'static str),
    #[error(transparent)]
    Identity(#[from] IdentityError),
    #[error("--prices {0}: {1}")]
    Prices(String, String),
    #[error("a budget in US dollars needs --prices")]
    NoPrices,
    #[error("--prices has no price for the model {0}, which a budget in US dollars needs")]
    Unpriced(String),
}

/// The URL as the startup line and logs may show it: a SQLite URL whole, anything else by
/// its scheme only (the rest may hold a password).
pub fn shown_database_url(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, _)) if scheme != "sqlite" => format!("{scheme}://…"),
        _ => url.to_owned(),
    }
}

/// Checks that a database URL names a store this server has. Without it, sqlx takes any
/// string as a SQLite file name: `postgres://user@host/db` would quietly create a folder
/// called `postgres:` and run on a new empty file.
pub fn check_database_url(url: &str) -> Result<(), ConfigError> {
    // Named by its scheme only: the rest may hold a password.
    let shown = match url.split_once("://") {
        Some((scheme, _)) => format!("{scheme}://…"),
        None => url.to_owned(),
    };
    let refuse = |why| Err(ConfigError::UnsupportedDatabase(shown.clone(), why));
    match url.split_once(':') {
        Some(("sqlite", rest)) if !rest.is_empty() => Ok(()),
        Some(("sqlite", _)) => refuse("the URL names no file"),
        Some(("postgres" | "postgresql", rest)) if rest.starts_with("//") => Ok(()),
        Some(("postgres" | "postgresql", _)) => refuse("a PostgreSQL URL starts with //"),
        Some((scheme, _))
            if !scheme.is_empty()
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c)) =>
        {
            refuse("the URL's scheme is not a database this server supports")
        }
        _ => refuse("not a database URL (write sqlite://PATH for a file)"),
    }
}

/// Where the session signing secret came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionSecret {
    Given(String),
    /// A random per-process secret (demo only); sessions end when the process does.
    RandomPerProcess,
}

/// The resolved configuration the server runs with.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub listen: SocketAddr,
    /// `--listen-backlog`: the listening socket's queue of connections not yet accepted.
    pub listen_backlog: u32,
    pub database_url: String,
    /// The default model.
    pub model: ModelSpec,
    /// Further models a request may pick by `modelId` (`--model` repeated).
    pub more_models: Vec<ModelSpec>,
    pub model_timeout: Duration,
    pub demo: bool,
    pub static_dir: Option<PathBuf>,
    /// `--capabilities`, `--prompt-file`, `--routes` (loaded by `appfiles::AppFiles::load`).
    pub capabilities_file: Option<PathBuf>,
    pub prompt_file: Option<PathBuf>,
    pub routes_file: Option<PathBuf>,
    pub session_secret: SessionSecret,
    pub body_limit: usize,
    pub session_ttl: Duration,
    /// Session cookies carry `Secure`.
    pub secure_cookies: bool,
    /// How long approvals are kept after they expire.
    pub approval_retention: Duration,
    /// How long a step's record answers the same step posted again (zero: no records).
    pub step_retention: Duration,
    /// How many audit entries the `audit` table keeps.
    pub audit_retention: AuditRetention,
    /// Deadline for a request's head, and separately for its body.
    pub request_timeout: Duration,
    pub max_concurrent_steps: usize,
    pub sign_in_per_minute: u32,
    /// Origins besides the server's own whose requests may write (normalised, lower-case).
    pub allowed_origins: Vec<String>,
    /// `--public-url`, without a trailing `/`.
    pub public_url: Option<String>,
    /// Where `GET /metrics` is served when not on `listen`.
    pub metrics_listen: Option<SocketAddr>,
    /// How long in-flight steps get after SIGTERM.
    pub drain_timeout: Duration,
    /// Where a request's identity comes from.
    pub auth: AuthConfig,
    /// The budgets steps run within (`--budget-*`).
    pub budgets: BudgetLimits,
    /// Prices per model (`--prices`; empty: usage costs nothing).
    pub prices: PriceTable,
}

/// `scheme://host[:port]`, lower-cased, or `None` when `s` is not just an origin.
pub fn normalise_origin(s: &str) -> Option<String> {
    let s = s.trim().trim_end_matches('/').to_ascii_lowercase();
    let (scheme, rest) = s.split_once("://")?;
    let plausible = matches!(scheme, "http" | "https")
        && !rest.is_empty()
        && !rest.contains(['/', '?', '#', '@', ' ']);
    plausible.then_some(s)
}

/// Default database: a SQLite file under `./.data/`.
pub const DEFAULT_DATABASE_URL: &str = "sqlite://.data/dpas.sqlite3";

impl ServerConfig {
    /// Applies the rules between flags: `none` wins even under `--demo`; `--demo` defaults the
    /// model to scripted; a secret is required without `--demo`.
    pub fn from_cli(cli: Cli) -> Result<Self, ConfigError> {
        Self::resolve(cli, false)
    }

    /// [`ServerConfig::from_cli`] for an embedder that signs its users in itself, minting the
    /// session cookies with `state.sessions` (examples/todo-server): without `--auth` (and
    /// without the `--jwt-*` and proxy flags) the identity is [`AuthConfig::Session`] instead
    /// of an error. `--session-secret` is then required, as for any session.
    pub fn from_cli_with_own_sign_in(cli: Cli) -> Result<Self, ConfigError> {
        Self::resolve(cli, true)
    }

    fn resolve(cli: Cli, own_sign_in: bool) -> Result<Self, ConfigError> {
        let mut models = cli.model.into_iter();
        let model = match (models.next(), cli.demo) {
            (Some(m), _) => m,
            (None, true) => ModelSpec::Scripted { script: None },
            (None, false) => ModelSpec::None,
        };
        let more_models: Vec<ModelSpec> = models.collect();
        if !more_models.is_empty()
            && std::iter::once(&model)
                .chain(&more_models)
                .any(|m| *m == ModelSpec::None)
        {
            return Err(ConfigError::NoneWithOthers);
        }
        for (i, m) in more_models.iter().enumerate() {
            let earlier = std::iter::once(&model).chain(&more_models[..i]);
            if earlier.into_iter().any(|e| e.model_ids() == m.model_ids()) {
                return Err(ConfigError::RepeatedModel(m.to_string()));
            }
        }
        let auth = cli.identity.resolve(cli.demo, own_sign_in)?;
        // With JWTs nothing is signed by this server's own secret: it may be left out.
        let no_secret_needed = cli.demo || matches!(auth, AuthConfig::Jwt(_));
        let session_secret = match (cli.session_secret, no_secret_needed) {
            (Some(s), _) if s.len() < MIN_SECRET_BYTES => {
                return Err(ConfigError::ShortSecret(s.len()))
            }
            (Some(s), _) => SessionSecret::Given(s),
            (None, true) => SessionSecret::RandomPerProcess,
            (None, false) => return Err(ConfigError::MissingSecret),
        };
        let database_url = cli
            .database
            .unwrap_or_else(|| DEFAULT_DATABASE_URL.to_owned());
        check_database_url(&database_url)?;
        let audit_retention = cli
            .audit_retention
            .unwrap_or_else(|| AuditRetention::default_for(&database_url));
        let budgets = BudgetLimits {
            turn_tokens: cli.budget_turn_tokens,
            turn_usd: cli.budget_turn_usd,
            actor_day_tokens: cli.budget_actor_day_tokens,
            actor_day_usd: cli.budget_actor_day_usd,
            tenant_day_tokens: cli.budget_tenant_day_tokens,
            tenant_day_usd: cli.budget_tenant_day_usd,
        };
        let prices = match &cli.prices {
            Some(path) => load_prices(path)?,
            None if budgets.any_usd() => return Err(ConfigError::NoPrices),
            None => PriceTable::default(),
        };
        if budgets.any_usd() {
            let ids = std::iter::once(&model)
                .chain(&more_models)
                .flat_map(ModelSpec::model_ids);
            if let Some(id) = ids.into_iter().find(|id| !prices.has(id)) {
                return Err(ConfigError::Unpriced(id));
            }
        }
        Ok(Self {
            listen: cli.listen,
            listen_backlog: cli.listen_backlog,
            database_url,
            model,
            more_models,
            model_timeout: Duration::from_secs(cli.model_timeout),
            demo: cli.demo,
            static_dir: cli.static_dir,
            capabilities_file: cli.capabilities_file,
            prompt_file: cli.prompt_file,
            routes_file: cli.routes_file,
            session_secret,
            body_limit: cli.body_limit,
            session_ttl: Duration::from_secs(cli.session_ttl),
            secure_cookies: cli.secure_cookies.unwrap_or(!cli.listen.ip().is_loopback()),
            approval_retention: Duration::from_secs(cli.approval_retention),
            step_retention: Duration::from_secs(cli.step_retention),
            audit_retention,
            request_timeout: Duration::from_secs(cli.request_timeout),
            max_concurrent_steps: cli.max_concurrent_steps,
            sign_in_per_minute: cli.sign_in_per_minute,
            allowed_origins: cli
                .allowed_origins
                .iter()
                .map(|o| normalise_origin(o).ok_or_else(|| ConfigError::BadOrigin(o.clone())))
                .collect::<Result<_, _>>()?,
            public_url: cli.public_url,
            metrics_listen: cli.metrics_listen,
            drain_timeout: Duration::from_secs(cli.drain_timeout),
            auth,
            budgets,
            prices,
        })
    }

    /// A configuration for tests and embedding: demo on, in-memory database, given secret.
    pub fn for_tests(secret: &str) -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            listen_backlog: DEFAULT_LISTEN_BACKLOG,
            database_url: "sqlite::memory:".to_owned(),
            model: ModelSpec::Scripted { script: None },
            more_models: Vec::new(),
            model_timeout: Duration::from_secs(45),
            demo: true,
            static_dir: None,
            capabilities_file: None,
            prompt_file: None,
            routes_file: None,
            session_secret: SessionSecret::Given(secret.to_owned()),
            body_limit: DEFAULT_BODY_LIMIT,
            session_ttl: Duration::from_secs(3600),
            secure_cookies: false,
            approval_retention: Duration::from_secs(DEFAULT_APPROVAL_RETENTION_SECS),
            step_retention: Duration::from_secs(DEFAULT_STEP_RETENTION_SECS),
            audit_retention: AuditRetention::default_for("sqlite::memory:"),
            request_timeout: Duration::from_secs(DEFAULT_REQUEST_TIMEOUT_SECS),
            max_concurrent_steps: DEFAULT_MAX_CONCURRENT_STEPS,
            sign_in_per_minute: DEFAULT_SIGN_IN_PER_MINUTE,
            allowed_origins: Vec::new(),
            public_url: None,
            metrics_listen: None,
            drain_timeout: Duration::from_secs(DEFAULT_DRAIN_TIMEOUT_SECS),
            auth: AuthConfig::Session,
            budgets: BudgetLimits::default(),
            prices: PriceTable::default(),
        }
    }
}

/// A `--prices` file, read and checked at start.
fn load_prices(path: &std::path::Path) -> Result<PriceTable, ConfigError> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| ConfigError::Prices(shown.clone(), e.to_string()))?;
    PriceTable::parse(&text).map_err(|e| ConfigError::Prices(shown, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<ServerConfig, String> {
        let cli = Cli::try_parse_from(std::iter::once("host-server").chain(args.iter().copied()))
            .map_err(|e| e.to_string())?;
        ServerConfig::from_cli(cli).map_err(|e| e.to_string())
    }

    #[test]
    fn an_embedder_with_its_own_sign_in_gets_sessions_without_auth() {
        let own = |args: &[&str]| {
            let all = std::iter::once("todo-server").chain(args.iter().copied());
            let cli = Cli::try_parse_from(all).map_err(|e| e.to_string())?;
            ServerConfig::from_cli_with_own_sign_in(cli).map_err(|e| e.to_string())
        };
        let secret = ["--session-secret", "0123456789abcdef0123456789abcdef"];
        assert_eq!(own(&secret).unwrap().auth, AuthConfig::Session);
        assert!(parse(&secret).unwrap_err().contains("--auth is required"));
        assert!(own(&[]).unwrap_err().contains("session-secret"));
        // Identity flags without --auth are still a mistake, not a session.
        let jwt_without_auth = [&secret[..], &["--jwt-secret", secret[1]]].concat();
        assert!(own(&jwt_without_auth)
            .unwrap_err()
            .contains("--auth is required"));
        let jwt = [&secret[..], &["--auth", "jwt", "--jwt-secret", secret[1]]].concat();
        assert!(matches!(own(&jwt).unwrap().auth, AuthConfig::Jwt(_)));
    }

    #[test]
    fn database_urls_name_a_supported_store() {
        for ok in [
            "sqlite::memory:",
            "sqlite://.data/dpas.sqlite3",
            "sqlite:/tmp/x.db",
            DEFAULT_DATABASE_URL,
            "postgres://u:hunter2@h/db",
            "postgresql://h/db",
        ] {
            assert!(check_database_url(ok).is_ok(), "{ok}");
        }
        assert_eq!(
            shown_database_url("postgres://u:hunter2@h/db"),
            "postgres://…"
        );
        assert_eq!(shown_database_url("sqlite::memory:"), "sqlite::memory:");
        for bad in ["postgres:h/db", "redis://h", "x.db", "sqlite:", ""] {
            let err = check_database_url(bad).expect_err(bad).to_string();
            assert!(err.contains("supported: sqlite:"), "{bad}: {err}");
        }
    }

    fn vendor(vendor: Vendor, model: &str) -> ModelSpec {
        ModelSpec::Vendor(VendorSpec {
            vendor,
            model: model.to_owned(),
        })
    }

    #[test]
    fn model_specs_parse_and_reject() {
        assert_eq!("scripted".parse(), Ok(ModelSpec::Scripted { script: None }));
        assert_eq!(
            "scripted:a.json".parse(),
            Ok(ModelSpec::Scripted {
                script: Some("a.json".into())
            })
        );
        assert_eq!(
            "openai:gpt-4o".parse(),
            Ok(vendor(Vendor::OpenAi, "gpt-4o"))
        );
        assert_eq!(
            "anthropic:claude".parse(),
            Ok(vendor(Vendor::Anthropic, "claude"))
        );
        // One rule for a vendor's spec: `dpas_model`'s (vendor in any case, spaces trimmed,
        // `:` allowed in the model), the same that builds its provider.
        let local: ModelSpec = " OpenAI:llama3.2:3b ".parse().unwrap();
        assert_eq!(local, vendor(Vendor::OpenAi, "llama3.2:3b"));
        assert_eq!(local.to_string(), "openai:llama3.2:3b");
        assert_eq!(local.model_ids(), ["openai/llama3.2:3b"]);
        assert_eq!("none".parse(), Ok(ModelSpec::None));
        for bad in [
            "",
            "openai",
            "openai:",
            "scripted:",
            "none:x",
            "gpt",
            "gemini:x",
            "openai: ",
            "mock/scripted",
        ] {
            assert!(
                bad.parse::<ModelSpec>().is_err(),
                "{bad} should be rejected"
            );
        }
    }

    #[test]
    fn demo_defaults_and_none_wins() {
        let c = parse(&["--demo"]).unwrap();
        assert_eq!(c.model, ModelSpec::Scripted { script: None });
        assert_eq!(c.session_secret, SessionSecret::RandomPerProcess);
        let c = parse(&["--demo", "--model", "none"]).unwrap();
        assert_eq!(c.model, ModelSpec::None);
        assert!(parse(&[]).unwrap_err().contains("--auth is required"));
        let proxied = ["--auth", "proxy-header", "--trusted-proxy", "10.0.0.1"];
        assert!(parse(&proxied).unwrap_err().contains("session-secret"));
        let c = parse(&[
            "--session-secret",
            "0123456789abcdef0123456789abcdef",
            "--database",
            "sqlite::memory:",
            "--auth",
            "proxy-header",
            "--trusted-proxy",
            "10.0.0.1",
        ])
        .unwrap();
        assert_eq!(c.model, ModelSpec::None);
        assert_eq!(c.database_url, "sqlite::memory:");
        assert!(parse(&["--demo", "--model", "bogus"]).is_err());
        let c = parse(&["--demo", "--model", "openai:a", "--model", "anthropic:b"]).unwrap();
        assert_eq!(c.model, vendor(Vendor::OpenAi, "a"));
        assert_eq!(c.more_models, [vendor(Vendor::Anthropic, "b")]);
        let none_too = parse(&["--demo", "--model", "openai:a", "--model", "none"]);
        assert!(none_too.unwrap_err().contains("none cannot be combined"));
        let twice = parse(&["--demo", "--model", "openai:a", "--model", "openai:a"]);
        assert!(twice.unwrap_err().contains("given twice"));
        // Secure cookies: on by default off loopback, off on loopback, both overridable.
        assert!(!parse(&["--demo"]).unwrap().secure_cookies);
        assert!(
            parse(&["--demo", "--listen", "0.0.0.0:8080"])
                .unwrap()
                .secure_cookies
        );
        assert!(
            parse(&["--demo", "--secure-cookies"])
                .unwrap()
                .secure_cookies
        );
        assert!(
            !parse(&[
                "--demo",
                "--listen",
                "0.0.0.0:8080",
                "--secure-cookies",
                "false"
            ])
            .unwrap()
            .secure_cookies
        );
        assert_eq!(
            parse(&["--demo"]).unwrap().session_ttl,
            Duration::from_secs(12 * 3600)
        );
        assert!(parse(&["--demo", "--model-timeout", "0"]).is_err());
    }

    #[test]
    fn identity_modes_resolve_with_their_defaults() {
        assert_eq!(parse(&["--demo"]).unwrap().auth, AuthConfig::Session);
        assert!(parse(&["--demo", "--auth", "demo"]).is_ok());
        let secret = "0123456789abcdef0123456789abcdef";
        let c = parse(&["--auth", "jwt", "--jwt-secret", secret]).unwrap();
        assert_eq!(c.auth, AuthConfig::Jwt(JwtConfig::hs256(secret)));
        assert_eq!(c.session_secret, SessionSecret::RandomPerProcess);
        let c = parse(&[
            "--auth",
            "jwt",
            "--jwt-jwks",
            "https://idp.test/.well-known/jwks.json",
            "--jwt-issuer",
            "https://idp.test",
            "--jwt-audience",
            "api",
            "--jwt-cookie",
            "token",
            "--jwt-claim-id",
            "email",
        ])
        .unwrap();
        let AuthConfig::Jwt(jwt) = c.auth else {
            panic!("jwt")
        };
        assert_eq!(
            jwt.keys,
            JwtKeys::JwksUrl("https://idp.test/.well-known/jwks.json".into())
        );
        assert_eq!(
            (jwt.issuer.as_deref(), jwt.audience.as_deref()),
            (Some("https://idp.test"), Some("api"))
        );
        assert_eq!(jwt.claims.id, "email");
        assert_eq!(jwt.cookie.as_deref(), Some("token"));
        let bad_cookie = parse(&[
            "--auth",
            "jwt",
            "--jwt-secret",
            secret,
            "--jwt-cookie",
            "a b",
        ]);
        assert!(bad_cookie.unwrap_err().contains("not a cookie name"));
        let c = parse(&[
            "--auth",
            "proxy-header",
            "--trusted-proxy",
            "10.0.0.0/8,::1",
            "--proxy-user-header",
            "Remote-User",
            "--session-secret",
            secret,
        ])
        .unwrap();
        let AuthConfig::ProxyHeader(proxy) = c.auth else {
            panic!("proxy-header")
        };
        assert_eq!(proxy.user_header, "remote-user");
        assert_eq!(
            proxy.trusted,
            ["10.0.0.0/8".parse().unwrap(), "::1/128".parse().unwrap()]
        );
        // Secrets are not printed with the configuration.
        let shown = format!(
            "{:?}",
            parse(&["--auth", "jwt", "--jwt-secret", secret]).unwrap()
        );
        assert!(!shown.contains(secret), "{shown}");
    }

    #[test]
    fn audit_retention_is_bounded_in_memory_by_default_and_set_by_rows_or_all() {
        let rows = |n| AuditRetention::Rows(std::num::NonZeroU64::new(n).unwrap());
        let memory = ["--demo", "--database", "sqlite::memory:"];
        assert_eq!(parse(&memory).unwrap().audit_retention, rows(10_000));
        let file = ["--demo", "--database", "sqlite:///tmp/x.db"];
        assert_eq!(parse(&file).unwrap().audit_retention, AuditRetention::All);
        let given = |v: &str| parse(&[&memory[..], &["--audit-retention", v]].concat());
        assert_eq!(given("all").unwrap().audit_retention, AuditRetention::All);
        assert_eq!(given("250").unwrap().audit_retention, rows(250));
        for bad in ["0", "x", "1e3", "ALL", ""] {
            assert!(
                given(bad).unwrap_err().contains("at least 1, or all"),
                "{bad}"
            );
        }
        assert!(given("-1").is_err());
    }

    #[test]
    fn public_url_is_an_origin_without_trailing_slash() {
        let c = parse(&["--demo", "--public-url", "https://app.example.com/"]).unwrap();
        assert_eq!(c.public_url.as_deref(), Some("https://app.example.com"));
        let c = parse(&["--demo", "--public-url", "http://127.0.0.1:8080/app"]).unwrap();
        assert_eq!(c.public_url.as_deref(), Some("http://127.0.0.1:8080/app"));
        assert_eq!(parse(&["--demo"]).unwrap().public_url, None);
        for bad in [
            "app.example.com",
            "ftp://x",
            "https://",
            "https://x/?a=b",
            "https://a b",
        ] {
            assert!(parse(&["--demo", "--public-url", bad]).is_err(), "{bad}");
        }
    }
}
