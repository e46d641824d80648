//! Policies in phases: discovery (hide), invocation (deny, hide or require approval) and
//! execution (re-checks right before the handler runs, including after an approval).

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::types::{Actor, CallSurface, CapabilityMeta};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PolicyPhase {
    Discovery,
    Invocation,
    Execution,
}

/// One policy's stance on one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Allow,
    /// Refuse with an optional public message.
    Deny(Option<String>),
    /// Behave as if the capability did not exist.
    Hide,
    RequireApproval {
        reason: String,
        approval_type: String,
        expires_in: Option<Duration>,
    },
}

/// What a policy sees. `input` is the validated input, absent at discovery.
#[derive(Debug, Clone, Copy)]
pub struct PolicyRequest<'a> {
    pub phase: PolicyPhase,
    pub capability: &'a CapabilityMeta,
    pub surface: CallSurface,
    pub actor: &'a Actor,
    pub input: Option<&'a Value>,
}

#[derive(Debug, Clone, thiserror::Error)]
#[error("policy failed: {0}")]
pub struct PolicyError(pub String);

/// A named rule over requests; expected to be deterministic (no clocks, randomness or I/O).
pub trait Policy: Send + Sync {
    fn name(&self) -> &str;
    fn phases(&self) -> &[PolicyPhase];
    fn evaluate(&self, request: &PolicyRequest<'_>) -> Result<Decision, PolicyError>;
}

struct FnPolicy<F> {
    name: String,
    phases: Vec<PolicyPhase>,
    f: F,
}

impl<F> Policy for FnPolicy<F>
where
    F: Fn(&PolicyRequest<'_>) -> Result<Decision, PolicyError> + Send + Sync,
{
    fn name(&self) -> &str {
        &self.name
    }
    fn phases(&self) -> &[PolicyPhase] {
        &self.phases
    }
    fn evaluate(&self, request: &PolicyRequest<'_>) -> Result<Decision, PolicyError> {
        (self.f)(request)
    }
}

/// A policy from a closure.
pub fn policy_fn<F>(name: impl Into<String>, phases: &[PolicyPhase], f: F) -> Arc<dyn Policy>
where
    F: Fn(&PolicyRequest<'_>) -> Result<Decision, PolicyError> + Send + Sync + 'static,
{
    Arc::new(FnPolicy {
        name: name.into(),
        phases: phases.to_vec(),
        f,
    })
}

/// The merged outcome of every applicable policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Allow,
    /// A policy errored or panicked; treated as deny and concealed.
    Failed {
        policy: String,
    },
    Deny {
        policy: String,
        message: Option<String>,
    },
    Hide,
    /// All approval requests merged: every reason, the union of types, the minimum expiry.
    RequireApproval {
        reasons: Vec<String>,
        types: Vec<String>,
        expires_in: Option<Duration>,
    },
}

/// Evaluates every policy for `phase` (no short-circuit) and merges with precedence
/// failed/deny > hide > require-approval > allow.
pub(crate) fn evaluate_all(policies: &[&Arc<dyn Policy>], request: &PolicyRequest<'_>) -> Verdict {
    let mut failed = None;
    let mut deny = None;
    let mut hide = false;
    let mut reasons = Vec::new();
    let mut types: Vec<String> = Vec::new();
    let mut expires: Option<Duration> = None;
    for policy in policies
        .iter()
        .filter(|p| p.phases().contains(&request.phase))
    {
        // A panicking policy fails closed like an erroring one.
        let outcome =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| policy.evaluate(request)));
        match outcome {
            Ok(Ok(Decision::Allow)) => {}
            Ok(Ok(Decision::Deny(message))) => {
                deny.get_or_insert((policy.name().to_owned(), message));
            }
            Ok(Ok(Decision::Hide)) => hide = true,
            Ok(Ok(Decision::RequireApproval {
                reason,
                approval_type,
                expires_in,
            })) => {
                reasons.push(reason);
                if !types.contains(&approval_type) {
                    types.push(approval_type);
                }
                if let Some(e) = expires_in {
                    expires = Some(expires.map_or(e, |cur| cur.min(e)));
                }
            }
            Ok(Err(err)) => {
                tracing::warn!(policy = policy.name(), error = %err, "policy failed");
                failed.get_or_insert(policy.name().to_owned());
            }
            Err(_) => {
                tracing::error!(policy = policy.name(), "policy panicked");
                failed.get_or_insert(policy.name().to_owned());
            }
        }
    }
    if let Some(policy) = failed {
        Verdict::Failed { policy }
    } else if let Some((policy, message)) = deny {
        Verdict::Deny { policy, message }
    } else if hide {
        Verdict::Hide
    } else if !reasons.is_empty() {
        Verdict::RequireApproval {
            reasons,
            types,
            expires_in: expires,
        }
    } else {
        Verdict::Allow
    }
}
