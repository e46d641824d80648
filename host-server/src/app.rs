//! Application state and its builder: database, runtime (with the capabilities the
//! embedder registers and a capabilities file's), threads and session keys.

use std::sync::Arc;

use futures_util::future::BoxFuture;

use crate::appfiles::{ActorSigner, CapabilityFile, HttpExecutor};
use crate::auth::{Auth, JwtSetupError};
use crate::config::{ServerConfig, SessionSecret};
use crate::http::limits::AddressLimiter;
use crate::session::{self, SessionKeys};
use dpas_engine::Engine;
use dpas_engine::StepLog;
use dpas_governance::receipt::recover_interrupted;
use dpas_governance::threads::{ThreadCaps, ThreadStore};
use dpas_governance::{AuditHub, Clock, RegistryError, Runtime, RuntimeBuilder};
use dpas_store::SqlThreadStore;
use dpas_store::{self as db, AuditLog, Db, DbError};
use dpas_store::{SqlApprovalStore, SqlStepStore};

/// Everything a request handler needs. Cheap to clone.
#[derive(Clone)]
pub struct AppState {
    pub config: Arc<ServerConfig>,
    pub runtime: Arc<Runtime>,
    pub threads: Arc<dyn ThreadStore>,
    /// The step engine, on the same runtime and threads.
    pub engine: Engine,
    pub sessions: SessionKeys,
    /// Where a request's identity comes from (`--auth`).
    pub auth: Arc<Auth>,
    /// The database (SQLite or PostgreSQL).
    pub pool: Db,
    /// The audit table's writer and reader.
    pub audit_log: AuditLog,
    /// Sign-in requests per client address (`--sign-in-per-minute`).
    pub sign_in: Arc<AddressLimiter>,
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState")
            .field("config", &self.config)
            .field("runtime", &self.runtime)
            .finish_non_exhaustive()
    }
}

impl AppState {
    /// Stops using the database, the last thing a stopping server does: waits (at most
    /// [`AUDIT_FLUSH_ON_CLOSE`]) until the audit entries recorded so far are stored, then
    /// closes the pool. A write still in flight when the pool closes keeps its connection
    /// (and on SQLite the file's write lock) until it ends, so the flush comes first.
    pub async fn close(&self) {
        self.audit_log.flush(AUDIT_FLUSH_ON_CLOSE).await;
        self.pool.close().await;
    }
}

/// How long a stopping server waits for its audit entries to be stored.
pub const AUDIT_FLUSH_ON_CLOSE: std::time::Duration = std::time::Duration::from_secs(5);

#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    #[error(transparent)]
    Db(#[from] DbError),
    #[error("preparing the database: {0}")]
    Seed(sqlx::Error),
    #[error(transparent)]
    Registry(#[from] RegistryError),
    #[error("recovering approvals: {0}")]
    Approvals(dpas_governance::CapabilityError),
    #[error("the HTTP client of file capabilities: {0}")]
    Executor(reqwest::Error),
    #[error(transparent)]
    Auth(#[from] JwtSetupError),
}

type Registration = Box<dyn FnOnce(RuntimeBuilder, &Db) -> RuntimeBuilder + Send>;
type Preparation = Box<dyn FnOnce(Db) -> BoxFuture<'static, Result<(), sqlx::Error>> + Send>;

/// Assembles an [`AppState`]: embedders add their own capabilities and policies with
/// [`AppBuilder::register`] (a server with none serves no domain).
pub struct AppBuilder {
    config: ServerConfig,
    database: Option<Db>,
    preparations: Vec<Preparation>,
    registrations: Vec<Registration>,
    capability_file: Option<CapabilityFile>,
    clock: Option<Arc<dyn Clock>>,
    audit: Option<AuditHub>,
}

impl AppBuilder {
    pub fn new(config: ServerConfig) -> Self {
        Self {
            config,
            database: None,
            preparations: Vec::new(),
            registrations: Vec::new(),
            capability_file: None,
            clock: None,
            audit: None,
        }
    }

    /// Adjusts the configuration before building.
    pub fn with_config(mut self, f: impl FnOnce(&mut ServerConfig)) -> Self {
        f(&mut self.config);
        self
    }

    /// The database, already connected (to `config.database_url`, migrated), for an embedder
    /// that prepares its own tables first; otherwise `build` connects.
    pub fn database(mut self, db: Db) -> Self {
        self.database = Some(db);
        self
    }

    /// The configuration the server will be built with.
    pub fn config(&self) -> &ServerConfig {
        &self.config
    }

    /// Runs once the database is connected and migrated, before any capability is
    /// registered: an embedder's seed data. A failure stops the start
    /// ([`StartupError::Seed`]).
    pub fn prepare(
        mut self,
        f: impl FnOnce(Db) -> BoxFuture<'static, Result<(), sqlx::Error>> + Send + 'static,
    ) -> Self {
        self.preparations.push(Box::new(f));
        self
    }

    /// Adds capabilities and policies; the closure gets the runtime builder and the database.
    pub fn register(
        mut self,
        f: impl FnOnce(RuntimeBuilder, &Db) -> RuntimeBuilder + Send + 'static,
    ) -> Self {
        self.registrations.push(Box::new(f));
        self
    }

    /// Registers a capabilities file's capabilities (executed over HTTP, with `X-DPAS-Actor`
    /// signed with a key derived from the session secret) and its policies.
    pub fn capability_file(mut self, file: CapabilityFile) -> Self {
        self.capability_file = Some(file);
        self
    }

    /// The runtime's clock (approval expiry).
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = Some(clock);
        self
    }

    pub fn audit(mut self, hub: AuditHub) -> Self {
        self.audit = Some(hub);
        self
    }

    pub async fn build(self) -> Result<AppState, StartupError> {
        // Keys first: a JWKS that cannot be read stops the start before anything is written.
        let auth = Arc::new(Auth::from_config(&self.config.auth).await?);
        let pool = match self.database {
            Some(db) => db,
            None => db::connect(&self.config.database_url).await?,
        };
        for prepare in self.preparations {
            prepare(pool.clone()).await.map_err(StartupError::Seed)?;
        }
        let mut builder =
            Runtime::builder().approval_store(Arc::new(SqlApprovalStore::new(pool.clone())));
        if let Some(c) = self.clock {
            builder = builder.clock(c);
        }
        let hub = self.audit.unwrap_or_default();
        let audit_log = AuditLog::start(pool.clone(), &hub, self.config.audit_retention);
        builder = builder.audit(hub);
        if let Some(file) = &self.capability_file {
            let signer = match &self.config.session_secret {
                SessionSecret::Given(s) => ActorSigner::from_secret(s.as_bytes()),
                SessionSecret::RandomPerProcess => ActorSigner::random(),
            };
            // The app's own token goes on to its backend; our session tokens never do.
            let forward = matches!(self.config.auth, crate::config::AuthConfig::Jwt(_));
            let executor =
                Arc::new(HttpExecutor::new(signer, forward).map_err(StartupError::Executor)?);
            builder = file.register(builder, &executor);
        }
        for r in self.registrations {
            builder = r(builder, &pool);
        }
        let runtime = builder.build()?;
        let sessions = match &self.config.session_secret {
            SessionSecret::Given(s) => SessionKeys::from_secret(s, self.config.session_ttl),
            SessionSecret::RandomPerProcess => SessionKeys::random(self.config.session_ttl),
        }
        .secure(self.config.secure_cookies);
        session::load_revoked(&pool, &sessions)
            .await
            .map_err(StartupError::Seed)?;
        let caps = ThreadCaps::from_limits(self.config.body_limit);
        let threads: Arc<dyn ThreadStore> = Arc::new(SqlThreadStore::new(pool.clone(), caps));
        // Nothing runs yet in this process: any approved action whose run began and never
        // finished is from a process that died (on a shared database, once it is older than
        // any run can take); mark it, and drop what is past retention.
        recover_interrupted(&runtime, threads.as_ref(), run_grace(&runtime, &pool))
            .await
            .map_err(StartupError::Approvals)?;
        runtime
            .purge_approvals(self.config.approval_retention)
            .await
            .map_err(StartupError::Approvals)?;
        let runtime = Arc::new(runtime);
        let mut engine = Engine::new(
            Arc::clone(&runtime),
            Arc::clone(&threads),
            self.config.max_concurrent_steps,
        );
        engine = engine.with_meter(dpas_engine::Meter {
            store: Arc::new(dpas_store::SqlUsageStore::new(pool.clone())),
            limits: self.config.budgets,
            prices: self.config.prices.clone(),
            tenant: dpas_engine::budget::DEFAULT_TENANT.to_owned(),
        });
        if !self.config.step_retention.is_zero() {
            // This process's name in the records of the steps it runs.
            let replica = format!("rpl_{}", uuid::Uuid::new_v4().simple());
            let store = SqlStepStore::new(pool.clone());
            let store = if db::is_memory(&self.config.database_url) {
                store.capped(dpas_store::steps::MEMORY_STEP_ROWS)
            } else {
                store
            };
            let store = Arc::new(store);
            engine = engine.with_step_log(StepLog::new(store, replica, self.config.step_retention));
        }
        Ok(AppState {
            sign_in: Arc::new(AddressLimiter::per_minute(self.config.sign_in_per_minute)),
            config: Arc::new(self.config),
            runtime,
            engine,
            threads,
            sessions,
            auth,
            pool,
            audit_log,
        })
    }
}

/// How old a claimed run must be before a process takes it for interrupted: on a database
/// shared by replicas another one may be running a recent claim ([`Runtime::run_grace`]);
/// alone on its database, a process knows every claim it did not make is from a dead one.
pub fn run_grace(runtime: &Runtime, db: &Db) -> std::time::Duration {
    if db.backend().is_shared() {
        runtime.run_grace()
    } else {
        std::time::Duration::ZERO
    }
}
