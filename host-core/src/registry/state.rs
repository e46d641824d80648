//! The registry's state, shared by its files: the surface and what it holds (registrations,
//! tombstones, the dedupe table), a registration's lifecycle, and the invocation request with
//! its dedupe fingerprint. Defined here, below `mod.rs` (registration and updates), `invoke.rs`
//! (the pipeline) and `snapshot.rs`, so none of them imports another's types.

use super::events::EventBus;
use crate::canonical::into_canonical_string;
use crate::capability::{Availability, CancelToken, ComponentDef, Handler};
use crate::cell::Access;
use crate::envelope::InvocationResult;
use crate::ids::{self, IdRng};
use crate::pattern::PatternEngine;
use crate::schema::BoundField;
use crate::settle::Clock;
use crate::shared::LocalShared;
use crate::vec_map::VecMap;
use crate::version::SurfaceVersion;
use dpas_protocol::json::object;
use dpas_protocol::json::Value;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::task::Waker;

/// A pushed availability override (`update({availability})`); `available: true` clears it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushedAvailability {
    pub available: bool,
    pub reason: Option<String>,
}

/// Whether a component's capabilities are still alive; in-flight calls race against it.
#[derive(Debug, Default)]
pub(crate) struct Lifecycle {
    unmounted: Cell<bool>,
    wakers: RefCell<Vec<Waker>>,
}

impl Lifecycle {
    pub(super) fn unmount(&self) {
        self.unmounted.set(true);
        for waker in self.wakers.take() {
            waker.wake();
        }
    }
}

/// Resolves when the owning component unmounts; never without one (a call that navigates
/// settles only on completion).
pub(crate) struct Unmounted(pub(crate) Option<Rc<Lifecycle>>);

impl std::future::Future for Unmounted {
    type Output = ();

    fn poll(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<()> {
        let Some(lifecycle) = &self.0 else {
            return std::task::Poll::Pending;
        };
        if lifecycle.unmounted.get() {
            return std::task::Poll::Ready(());
        }
        let mut wakers = lifecycle.wakers.get_mut_ref();
        if !wakers.iter().any(|w| w.will_wake(cx.waker())) {
            wakers.push(cx.waker().clone());
        }
        std::task::Poll::Pending
    }
}

/// One live registration; cheap to clone so user callbacks run with no borrow held.
#[derive(Clone)]
pub(crate) struct Registration {
    pub(crate) id: String,
    pub(crate) def: Rc<ComponentDef>,
    pub(crate) instance_id: String,
    pub(crate) enabled: bool,
    pub(crate) overrides: VecMap<String, PushedAvailability>,
    /// Bound keys per procedure, captured once at registration.
    pub(crate) bound: Rc<Vec<Vec<BoundField>>>,
    pub(crate) lifecycle: Rc<Lifecycle>,
}

impl Registration {
    /// Every canonical capability id this registration owns, in declaration order.
    pub(crate) fn capability_ids(&self) -> Vec<String> {
        let def = &self.def;
        let mut out = Vec::new();
        for o in &def.observations {
            out.push(ids::view_capability_id(&def.component_type, &o.name));
        }
        for a in &def.actions {
            out.push(ids::view_capability_id(&def.component_type, &a.name));
        }
        for p in &def.procedures {
            out.push(ids::domain_capability_id(&p.path));
        }
        out
    }

    /// Evaluates one capability's availability; `Err` carries the unavailable reason.
    ///
    /// Runs author code (`when`, reasons), so the caller must hold no registry borrow.
    pub(crate) fn availability(
        &self,
        capability_id: &str,
        gates: &Availability,
    ) -> Result<(), String> {
        let reason = || gates.unavailable_reason.as_ref().map(|f| f());
        if !self.enabled {
            return Err("component-disabled".into());
        }
        if let Some(pushed) = self.overrides.get(capability_id) {
            return Err(pushed
                .reason
                .clone()
                .or_else(reason)
                .unwrap_or_else(|| "unavailable".into()));
        }
        match gates.when.as_ref().map(|when| when()) {
            None | Some(Ok(true)) => Ok(()),
            Some(Ok(false)) => Err(reason().unwrap_or_else(|| "when-false".into())),
            Some(Err(_)) => Err("when-error".into()),
        }
    }

    /// Availability of every capability, keyed by canonical id.
    pub(crate) fn availability_map(&self) -> Vec<(String, bool)> {
        // One pass over the definition, each id beside its own gates.
        let def = &self.def;
        let mut map = Vec::new();
        let mut put = |id: String, gates: &Availability| {
            let available = self.availability(&id, gates).is_ok();
            map.push((id, available));
        };
        for o in &def.observations {
            put(
                ids::view_capability_id(&def.component_type, &o.name),
                &o.availability,
            );
        }
        for a in &def.actions {
            put(
                ids::view_capability_id(&def.component_type, &a.name),
                &a.availability,
            );
        }
        for p in &def.procedures {
            put(ids::domain_capability_id(&p.path), &p.availability);
        }
        map
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Tombstone {
    pub(crate) registration_id: String,
    pub(crate) instance_id: String,
    pub(crate) capability_ids: Vec<String>,
    pub(super) at_ms: f64,
}

pub(crate) struct State {
    pub(crate) version: u64,
    pub(super) counter: u64,
    pub(crate) rng: IdRng,
    pub(crate) registrations: Vec<Registration>,
    /// Oldest first, at most `TOMBSTONE_CAPACITY`: a `Vec` (the oldest removed from its front,
    /// a shift of at most 100) costs the wasm less than a second `VecDeque` type.
    pub(crate) tombstones: Vec<Tombstone>,
    /// Remembered invocations, oldest first.
    pub(crate) invocations: VecMap<String, DedupeEntry>,
    /// Last availability seen per (registration id, capability id), for flip detection.
    pub(super) known_availability: VecMap<(String, String), bool>,
}

impl State {
    pub(super) fn registration_mut(&mut self, registration_id: &str) -> Option<&mut Registration> {
        self.registrations
            .iter_mut()
            .find(|r| r.id == registration_id)
    }
}

pub(crate) struct Inner {
    pub(crate) state: RefCell<State>,
    pub(crate) events: EventBus,
    pub(crate) clock: Rc<dyn Clock>,
    pub(crate) patterns: Rc<dyn PatternEngine>,
    pub(crate) executor: RefCell<Option<Handler>>,
    /// The last catalog's wire names with the version and scope they were assigned for.
    pub(super) wire_names: RefCell<Option<NamesMemo>>,
}

/// Surface version, scope, and the wire names assigned for them (`Surface::wire_names`).
pub(super) type NamesMemo = (u64, Vec<String>, Vec<String>);

/// The registry. Cloning shares it (single-threaded: `Rc`).
#[derive(Clone)]
pub struct Surface {
    pub(crate) inner: Rc<Inner>,
}

/// An invocation request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct InvokeRequest {
    /// The idempotency key (the loop passes the tool-call id); minted when absent.
    pub invocation_id: Option<String>,
    pub capability_id: String,
    pub instance_id: Option<String>,
    /// The staleness token from the catalog the call was made against.
    pub registration_id: Option<String>,
    pub surface_version: Option<SurfaceVersion>,
    pub input: Option<Value>,
    /// The user approved this call through the host's confirm callback.
    pub confirmed: bool,
    /// The request that proposed this call carried untrusted content (U3): a call that
    /// changes something needs the user's confirmation whatever its level.
    pub untrusted_content: bool,
    /// The caller's cancellation, handed to the handler (not part of the dedupe fingerprint).
    pub cancel: Option<CancelToken>,
}

pub(super) type SharedResult = LocalShared<InvocationResult>;

pub(crate) enum DedupeState {
    InFlight(SharedResult),
    Settled {
        result: InvocationResult,
        at_ms: f64,
    },
}

pub(crate) struct DedupeEntry {
    pub(super) fingerprint: String,
    pub(super) state: DedupeState,
}

/// What a repeated invocation id must match to join or replay the first call.
pub(super) fn fingerprint(request: &InvokeRequest) -> String {
    into_canonical_string(object([
        ("capabilityId", request.capability_id.as_str().into()),
        ("registrationId", request.registration_id.clone().into()),
        ("instanceId", request.instance_id.clone().into()),
        ("surfaceVersion", request.surface_version.into()),
        ("input", request.input.clone().into()),
    ]))
}
