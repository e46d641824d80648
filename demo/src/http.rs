//! The demo's own HTTP surface, which the `host-server` binary (and the test harness) mounts
//! beside its other routes only under `--demo` ([`with_demo`]): the role picker's sign-in
//! (`POST /api/session`), the ledger reset (`POST /api/demo/reset`) and the wording of
//! approval receipts for its gated writes. The library's `http` layer knows none of it.

use actix_web::http::header::SET_COOKIE;
use actix_web::{guard, web, HttpRequest, HttpResponse};
use serde::Deserialize;
use serde_json::{json, Value};

use host_server::http::{body, error::ApiError, resource, user_json, Caller};
use host_server::AppState;

use crate::ledger::Ledger;
use crate::users::{DemoUser, CONTROLLER};

/// `routes` (an embedder's extra routes, as `http::serve_with` takes them) with the demo's
/// endpoints mounted ahead of them: how the binary mounts the demo under `--demo`. Extra
/// routes go ahead of the built-in ones, so the demo's sign-in answers `POST /api/session`
/// before the session resource does.
pub fn with_demo<F>(
    ledger: Ledger,
    routes: F,
) -> impl Fn(&mut web::ServiceConfig) + Clone + Send + 'static
where
    F: Fn(&mut web::ServiceConfig) + Clone + Send + 'static,
{
    move |cfg: &mut web::ServiceConfig| {
        configure(cfg, &ledger);
        routes(cfg);
    }
}

/// Mounts the demo's endpoints. Its sign-in is a `POST`-only resource on `/api/session`, to be
/// mounted ahead of the session resource (`GET`/`DELETE`, and the 405s): a request it does not
/// guard for falls through to that one.
pub fn configure(cfg: &mut web::ServiceConfig, ledger: &Ledger) {
    cfg.app_data(web::Data::new(ledger.clone()))
        .service(
            web::resource("/api/session")
                .guard(guard::Post())
                .app_data(body::json_config(SIGN_IN_BODY_LIMIT, None))
                .to(sign_in),
        )
        .service(resource("/api/demo/reset").post(demo_reset));
}

/// The sign-in body is `{"role":"…"}`: nobody signed in gets more than this parsed.
const SIGN_IN_BODY_LIMIT: usize = 1024;

#[derive(Deserialize)]
struct SignIn {
    role: Value,
}

/// Signs in as one of the demo's two users, by role. Only in session mode: under
/// `--auth jwt|proxy-header` the cookie it sets would be nobody's identity (404).
async fn sign_in(
    req: HttpRequest,
    state: web::Data<AppState>,
    payload: web::Payload,
) -> actix_web::Result<HttpResponse> {
    if !state.auth.is_session() {
        return Err(ApiError::NotFound.into());
    }
    state.sign_in.admit(req.peer_addr().map(|a| a.ip()))?;
    let body: SignIn = body::json_body(&req, payload).await?;
    let user = body
        .role
        .as_str()
        .and_then(DemoUser::by_role)
        .ok_or_else(|| ApiError::BadRequest("Unknown role.".to_owned()))?;
    let actor = user.actor();
    let cookie = state.sessions.set_cookie(&actor);
    Ok(HttpResponse::Ok()
        .insert_header((SET_COOKIE, cookie.encoded().to_string()))
        .json(json!({"user": user_json(&actor, true)})))
}

/// Re-seeds the ledger (a controller's act) after cancelling every pending approval.
async fn demo_reset(
    state: web::Data<AppState>,
    ledger: web::Data<Ledger>,
    Caller(actor): Caller,
) -> Result<HttpResponse, ApiError> {
    // Wiping the ledger is a controller's act; the read-only analyst may not.
    if actor.role != CONTROLLER.role {
        return Err(ApiError::Host(dpas_protocol::HostError::of(
            dpas_protocol::HostErrorCode::Forbidden,
        )));
    }
    // Pending approvals name rows the reset re-creates: none may act on the new ones.
    let cancelled = state
        .runtime
        .cancel_pending_approvals()
        .await
        .map_err(|e| ApiError::Internal(e.to_string()))?;
    tracing::info!(cancelled, "pending approvals cancelled by the demo reset");
    ledger
        .seed(ledger.today())
        .await
        .map_err(|e| ApiError::Internal(e.to_string()))?;
    tracing::info!(actor = %actor.id, "demo ledger reset");
    Ok(HttpResponse::Ok().json(json!({"ok": true})))
}
