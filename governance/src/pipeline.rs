//! The governed invocation pipeline, top to bottom: discovery, then `invoke_envelope`'s
//! exposure, validation, actor check, policies and approval gate, then the bounded
//! execution and its audit. The approval half (decide, run, resume) is `decision.rs`.

use super::approval::UNTRUSTED_CONTENT_REASON;
use super::audit::OPERATION_OUTCOME;
use super::envelope::outcome_of;
use std::sync::Arc;
use std::time::Instant;

use serde_json::{json, Value};
use tracing::Instrument;

use super::{
    approval, policy, Actor, ApprovalRecord, ApprovalStatus, AuditDraft, AuditHub, AuditSource,
    CallContext, CallSurface, Capability, CapabilityError, CapabilityErrorCode, CapabilityInfo,
    Correlation, Envelope, HandlerError, InvocationContext, Policy, PolicyPhase, PolicyRequest,
    Runtime, Verdict,
};

/// Stage labels carried by `capability.failed`.
pub(super) const STAGE_INPUT: &str = "input-validation";
pub(super) const STAGE_AUTH: &str = "authentication";
pub(super) const STAGE_APPROVAL: &str = "approval";
pub(super) const STAGE_EXECUTION: &str = "execution";
pub(super) const STAGE_TIMEOUT: &str = "timeout";

pub(super) struct Emit<'a> {
    pub(super) hub: &'a AuditHub,
    pub(super) actor_id: Option<String>,
    pub(super) capability_id: String,
    pub(super) execution_id: String,
    pub(super) correlation: &'a Correlation,
}

impl Emit<'_> {
    pub(super) fn event(&self, kind: &str, data: Value) {
        self.hub.record(AuditDraft {
            source: AuditSource::Runtime,
            kind: kind.to_owned(),
            actor_id: self.actor_id.clone(),
            capability_id: Some(self.capability_id.clone()),
            execution_id: Some(self.execution_id.clone()),
            correlation: self.correlation.clone(),
            data: Some(data),
        });
    }

    /// [`OPERATION_OUTCOME`]: how a call on `surface` ended, with the digest of its input
    /// ([`approval::input_hash`]) and, for the run of an approval, the approval's id.
    pub(super) fn outcome(
        &self,
        surface: CallSurface,
        input_digest: String,
        envelope: &Envelope,
        approval_id: Option<&str>,
    ) {
        let mut data = serde_json::Map::with_capacity(5);
        data.insert("surface".into(), surface.as_str().into());
        let outcome = match envelope {
            Envelope::Ok { .. } => "ok",
            Envelope::ApprovalRequired { approval_id, .. } => {
                data.insert("approvalId".into(), approval_id.as_str().into());
                "approval-required"
            }
            Envelope::Error(e) => {
                data.insert("code".into(), e.code.as_str().into());
                "error"
            }
        };
        data.insert("outcome".into(), outcome.into());
        data.insert("inputDigest".into(), input_digest.into());
        if let Some(id) = approval_id {
            data.insert("approvalId".into(), id.into());
        }
        self.event(OPERATION_OUTCOME, Value::Object(data));
    }

    pub(super) fn denied(&self, reason: &str, err: &CapabilityError) -> Envelope {
        self.event(
            "capability.denied",
            json!({"reason": reason, "publicCode": err.public_code().as_str()}),
        );
        Envelope::Error(err.clone())
    }

    pub(super) fn failed(&self, stage: &str, err: CapabilityError, attempts: u32) -> Envelope {
        self.event(
            "capability.failed",
            json!({"code": err.code.as_str(), "stage": stage, "retryable": err.retryable, "attempts": attempts}),
        );
        Envelope::Error(err)
    }
}

/// The governed error of a handler (or target reader) failure; causes go to the log only.
pub(super) fn handler_error(capability: &str, e: HandlerError) -> CapabilityError {
    match e {
        HandlerError::Rejected(message) => {
            CapabilityError::with_message(CapabilityErrorCode::ExecutionFailed, message)
        }
        HandlerError::Internal(cause) => {
            tracing::error!(%capability, %cause, "capability handler failed");
            CapabilityError::of(CapabilityErrorCode::InternalError)
        }
        HandlerError::Governed(e) => e,
    }
}

/// A test-only fault hook: with `DPAS_FAULT_HOOK=<point>` the process announces the point on
/// stdout and stops there for good, so a test can `kill -9` it at exactly that moment.
pub(super) async fn fault_point(point: &str) {
    if std::env::var("DPAS_FAULT_HOOK").is_ok_and(|p| p == point) {
        println!("fault-hook: {point}");
        use std::io::Write as _;
        let _ = std::io::stdout().flush();
        std::future::pending::<()>().await;
    }
}

/// The envelope of a refusing verdict; `None` when the call may go on.
pub(super) fn refusal(verdict: &Verdict, emit: &Emit<'_>) -> Option<Envelope> {
    Some(match verdict {
        Verdict::Allow | Verdict::RequireApproval { .. } => return None,
        Verdict::Failed { .. } => emit.denied(
            "policy-failed",
            &CapabilityError::of(CapabilityErrorCode::PolicyFailed),
        ),
        Verdict::Deny { message, .. } => {
            let err = match message {
                Some(m) => {
                    CapabilityError::with_message(CapabilityErrorCode::PolicyDenied, m.clone())
                }
                None => CapabilityError::of(CapabilityErrorCode::PolicyDenied),
            };
            emit.denied("policy-denied", &err)
        }
        Verdict::Hide => emit.denied("hidden", &CapabilityError::not_found()),
    })
}

/// The span of one capability call (reference: `agent.capability_call`).
pub(super) fn capability_span(id: &str, surface: CallSurface, execution_id: &str) -> tracing::Span {
    tracing::info_span!(
        "agent.capability_call",
        orpc_agent.capability_id = %id,
        orpc_agent.surface = surface.as_str(),
        orpc_agent.execution_id = %execution_id,
        orpc_agent.approval_id = tracing::field::Empty,
        orpc_agent.outcome = tracing::field::Empty,
    )
}

pub(super) fn new_id(prefix: &str) -> String {
    format!("{prefix}_{}", uuid::Uuid::new_v4())
}

impl Runtime {
    pub(super) fn policies_for<'a>(&'a self, cap: &'a Capability) -> Vec<&'a Arc<dyn Policy>> {
        self.policies.iter().chain(cap.policies.iter()).collect()
    }

    /// Runtime-wide policies, then the capability's own, merged for one phase.
    pub(super) fn verdict(
        &self,
        cap: &Capability,
        phase: PolicyPhase,
        surface: CallSurface,
        actor: &Actor,
        input: Option<&Value>,
    ) -> Verdict {
        let span = tracing::info_span!(
            "agent.policy_evaluation",
            orpc_agent.capability_id = %cap.meta.id,
            orpc_agent.phase = ?phase,
            orpc_agent.decision = tracing::field::Empty,
        )
        .entered();
        let request = PolicyRequest {
            phase,
            capability: &cap.meta,
            surface,
            actor,
            input,
        };
        let verdict = policy::evaluate_all(&self.policies_for(cap), &request);
        let decision = match &verdict {
            Verdict::Allow => "allow",
            Verdict::Deny { .. } => "deny",
            Verdict::Hide => "hide",
            Verdict::RequireApproval { .. } => "require-approval",
            Verdict::Failed { .. } => "failed",
        };
        span.record("orpc_agent.decision", decision);
        verdict
    }

    /// Capabilities this actor may see on `surface`, in registry order. `tags` narrows to those
    /// carrying any listed tag (an empty list matches nothing); scope is never authority.
    pub fn discover(
        &self,
        actor: &Actor,
        surface: CallSurface,
        tags: Option<&[String]>,
    ) -> Vec<CapabilityInfo> {
        let mut out = Vec::new();
        for cap in self.registry.iter() {
            let meta = &cap.meta;
            if !meta.exposed_on(surface) {
                continue;
            }
            if let Some(tags) = tags {
                if !meta.tags.iter().any(|t| tags.contains(t)) {
                    continue;
                }
            }
            let visible = matches!(
                self.verdict(cap, PolicyPhase::Discovery, surface, actor, None),
                Verdict::Allow | Verdict::RequireApproval { .. }
            );
            if !visible {
                continue;
            }
            // Approval is annotated when an invocation-phase policy would gate this actor here;
            // policies that need the input to decide cannot gate without one.
            let gated = meta.approval_required
                || matches!(
                    self.verdict(cap, PolicyPhase::Invocation, surface, actor, None),
                    Verdict::RequireApproval { .. }
                );
            out.push(CapabilityInfo {
                id: meta.id.clone(),
                description: meta.description.clone(),
                side_effect: meta.side_effect,
                risk: meta.risk,
                tags: meta.tags.clone(),
                input_schema: meta.input_schema.clone(),
                requires_approval: gated,
            });
        }
        self.record_discovered(actor, surface, out.len());
        out
    }

    /// Audits that `actor` was shown `count` capabilities on `surface`, as [`Self::discover`]
    /// does; for a caller that reuses an earlier discovery's result.
    pub fn record_discovered(&self, actor: &Actor, surface: CallSurface, count: usize) {
        self.audit.record(AuditDraft {
            actor_id: Some(actor.id.clone()),
            data: Some(json!({"count": count, "surface": surface.as_str()})),
            ..AuditDraft::new(AuditSource::Runtime, "capabilities.discovered")
        });
    }

    /// Invokes a capability and answers the E7 envelope as JSON.
    pub async fn invoke(
        &self,
        actor: &Actor,
        surface: CallSurface,
        id: &str,
        input: Value,
        correlation: Correlation,
    ) -> Value {
        self.invoke_envelope(actor, surface, id, input, correlation)
            .await
            .to_value()
    }

    /// Invokes a capability through the whole pipeline, traced as `agent.capability_call`.
    pub async fn invoke_envelope(
        &self,
        actor: &Actor,
        surface: CallSurface,
        id: &str,
        input: Value,
        correlation: Correlation,
    ) -> Envelope {
        self.invoke_envelope_with(
            actor,
            surface,
            id,
            input,
            correlation,
            CallContext::default(),
        )
        .await
    }

    /// [`Self::invoke_envelope`] of a call proposed in `context`: a prompt with untrusted
    /// content gates a call that is not read-only behind an approval (U2).
    pub async fn invoke_envelope_with(
        &self,
        actor: &Actor,
        surface: CallSurface,
        id: &str,
        input: Value,
        correlation: Correlation,
        context: CallContext,
    ) -> Envelope {
        let execution_id = new_id("exe");
        let span = capability_span(id, surface, &execution_id);
        let input_digest = approval::input_hash(&input);
        let emit = Emit {
            hub: &self.audit,
            actor_id: (!actor.id.is_empty()).then(|| actor.id.clone()),
            capability_id: id.to_owned(),
            execution_id,
            correlation: &correlation,
        };
        let emit = &emit;
        let pipeline = async {
            let Some(cap) = self.registry.get(id) else {
                emit.event("capability.requested", json!({}));
                return emit.denied("unknown", &CapabilityError::not_found());
            };
            let meta = &cap.meta;
            emit.event(
                "capability.requested",
                json!({"sideEffect": meta.side_effect, "risk": meta.risk}),
            );
            // Exposure is checked before validation so validation errors cannot leak existence.
            if !meta.exposed_on(surface) {
                return emit.denied("not-exposed", &CapabilityError::not_found());
            }
            let input = match cap.validate(&input) {
                Ok(v) => v,
                Err(e) => return emit.failed(STAGE_INPUT, e, 0),
            };
            if actor.id.is_empty() {
                return emit.failed(
                    STAGE_AUTH,
                    CapabilityError::of(CapabilityErrorCode::Unauthenticated),
                    0,
                );
            }
            let verdict = self.verdict(cap, PolicyPhase::Invocation, surface, actor, Some(&input));
            if let Some(refusal) = refusal(&verdict, emit) {
                return refusal;
            }
            let (mut reasons, mut types, expires_in) = match verdict {
                Verdict::RequireApproval {
                    reasons,
                    types,
                    expires_in,
                } => (reasons, types, expires_in),
                _ => (Vec::new(), Vec::new(), None),
            };
            let untrusted = context.untrusted_content && !meta.side_effect.is_read_only();
            if meta.approval_required {
                reasons.push(format!("Approval is required for {}.", meta.id));
            }
            if untrusted {
                reasons.push(UNTRUSTED_CONTENT_REASON.to_owned());
            }
            if (meta.approval_required || untrusted) && types.is_empty() {
                types.push("human-confirmation".to_owned());
            }
            if !reasons.is_empty() {
                let ttl = expires_in
                    .or(meta.approval_expires_in)
                    .unwrap_or(self.approval_ttl);
                // What the human will be shown, and what must still hold when it runs.
                let target = match cap.read_target(&input).await {
                    None => None,
                    Some(Ok(state)) => Some(state),
                    Some(Err(e)) => {
                        return emit.failed(STAGE_APPROVAL, handler_error(&meta.id, e), 0)
                    }
                };
                let now = self.clock.now();
                let record = ApprovalRecord {
                    id: new_id("apr"),
                    capability_id: meta.id.clone(),
                    surface,
                    actor: actor.clone(),
                    conversation_id: correlation.conversation_id.clone(),
                    input_hash: approval::input_hash(&input),
                    input,
                    reasons: reasons.clone(),
                    types,
                    risk: meta.risk,
                    side_effect: meta.side_effect,
                    requested_at: now,
                    expires_at: now + ttl,
                    status: ApprovalStatus::Pending,
                    decision: None,
                    consumed_by: None,
                    consumed_at: None,
                    target_hash: target.as_ref().map(approval::input_hash),
                    target,
                    outcome: None,
                };
                let data = json!({"approvalId": record.id, "reasons": record.reasons, "types": record.types,
                       "expiresAt": record.expires_at.format(&time::format_description::well_known::Rfc3339).unwrap_or_default()});
                let approval_id = record.id.clone();
                let span = tracing::info_span!(
                    "agent.approval_request",
                    orpc_agent.capability_id = %meta.id,
                    orpc_agent.approval_id = %approval_id,
                );
                // Nothing is announced until the record is stored.
                if let Err(e) = self.approvals.insert(record).instrument(span).await {
                    return emit.failed(STAGE_APPROVAL, e, 0);
                }
                emit.event("approval.requested", data);
                crate::metrics::approval("requested");
                let message = format!("Awaiting approval: {}.", reasons.join("; "));
                return Envelope::ApprovalRequired {
                    approval_id,
                    message,
                };
            }
            self.execute(cap, actor, surface, input, emit, None).await
        };
        let envelope = pipeline.instrument(span.clone()).await;
        span.record("orpc_agent.outcome", outcome_of(&envelope));
        emit.outcome(surface, input_digest, &envelope, None);
        envelope
    }

    /// Stages from execution-phase policies to completion, shared by invoke and resume.
    pub(super) async fn execute(
        &self,
        cap: &Capability,
        actor: &Actor,
        surface: CallSurface,
        input: Value,
        emit: &Emit<'_>,
        approval_id: Option<String>,
    ) -> Envelope {
        let meta = &cap.meta;
        let verdict = self.verdict(cap, PolicyPhase::Execution, surface, actor, Some(&input));
        if let Some(refusal) = refusal(&verdict, emit) {
            return refusal;
        }
        let mut started = json!({"attempt": 1});
        if let Some(a) = &approval_id {
            started["approvalId"] = json!(a);
        }
        emit.event("capability.started", started);
        let ctx = InvocationContext {
            capability_id: meta.id.clone(),
            surface,
            actor: actor.clone(),
            execution_id: emit.execution_id.clone(),
            correlation: emit.correlation.clone(),
            approval_id,
        };
        let begun = Instant::now();
        // The handler runs as its own task: a caller that goes away never cancels a write
        // half-way, and a panicking handler becomes INTERNAL_ERROR instead of taking us down.
        let span = tracing::info_span!(
            "agent.procedure_execution",
            orpc_agent.capability_id = %meta.id,
            orpc_agent.execution_id = %emit.execution_id,
        );
        let task = tokio::spawn(cap.call(ctx, input).instrument(span.clone()));
        let outcome = tokio::time::timeout(meta.timeout, task)
            .instrument(span)
            .await;
        let duration_ms = u64::try_from(begun.elapsed().as_millis()).unwrap_or(u64::MAX);
        let result = match outcome {
            Err(_) => {
                return emit.failed(
                    STAGE_TIMEOUT,
                    CapabilityError::of(CapabilityErrorCode::Timeout),
                    1,
                )
            }
            Ok(Err(join)) => {
                tracing::error!(capability = %meta.id, error = %join, "capability handler panicked");
                return emit.failed(
                    STAGE_EXECUTION,
                    CapabilityError::of(CapabilityErrorCode::InternalError),
                    1,
                );
            }
            Ok(Ok(r)) => r,
        };
        match result {
            Ok(data) => {
                emit.event(
                    "capability.completed",
                    json!({"durationMs": duration_ms, "attempts": 1}),
                );
                let data = match (&cap.model_output, surface.is_model()) {
                    (Some(f), true) => f(data),
                    _ => data,
                };
                Envelope::Ok { data }
            }
            Err(e) => emit.failed(STAGE_EXECUTION, handler_error(&meta.id, e), 1),
        }
    }
}
