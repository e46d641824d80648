//! The HTTP API: health, sessions, `/rpc`, approvals, threads and static files; under `--demo`
//! also the demo's own endpoints (`demo::http`).
//! Every endpoint but health and the demo sign-in needs a valid session (401 otherwise).
//! `POST /api/session` is the demo's sign-in; without `--demo` it is 404.

mod audit;
pub mod body;
pub mod error;
pub mod harden;
pub mod limits;
mod statics;

use std::net::TcpListener;

use actix_web::body::MessageBody;
use actix_web::dev::{Server, ServiceFactory, ServiceRequest, ServiceResponse};
use actix_web::http::header::{ContentType, SET_COOKIE};
use actix_web::http::StatusCode;
use actix_web::{web, App, FromRequest, HttpRequest, HttpResponse, HttpServer};
use dpas_protocol::{MessageContent, Role, WireModelMessage};
use futures_util::future::LocalBoxFuture;
use serde::Deserialize;
use serde_json::{json, Value};

pub use body::{read_json, read_limited, require_json};
pub use error::ApiError;

use crate::app::AppState;
use crate::runtime::{
    Actor, ApprovalRecord, ApprovalStatus, CallSurface, CapabilityErrorCode, Correlation, Envelope,
};
use crate::threads::ThreadAppend;

pub use crate::auth::actor_of;

/// The actor, by the server's `--auth` mode, or the 401 that says why not. Extracting it
/// reads headers only, so a handler that takes an `Actor` is refused before its body is read.
impl FromRequest for Actor {
    type Error = ApiError;
    type Future = LocalBoxFuture<'static, Result<Self, Self::Error>>;

    fn from_request(req: &HttpRequest, _: &mut actix_web::dev::Payload) -> Self::Future {
        let req = req.clone();
        Box::pin(async move { actor_of(&req).await })
    }
}

/// A route whose unlisted methods answer 405 (the contract's refusal, not actix's 404).
pub(crate) fn resource(path: &str) -> actix_web::Resource {
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
        // The demo mounts its sign-in (`POST /api/session`) ahead of the session resource.
        .configure(|cfg| {
            if state.config.demo {
                crate::demo::http::configure(cfg);
            }
        })
        .service(
            resource("/api/session")
                .get(get_session)
                .post(no_sign_in)
                .delete(delete_session),
        )
        .service(resource("/rpc/{id}").post(rpc))
        .service(resource("/api/approvals").get(list_approvals))
        .service(
            resource("/api/approvals/{id}")
                .app_data(body::json_config(
                    state.config.body_limit,
                    Some(|_| "Invalid decision body.".to_owned()),
                ))
                .get(get_approval)
                .post(decide_approval),
        )
        .service(resource("/api/threads").get(list_threads))
        .service(
            resource("/api/threads/{id}")
                .get(get_thread)
                .delete(delete_thread),
        )
        .service(resource("/api/threads/{id}/model-messages").get(thread_messages))
        .service(resource("/api/audit").get(audit::list_audit))
        .configure(crate::mcp::configure)
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
        let (runtime, threads, backend) = (
            state.runtime.clone(),
            state.threads.clone(),
            state.pool.backend(),
        );
        actix_web::rt::spawn(async move {
            let mut minutely = tokio::time::interval(std::time::Duration::from_secs(60));
            minutely.tick().await;
            loop {
                minutely.tick().await;
                if let Err(e) =
                    crate::app::recover_interrupted(&runtime, threads.as_ref(), backend).await
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
    if state.drain.is_draining() {
        return not_ready("The server is shutting down.");
    }
    match crate::db::ready(&state.pool).await {
        Ok(()) => HttpResponse::Ok().json(json!({"ok": true})),
        Err(cause) => {
            tracing::warn!(%cause, "not ready");
            not_ready("The database is not ready.")
        }
    }
}

/// The user as `GET /api/session` shows it. A session's id is its email; the other modes
/// give the email apart, or none (`null`).
pub(crate) fn user_json(actor: &Actor, session: bool) -> Value {
    let email = match &actor.email {
        Some(email) => Some(email.as_str()),
        None => session.then_some(actor.id.as_str()),
    };
    json!({"id": actor.id, "email": email, "name": actor.display_name, "role": actor.role})
}

/// The user, and the models `/agent/chat` serves (the default first; none without the chat).
async fn get_session(
    chat: Option<web::Data<crate::chat::ChatConfig>>,
    state: web::Data<AppState>,
    actor: Actor,
) -> HttpResponse {
    let models = chat.as_ref().map(|c| c.models.ids()).unwrap_or_default();
    let user = user_json(&actor, state.auth.is_session());
    HttpResponse::Ok().json(json!({"user": user, "models": models, "defaultModel": models.first()}))
}

/// `POST /api/session` where nothing signs users in here: without `--demo` (whose role picker
/// `demo::http` mounts ahead of this resource) a server's sessions come from elsewhere.
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
    actor: Actor,
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
                let err = crate::runtime::CapabilityError::input_invalid(vec![
                    crate::runtime::InputIssue {
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

fn rfc3339(t: time::OffsetDateTime) -> String {
    t.format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

/// The approval card of reference-behaviour N4.
fn card(r: &ApprovalRecord) -> Value {
    let mut v = json!({
        "id": r.id,
        "capabilityId": r.capability_id,
        "status": r.status.as_str(),
        "surface": r.surface.as_str(),
        "reasons": r.reasons,
        "risk": r.risk.as_str(),
        "input": r.input,
        "requestedAt": rfc3339(r.requested_at),
        "expiresAt": rfc3339(r.expires_at),
    });
    if let Some(target) = &r.target {
        v["target"] = target.clone();
    }
    if let Some(outcome) = &r.outcome {
        v["outcome"] = json!(outcome);
    }
    if let Some(message) = match r.status {
        ApprovalStatus::Stale | ApprovalStatus::Interrupted | ApprovalStatus::Cancelled => {
            Some(approval_status_error(r.status).message)
        }
        _ => None,
    } {
        v["message"] = json!(message);
    }
    if let Some(d) = &r.decision {
        let approver = if d.approver.display_name.is_empty() {
            &d.approver.id
        } else {
            &d.approver.display_name
        };
        v["decision"] = json!({
            "status": if d.approved { "approved" } else { "rejected" },
            "approver": approver,
            "decidedAt": rfc3339(d.decided_at),
        });
    }
    v
}

/// The record if it exists and `actor` requested it (anything else is the same 404).
async fn owned_record(
    state: &AppState,
    actor: &Actor,
    id: &str,
) -> Result<ApprovalRecord, ApiError> {
    let record = state
        .runtime
        .approval(id)
        .await
        .map_err(|e| ApiError::Internal(e.to_string()))?;
    record
        .filter(|r| r.actor.id == actor.id)
        .ok_or(ApiError::NotFound)
}

async fn list_approvals(
    state: web::Data<AppState>,
    actor: Actor,
) -> Result<HttpResponse, ApiError> {
    let records = state
        .runtime
        .pending_approvals_of(&actor.id)
        .await
        .map_err(|e| ApiError::Internal(e.to_string()))?;
    let cards: Vec<Value> = records.iter().map(card).collect();
    Ok(HttpResponse::Ok().json(cards))
}

async fn get_approval(
    state: web::Data<AppState>,
    actor: Actor,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(card(&owned_record(&state, &actor, &path).await?)))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct DecisionBody {
    approved: bool,
    #[serde(default)]
    thread_id: Option<String>,
}

/// `<capability id> (<detail>)`: the demo's wording for its gated writes
/// (`demo::http::receipt_parts`), `id <id>` for an embedder's capabilities; the bare id when
/// the input has no detail.
pub(crate) fn receipt_subject(r: &ApprovalRecord) -> String {
    let parts = crate::demo::http::receipt_parts(&r.capability_id, &r.input).unwrap_or_else(|| {
        r.input
            .get("id")
            .and_then(Value::as_i64)
            .map(|id| vec![format!("id {id}")])
            .unwrap_or_default()
    });
    if parts.is_empty() {
        r.capability_id.clone()
    } else {
        format!("{} ({})", r.capability_id, parts.join(", "))
    }
}

/// A refused decision: the code says what happened to the record (409), server faults 500.
fn decision_error(e: &crate::runtime::CapabilityError) -> ApiError {
    match e.public_code() {
        CapabilityErrorCode::InternalError => ApiError::Internal(e.to_string()),
        code => ApiError::Conflict {
            code: code.as_str(),
            message: if e.code.exposed() {
                e.message.clone()
            } else {
                code.default_message().to_owned()
            },
        },
    }
}

fn approval_status_error(status: ApprovalStatus) -> crate::runtime::CapabilityError {
    crate::runtime::approval::status_error(status)
}

/// Appends the receipt to the caller's thread, when the decision named one.
pub(crate) async fn store_receipt(
    threads: &dyn crate::threads::ThreadStore,
    owner: &str,
    thread_id: Option<&str>,
    text: &str,
) {
    let Some(thread_id) = thread_id else { return };
    let receipt = WireModelMessage::new(Role::Assistant, MessageContent::Text(text.to_owned()));
    let append = ThreadAppend {
        messages: vec![&receipt],
        ..ThreadAppend::default()
    };
    // The receipt is a courtesy to the next turn; failing to store it fails nothing else.
    if let Err(e) = threads.append(owner, thread_id, append).await {
        tracing::warn!(thread = %thread_id, error = %e, "approval receipt not stored");
    }
}

/// Decides the caller's approval and, approved, runs it; the receipt goes to the thread the
/// decision names. The answer is the receipt and the resolution ([`Resolution`]).
async fn decide_approval(
    actor: Actor,
    req: HttpRequest,
    state: web::Data<AppState>,
    path: web::Path<String>,
    payload: web::Payload,
) -> actix_web::Result<HttpResponse> {
    let record = owned_record(&state, &actor, &path).await?;
    let body: DecisionBody = body::json_body(&req, payload).await?;
    let correlation = Correlation {
        conversation_id: body.thread_id.clone(),
        ..Correlation::default()
    };
    let what = receipt_subject(&record);
    let thread = body.thread_id.as_deref();
    let decided = state
        .runtime
        .decide_and_run(&record.id, &actor, body.approved, correlation)
        .await;
    let resolution = match decided {
        Ok((decided, ran)) => Resolution::of(body.approved, decided.surface, decided.status, ran),
        Err(e) => {
            if e.code == CapabilityErrorCode::ApprovalStale {
                let text = Resolution::stale_receipt(&what);
                store_receipt(state.threads.as_ref(), &actor.id, thread, &text).await;
            }
            return Err(decision_error(&e).into());
        }
    };
    let text = resolution.receipt(&what);
    store_receipt(state.threads.as_ref(), &actor.id, thread, &text).await;
    Ok(HttpResponse::Ok().json(json!({
        "receipt": {"text": text, "ok": resolution.ok()},
        "resolution": resolution.to_json(),
    })))
}

/// What a decision came to: the `resolution` of the answer, and the receipt that tells it.
#[derive(Debug, Clone, PartialEq)]
enum Resolution {
    Rejected,
    /// Approved for an MCP session, which runs it itself.
    ApprovedForMcp,
    Completed(Value),
    Pending,
    /// The run timed out or was cancelled; the error's public message.
    Cancelled(Value),
    /// The input or target changed since the request: nothing ran.
    Stale(Value),
    Failed(Value),
}

impl Resolution {
    /// The outcome of a decision the runtime took on a record requested from `surface`, now
    /// `status`: `ran` is the run an approval started (none for a rejection, an MCP
    /// approval, or a record that was no longer pending).
    fn of(
        approved: bool,
        surface: CallSurface,
        status: ApprovalStatus,
        ran: Option<Envelope>,
    ) -> Self {
        if !approved {
            return Self::Rejected;
        }
        if surface == CallSurface::Mcp {
            return Self::ApprovedForMcp;
        }
        match ran.unwrap_or_else(|| Envelope::Error(approval_status_error(status))) {
            Envelope::Ok { data } => Self::Completed(data),
            Envelope::ApprovalRequired { .. } => Self::Pending,
            Envelope::Error(e) => {
                let message = e.to_public().get("message").cloned().unwrap_or(Value::Null);
                match e.code {
                    CapabilityErrorCode::Timeout | CapabilityErrorCode::Cancelled => {
                        Self::Cancelled(message)
                    }
                    CapabilityErrorCode::ApprovalStale => Self::Stale(message),
                    CapabilityErrorCode::ApprovalPending => Self::Pending,
                    _ => Self::Failed(message),
                }
            }
        }
    }

    fn ok(&self) -> bool {
        !matches!(self, Self::Cancelled(_) | Self::Stale(_) | Self::Failed(_))
    }

    fn stale_receipt(what: &str) -> String {
        format!("You approved {what}, but it changed since it was requested, so nothing was done. Ask again.")
    }

    /// The receipt's text, for the user and the thread's next turn.
    fn receipt(&self, what: &str) -> String {
        match self {
            Self::Rejected => format!("You denied {what}. Nothing was changed."),
            Self::ApprovedForMcp => {
                format!("You approved {what}. The requesting MCP session can now run it.")
            }
            Self::Completed(_) => format!("You approved {what}, and it completed."),
            Self::Pending => format!("You approved {what}. It is running."),
            Self::Cancelled(_) => format!("You approved {what}, but the run was cancelled."),
            Self::Stale(_) => Self::stale_receipt(what),
            Self::Failed(message) => format!(
                "You approved {what}, but it failed: {}",
                message.as_str().unwrap_or_default()
            ),
        }
    }

    fn to_json(&self) -> Value {
        let failed = |status: &str, message: &Value| json!({"status": status, "error": {"message": message}});
        match self {
            Self::Rejected => json!({"status": "rejected"}),
            Self::ApprovedForMcp => json!({"status": "approved"}),
            Self::Completed(output) => json!({"status": "completed", "output": output}),
            Self::Pending => json!({"status": "pending"}),
            Self::Cancelled(message) => failed("cancelled", message),
            Self::Stale(message) => failed("stale", message),
            Self::Failed(message) => failed("failed", message),
        }
    }
}

fn storage(e: crate::threads::ThreadError) -> ApiError {
    ApiError::Internal(e.to_string())
}

async fn list_threads(state: web::Data<AppState>, actor: Actor) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(state.threads.list(&actor.id).await.map_err(storage)?))
}

async fn get_thread(
    state: web::Data<AppState>,
    actor: Actor,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let meta = state
        .threads
        .get(&actor.id, &path)
        .await
        .map_err(storage)?
        .ok_or(ApiError::NotFound)?;
    Ok(HttpResponse::Ok().json(meta))
}

async fn thread_messages(
    state: web::Data<AppState>,
    actor: Actor,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let messages = state
        .threads
        .messages_json(&actor.id, &path)
        .await
        .map_err(storage)?
        .ok_or(ApiError::NotFound)?;
    Ok(HttpResponse::Ok()
        .content_type(ContentType::json())
        .body(messages))
}

async fn delete_thread(
    state: web::Data<AppState>,
    actor: Actor,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    if state
        .threads
        .delete(&actor.id, &path)
        .await
        .map_err(storage)?
    {
        Ok(HttpResponse::Ok().json(json!({"ok": true})))
    } else {
        Err(ApiError::NotFound)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::CapabilityError;

    fn failed(code: CapabilityErrorCode) -> Option<Envelope> {
        Some(Envelope::Error(CapabilityError::of(code)))
    }

    /// Each way a decision ends, with the receipt and resolution the approval endpoint has
    /// answered since the card UI was written against it.
    #[test]
    fn each_outcome_has_its_receipt_and_resolution() {
        use ApprovalStatus::{Approved, Expired, Rejected};
        let what = "issue-invoice (invoice 5)";
        let outcome = |approved, surface, status, ran| {
            let r = Resolution::of(approved, surface, status, ran);
            (r.receipt(what), r.ok(), r.to_json())
        };
        let ok = Some(Envelope::Ok {
            data: json!({"id": 5}),
        });
        assert_eq!(
            outcome(false, CallSurface::AiSdk, Rejected, None),
            (
                format!("You denied {what}. Nothing was changed."),
                true,
                json!({"status": "rejected"})
            )
        );
        assert_eq!(
            outcome(true, CallSurface::Mcp, Approved, None),
            (
                format!("You approved {what}. The requesting MCP session can now run it."),
                true,
                json!({"status": "approved"})
            )
        );
        assert_eq!(
            outcome(true, CallSurface::AiSdk, Approved, ok),
            (
                format!("You approved {what}, and it completed."),
                true,
                json!({"status": "completed", "output": {"id": 5}})
            )
        );
        let running = format!("You approved {what}. It is running.");
        assert_eq!(
            outcome(
                true,
                CallSurface::AiSdk,
                Approved,
                failed(CapabilityErrorCode::ApprovalPending)
            ),
            (running.clone(), true, json!({"status": "pending"}))
        );
        let again = outcome(
            true,
            CallSurface::AiSdk,
            Approved,
            Some(Envelope::ApprovalRequired {
                approval_id: "apr_x".to_owned(),
                message: String::new(),
            }),
        );
        assert_eq!(again, (running, true, json!({"status": "pending"})));
        for code in [CapabilityErrorCode::Timeout, CapabilityErrorCode::Cancelled] {
            let (text, ok, resolution) = outcome(true, CallSurface::AiSdk, Approved, failed(code));
            assert_eq!(
                text,
                format!("You approved {what}, but the run was cancelled.")
            );
            assert!(!ok);
            assert_eq!(resolution["status"], "cancelled");
            assert!(resolution["error"]["message"].is_string(), "{resolution}");
        }
        let (text, ok, resolution) = outcome(
            true,
            CallSurface::AiSdk,
            Approved,
            failed(CapabilityErrorCode::ApprovalStale),
        );
        assert_eq!(
            (text.as_str(), ok, &resolution["status"]),
            (
                "You approved issue-invoice (invoice 5), but it changed since it was requested, so nothing was done. Ask again.",
                false,
                &json!("stale")
            )
        );
        // No run came back: the record's own status says why (an expired one failed).
        let (text, ok, resolution) = outcome(true, CallSurface::AiSdk, Expired, None);
        let message = resolution["error"]["message"].as_str().unwrap().to_owned();
        assert_eq!(
            (text, ok, resolution),
            (
                format!("You approved {what}, but it failed: {message}"),
                false,
                json!({"status": "failed", "error": {"message": message}})
            )
        );
        assert!(!message.is_empty());
    }
}
