//! The Agent Surface registry (agent-surface §3.5–§3.9, the subset a host needs): components
//! register capabilities while mounted, availability is evaluated live, every mutation bumps
//! `surfaceVersion` and emits events, and `invoke` runs the invocation pipeline.

mod definition;
mod events;
mod invoke;
mod snapshot;

#[cfg(test)]
mod tests;

pub use definition::{DefinitionError, DefinitionErrorCode};
pub use events::{SubscriptionId, SurfaceEvent};
pub use invoke::InvokeRequest;
pub use snapshot::{
    ActionSnapshot, BoundFieldSnapshot, ComponentSnapshot, ObservationSnapshot, ProcedureContext,
    ProcedureSnapshot, Snapshot, SnapshotOptions,
};

use crate::capability::{Availability, ComponentDef, Handler};
use crate::cell::Access;
use crate::ids::{self, IdRng};
use crate::pattern::PatternEngine;
use crate::schema::BoundField;
use crate::settle::Clock;
use crate::vec_map::VecMap;
use events::EventBus;
use invoke::DedupeEntry;
use std::cell::{Cell, RefCell};
use std::rc::{Rc, Weak};
use std::task::Waker;

/// Tombstones kept for late calls to unmounted components.
pub const TOMBSTONE_CAPACITY: usize = 100;
/// How long a tombstone answers `COMPONENT_UNMOUNTED`.
pub const TOMBSTONE_TTL_MS: f64 = 5.0 * 60.0 * 1000.0;

/// A pushed availability override (`update({availability})`); `available: true` clears it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushedAvailability {
    pub available: bool,
    pub reason: Option<String>,
}

/// A change pushed through a component handle.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ComponentUpdate {
    pub enabled: Option<bool>,
    /// Overrides keyed by canonical capability id.
    pub availability: Vec<(String, PushedAvailability)>,
}

/// How a surface tells time and seeds the random part of the ids it mints.
#[derive(Clone)]
pub struct SurfaceOptions {
    pub clock: Rc<dyn Clock>,
    pub seed: u64,
    /// Compiles and matches schema `pattern`s: the browser's `RegExp` in the package,
    /// [`crate::pattern::NativePatterns`] elsewhere.
    pub patterns: Rc<dyn PatternEngine>,
}

/// Whether a component's capabilities are still alive; in-flight calls race against it.
#[derive(Debug, Default)]
pub(crate) struct Lifecycle {
    unmounted: Cell<bool>,
    wakers: RefCell<Vec<Waker>>,
}

impl Lifecycle {
    fn unmount(&self) {
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
        // Loops, not a chain of maps: each closure instantiated `fold` and `from_iter` (#16).
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
        // One pass over the definition, each id beside its own gates: the id list zipped with
        // a list of the gates was a `Zip` and a second vector (#16).
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
    at_ms: f64,
}

pub(crate) struct State {
    pub(crate) version: u64,
    counter: u64,
    pub(crate) rng: IdRng,
    pub(crate) registrations: Vec<Registration>,
    /// Oldest first, at most `TOMBSTONE_CAPACITY`: a `Vec` (the oldest removed from its front,
    /// a shift of at most 100) costs the wasm less than a second `VecDeque` type (#16).
    pub(crate) tombstones: Vec<Tombstone>,
    /// Remembered invocations, oldest first.
    pub(crate) invocations: VecMap<String, DedupeEntry>,
    /// Last availability seen per (registration id, capability id), for flip detection.
    known_availability: VecMap<(String, String), bool>,
}

impl State {
    fn registration_mut(&mut self, registration_id: &str) -> Option<&mut Registration> {
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
    wire_names: RefCell<Option<NamesMemo>>,
}

/// Surface version, scope, and the wire names assigned for them (`Surface::wire_names`).
type NamesMemo = (u64, Vec<String>, Vec<String>);

/// The registry. Cloning shares it (single-threaded: `Rc`).
#[derive(Clone)]
pub struct Surface {
    pub(crate) inner: Rc<Inner>,
}

/// `surfaceVersion`: a counter every structural change bumps, compared for equality only.
/// The wire (catalog, meta tools, invocation results) carries its decimal text, as
/// agent-surface has it; JS gets the number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SurfaceVersion(pub u64);

impl SurfaceVersion {
    /// What a client claims the version is (meta mode's `surfaceVersion` text). Only the text a
    /// version is written as names it (no sign, no leading zero); any other text is a claim no
    /// surface ever matches, as it was when versions were compared as text.
    pub fn claimed(text: &str) -> Self {
        // Read digit by digit: `str::parse` was a copy of core's integer parser for this alone.
        let written = text == "0" || !(text.is_empty() || text.starts_with('0'));
        let mut version: u64 = 0;
        for byte in text.bytes() {
            let digit = byte.wrapping_sub(b'0');
            let next = version
                .checked_mul(10)
                .and_then(|v| v.checked_add(u64::from(digit)));
            match next {
                Some(next) if digit < 10 && written => version = next,
                _ => return Self(u64::MAX),
            }
        }
        if written {
            Self(version)
        } else {
            Self(u64::MAX)
        }
    }

    /// The decimal text the wire carries.
    pub fn to_wire(self) -> String {
        self.0.to_string()
    }
}

impl From<SurfaceVersion> for dpas_protocol::json::Value {
    fn from(version: SurfaceVersion) -> Self {
        Self::String(version.to_wire())
    }
}

impl serde::Serialize for SurfaceVersion {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.to_wire())
    }
}

/// A surface that does not keep its registry alive: what a listener the registry holds keeps.
#[derive(Clone)]
pub struct WeakSurface(Weak<Inner>);

impl WeakSurface {
    pub fn upgrade(&self) -> Option<Surface> {
        self.0.upgrade().map(|inner| Surface { inner })
    }
}

/// Where a handle's registration stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HandleStatus {
    Active,
    /// Refused at registration (a duplicate instance); nothing was registered.
    Rejected,
    Unregistered,
}

/// Returned by `register`: the staleness token and the component's lifecycle controls.
#[derive(Clone)]
pub struct ComponentHandle {
    surface: Weak<Inner>,
    registration_id: Option<String>,
}

impl ComponentHandle {
    /// The registration id (`reg_…`), `None` for a rejected registration.
    pub fn registration_id(&self) -> Option<&str> {
        self.registration_id.as_deref()
    }

    pub fn status(&self) -> HandleStatus {
        let Some(id) = &self.registration_id else {
            return HandleStatus::Rejected;
        };
        let live = self.surface.upgrade().is_some_and(|inner| {
            inner
                .state
                .get_ref()
                .registrations
                .iter()
                .any(|r| &r.id == id)
        });
        if live {
            HandleStatus::Active
        } else {
            HandleStatus::Unregistered
        }
    }

    /// Pushes `enabled` / availability overrides; `false` when nothing changed or the
    /// registration is not live.
    pub fn update(&self, update: ComponentUpdate) -> bool {
        match (self.surface.upgrade(), &self.registration_id) {
            (Some(inner), Some(id)) => Surface { inner }.update(id, update),
            _ => false,
        }
    }

    /// Replaces the definition, keeping the registration (see [`Surface::replace`]).
    pub fn replace(&self, def: ComponentDef) -> Result<bool, DefinitionError> {
        match (self.surface.upgrade(), &self.registration_id) {
            (Some(inner), Some(id)) => Surface { inner }.replace(id, def),
            _ => Ok(false),
        }
    }

    /// Unregisters (leaving a tombstone); `false` when it was not live.
    pub fn unregister(&self) -> bool {
        match (self.surface.upgrade(), &self.registration_id) {
            (Some(inner), Some(id)) => Surface { inner }.unregister(id),
            _ => false,
        }
    }
}

impl Surface {
    pub fn new(options: SurfaceOptions) -> Self {
        let state = State {
            version: 0,
            counter: 0,
            rng: IdRng::new(options.seed),
            registrations: Vec::new(),
            tombstones: Vec::new(),
            invocations: VecMap::new(),
            known_availability: VecMap::new(),
        };
        Self {
            inner: Rc::new(Inner {
                state: RefCell::new(state),
                events: EventBus::default(),
                clock: options.clock,
                patterns: options.patterns,
                executor: RefCell::new(None),
                wire_names: RefCell::new(None),
            }),
        }
    }

    pub fn downgrade(&self) -> WeakSurface {
        WeakSurface(Rc::downgrade(&self.inner))
    }

    pub fn version(&self) -> SurfaceVersion {
        SurfaceVersion(self.inner.state.get_ref().version)
    }

    /// The wire names of the catalog taken at `version` within `scope`: `assign`ed once, then
    /// remembered until either changes. Names depend only on which capabilities are registered
    /// (C6), and every registration change bumps the version, so a step on an unchanged
    /// surface skips the encoding and the sorts.
    pub(crate) fn wire_names(
        &self,
        version: SurfaceVersion,
        scope: &[String],
        assign: impl FnOnce() -> Vec<String>,
    ) -> Vec<String> {
        let mut memo = self.inner.wire_names.get_mut_ref();
        if let Some((v, s, names)) = &*memo {
            if *v == version.0 && s == scope {
                return names.clone();
            }
        }
        let names = assign();
        *memo = Some((version.0, scope.to_vec(), names.clone()));
        names
    }

    /// Installs the function that executes `domain:` references (typically the app's `/rpc`
    /// call); it receives the effective input, and the path through the capability id.
    pub fn set_procedure_executor(&self, executor: Handler) {
        *self.inner.executor.get_mut_ref() = Some(executor);
    }

    pub fn subscribe(&self, listener: impl Fn(&SurfaceEvent) + 'static) -> SubscriptionId {
        self.inner.events.subscribe(Rc::new(listener))
    }

    pub fn unsubscribe(&self, id: SubscriptionId) -> bool {
        self.inner.events.unsubscribe(id)
    }

    /// Emits the events of one mutation as a batch, so nested mutations queue behind it.
    fn emit(&self, events: impl IntoIterator<Item = SurfaceEvent>) {
        self.inner.events.emit(events);
    }

    /// Bumps the version; the caller emits `surface-changed` once its borrow is released.
    fn bump(state: &mut State) -> SurfaceVersion {
        state.version += 1;
        SurfaceVersion(state.version)
    }

    fn now(&self) -> f64 {
        self.inner.clock.now_ms()
    }

    /// Registers a mounted component. Structural defects are errors; a duplicate live
    /// instance of the same type is a rejected (dead) handle and a `component-rejected` event.
    pub fn register(&self, def: ComponentDef) -> Result<ComponentHandle, DefinitionError> {
        definition::validate(&def, &*self.inner.patterns)?;
        let instance_id = def
            .instance_id
            .clone()
            .unwrap_or_else(|| ids::DEFAULT_INSTANCE_ID.into());
        let bound = Rc::new(definition::capture_bound_keys(&def));
        let duplicate =
            self.inner.state.get_ref().registrations.iter().any(|r| {
                r.def.component_type == def.component_type && r.instance_id == instance_id
            });
        if duplicate {
            self.emit([SurfaceEvent::ComponentRejected {
                component_type: def.component_type.clone(),
                instance_id,
                reason: "duplicate-instance".into(),
            }]);
            return Ok(ComponentHandle {
                surface: Rc::downgrade(&self.inner),
                registration_id: None,
            });
        }
        let (registration, version) = {
            let mut state = self.inner.state.get_mut_ref();
            state.counter += 1;
            let id = format!("reg_{}{}", ids::base36(state.counter), state.rng.base36(6));
            let registration = Registration {
                id,
                enabled: def.enabled,
                def: Rc::new(def),
                instance_id,
                overrides: VecMap::new(),
                bound,
                lifecycle: Rc::default(),
            };
            state.registrations.push(registration.clone());
            (registration, Self::bump(&mut state))
        };
        let known = registration.availability_map();
        {
            let mut state = self.inner.state.get_mut_ref();
            for (capability_id, available) in known {
                state
                    .known_availability
                    .insert((registration.id.clone(), capability_id), available);
            }
        }
        self.emit([
            SurfaceEvent::ComponentRegistered {
                registration_id: registration.id.clone(),
                component_type: registration.def.component_type.clone(),
                instance_id: registration.instance_id.clone(),
            },
            SurfaceEvent::SurfaceChanged {
                surface_version: version,
            },
        ]);
        Ok(ComponentHandle {
            surface: Rc::downgrade(&self.inner),
            registration_id: Some(registration.id),
        })
    }

    /// Unregisters by registration id, leaving a tombstone; in-flight non-navigation calls
    /// of that component settle `COMPONENT_UNMOUNTED`.
    pub fn unregister(&self, registration_id: &str) -> bool {
        let now = self.now();
        let (registration, version) = {
            let mut state = self.inner.state.get_mut_ref();
            let Some(index) = state
                .registrations
                .iter()
                .position(|r| r.id == registration_id)
            else {
                return false;
            };
            let registration = state.registrations.remove(index);
            state
                .known_availability
                .retain(|(reg, _), _| reg != registration_id);
            state.tombstones.push(Tombstone {
                registration_id: registration.id.clone(),
                instance_id: registration.instance_id.clone(),
                capability_ids: registration.capability_ids(),
                at_ms: now,
            });
            if state.tombstones.len() > TOMBSTONE_CAPACITY {
                state.tombstones.remove(0);
            }
            (registration, Self::bump(&mut state))
        };
        registration.lifecycle.unmount();
        self.emit([
            SurfaceEvent::ComponentUnregistered {
                registration_id: registration.id.clone(),
                component_type: registration.def.component_type.clone(),
                instance_id: registration.instance_id.clone(),
            },
            SurfaceEvent::SurfaceChanged {
                surface_version: version,
            },
        ]);
        true
    }

    /// Whether a live tombstone matches (expired ones are dropped first). Looked at in place:
    /// a list of copies was cloned and dropped for each question.
    pub(crate) fn any_tombstone(&self, matches: &dyn Fn(&Tombstone) -> bool) -> bool {
        let now = self.now();
        let mut state = self.inner.state.get_mut_ref();
        state
            .tombstones
            .retain(|t| now - t.at_ms < TOMBSTONE_TTL_MS);
        state.tombstones.iter().any(matches)
    }

    pub(crate) fn registrations(&self) -> Vec<Registration> {
        self.inner.state.get_ref().registrations.clone()
    }

    /// Applies a pushed update; bumps the version only when something actually changed.
    pub fn update(&self, registration_id: &str, update: ComponentUpdate) -> bool {
        let changed = {
            let mut state = self.inner.state.get_mut_ref();
            let Some(registration) = state.registration_mut(registration_id) else {
                return false;
            };
            let mut changed = false;
            if let Some(enabled) = update.enabled.filter(|&e| e != registration.enabled) {
                registration.enabled = enabled;
                changed = true;
            }
            for (capability_id, pushed) in update.availability {
                let previous = if pushed.available {
                    registration.overrides.remove(&capability_id)
                } else {
                    registration.overrides.insert(capability_id, pushed.clone())
                };
                changed |= match previous {
                    Some(previous) => pushed.available || previous != pushed,
                    None => !pushed.available,
                };
            }
            changed
        };
        if !changed {
            return false;
        }
        let version = Self::bump(&mut self.inner.state.get_mut_ref());
        let flips = self.availability_flips();
        self.emit(flips.into_iter().chain([SurfaceEvent::SurfaceChanged {
            surface_version: version,
        }]));
        true
    }

    /// Replaces a live registration's definition and keeps its id (a UI binding calls this on
    /// every render). Handlers, `when`, reasons, `bind` and `describe` are swapped silently;
    /// only a structural change bumps the version, emits `surface-changed` and recaptures bound
    /// keys. Availability flips are reported either way. The type and instance must stay (to
    /// change them, unregister and register). `Ok(true)` when the structure changed.
    pub fn replace(
        &self,
        registration_id: &str,
        def: ComponentDef,
    ) -> Result<bool, DefinitionError> {
        definition::validate(&def, &*self.inner.patterns)?;
        let instance_id = def
            .instance_id
            .clone()
            .unwrap_or_else(|| ids::DEFAULT_INSTANCE_ID.into());
        let Some(old) = self
            .inner
            .state
            .get_ref()
            .registrations
            .iter()
            .find(|r| r.id == registration_id)
            .cloned()
        else {
            return Ok(false);
        };
        if old.def.component_type != def.component_type || old.instance_id != instance_id {
            return Err(DefinitionError {
                code: DefinitionErrorCode::InvalidDefinition,
                message: "a replacement keeps the component type and instance; unregister and register instead".into(),
            });
        }
        let structural = !definition::same_structure(&old.def, &def);
        let bound = structural.then(|| Rc::new(definition::capture_bound_keys(&def)));
        let version = {
            let mut state = self.inner.state.get_mut_ref();
            let Some(registration) = state.registration_mut(registration_id) else {
                return Ok(false);
            };
            if def.enabled != old.def.enabled {
                registration.enabled = def.enabled;
            }
            registration.def = Rc::new(def);
            if let Some(bound) = bound {
                registration.bound = bound;
            }
            structural.then(|| Self::bump(&mut state))
        };
        let flips = self.availability_flips();
        let changed =
            version.map(|surface_version| SurfaceEvent::SurfaceChanged { surface_version });
        self.emit(flips.into_iter().chain(changed));
        Ok(structural)
    }

    /// Re-evaluates every `when` and emits `availability-changed` for the capabilities that
    /// flipped since last seen. Lazy drift does not bump the version (agent-surface §3.5);
    /// the host calls this after each UI commit so the settle-wait sees the flip.
    pub fn recheck_availability(&self) -> bool {
        let flips = self.availability_flips();
        let flipped = flips.is_some();
        self.emit(flips);
        flipped
    }

    /// Re-evaluates availability and records it; the event names what flipped, if anything.
    fn availability_flips(&self) -> Option<SurfaceEvent> {
        let registrations = self.registrations();
        let mut evaluated = Vec::with_capacity(registrations.len());
        for r in &registrations {
            evaluated.push((r.id.clone(), r.availability_map()));
        }
        let mut flipped = Vec::new();
        {
            let mut state = self.inner.state.get_mut_ref();
            for (registration_id, map) in evaluated {
                for (capability_id, available) in map {
                    let key = (registration_id.clone(), capability_id.clone());
                    if state.known_availability.insert(key, available) != Some(available) {
                        flipped.push(capability_id);
                    }
                }
            }
        }
        (!flipped.is_empty()).then_some(SurfaceEvent::AvailabilityChanged {
            capability_ids: flipped,
        })
    }
}
