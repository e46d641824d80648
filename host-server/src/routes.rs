//! The application's routes and serving: the HTTP API's resources ([`crate::http`]) and the
//! MCP door mounted on one `App`, the embedder's routes (the step doors, a sign-in) ahead of
//! them, and the background upkeep every process runs. The one place that mounts both
//! `http` resources and `doors`.

use std::net::TcpListener;
use std::time::Duration;

use actix_web::body::MessageBody;
use actix_web::dev::{Server, ServiceFactory, ServiceRequest, ServiceResponse};
use actix_web::{web, App, HttpServer};

use crate::app::AppState;
use crate::auth::Identity;
use crate::http::resource;
use crate::http::{approvals, audit, health, rpc, sessions, statics, threads, usage};
use crate::lifecycle::every;
use dpas_governance::receipt::recover_interrupted;

/// Mounts every route and the fallback on `cfg`, with `state` as app data.
pub fn configure(cfg: &mut web::ServiceConfig, state: &AppState) {
    cfg.app_data(web::Data::new(state.clone()))
        .app_data(web::Data::new(Identity {
            auth: state.auth.clone(),
            sessions: state.sessions.clone(),
        }))
        .route("/api/health", web::get().to(health::health))
        .route("/api/ready", web::get().to(health::ready_check))
        .configure(|cfg| {
            // Not behind the session: it is for scrapers (or on its own address).
            if state.config.metrics_listen.is_none() {
                cfg.route("/metrics", web::get().to(crate::telemetry::metrics_route));
            }
        })
        .service(
            resource("/api/session")
                .get(sessions::get_session)
                .post(sessions::no_sign_in)
                .delete(sessions::delete_session),
        )
        .service(resource("/rpc/{id}").post(rpc::rpc))
        .service(resource("/api/approvals").get(approvals::list_approvals))
        .service(
            resource("/api/approvals/{id}")
                .app_data(crate::http::body::json_config(
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
        .service(resource("/api/audit/export").get(audit::export_audit))
        .service(resource("/api/usage").get(usage::list_usage))
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
    // The process's metrics recorder, installed once, before the first request is counted.
    crate::telemetry::prometheus();
    App::new()
        .wrap(actix_web::middleware::from_fn(crate::http::harden::harden))
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
/// drain the metrics' histogram samples (every 5 s), purge old approvals (hourly), re-read
/// the stored session revocations ([`crate::session::REVOCATION_REFRESH`]) and, on a shared
/// database, mark runs whose replica stopped mid-run (each minute).
fn spawn_upkeep(state: &AppState) {
    every(Duration::from_secs(5), "the metrics upkeep", || async {
        crate::telemetry::run_upkeep()
    });
    let (runtime, retention) = (state.runtime.clone(), state.config.approval_retention);
    every(HOURLY, "approval purge", move || {
        let runtime = runtime.clone();
        async move { runtime.purge_approvals(retention).await.map(|_| ()) }
    });
    let (db, keys) = (state.pool.clone(), state.sessions.clone());
    every(
        crate::session::REVOCATION_REFRESH,
        "reading session revocations",
        move || {
            let (db, keys) = (db.clone(), keys.clone());
            async move { crate::session::load_revoked(&db, &keys).await }
        },
    );
    if let Some(log) = state.engine.step_log.clone() {
        every(MINUTELY, "step record purge", move || {
            let log = log.clone();
            async move { log.purge().await.map(|_| ()) }
        });
    }
    if state.pool.backend().is_shared() {
        let (runtime, threads) = (state.runtime.clone(), state.threads.clone());
        let grace = crate::app::run_grace(&state.runtime, &state.pool);
        every(MINUTELY, "recovering interrupted runs", move || {
            let (runtime, threads) = (runtime.clone(), threads.clone());
            async move { recover_interrupted(&runtime, threads.as_ref(), grace).await }
        });
    }
}

const HOURLY: Duration = Duration::from_secs(3600);
const MINUTELY: Duration = Duration::from_secs(60);
