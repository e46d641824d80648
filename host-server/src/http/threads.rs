//! `/api/threads`: the caller's stored conversations, read and deleted by their owner only.

use actix_web::http::header::ContentType;
use actix_web::{web, HttpResponse};
use serde_json::json;

use super::{ApiError, Caller};
use crate::app::AppState;

fn storage(e: dpas_governance::threads::ThreadError) -> ApiError {
    ApiError::Internal(e.to_string())
}

pub(crate) async fn list_threads(
    state: web::Data<AppState>,
    Caller(actor): Caller,
) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(state.threads.list(&actor.id).await.map_err(storage)?))
}

pub(crate) async fn get_thread(
    state: web::Data<AppState>,
    Caller(actor): Caller,
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

pub(crate) async fn thread_messages(
    state: web::Data<AppState>,
    Caller(actor): Caller,
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

pub(crate) async fn delete_thread(
    state: web::Data<AppState>,
    Caller(actor): Caller,
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
