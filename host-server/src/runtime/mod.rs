//! The governed domain runtime: every call from every surface goes through one pipeline of
//! exposure, validation, actor check, policies, approval gate, bounded execution and audit.
//! Governed failures never panic or throw; they come back as envelopes.

pub mod approval;
pub mod audit;
pub mod error;
pub mod policy;
pub mod registry;
pub mod types;
pub(crate) mod vocab;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use time::OffsetDateTime;
use tracing::Instrument;

pub use approval::{
    ApprovalDecision, ApprovalRecord, ApprovalStatus, ApprovalStore, MemoryApprovalStore,
    SqlApprovalStore,
};
pub use audit::{AuditDraft, AuditEntry, AuditHub, AuditReader, AuditSource};
pub use error::{CapabilityError, CapabilityErrorCode, HandlerError, InputIssue};
pub use policy::{policy_fn, Decision, Policy, PolicyError, PolicyPhase, PolicyRequest, Verdict};
pub use registry::{
    Capability, CapabilityBuilder, CapabilityMeta, InvocationContext, Registry, RegistryError,
};
pub use types::{Actor, ActorKind, Correlation, Credential, Risk, SideEffect, Surface};

/// Default lifetime of a pending approval.
pub const DEFAULT_APPROVAL_TTL: Duration = Duration::from_secs(15 * 60);

/// The time source (injectable so expiry can be tested without waiting).
pub trait Clock: Send + Sync {
    fn now(&self) -> OffsetDateTime;
}

#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> OffsetDateTime {
        OffsetDateTime::now_utc()
    }
}

/// A clock that moves only when told to.
#[derive(Debug)]
pub struct ManualClock(Mutex<OffsetDateTime>);

impl ManualClock {
    pub fn new(start: OffsetDateTime) -> Self {
        Self(Mutex::new(start))
    }
    pub fn advance(&self, by: Duration) {
        let mut t = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *t += by;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> OffsetDateTime {
        *self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// What discovery tells a caller about one capability.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CapabilityInfo {
    pub id: String,
    pub description: String,
    pub side_effect: SideEffect,
    pub risk: Risk,
    pub tags: Vec<String>,
    pub input_schema: Value,
    /// Whether this actor's calls on this surface need approval (policy or static gate).
    pub requires_approval: bool,
}

/// The result of an invocation (reference-behaviour E7).
#[derive(Debug, Clone, PartialEq)]
pub enum Envelope {
    Ok {
        data: Value,
    },
    ApprovalRequired {
        approval_id: String,
        message: String,
    },
    Error(CapabilityError),
}

impl Envelope {
    /// `{status:"ok",data}` | `{status:"approval-required",approvalId,message}` |
    /// `{status:"error",error:{code,message,retryable,details?}}`.
    pub fn to_value(&self) -> Value {
        match self {
            Self::Ok { data } => json!({"status": "ok", "data": data}),
            Self::ApprovalRequired {
                approval_id,
                message,
            } => {
                json!({"status": "approval-required", "approvalId": approval_id, "message": message})
            }
            Self::Error(e) => json!({"status": "error", "error": e.to_public()}),
        }
    }

    pub fn is_ok(&self) -> bool {
        matches!(self, Self::Ok { .. })
    }
}

/// Builds a [`Runtime`]: capabilities in registry order, runtime-wide policies in evaluation order.
pub struct RuntimeBuilder {
    capabilities: Vec<Result<Capability, RegistryError>>,
    policies: Vec<Arc<dyn Policy>>,
    approvals: Option<Arc<dyn ApprovalStore>>,
    clock: Arc<dyn Clock>,
    approval_ttl: Duration,
    reject_self_approval: bool,
    audit: Option<AuditHub>,
}

impl Default for RuntimeBuilder {
    fn default() -> Self {
        Self {
            capabilities: Vec::new(),
            policies: Vec::new(),
            approvals: None,
            clock: Arc::new(SystemClock),
            approval_ttl: DEFAULT_APPROVAL_TTL,
            reject_self_approval: false,
            audit: None,
        }
    }
}

impl RuntimeBuilder {
    pub fn new() -> Self {
        Self::default()
    }
    /// Adds a capability (the builder's result, so registration errors are reported together).
    pub fn capability(mut self, c: Result<Capability, RegistryError>) -> Self {
        self.capabilities.push(c);
        self
    }
    pub fn policy(mut self, p: Arc<dyn Policy>) -> Self {
        self.policies.push(p);
        self
    }
    pub fn approval_store(mut self, s: Arc<dyn ApprovalStore>) -> Self {
        self.approvals = Some(s);
        self
    }
    pub fn clock(mut self, c: Arc<dyn Clock>) -> Self {
        self.clock = c;
        self
    }
    pub fn approval_ttl(mut self, d: Duration) -> Self {
        self.approval_ttl = d;
        self
    }
    /// When true, a requester cannot approve their own request (the demo allows it).
    pub fn reject_self_approval(mut self, on: bool) -> Self {
        self.reject_self_approval = on;
        self
    }
    pub fn audit(mut self, hub: AuditHub) -> Self {
        self.audit = Some(hub);
        self
    }

    pub fn build(self) -> Result<Runtime, RegistryError> {
        let mut caps = Vec::new();
        let mut errors = Vec::new();
        for c in self.capabilities {
            match c {
                Ok(c) => caps.push(c),
                Err(RegistryError::Aggregate(es)) => errors.extend(es),
                Err(e) => errors.push(e),
            }
        }
        let registry = match Registry::new(caps) {
            Ok(r) if errors.is_empty() => r,
            Ok(_) => return Err(RegistryError::Aggregate(errors)),
            Err(RegistryError::Aggregate(dups)) => {
                errors.extend(dups);
                return Err(RegistryError::Aggregate(errors));
            }
            Err(e) => {
                errors.push(e);
                return Err(RegistryError::Aggregate(errors));
            }
        };
        Ok(Runtime {
            registry,
            policies: self.policies,
            approvals: self
                .approvals
                .unwrap_or_else(|| Arc::new(MemoryApprovalStore::default())),
            clock: self.clock,
            approval_ttl: self.approval_ttl,
            reject_self_approval: self.reject_self_approval,
            audit: self.audit.unwrap_or_default(),
        })
    }
}

/// The governed runtime. Share it behind an `Arc`.
pub struct Runtime {
    registry: Registry,
    policies: Vec<Arc<dyn Policy>>,
    approvals: Arc<dyn ApprovalStore>,
    clock: Arc<dyn Clock>,
    approval_ttl: Duration,
    reject_self_approval: bool,
    audit: AuditHub,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("capabilities", &self.registry.ids().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

/// Stage labels carried by `capability.failed`.
const STAGE_INPUT: &str = "input-validation";
const STAGE_AUTH: &str = "authentication";
const STAGE_APPROVAL: &str = "approval";
const STAGE_EXECUTION: &str = "execution";
const STAGE_TIMEOUT: &str = "timeout";

struct Emit<'a> {
    hub: &'a AuditHub,
    actor_id: Option<String>,
    capability_id: String,
    execution_id: String,
    correlation: &'a Correlation,
}

impl Emit<'_> {
    fn event(&self, kind: &str, data: Value) {
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

    fn denied(&self, reason: &str, err: &CapabilityError) -> Envelope {
        self.event(
            "capability.denied",
            json!({"reason": reason, "publicCode": err.public_code().as_str()}),
        );
        Envelope::Error(err.clone())
    }

    fn failed(&self, stage: &str, err: CapabilityError, attempts: u32) -> Envelope {
        self.event(
            "capability.failed",
            json!({"code": err.code.as_str(), "stage": stage, "retryable": err.retryable, "attempts": attempts}),
        );
        Envelope::Error(err)
    }
}

/// The governed error of a handler (or target reader) failure; causes go to the log only.
fn handler_error(capability: &str, e: HandlerError) -> CapabilityError {
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
async fn fault_point(point: &str) {
    if std::env::var("DPAS_FAULT_HOOK").is_ok_and(|p| p == point) {
        println!("fault-hook: {point}");
        use std::io::Write as _;
        let _ = std::io::stdout().flush();
        std::future::pending::<()>().await;
    }
}

/// The envelope of a refusing verdict; `None` when the call may go on.
fn refusal(verdict: &Verdict, emit: &Emit<'_>) -> Option<Envelope> {
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
fn capability_span(id: &str, surface: Surface, execution_id: &str) -> tracing::Span {
    tracing::info_span!(
        "agent.capability_call",
        orpc_agent.capability_id = %id,
        orpc_agent.surface = surface.as_str(),
        orpc_agent.execution_id = %execution_id,
        orpc_agent.approval_id = tracing::field::Empty,
        orpc_agent.outcome = tracing::field::Empty,
    )
}

/// `completed`, `approval-required` or the error's code.
fn outcome_of(envelope: &Envelope) -> &'static str {
    match envelope {
        Envelope::Ok { .. } => "completed",
        Envelope::ApprovalRequired { .. } => "approval-required",
        Envelope::Error(e) => e.code.as_str(),
    }
}

fn new_id(prefix: &str) -> String {
    format!("{prefix}_{}", uuid::Uuid::new_v4())
}

impl Runtime {
    pub fn builder() -> RuntimeBuilder {
        RuntimeBuilder::new()
    }

    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    pub fn audit(&self) -> &AuditHub {
        &self.audit
    }

    /// A bounded audit reader, optionally disclosing only one actor's entries.
    pub fn subscribe(&self, actor_id: Option<&str>) -> AuditReader {
        self.audit.subscribe(actor_id)
    }

    pub fn now(&self) -> OffsetDateTime {
        self.clock.now()
    }

    fn policies_for<'a>(&'a self, cap: &'a Capability) -> Vec<&'a Arc<dyn Policy>> {
        self.policies.iter().chain(cap.policies.iter()).collect()
    }

    /// Runtime-wide policies, then the capability's own, merged for one phase.
    fn verdict(
        &self,
        cap: &Capability,
        phase: PolicyPhase,
        surface: Surface,
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
        surface: Surface,
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
    pub fn record_discovered(&self, actor: &Actor, surface: Surface, count: usize) {
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
        surface: Surface,
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
        surface: Surface,
        id: &str,
        input: Value,
        correlation: Correlation,
    ) -> Envelope {
        let execution_id = new_id("exe");
        let span = capability_span(id, surface, &execution_id);
        let pipeline = async {
            let emit = Emit {
                hub: &self.audit,
                actor_id: (!actor.id.is_empty()).then(|| actor.id.clone()),
                capability_id: id.to_owned(),
                execution_id: execution_id.clone(),
                correlation: &correlation,
            };
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
            if let Some(refusal) = refusal(&verdict, &emit) {
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
            if meta.approval_required {
                reasons.push(format!("Approval is required for {}.", meta.id));
                if types.is_empty() {
                    types.push("human-confirmation".to_owned());
                }
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
                crate::telemetry::approval("requested");
                let message = format!("Awaiting approval: {}.", reasons.join("; "));
                return Envelope::ApprovalRequired {
                    approval_id,
                    message,
                };
            }
            self.execute(cap, actor, surface, input, &emit, None).await
        };
        let envelope = pipeline.instrument(span.clone()).await;
        span.record("orpc_agent.outcome", outcome_of(&envelope));
        envelope
    }

    /// Stages from execution-phase policies to completion, shared by invoke and resume.
    async fn execute(
        &self,
        cap: &Capability,
        actor: &Actor,
        surface: Surface,
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
        crate::telemetry::approval(if approved { "approved" } else { "rejected" });
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
                _ => record.surface != Surface::Mcp && grace.is_zero(),
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
        if !approved || record.surface == Surface::Mcp || record.status != ApprovalStatus::Pending {
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
        crate::telemetry::approval("approved");
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
        expected_surface: Surface,
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
