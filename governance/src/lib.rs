#![warn(unreachable_pub)]

//! The governed domain runtime: every call from every surface goes through one pipeline of
//! exposure, validation, actor check, policies, approval gate, bounded execution and audit.
//! Governed failures never panic or throw; they come back as envelopes.
//!
//! # API
//! - [`Runtime`] (built by [`RuntimeBuilder`]): discovery, `invoke_envelope`, approvals
//!   (decide, resume, recover, purge) and the [`Registry`] of [`Capability`]s.
//! - Policies ([`Policy`], [`policy_fn`]) and the call's identity ([`Actor`], [`CallSurface`],
//!   [`Correlation`]); what a call answers ([`Envelope`], [`CapabilityError`]).
//! - The store traits the server's SQL stores implement: [`ApprovalStore`] (with
//!   [`MemoryApprovalStore`] and, under feature `testing`, `approval::conformance`) and
//!   [`threads::ThreadStore`], [`steps::StepStore`] (the records that answer a step
//!   posted again) and [`usage::UsageStore`] (usage rows and budgets).
//! - [`AuditHub`]: every governed call's audit entry, to subscribers and the table writer.
//! - [`receipt`]: the message an approved or interrupted run leaves in its conversation.
//!
//! # Invariants
//! - No HTTP and no SQL: this crate depends on neither actix-web, sqlx nor reqwest
//!   (`scripts/test.sh` checks the dependency tree). Stores are traits here.
//! - A governed failure is an [`Envelope::Error`], never a panic: a handler that panics or
//!   runs past its timeout is an `INTERNAL_ERROR`/`TIMEOUT` envelope.
//!
//! Here: the builder and the [`Runtime`] it builds. The pipeline itself is `pipeline.rs`
//! (discovery and `invoke_envelope`, through the execution) and `decision.rs` (deciding,
//! running and resuming approvals); `envelope.rs` is what a call answers, `clock.rs` the time
//! source.

pub mod approval;
pub mod audit;
pub mod audit_chain;
mod clock;
mod decision;
mod envelope;
pub mod error;
pub mod metrics;
mod pipeline;
pub mod policy;
pub mod receipt;
pub mod registry;
pub mod steps;
pub mod threads;
pub mod types;
pub mod usage;
pub(crate) mod vocab;

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use time::OffsetDateTime;

pub use approval::{
    ApprovalDecision, ApprovalRecord, ApprovalStatus, ApprovalStore, MemoryApprovalStore,
    UNTRUSTED_CONTENT_REASON,
};
pub use audit::{AuditDraft, AuditEntry, AuditHub, AuditReader, AuditSource};
pub use clock::{Clock, ManualClock, SystemClock};
pub use envelope::Envelope;
pub use error::{CapabilityError, CapabilityErrorCode, HandlerError, InputIssue};
pub use policy::{policy_fn, Decision, Policy, PolicyError, PolicyPhase, PolicyRequest, Verdict};
pub use registry::{
    Capability, CapabilityBuilder, CapabilityMeta, InvocationContext, Registry, RegistryError,
};
/// The old name of [`CallSurface`].
pub use types::{
    Actor, ActorKind, CallContext, CallSurface, Correlation, Credential, Risk, SideEffect,
};

/// Default lifetime of a pending approval.
pub const DEFAULT_APPROVAL_TTL: Duration = Duration::from_secs(15 * 60);

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
}
