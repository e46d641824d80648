//! `GET /api/health` (the process answers) and `GET /api/ready` (it can serve).

use actix_web::{web, HttpResponse};
use serde_json::json;

use crate::app::AppState;

pub(crate) async fn health() -> HttpResponse {
    HttpResponse::Ok().json(json!({"ok": true}))
}

/// 200 when the database answers with every migration applied and the server is not
/// shutting down; 503 `NOT_READY` otherwise (the cause goes to the log).
pub(crate) async fn ready_check(state: web::Data<AppState>) -> HttpResponse {
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
