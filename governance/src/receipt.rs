//! Approval receipts: the assistant message a decided or interrupted run leaves in the
//! conversation it was approved in, so the next turn knows what happened.

use std::time::Duration;

use dpas_protocol::{MessageContent, Role, WireModelMessage};
use serde_json::Value;

use crate::approval::ApprovalRecord;
use crate::error::CapabilityError;
use crate::registry::Registry;
use crate::threads::{ThreadAppend, ThreadStore};
use crate::Runtime;

/// What a receipt calls the approved call: its capability id and the details its
/// capability words (else the input's `id`), e.g. `issue-invoice (id 42)`.
pub fn receipt_subject(registry: &Registry, r: &ApprovalRecord) -> String {
    let worded = registry
        .get(&r.capability_id)
        .and_then(|c| c.receipt_detail(&r.input));
    let parts = worded.unwrap_or_else(|| {
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

/// Appends `text` as an assistant message to the owner's thread, when the decision named
/// one. The receipt is a courtesy to the next turn: failing to store it fails nothing else.
pub async fn store_receipt(
    threads: &dyn ThreadStore,
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
    if let Err(e) = threads.append(owner, thread_id, append).await {
        tracing::warn!(thread = %thread_id, error = %e, "approval receipt not stored");
    }
}

/// Marks the runs cut short by a stopped process `interrupted` and gives each its receipt
/// in the conversation it was approved in. Only claims older than `grace` count: on a
/// database shared by replicas another one may be running a recent claim (pass
/// [`Runtime::run_grace`]); alone on its database a starting process passes zero.
pub async fn recover_interrupted(
    runtime: &Runtime,
    threads: &dyn ThreadStore,
    grace: Duration,
) -> Result<(), CapabilityError> {
    for record in runtime.recover_approvals(grace).await? {
        let thread = record
            .decision
            .as_ref()
            .and_then(|d| d.thread_id.as_deref());
        let text = format!(
            "The server stopped while {} was running after your approval, so it may or may not have happened. Check before asking again.",
            receipt_subject(runtime.registry(), &record)
        );
        store_receipt(threads, &record.actor.id, thread, &text).await;
    }
    Ok(())
}
