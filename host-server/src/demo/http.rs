//! The demo's own HTTP surface, which the `host-server` binary (and the test harness) mounts
//! beside its other routes only under `--demo` ([`with_demo`]): the role picker's sign-in
//! (`POST /api/session`), the ledger reset (`POST /api/demo/reset`) and the wording of
//! approval receipts for its gated writes. The library's `http` layer knows none of it.

use crate::http::Caller;
use actix_web::http::header::SET_COOKIE;
use actix_web::{guard, web, HttpRequest, HttpResponse};
use serde::Deserialize;
use serde_json::{json, Value};

use super::ledger::format_eur;
use super::{DemoUser, CONTROLLER};
use crate::app::AppState;
use crate::http::{body, error::ApiError};

/// `routes` (an embedder's extra routes, as `http::serve_with` takes them) with the demo's
/// endpoints mounted ahead of them when `demo` is on: how the binary mounts the demo. Extra
/// routes go ahead of the built-in ones, so the demo's sign-in answers `POST /api/session`
/// before the session resource does.
pub fn with_demo<F>(
    demo: bool,
    routes: F,
) -> impl Fn(&mut web::ServiceConfig) + Clone + Send + 'static
where
    F: Fn(&mut web::ServiceConfig) + Clone + Send + 'static,
{
    move |cfg: &mut web::ServiceConfig| {
        if demo {
            configure(cfg);
        }
        routes(cfg);
    }
}

/// Mounts the demo's endpoints. Its sign-in is a `POST`-only resource on `/api/session`, to be
/// mounted ahead of the session resource (`GET`/`DELETE`, and the 405s): a request it does not
/// guard for falls through to that one.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/api/session")
            .guard(guard::Post())
            .app_data(body::json_config(SIGN_IN_BODY_LIMIT, None))
            .to(sign_in),
    )
    .service(crate::http::resource("/api/demo/reset").post(demo_reset));
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
        .json(json!({"user": crate::http::user_json(&actor, true)})))
}

/// The receipt's detail for one of the demo's gated writes (their
/// `CapabilityBuilder::receipt_detail`): `invoice <id>` and the euro amount, with only the
/// parts the input has.
pub(crate) fn receipt_parts(input: &Value) -> Vec<String> {
    let mut parts = Vec::new();
    if let Some(id) = input
        .get("id")
        .or_else(|| input.get("invoiceId"))
        .and_then(Value::as_i64)
    {
        parts.push(format!("invoice {id}"));
    }
    if let Some(amount) = input.get("amount").and_then(Value::as_i64) {
        parts.push(format_eur(amount));
    }
    parts
}

/// Re-seeds the ledger (a controller's act) after cancelling every pending approval.
async fn demo_reset(
    state: web::Data<AppState>,
    Caller(actor): Caller,
) -> Result<HttpResponse, ApiError> {
    let Some(ledger) = &state.ledger else {
        return Err(ApiError::NotFound);
    };
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gated_writes_name_the_invoice_and_its_euro_amount() {
        let parts = |input: Value| receipt_parts(&input);
        assert_eq!(
            parts(json!({"invoiceId": 5, "amount": 1_234_550})),
            ["invoice 5", "€12,346"]
        );
        assert_eq!(parts(json!({"id": 10})), ["invoice 10"]);
        assert!(parts(json!({"id": "x"})).is_empty());
    }
}
