//! The Agent Surface registry (agent-surface §3.5–§3.9, the subset a host needs): components
//! register capabilities while mounted, availability is evaluated live, every mutation bumps
//! `surfaceVersion` and emits events, and `invoke` runs the invocation pipeline.

mod definition;
mod events;
mod invoke;
mod snapshot;
mod state;

#[cfg(test)]
mod tests;

pub use definition::{DefinitionError, DefinitionErrorCode};
pub use events::{SubscriptionId, SurfaceEvent};
pub use snapshot::{
    ActionSnapshot, BoundFieldSnapshot, ComponentSnapshot, ObservationSnapshot, ProcedureContext,
    ProcedureSnapshot, Snapshot, SnapshotOptions,
};
pub use state::{InvokeRequest, PushedAvailability, Surface};

pub use crate::version::SurfaceVersion;

use crate::capability::{ComponentDef, Handler};
use crate::cell::Access;
use crate::ids::{self, IdRng};
use crate::pattern::PatternEngine;
use crate::settle::Clock;
use crate::vec_map::VecMap;
use events::EventBus;
use state::{Inner, Registration, State, Tombstone};
use std::cell::RefCell;
use std::rc::{Rc, Weak};

/// Tombstones kept for late calls to unmounted components.
pub const TOMBSTONE_CAPACITY: usize = 100;
/// How long a tombstone answers `COMPONENT_UNMOUNTED`.
pub const TOMBSTONE_TTL_MS: f64 = 5.0 * 60.0 * 1000.0;

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
