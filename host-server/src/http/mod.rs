//! The HTTP API: health, sessions, `/rpc`, approvals, threads and static files. The demo's own
//! endpoints (`demo::http`) are not mounted here: the binary mounts them with its extra routes.
//! Every endpoint but health (and a sign-in mounted ahead, such as the demo's) needs a valid
//! session (401 otherwise). `POST /api/session` signs nobody in here: 404.
//! Here: mounting, serving, health, sessions and `/rpc`; `approvals.rs`, `threads.rs` and
//! `audit.rs` are their resources' handlers.

mod approvals;
mod audit;
pub mod body;
pub mod error;
pub mod harden;
pub mod limits;
mod statics;
mod threads;

use std::net::TcpListener;

use actix_web::body::MessageBody;
use actix_web::dev::{Server, ServiceFactory, ServiceRequest, ServiceResponse};
use actix_web::http::header::SET_COOKIE;
use actix_web::http::StatusCode;
use actix_web::{web, App, FromRequest, HttpRequest, HttpResponse, HttpServer};
use futures_util::future::LocalBoxFuture;
use serde_json::{json, Value};

pub use body::{read_json, read_limited, require_json};
pub use error::ApiError;

use crate::app::AppState;
use dpas_governance::{Actor, CallSurface, Correlation, Envelope};

pub use crate::auth::actor_of;

/// The request's actor, by the server's `--auth` mode, or the 401 that says why not.
/// Extracting it reads headers only, so a handler that takes a `Caller` is refused before
/// its body is read.
#[derive(Debug, Clone)]
pub struct Caller(pub Actor);

impl FromRequest for Caller {
    type Error = ApiError;
    type Future = LocalBoxFuture<'static, Result<Self, Self::Error>>;

    fn from_request(req: &HttpRequest, _: &mut actix_web::dev::Payload) -> Self::Future {
        let req = req.clone();
        Box::pin(async move { actor_of(&req).await.map(Caller) })
    }
}

/// A route whose unlisted methods answer 405 (the contract's refusal, not actix's 404).
pub fn resource(path: &str) -> actix_web::Resource {
    web::resource(path).default_service(web::to(method_not_allowed))
}

/// Mounts every route and the fallback on `cfg`, with `state` as app data.
pub fn configure(cfg: &mut web::ServiceConfig, state: &AppState) {
    cfg.app_data(web::Data::new(state.clone()))
        .route("/api/health", web::get().to(health))
        .route("/api/ready", web::get().to(ready_check))
        .configure(|cfg| {
            // Not behind the session: it is for scrapers (or on its own address).
            if state.config.metrics_listen.is_none() {
                cfg.route("/metrics", web::get().to(crate::telemetry::metrics_route));
            }
        })
        .service(
            resource("/api/session")
                .get(get_session)
                .post(no_sign_in)
                .delete(delete_session),
        )
        .service(resource("/rpc/{id}").post(rpc))
        .service(resource("/api/approvals").get(approvals::list_approvals))
        .service(
            resource("/api/approvals/{id}")
                .app_data(body::json_config(
                    state.config.body_limit,
                    Some(|_| "Invalid decision body.".to_owned()),
                ))
                .get(approvals::get_approval)
                .post(approvals::decide_approval),
        )
        .service(resource("/api/threads").get(threads::list_threads))
        .service(
            resource("/api/threads/{id}")
                .get(threads::get_thread)
                .delete(threads::delete_thread),
        )
        .service(resource("/api/threads/{id}/model-messages").get(threads::thread_messages))
        .service(resource("/api/audit").get(audit::list_audit))
        .configure(crate::doors::mcp::configure)
        .default_service(web::to(statics::fallback));
}

/// The whole application, ready for `HttpServer::new`.
pub fn app(
    state: AppState,
) -> App<
    impl ServiceFactory<
        ServiceRequest,
        Config = (),
        Response = ServiceResponse<impl MessageBody>,
        Error = actix_web::Error,
        InitError = (),
    >,
> {
    app_with(state, |_| {})
}

/// The application plus the embedder's own routes (e.g. `POST /agent/chat`).
pub fn app_with(
    state: AppState,
    extra: impl FnOnce(&mut web::ServiceConfig),
) -> App<
    impl ServiceFactory<
        ServiceRequest,
        Config = (),
        Response = ServiceResponse<impl MessageBody>,
        Error = actix_web::Error,
        InitError = (),
    >,
> {
    App::new()
        .wrap(actix_web::middleware::from_fn(harden::harden))
        .wrap(actix_web::middleware::from_fn(
            crate::telemetry::http_metrics,
        ))
        .configure(extra)
        .configure(move |cfg| configure(cfg, &state))
}

/// Starts serving on an already-bound listener (use port 0 for an ephemeral port).
pub fn serve(state: AppState, listener: TcpListener, workers: usize) -> std::io::Result<Server> {
    serve_with(state, listener, workers, |_| {})
}

/// [`serve`] with extra routes mounted ahead of the built-in ones. The server stops on
/// SIGTERM/SIGINT by itself (actix's own graceful stop, which waits for connections only).
pub fn serve_with<F>(
    state: AppState,
    listener: TcpListener,
    workers: usize,
    extra: F,
) -> std::io::Result<Server>
where
    F: Fn(&mut web::ServiceConfig) + Clone + Send + 'static,
{
    serve_with_signals(state, listener, workers, extra, true)
}

/// [`serve_with`]; without `signals` the server does not stop on SIGTERM/SIGINT by itself:
/// [`crate::lifecycle::serve_until_drained`] stops it once the step runs, which outlive
/// their responses, are over.
pub fn serve_with_signals<F>(
    state: AppState,
    listener: TcpListener,
    workers: usize,
    extra: F,
    signals: bool,
) -> std::io::Result<Server>
where
    F: Fn(&mut web::ServiceConfig) + Clone + Send + 'static,
{
    // A request head must arrive within the request timeout too (408, then closed).
    let head_deadline = state.config.request_timeout;
    state.auth.spawn_refresh();
    spawn_upkeep(&state);
    crate::telemetry::spawn_upkeep();
    let mut server = HttpServer::new(move || app_with(state.clone(), extra.clone()))
        .workers(workers.max(1))
        .client_request_timeout(head_deadline)
        // A step streams many small NDJSON frames on a keep-alive connection. With
        // Nagle's algorithm on, every frame after the first waits for the client's
        // delayed ACK (~40 ms a step, and choppy `text-delta`s); send each at once.
        .tcp_nodelay(true);
    if !signals {
        // The drain has waited for the runs already: what is left are closing responses.
        server = server
            .disable_signals()
            .shutdown_timeout(crate::lifecycle::CLOSE_TIMEOUT_SECS);
    }
    Ok(server.listen(listener)?.run())
}

/// What every process does in the background, safe however many share the database:
/// purge old approvals (hourly), re-read the stored session revocations
/// ([`crate::session::REVOCATION_REFRESH`]) and, on a shared database, mark runs whose
/// replica stopped mid-run (each minute).
fn spawn_upkeep(state: &AppState) {
    let (runtime, retention) = (state.runtime.clone(), state.config.approval_retention);
    actix_web::rt::spawn(async move {
        let mut hourly = tokio::time::interval(std::time::Duration::from_secs(3600));
        hourly.tick().await;
        loop {
            hourly.tick().await;
            if let Err(e) = runtime.purge_approvals(retention).await {
                tracing::warn!(error = %e, "approval purge failed");
            }
        }
    });
    let (db, sessions) = (state.pool.clone(), state.sessions.clone());
    actix_web::rt::spawn(async move {
        let mut every = tokio::time::interval(crate::session::REVOCATION_REFRESH);
        every.tick().await;
        loop {
            every.tick().await;
            if let Err(e) = crate::session::load_revoked(&db, &sessions).await {
                tracing::warn!(error = %e, "reading session revocations failed");
            }
        }
    });
    if state.pool.backend().is_shared() {
        let (runtime, threads, grace) = (
            state.runtime.clone(),
            state.threads.clone(),
            crate::app::run_grace(&state.runtime, &state.pool),
        );
        actix_web::rt::spawn(async move {
            let mut minutely = tokio::time::interval(std::time::Duration::from_secs(60));
            minutely.tick().await;
            loop {
                minutely.tick().await;
                if let Err(e) =
                    dpas_governance::receipt::recover_interrupted(&runtime, threads.as_ref(), grace)
                        .await
                {
                    tracing::warn!(error = %e, "recovering interrupted runs failed");
                }
            }
        });
    }
}

pub(crate) async fn method_not_allowed() -> HttpResponse {
    error::ApiCode::MethodNotAllowed.response()
}

async fn health() -> HttpResponse {
    HttpResponse::Ok().json(json!({"ok": true}))
}

/// 200 when the database answers with every migration applied and the server is not
/// shutting down; 503 `NOT_READY` otherwise (the cause goes to the log).
async fn ready_check(state: web::Data<AppState>) -> HttpResponse {
    let not_ready = |message: &str| {
        HttpResponse::ServiceUnavailable()
            .json(json!({"error": {"code": "NOT_READY", "message": message}}))
    };
    if state.engine.drain.is_draining() {
        return not_ready("The server is shutting down.");
    }
    match dpas_store::ready(&state.pool).await {
        Ok(()) => HttpResponse::Ok().json(json!({"ok": true})),
        Err(cause) => {
            tracing::warn!(%cause, "not ready");
            not_ready("The database is not ready.")
        }
    }
}

/// The user as `GET /api/session` shows it. A session's id is its email; the other modes
/// give the email apart, or none (`null`).
pub fn user_json(actor: &Actor, session: bool) -> Value {
    let email = match &actor.email {
        Some(email) => Some(email.as_str()),
        None => session.then_some(actor.id.as_str()),
    };
    json!({"id": actor.id, "email": email, "name": actor.display_name, "role": actor.role})
}

/// The user, and the models `/agent/chat` serves (the default first; none without the chat).
async fn get_session(
    chat: Option<web::Data<dpas_engine::ChatConfig>>,
    state: web::Data<AppState>,
    Caller(actor): Caller,
) -> HttpResponse {
    let models = chat.as_ref().map(|c| c.models.ids()).unwrap_or_default();
    let user = user_json(&actor, state.auth.is_session());
    HttpResponse::Ok().json(json!({"user": user, "models": models, "defaultModel": models.first()}))
}

/// `POST /api/session` where nothing signs users in here: a sign-in is mounted ahead of this
/// resource (the demo's role picker, `demo::http`, under `--demo`), or a server's sessions
/// come from elsewhere.
async fn no_sign_in() -> Result<HttpResponse, ApiError> {
    Err(ApiError::NotFound)
}

/// Signs out: this session's cookie is refused from now on, also after a restart. With
/// `--auth jwt|proxy-header` the app signs its users out itself: 404.
async fn delete_session(
    req: HttpRequest,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    if !state.auth.is_session() {
        return Err(ApiError::NotFound);
    }
    let claims = state
        .sessions
        .claims_from_headers(req.headers())
        .map_err(ApiError::from)?;
    crate::session::revoke(&state.pool, &state.sessions, &claims)
        .await
        .map_err(|e| ApiError::Internal(e.to_string()))?;
    Ok(HttpResponse::Ok()
        .insert_header((
            SET_COOKIE,
            state.sessions.removal_cookie().encoded().to_string(),
        ))
        .json(json!({"ok": true})))
}

/// HTTP status of an `/rpc` envelope.
fn rpc_status(envelope: &Envelope) -> StatusCode {
    match envelope {
        Envelope::Ok { .. } => StatusCode::OK,
        // An approval on `direct` means a policy gates the app's own calls: a conflict.
        Envelope::ApprovalRequired { .. } => StatusCode::CONFLICT,
        Envelope::Error(e) => StatusCode::from_u16(e.public_code().http_status())
            .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
    }
}

async fn rpc(
    Caller(actor): Caller,
    req: HttpRequest,
    state: web::Data<AppState>,
    path: web::Path<String>,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let bytes = read_limited(&req, payload, state.config.body_limit).await?;
    let input: Value = if bytes.iter().all(u8::is_ascii_whitespace) {
        json!({})
    } else {
        match serde_json::from_slice(&bytes) {
            Ok(v) => v,
            Err(_) => {
                let err = dpas_governance::CapabilityError::input_invalid(vec![
                    dpas_governance::InputIssue {
                        path: String::new(),
                        message: "The body is not valid JSON.".to_owned(),
                    },
                ]);
                let envelope = Envelope::Error(err);
                return Ok(HttpResponse::build(rpc_status(&envelope)).json(envelope.to_value()));
            }
        }
    };
    let envelope = state
        .runtime
        .invoke_envelope(
            &actor,
            CallSurface::Direct,
            &path,
            input,
            Correlation::default(),
        )
        .await;
    Ok(HttpResponse::build(rpc_status(&envelope)).json(envelope.to_value()))
}
