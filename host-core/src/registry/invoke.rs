//! The invocation pipeline (agent-surface §3.9), in fixed phase order, first failure wins:
//! 1 identity and dedupe, 2 resolution and staleness, 3 availability, 5 effective input
//! (bound keys), 6 confirmation, 9 execution (racing unmount), 10 settlement (output checks,
//! terminal cache, events). Policies (4), preconditions as a separate hook (7) and admission
//! queues (8) are not part of this host's subset; handlers report preconditions as typed errors.

use super::events::SurfaceEvent;
use super::state::{
    fingerprint, DedupeEntry, DedupeState, InvokeRequest, Registration, Surface, Unmounted,
};
use crate::canonical::json_text;
use crate::capability::{
    Availability, ComponentDef, Confirmation, Effect, HandlerError, HandlerResult,
    InvocationContext,
};
use crate::cell::Access;
use crate::envelope::{capped, ErrorCode, InvocationResult, Outcome, Retry, SurfaceError};
use crate::ids::{self, CapabilityId};
use crate::pattern::PatternEngine;
use crate::schema::{validate, BoundField, Issue};
use crate::shared::LocalShared;
use crate::version::SurfaceVersion;
use dpas_protocol::json::object;
use dpas_protocol::json::{Map, Value};
use futures_util::future::{self, LocalBoxFuture};
use futures_util::FutureExt;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

/// Settled results kept for replay.
pub(super) const DEDUPE_CAPACITY: usize = 200;
/// How long a settled result is replayed.
pub(super) const DEDUPE_TTL_MS: f64 = 10.0 * 60.0 * 1000.0;
/// Largest output a handler may return, serialized.
pub(super) const MAX_OUTPUT_BYTES: usize = 32 * 1024;

/// The resolved target of a call: its definition's place in the registration's component
/// definition (which an `Rc` keeps as it was), read from there when needed rather than
/// copied out for every candidate.
#[derive(Clone, Copy)]
enum Target {
    Observation(usize),
    Action(usize),
    Procedure(usize),
}

impl Target {
    /// The schema the target's output is checked against, if it declares one.
    fn output_schema(self, def: &ComponentDef) -> Option<&Value> {
        match self {
            Target::Observation(i) => Some(&def.observations[i].output_schema),
            Target::Action(i) => def.actions[i].output_schema.as_ref(),
            Target::Procedure(i) => def.procedures[i].output_schema.as_ref(),
        }
    }
}

struct Resolved {
    registration: Registration,
    target: Target,
}

impl Resolved {
    /// The target's description and its gates (`when`, reasons).
    fn described(&self) -> (&str, &Availability) {
        let def = &self.registration.def;
        match self.target {
            Target::Observation(i) => (
                &def.observations[i].description,
                &def.observations[i].availability,
            ),
            Target::Action(i) => (&def.actions[i].description, &def.actions[i].availability),
            Target::Procedure(i) => (
                &def.procedures[i].description,
                &def.procedures[i].availability,
            ),
        }
    }
}

/// No instance asked for, or this one.
fn instance_matches(request: &InvokeRequest, instance_id: &str) -> bool {
    request
        .instance_id
        .as_deref()
        .is_none_or(|i| i == instance_id)
}

fn issues_value(issues: &[Issue]) -> Vec<Value> {
    let mut values = Vec::with_capacity(issues.len());
    for issue in issues {
        values.push(issue.to_value());
    }
    values
}

impl Surface {
    /// Invokes a capability. Never fails: every outcome is an [`InvocationResult`]. The same
    /// invocation id never runs twice: it joins the in-flight call or replays the settled one.
    pub fn invoke(&self, request: InvokeRequest) -> LocalBoxFuture<'static, InvocationResult> {
        let invocation_id = match &request.invocation_id {
            Some(id) => id.clone(),
            None => format!("inv_{}", self.inner.state.get_mut_ref().rng.base62(12)),
        };
        let fingerprint = fingerprint(&request);
        let now = self.now();
        let mut state = self.inner.state.get_mut_ref();
        state.invocations.retain(|_, entry| match &entry.state {
            DedupeState::Settled { at_ms, .. } => now - at_ms < DEDUPE_TTL_MS,
            DedupeState::InFlight(_) => true,
        });
        match state.invocations.get(&invocation_id) {
            Some(entry) if entry.fingerprint != fingerprint => {
                let version = SurfaceVersion(state.version);
                drop(state);
                let error = SurfaceError::new(
                    ErrorCode::InvocationConflict,
                    Retry::WithChanges,
                    "This invocation id was already used for a different request. Use a new invocation id.",
                )
                .with_details(object([("reason", "id-reused-with-different-request".into())]));
                return future::ready(self.result(
                    &invocation_id,
                    &request.capability_id,
                    Outcome::Error(error),
                    version,
                ))
                .boxed_local();
            }
            Some(DedupeEntry {
                state: DedupeState::InFlight(shared),
                ..
            }) => return shared.clone().boxed_local(),
            Some(DedupeEntry {
                state: DedupeState::Settled { result, .. },
                ..
            }) => {
                return future::ready(result.clone()).boxed_local();
            }
            None => {}
        }
        let surface = self.clone();
        let id = invocation_id.clone();
        let shared = LocalShared::new(surface.run(id, request).boxed_local());
        state.invocations.insert(
            invocation_id.clone(),
            DedupeEntry {
                fingerprint,
                state: DedupeState::InFlight(shared.clone()),
            },
        );
        drop(state);
        shared.boxed_local()
    }

    fn result(
        &self,
        invocation_id: &str,
        capability_id: &str,
        outcome: Outcome,
        version_at_start: SurfaceVersion,
    ) -> InvocationResult {
        let surface_version = self.version();
        InvocationResult {
            invocation_id: invocation_id.to_owned(),
            capability_id: capability_id.to_owned(),
            surface_changed: surface_version != version_at_start,
            surface_version,
            outcome,
        }
    }

    async fn run(self, invocation_id: String, request: InvokeRequest) -> InvocationResult {
        let version_at_start = self.version();
        let capability_id = request.capability_id.clone();
        self.emit([SurfaceEvent::InvocationStarted {
            invocation_id: invocation_id.clone(),
            capability_id: capability_id.clone(),
        }]);
        let outcome = match self.prepare(&invocation_id, &request) {
            Ok((resolved, input, ctx)) => match self.execute(resolved, input, ctx) {
                Ok(running) => running.await,
                Err(outcome) => outcome,
            },
            Err(error) => Outcome::Error(error),
        };
        let result = self.result(&invocation_id, &capability_id, outcome, version_at_start);
        self.settle_entry(&invocation_id, &result);
        let code = result.error().map(|e| e.code);
        self.emit([SurfaceEvent::InvocationSettled {
            invocation_id,
            capability_id,
            ok: result.is_ok(),
            code,
        }]);
        result
    }

    /// Terminal results are cached for replay; the others free the id for a retry.
    fn settle_entry(&self, invocation_id: &str, result: &InvocationResult) {
        let now = self.now();
        let mut state = self.inner.state.get_mut_ref();
        let terminal = result.error().is_none_or(|e| e.code.is_terminal());
        if terminal {
            if let Some(entry) = state.invocations.get_mut(invocation_id) {
                entry.state = DedupeState::Settled {
                    result: result.clone(),
                    at_ms: now,
                };
            }
        } else {
            state.invocations.remove(invocation_id);
        }
        // Capacity eviction takes the oldest settled entries and never an in-flight one.
        while state.invocations.len() > DEDUPE_CAPACITY {
            let settled = |_: &String, entry: &DedupeEntry| {
                matches!(entry.state, DedupeState::Settled { .. })
            };
            if state.invocations.remove_first(settled).is_none() {
                break;
            }
        }
    }

    /// Phases 2–6: everything before the handler runs.
    fn prepare(
        &self,
        invocation_id: &str,
        request: &InvokeRequest,
    ) -> Result<(Resolved, Value, InvocationContext), SurfaceError> {
        let resolved = self.resolve(request)?;
        let capability_id = &request.capability_id;
        let registration = &resolved.registration;
        let def = &registration.def;
        let (description, gates) = resolved.described();
        registration
            .availability(capability_id, gates)
            .map_err(|reason| SurfaceError::not_available(capability_id, &reason))?;
        let raw_input = match &request.input {
            None | Some(Value::Null) => Value::Object(Map::new()),
            Some(input) => input.clone(),
        };
        let (input, confirmation, effect) = match resolved.target {
            Target::Observation(_) => {
                (Value::Object(Map::new()), Confirmation::Never, Effect::Read)
            }
            Target::Action(index) => {
                let action = &def.actions[index];
                let issues = validate(&action.input_schema, &raw_input, &*self.inner.patterns);
                if !issues.is_empty() {
                    return Err(SurfaceError::invalid_input(
                        capability_id,
                        issues_value(&issues),
                    ));
                }
                (raw_input, action.confirmation, action.effect)
            }
            Target::Procedure(index) => {
                let procedure = &def.procedures[index];
                let input = effective_procedure_input(
                    capability_id,
                    procedure,
                    &registration.bound[index],
                    raw_input,
                    &*self.inner.patterns,
                )?;
                (input, procedure.effective_confirmation(), procedure.effect)
            }
        };
        // U3: proposed after untrusted content, anything but a read waits for the user.
        let escalated =
            request.untrusted_content && !matches!(effect, Effect::Read | Effect::ServerQuery);
        if (escalated || confirmation == Confirmation::Required) && !request.confirmed {
            let input = json_text(&input);
            let summary = capped([description, " — input: ", &input].concat());
            return Err(SurfaceError::new(
                ErrorCode::ConfirmationRequired,
                Retry::WithConfirmation,
                [
                    capability_id,
                    " needs the user's confirmation before it runs.",
                ]
                .concat(),
            )
            .with_details(object([
                ("summary", summary.into()),
                ("effect", effect.as_str().into()),
                ("origin", "client".into()),
            ])));
        }
        let ctx = InvocationContext {
            invocation_id: invocation_id.to_owned(),
            capability_id: capability_id.clone(),
            registration_id: registration.id.clone(),
            confirmed: request.confirmed,
            cancel: request.cancel.clone(),
            timeout_ms: match resolved.target {
                Target::Procedure(index) => def.procedures[index].timeout_ms,
                _ => None,
            },
        };
        Ok((resolved, input, ctx))
    }

    /// Phase 2: candidates by type/name (or path), narrowed by instance, one chosen (by the
    /// catalog's registration token, or as the only one), checked for staleness.
    fn resolve(&self, request: &InvokeRequest) -> Result<Resolved, SurfaceError> {
        let capability_id = &request.capability_id;
        let parsed = ids::parse_capability_id(capability_id)
            .ok_or_else(|| SurfaceError::not_found(capability_id))?;
        let candidates = self.candidates(parsed, request);
        let chosen = match &request.registration_id {
            Some(token) => self.choose_by_token(candidates, token, request)?,
            None => self.choose_unique(candidates, request)?,
        };
        self.check_fresh(&chosen, request)?;
        Ok(chosen)
    }

    /// The live registrations of the request's instance (any, without one) that declare the
    /// capability, with its target and description.
    fn candidates(&self, parsed: CapabilityId<'_>, request: &InvokeRequest) -> Vec<Resolved> {
        // Over the live list in place: only a candidate's registration is cloned.
        let mut out = Vec::new();
        let state = self.inner.state.get_ref();
        for r in &state.registrations {
            if !instance_matches(request, &r.instance_id) {
                continue;
            }
            let def = &r.def;
            let found = match parsed {
                CapabilityId::View {
                    component_type,
                    name,
                } if def.component_type == component_type => {
                    match def.observations.iter().position(|o| o.name == name) {
                        Some(index) => Some(Target::Observation(index)),
                        None => def
                            .actions
                            .iter()
                            .position(|a| a.name == name)
                            .map(Target::Action),
                    }
                }
                CapabilityId::Domain { path } => def
                    .procedures
                    .iter()
                    .position(|p| p.path == path)
                    .map(Target::Procedure),
                CapabilityId::View { .. } => None,
            };
            if let Some(target) = found {
                out.push(Resolved {
                    registration: r.clone(),
                    target,
                });
            }
        }
        out
    }

    /// The candidate the catalog's registration token names; when none does, why: the
    /// capability was re-registered (stale), its component is gone, or it never was.
    fn choose_by_token(
        &self,
        candidates: Vec<Resolved>,
        token: &str,
        request: &InvokeRequest,
    ) -> Result<Resolved, SurfaceError> {
        if let Some(chosen) = candidates.into_iter().find(|c| c.registration.id == token) {
            return Ok(chosen);
        }
        let capability_id = &request.capability_id;
        let live = self
            .inner
            .state
            .get_ref()
            .registrations
            .iter()
            .find(|r| {
                r.capability_ids().contains(capability_id)
                    && instance_matches(request, &r.instance_id)
            })
            .map(|r| r.id.clone());
        let replaced = self.any_tombstone(&|t| t.registration_id == token);
        Err(match live {
            Some(live) => SurfaceError::re_registered(capability_id, replaced, &live),
            None if replaced => SurfaceError::unmounted(capability_id),
            None => SurfaceError::not_found(capability_id),
        })
    }

    /// The one candidate; none is "unmounted" when a tombstone still names the capability,
    /// two or more are ambiguous.
    fn choose_unique(
        &self,
        mut candidates: Vec<Resolved>,
        request: &InvokeRequest,
    ) -> Result<Resolved, SurfaceError> {
        let capability_id = &request.capability_id;
        match candidates.len() {
            0 => {
                let gone = self.any_tombstone(&|t| {
                    t.capability_ids.contains(capability_id)
                        && instance_matches(request, &t.instance_id)
                });
                Err(if gone {
                    SurfaceError::unmounted(capability_id)
                } else {
                    SurfaceError::not_found(capability_id)
                })
            }
            1 => Ok(candidates.remove(0)),
            _ => {
                let mut instances = Vec::with_capacity(candidates.len());
                for c in &candidates {
                    let r = &c.registration;
                    instances.push(object([
                        ("instanceId", r.instance_id.as_str().into()),
                        ("registrationId", r.id.as_str().into()),
                        ("description", r.def.description.clone().into()),
                    ]));
                }
                Err(SurfaceError::ambiguous(capability_id, instances))
            }
        }
    }

    /// A destructive or external procedure offered on an older surface is refused: the screen
    /// the user saw is not the one it would act on.
    fn check_fresh(&self, chosen: &Resolved, request: &InvokeRequest) -> Result<(), SurfaceError> {
        let Target::Procedure(index) = chosen.target else {
            return Ok(());
        };
        let effect = chosen.registration.def.procedures[index].effect;
        let guarded = matches!(effect, Effect::Destructive | Effect::ExternalSideEffect);
        if guarded
            && request
                .surface_version
                .as_ref()
                .is_some_and(|v| *v != self.version())
        {
            return Err(SurfaceError::screen_changed(&request.capability_id));
        }
        Ok(())
    }

    /// Phase 9: the handler called (racing unmount unless it navigates); `Err` when there is
    /// none to call.
    fn execute(
        &self,
        resolved: Resolved,
        input: Value,
        ctx: InvocationContext,
    ) -> Result<Running, Outcome> {
        let Resolved {
            registration,
            target,
            ..
        } = resolved;
        let def = &registration.def;
        let (handler, navigates) = match target {
            Target::Observation(index) => (Some(def.observations[index].read.clone()), false),
            Target::Action(index) => {
                let action = &def.actions[index];
                (
                    Some(action.execute.clone()),
                    action.effect == Effect::Navigation,
                )
            }
            Target::Procedure(_) => (self.inner.executor.get_ref().clone(), false),
        };
        let Some(handler) = handler else {
            return Err(Outcome::Error(
                SurfaceError::new(
                    ErrorCode::ExecutionFailed,
                    Retry::No,
                    "No procedure executor is installed on this surface.",
                )
                .with_details(object([
                    ("reason", "transport".into()),
                    ("transient", false.into()),
                ])),
            ));
        };
        Ok(Running {
            call: handler.call(input, ctx),
            // Navigation settles only on completion: committing the route may unmount its owner.
            unmounted: Unmounted((!navigates).then_some(registration.lifecycle)),
            def: registration.def,
            target,
            patterns: self.inner.patterns.clone(),
        })
    }
}

/// Phases 9–10 in flight: the handler's call racing its component's unmount, then its output
/// checked. A future of its own, not an `async fn` nested in `run`'s (the crate's size rule).
struct Running {
    call: LocalBoxFuture<'static, HandlerResult>,
    unmounted: Unmounted,
    /// The definition and the target, for the output schema (not a copy of it per call).
    def: Rc<ComponentDef>,
    target: Target,
    patterns: Rc<dyn PatternEngine>,
}

impl Future for Running {
    type Output = Outcome;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Outcome> {
        let this = &mut *self;
        match this.call.as_mut().poll(cx) {
            Poll::Ready(Ok(output)) => Poll::Ready(check_output(
                output,
                this.target.output_schema(&this.def),
                &*this.patterns,
            )),
            Poll::Ready(Err(HandlerError::Threw(_))) => {
                Poll::Ready(Outcome::Error(SurfaceError::handler_threw()))
            }
            Poll::Ready(Err(HandlerError::Failed(error))) => Poll::Ready(Outcome::Error(error)),
            Poll::Pending => Pin::new(&mut this.unmounted).poll(cx).map(|()| {
                Outcome::Error(
                    SurfaceError::new(
                        ErrorCode::ComponentUnmounted,
                        Retry::AfterRefresh,
                        "The component unmounted while the call was running. Refresh the catalog before retrying.",
                    )
                    .with_details(object([("phase", "mid-flight".into())])),
                )
            }),
        }
    }
}

/// Phase 10 output checks: at most [`MAX_OUTPUT_BYTES`] and valid against the output schema.
fn check_output(
    output: Option<Value>,
    schema: Option<&Value>,
    patterns: &dyn PatternEngine,
) -> Outcome {
    let failed = |reason: &str, message: &str| {
        Outcome::Error(
            SurfaceError::new(ErrorCode::ExecutionFailed, Retry::No, message)
                .with_details(object([("reason", reason.into())])),
        )
    };
    let Some(value) = output else {
        return Outcome::Ok(None);
    };
    if json_text(&value).len() > MAX_OUTPUT_BYTES {
        return failed(
            "output-too-large",
            "The capability returned more than 32 kB. Narrow the request and call it again.",
        );
    }
    if schema.is_some_and(|schema| !validate(schema, &value, patterns).is_empty()) {
        return failed(
            "output-invalid",
            "The capability returned output that does not match its declared schema.",
        );
    }
    Outcome::Ok(Some(value))
}

/// Phase 5 for a procedure: locked keys refused, agent input validated against the reduced
/// schema, `bind()` evaluated now (never cached), merged, and the merge validated in full.
fn effective_procedure_input(
    capability_id: &str,
    procedure: &crate::capability::ProcedureDef,
    bound: &[BoundField],
    input: Value,
    patterns: &dyn PatternEngine,
) -> Result<Value, SurfaceError> {
    let Value::Object(agent) = input else {
        let issue = Issue {
            path: String::new(),
            message: "Expected object".into(),
        };
        return Err(SurfaceError::invalid_input(
            capability_id,
            issues_value(&[issue]),
        ));
    };
    let mut locked = Vec::new();
    for f in bound {
        if f.locked && agent.contains_key(&f.path) {
            locked.push(f.path.clone());
        }
    }
    if !locked.is_empty() {
        return Err(SurfaceError::locked_fields(capability_id, locked));
    }
    let (reduced, _) = super::snapshot::bound_view(&procedure.input_schema, bound);
    // Validated in place: the agent's input becomes the merge, so it is not copied.
    let mut merged = Value::Object(agent);
    let issues = validate(&reduced, &merged, patterns);
    if !issues.is_empty() {
        return Err(SurfaceError::invalid_input(
            capability_id,
            issues_value(&issues),
        ));
    }
    let binding_failed = || {
        SurfaceError::precondition_failed(
            format!("The view state that {capability_id} depends on is not ready. Refresh the catalog and try again."),
            Some(object([("reason", "binding-failed".into())])),
        )
        .with_retry(Retry::AfterRefresh)
    };
    let values = match &procedure.bind {
        Some(bind) => bind().map_err(|_| binding_failed())?,
        None => Map::new(),
    };
    if let Value::Object(map) = &mut merged {
        for field in bound {
            if map.contains_key(&field.path) {
                continue;
            }
            if let Some(value) = values.get(&field.path) {
                map.insert(field.path.clone(), value.clone());
            }
        }
    }
    if !validate(&procedure.input_schema, &merged, patterns).is_empty() {
        return Err(binding_failed());
    }
    Ok(merged)
}
