//! `/api/approvals`: the caller's pending approvals as cards (reference-behaviour N4), all or
//! one conversation's, and the decision, whose receipt also goes to the thread it names.

use actix_web::{web, HttpRequest, HttpResponse};
use serde::Deserialize;
use serde_json::{json, Value};

use super::{body, ApiError, Caller};
use crate::app::AppState;
use dpas_governance::receipt::{receipt_subject, store_receipt};
use dpas_governance::{
    Actor, ApprovalRecord, ApprovalStatus, CallSurface, CapabilityErrorCode, Correlation, Envelope,
};

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
    if let Some(conversation) = &r.conversation_id {
        v["conversationId"] = json!(conversation);
    }
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

/// The list's query: nothing (every pending approval of the caller's) or
/// `conversationId=<id>` (those requested in that conversation).
fn conversation_filter(query: &str) -> Result<Option<String>, ApiError> {
    let bad = |message: &str| ApiError::BadRequest(message.to_owned());
    let mut conversation = None;
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        if key != "conversationId" {
            return Err(bad("Only conversationId is accepted."));
        }
        if conversation.is_some() {
            return Err(bad("conversationId is given twice."));
        }
        let value = value.replace('+', " ");
        let decoded = percent_encoding::percent_decode_str(&value)
            .decode_utf8()
            .map_err(|_| bad("conversationId is not UTF-8."))?;
        if decoded.is_empty() {
            return Err(bad("conversationId is empty."));
        }
        conversation = Some(decoded.into_owned());
    }
    Ok(conversation)
}

pub(crate) async fn list_approvals(
    state: web::Data<AppState>,
    Caller(actor): Caller,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let conversation = conversation_filter(req.query_string())?;
    let records = state
        .runtime
        .pending_approvals_of(&actor.id)
        .await
        .map_err(|e| ApiError::Internal(e.to_string()))?;
    let cards: Vec<Value> = records
        .iter()
        .filter(|r| conversation.is_none() || r.conversation_id == conversation)
        .map(card)
        .collect();
    Ok(HttpResponse::Ok().json(cards))
}

pub(crate) async fn get_approval(
    state: web::Data<AppState>,
    Caller(actor): Caller,
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

/// A refused decision: the code says what happened to the record (409), server faults 500.
fn decision_error(e: &dpas_governance::CapabilityError) -> ApiError {
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

fn approval_status_error(status: ApprovalStatus) -> dpas_governance::CapabilityError {
    dpas_governance::approval::status_error(status)
}

/// Decides the caller's approval and, approved, runs it; the receipt goes to the thread the
/// decision names. The answer is the receipt and the resolution ([`Resolution`]).
pub(crate) async fn decide_approval(
    Caller(actor): Caller,
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
    let what = receipt_subject(state.runtime.registry(), &record);
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

#[cfg(test)]
mod tests {
    use super::*;
    use dpas_governance::CapabilityError;

    #[test]
    fn the_list_takes_one_conversation_id_or_none() {
        let filter = |q: &str| conversation_filter(q).map_err(|e| e.to_string());
        assert_eq!(filter(""), Ok(None));
        assert_eq!(filter("conversationId=cnv_1"), Ok(Some("cnv_1".to_owned())));
        assert_eq!(
            filter("conversationId=a%2Fb+c"),
            Ok(Some("a/b c".to_owned()))
        );
        for bad in [
            "conversationId=",
            "conversationId",
            "conversationId=a&conversationId=b",
            "thread=cnv_1",
            "conversationId=%FF",
        ] {
            assert!(filter(bad).is_err(), "{bad}");
        }
    }

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
            outcome(false, CallSurface::Model, Rejected, None),
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
            outcome(true, CallSurface::Model, Approved, ok),
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
                CallSurface::Model,
                Approved,
                failed(CapabilityErrorCode::ApprovalPending)
            ),
            (running.clone(), true, json!({"status": "pending"}))
        );
        let again = outcome(
            true,
            CallSurface::Model,
            Approved,
            Some(Envelope::ApprovalRequired {
                approval_id: "apr_x".to_owned(),
                message: String::new(),
            }),
        );
        assert_eq!(again, (running, true, json!({"status": "pending"})));
        for code in [CapabilityErrorCode::Timeout, CapabilityErrorCode::Cancelled] {
            let (text, ok, resolution) = outcome(true, CallSurface::Model, Approved, failed(code));
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
            CallSurface::Model,
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
        let (text, ok, resolution) = outcome(true, CallSurface::Model, Expired, None);
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
