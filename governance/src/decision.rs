//! The approval half of the pipeline: reading, deciding, cancelling, recovering and purging
//! approval records, and running an approved call (`decide_and_run`, `resume`) through the
//! execution of `pipeline.rs`.

use super::envelope::outcome_of;
use super::pipeline::{
    capability_span, fault_point, handler_error, new_id, Emit, STAGE_APPROVAL, STAGE_INPUT,
};
use std::time::Duration;

use serde_json::{json, Value};
use tracing::Instrument;

use super::{
    approval, Actor, ApprovalDecision, ApprovalRecord, ApprovalStatus, AuditDraft, AuditSource,
    CallSurface, Capability, CapabilityError, CapabilityErrorCode, Correlation, Envelope, Runtime,
};

impl Runtime {
    /// One approval record, with lazy expiry.
    pub async fn approval(&self, id: &str) -> Result<Option<ApprovalRecord>, CapabilityError> {
        self.approvals.get(id, self.clock.now()).await
    }

    /// Records requested by `actor_id`, oldest first.
    pub async fn approvals_of(
        &self,
        actor_id: &str,
    ) -> Result<Vec<ApprovalRecord>, CapabilityError> {
        self.approvals.list(actor_id, self.clock.now()).await
    }

    /// Decides a pending record. Deciding executes nothing; approving re-reads the target
    /// first, and a changed one makes the record stale (409 `APPROVAL_STALE`).
    pub async fn decide(
        &self,
        id: &str,
        approver: &Actor,
        approved: bool,
    ) -> Result<ApprovalRecord, CapabilityError> {
        let now = self.clock.now();
        if approved {
            if let Some(record) = self.approvals.get(id, now).await? {
                let cap = self.registry.get(&record.capability_id);
                if record.status == ApprovalStatus::Pending {
                    if let Some(cap) = cap {
                        if self.target_changed(cap, &record).await? {
                            self.approvals
                                .transition(
                                    id,
                                    &[ApprovalStatus::Pending],
                                    ApprovalStatus::Stale,
                                    now,
                                )
                                .await?;
                            return Err(CapabilityError::of(CapabilityErrorCode::ApprovalStale));
                        }
                    }
                }
            }
        }
        let record = self
            .approvals
            .decide(
                id,
                ApprovalDecision {
                    approved,
                    approver: approver.clone(),
                    decided_at: now,
                    thread_id: None,
                },
                now,
            )
            .await?;
        self.audit.record(AuditDraft {
            actor_id: Some(record.actor.id.clone()),
            capability_id: Some(record.capability_id.clone()),
            data: Some(json!({"approvalId": record.id, "approver": {"id": approver.id, "kind": approver.kind}})),
            ..AuditDraft::new(AuditSource::Runtime, if approved { "approval.approved" } else { "approval.rejected" })
        });
        crate::metrics::approval(if approved { "approved" } else { "rejected" });
        Ok(record)
    }

    /// `actor_id`'s pending approvals, read without writing anything.
    pub async fn pending_approvals_of(
        &self,
        actor_id: &str,
    ) -> Result<Vec<ApprovalRecord>, CapabilityError> {
        self.approvals.pending_of(actor_id, self.clock.now()).await
    }

    /// Cancels every pending approval (the demo reset: the rows they name are re-created).
    pub async fn cancel_pending_approvals(&self) -> Result<usize, CapabilityError> {
        let now = self.clock.now();
        let pending = self
            .approvals
            .with_status(&[ApprovalStatus::Pending], now)
            .await?;
        let mut cancelled = 0;
        for record in pending {
            if self
                .approvals
                .transition(
                    &record.id,
                    &[ApprovalStatus::Pending],
                    ApprovalStatus::Cancelled,
                    now,
                )
                .await
                .is_ok()
            {
                cancelled += 1;
            }
        }
        Ok(cancelled)
    }

    /// Every approval whose run began but never finished (its process died) becomes
    /// `interrupted`, and so does an approved non-MCP record never claimed by a run (left by
    /// an older version, which decided and consumed in two steps). They are not re-run: the
    /// action may have half-happened, and nobody is watching now. Returns them.
    ///
    /// `grace`: a run claimed less than this long ago is left alone, since another process
    /// sharing the database may still be running it ([`Runtime::run_grace`]); zero when this
    /// process is the database's only user.
    pub async fn recover_approvals(
        &self,
        grace: Duration,
    ) -> Result<Vec<ApprovalRecord>, CapabilityError> {
        let now = self.clock.now();
        let candidates = self
            .approvals
            .with_status(&[ApprovalStatus::Consumed, ApprovalStatus::Approved], now)
            .await?;
        let mut interrupted = Vec::new();
        for record in candidates {
            let stranded = match record.status {
                ApprovalStatus::Consumed => {
                    record.outcome.is_none()
                        && record.consumed_at.is_none_or(|at| at + grace <= now)
                }
                _ => record.surface != CallSurface::Mcp && grace.is_zero(),
            };
            if !stranded {
                continue;
            }
            let marked = self
                .approvals
                .transition(
                    &record.id,
                    &[record.status],
                    ApprovalStatus::Interrupted,
                    now,
                )
                .await?;
            tracing::warn!(approval = %marked.id, capability = %marked.capability_id, "approved action interrupted by a stop; marked interrupted, not re-run");
            self.audit.record(AuditDraft {
                actor_id: Some(marked.actor.id.clone()),
                capability_id: Some(marked.capability_id.clone()),
                data: Some(json!({"approvalId": marked.id})),
                ..AuditDraft::new(AuditSource::Runtime, "approval.interrupted")
            });
            interrupted.push(marked);
        }
        Ok(interrupted)
    }

    /// How long a claimed run may take at most, with a margin: the longest capability
    /// deadline plus a minute. Past this, a run with no outcome is known to be cut short.
    pub fn run_grace(&self) -> Duration {
        let longest = self
            .registry
            .iter()
            .map(|c| c.meta.timeout)
            .max()
            .unwrap_or_default();
        longest + Duration::from_secs(60)
    }

    /// Deletes approvals that expired more than `retention` ago.
    pub async fn purge_approvals(&self, retention: Duration) -> Result<u64, CapabilityError> {
        self.approvals.purge(self.clock.now() - retention).await
    }

    /// Whether what `record` acts on changed since the approval was requested.
    async fn target_changed(
        &self,
        cap: &Capability,
        record: &ApprovalRecord,
    ) -> Result<bool, CapabilityError> {
        let Some(expected) = &record.target_hash else {
            return Ok(false);
        };
        match cap.read_target(&record.input).await {
            None => Ok(false),
            Some(Ok(current)) => Ok(!approval::hash_matches(&current, expected)),
            Some(Err(e)) => Err(handler_error(&cap.meta.id, e)),
        }
    }

    /// The checks every run of an approved record passes first: not self-approved (when that
    /// is refused), input intact, capability present, input valid, target unchanged (a changed
    /// target makes the record stale). The capability and the input to run.
    async fn runnable<'a>(
        &'a self,
        record: &ApprovalRecord,
    ) -> Result<(&'a Capability, Value), (&'static str, CapabilityError)> {
        let refuse = |code| (STAGE_APPROVAL, CapabilityError::of(code));
        if self.reject_self_approval
            && record
                .decision
                .as_ref()
                .is_some_and(|d| d.approver.id == record.actor.id)
        {
            return Err(refuse(CapabilityErrorCode::ApprovalSelfApproval));
        }
        if !approval::hash_matches(&record.input, &record.input_hash) {
            return Err(refuse(CapabilityErrorCode::ApprovalInputMismatch));
        }
        let Some(cap) = self.registry.get(&record.capability_id) else {
            return Err((STAGE_APPROVAL, CapabilityError::not_found()));
        };
        let input = cap.validate(&record.input).map_err(|e| (STAGE_INPUT, e))?;
        if self
            .target_changed(cap, record)
            .await
            .map_err(|e| (STAGE_APPROVAL, e))?
        {
            let from = [ApprovalStatus::Pending, ApprovalStatus::Approved];
            self.approvals
                .transition(&record.id, &from, ApprovalStatus::Stale, self.clock.now())
                .await
                .map_err(|e| (STAGE_APPROVAL, e))?;
            return Err(refuse(CapabilityErrorCode::ApprovalStale));
        }
        Ok((cap, input))
    }

    /// Runs a consumed record (as its stored actor) and records how it ended.
    async fn run_consumed(
        &self,
        cap: &Capability,
        consumed: ApprovalRecord,
        input: Value,
        emit: &Emit<'_>,
    ) -> Envelope {
        emit.event("approval.consumed", json!({"approvalId": consumed.id}));
        let span = capability_span(&cap.meta.id, consumed.surface, &emit.execution_id);
        span.record("orpc_agent.approval_id", consumed.id.as_str());
        let envelope = self
            .execute(
                cap,
                &consumed.actor,
                consumed.surface,
                input,
                emit,
                Some(consumed.id.clone()),
            )
            .instrument(span.clone())
            .await;
        span.record("orpc_agent.outcome", outcome_of(&envelope));
        emit.outcome(
            consumed.surface,
            approval::input_hash(&consumed.input),
            &envelope,
            Some(&consumed.id),
        );
        let outcome = if envelope.is_ok() {
            "completed"
        } else {
            "failed"
        };
        if let Err(e) = self.approvals.finish(&consumed.id, outcome).await {
            tracing::error!(approval = %consumed.id, error = %e, "approval outcome not stored");
        }
        envelope
    }

    /// The human's decision on a pending record, from the app: a rejection is stored; an
    /// approval of a non-MCP request is checked (see `runnable`), then decided and claimed by
    /// its run in one atomic step, and run now. MCP approvals are only decided (the MCP
    /// session resumes them). The decided record and, when it ran, the envelope.
    pub async fn decide_and_run(
        &self,
        id: &str,
        approver: &Actor,
        approved: bool,
        correlation: Correlation,
    ) -> Result<(ApprovalRecord, Option<Envelope>), CapabilityError> {
        let now = self.clock.now();
        let record = self
            .approvals
            .get(id, now)
            .await?
            .ok_or_else(|| CapabilityError::of(CapabilityErrorCode::ApprovalNotFound))?;
        if !approved
            || record.surface == CallSurface::Mcp
            || record.status != ApprovalStatus::Pending
        {
            return self.decide(id, approver, approved).await.map(|r| (r, None));
        }
        let emit = Emit {
            hub: &self.audit,
            actor_id: Some(record.actor.id.clone()),
            capability_id: record.capability_id.clone(),
            execution_id: new_id("exe"),
            correlation: &correlation,
        };
        // As decided: the checks see the approver the record will carry.
        let mut as_decided = record.clone();
        as_decided.decision = Some(ApprovalDecision {
            approved,
            approver: approver.clone(),
            decided_at: now,
            thread_id: correlation.conversation_id.clone(),
        });
        let (cap, input) = match self.runnable(&as_decided).await {
            Ok(ready) => ready,
            Err((stage, e)) => {
                emit.failed(stage, e.clone(), 0);
                return Err(e);
            }
        };
        let decision = as_decided
            .decision
            .clone()
            .ok_or_else(|| CapabilityError::of(CapabilityErrorCode::InternalError))?;
        let consumed = self
            .approvals
            .decide_and_consume(id, decision, &emit.execution_id, now)
            .await?;
        self.audit.record(AuditDraft {
            actor_id: Some(consumed.actor.id.clone()),
            capability_id: Some(consumed.capability_id.clone()),
            data: Some(json!({"approvalId": consumed.id, "approver": {"id": approver.id, "kind": approver.kind}})),
            ..AuditDraft::new(AuditSource::Runtime, "approval.approved")
        });
        crate::metrics::approval("approved");
        fault_point("after-decide").await;
        let mut run = consumed.clone();
        run.actor = with_present_credential(run.actor, approver);
        let envelope = self.run_consumed(cap, run, input, &emit).await;
        Ok((consumed, Some(envelope)))
    }

    /// Executes an approved request once, as its original actor, with its stored input.
    /// The caller must be that actor on that surface; otherwise it looks like an unknown approval.
    pub async fn resume(
        &self,
        approval_id: &str,
        expected_actor: &Actor,
        expected_surface: CallSurface,
        correlation: Correlation,
    ) -> Envelope {
        let execution_id = new_id("exe");
        let now = self.clock.now();
        let record = match self.approvals.get(approval_id, now).await {
            Ok(Some(r)) => r,
            Ok(None) => {
                return Envelope::Error(CapabilityError::of(CapabilityErrorCode::ApprovalNotFound))
            }
            Err(e) => return Envelope::Error(e),
        };
        let emit = Emit {
            hub: &self.audit,
            actor_id: Some(expected_actor.id.clone()),
            capability_id: record.capability_id.clone(),
            execution_id,
            correlation: &correlation,
        };
        let fail = |err: CapabilityError| emit.failed(STAGE_APPROVAL, err, 0);
        // Binding guards come before any status check.
        if record.actor.id != expected_actor.id
            || record.actor.kind != expected_actor.kind
            || record.surface != expected_surface
        {
            return fail(CapabilityError::of(
                CapabilityErrorCode::ApprovalResumeMismatch,
            ));
        }
        if record.status != ApprovalStatus::Approved {
            return fail(approval::status_error(record.status));
        }
        let (cap, input) = match self.runnable(&record).await {
            Ok(ready) => ready,
            Err((stage, e)) => return emit.failed(stage, e, 0),
        };
        let consumed = match self
            .approvals
            .consume(approval_id, &emit.execution_id, now)
            .await
        {
            Ok(r) => r,
            Err(e) => return fail(e),
        };
        let mut consumed = consumed;
        consumed.actor = with_present_credential(consumed.actor, expected_actor);
        self.run_consumed(cap, consumed, input, &emit).await
    }
}

/// The stored actor of an approval, carrying the credential of the request that runs it now
/// when that request is the same user's: credentials are never stored, and the app's backend
/// may need the user's current one (`Actor::authorization`).
fn with_present_credential(mut stored: Actor, present: &Actor) -> Actor {
    if stored.id == present.id && stored.kind == present.kind {
        stored.authorization = present.authorization.clone();
    }
    stored
}
