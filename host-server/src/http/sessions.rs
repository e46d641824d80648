//! `/api/session`: who is signed in (`GET`), and signing out (`DELETE`). Nothing signs in
//! here: a sign-in is mounted ahead of this resource (the demo's role picker), or sessions
//! come from elsewhere.

use actix_web::http::header::SET_COOKIE;
use actix_web::{web, HttpRequest, HttpResponse};
use dpas_governance::Actor;
use serde_json::{json, Value};

use crate::app::AppState;
use crate::http::error::ApiError;
use crate::http::extract::Caller;

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
pub(crate) async fn get_session(
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
pub(crate) async fn no_sign_in() -> Result<HttpResponse, ApiError> {
    Err(ApiError::NotFound)
}

/// Signs out: this session's cookie is refused from now on, also after a restart. With
/// `--auth jwt|proxy-header` the app signs its users out itself: 404.
pub(crate) async fn delete_session(
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
