//! The demo's own HTTP surface, mounted by `http::configure` only under `--demo`: the ledger
//! reset (`POST /api/demo/reset`) and the wording of approval receipts for its gated writes.

use actix_web::{web, HttpResponse};
use serde_json::{json, Value};

use super::ledger::format_eur;
use super::{CONTROLLER, GATED_CAPABILITIES};
use crate::app::AppState;
use crate::http::error::ApiError;
use crate::runtime::Actor;

/// Mounts the demo's endpoints.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(crate::http::resource("/api/demo/reset").post(demo_reset));
}

/// The receipt's detail for one of the demo's gated writes: `invoice <id>` and the euro
/// amount, with only the parts the input has. `None` for any other capability.
pub(crate) fn receipt_parts(capability_id: &str, input: &Value) -> Option<Vec<String>> {
    if !GATED_CAPABILITIES.contains(&capability_id) {
        return None;
    }
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
    Some(parts)
}

/// Re-seeds the ledger (a controller's act) after cancelling every pending approval.
async fn demo_reset(state: web::Data<AppState>, actor: Actor) -> Result<HttpResponse, ApiError> {
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
        let parts = |id: &str, input: Value| receipt_parts(id, &input);
        assert_eq!(
            parts(
                "issue-invoice",
                json!({"invoiceId": 5, "amount": 1_234_550})
            ),
            Some(vec!["invoice 5".to_owned(), "€12,346".to_owned()])
        );
        assert_eq!(
            parts("delete-invoice", json!({"id": 10})),
            Some(vec!["invoice 10".to_owned()])
        );
        assert_eq!(parts("issue-invoice", json!({"id": "x"})), Some(Vec::new()));
        assert_eq!(parts("list-invoices", json!({"id": 3})), None);
    }
}
