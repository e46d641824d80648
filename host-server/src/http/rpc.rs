//! `POST /rpc/{id}`: the app's own call of a governed capability (surface `direct`).

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use dpas_governance::{CallSurface, Correlation, Envelope};
use serde_json::{json, Value};

use crate::app::AppState;
use crate::http::body::read_limited;
use crate::http::error::ApiError;
use crate::http::extract::Caller;

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

pub(crate) async fn rpc(
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
