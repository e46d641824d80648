//! Surface events and their delivery: after the mutation that caused them, in order, with
//! re-entrant emissions queued rather than nested.

use crate::cell::Access;
use crate::envelope::ErrorCode;
use crate::version::SurfaceVersion;
use std::cell::{Cell, RefCell};
use std::rc::Rc;

/// What a subscriber hears.
#[derive(Debug, Clone, PartialEq)]
pub enum SurfaceEvent {
    /// Any surface-affecting mutation; carries the new version.
    SurfaceChanged { surface_version: SurfaceVersion },
    /// Capabilities whose availability flipped.
    AvailabilityChanged { capability_ids: Vec<String> },
    ComponentRegistered {
        registration_id: String,
        component_type: String,
        instance_id: String,
    },
    ComponentUnregistered {
        registration_id: String,
        component_type: String,
        instance_id: String,
    },
    ComponentRejected {
        component_type: String,
        instance_id: String,
        reason: String,
    },
    InvocationStarted {
        invocation_id: String,
        capability_id: String,
    },
    InvocationSettled {
        invocation_id: String,
        capability_id: String,
        ok: bool,
        code: Option<ErrorCode>,
    },
}

impl SurfaceEvent {
    /// The wire-style event name.
    pub fn name(&self) -> &'static str {
        match self {
            Self::SurfaceChanged { .. } => "surface-changed",
            Self::AvailabilityChanged { .. } => "availability-changed",
            Self::ComponentRegistered { .. } => "component-registered",
            Self::ComponentUnregistered { .. } => "component-unregistered",
            Self::ComponentRejected { .. } => "component-rejected",
            Self::InvocationStarted { .. } => "invocation-started",
            Self::InvocationSettled { .. } => "invocation-settled",
        }
    }

    /// Whether the settle-wait treats this event as the UI still moving (J6).
    pub fn moves_surface(&self) -> bool {
        matches!(
            self,
            Self::SurfaceChanged { .. } | Self::AvailabilityChanged { .. }
        )
    }
}

/// A subscription, for `unsubscribe`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SubscriptionId(u64);

type Listener = Rc<dyn Fn(&SurfaceEvent)>;

#[derive(Default)]
pub(crate) struct EventBus {
    listeners: RefCell<Vec<(SubscriptionId, Listener)>>,
    next_id: Cell<u64>,
    /// Events not yet delivered, in order. A `Vec` taken a batch at a time, not a `VecDeque`
    /// popped one by one: the same order (what a listener emits goes behind the whole batch
    /// being delivered), one collection type less in the wasm.
    queue: RefCell<Vec<SurfaceEvent>>,
    draining: Cell<bool>,
}

impl EventBus {
    pub(crate) fn subscribe(&self, listener: Listener) -> SubscriptionId {
        let id = SubscriptionId(self.next_id.get());
        self.next_id.set(id.0 + 1);
        self.listeners.get_mut_ref().push((id, listener));
        id
    }

    pub(crate) fn unsubscribe(&self, id: SubscriptionId) -> bool {
        let mut listeners = self.listeners.get_mut_ref();
        let before = listeners.len();
        listeners.retain(|(existing, _)| *existing != id);
        listeners.len() != before
    }

    /// Delivers one mutation's events, in order, to the listeners registered at delivery; an
    /// emission from inside a listener is queued behind the whole current batch.
    pub(crate) fn emit(&self, events: impl IntoIterator<Item = SurfaceEvent>) {
        // `push` one by one: `extend` would instantiate the bulk copy for each caller's
        // iterator type.
        let mut queue = self.queue.get_mut_ref();
        for event in events {
            queue.push(event);
        }
        drop(queue);
        self.drain();
    }

    /// Apart from `emit`, which is generic over its events: one copy of the loop, not one per
    /// caller's iterator type.
    fn drain(&self) {
        if self.draining.replace(true) {
            return;
        }
        loop {
            let batch = std::mem::take(&mut *self.queue.get_mut_ref());
            if batch.is_empty() {
                break;
            }
            for event in batch {
                let mut listeners: Vec<Listener> = Vec::new();
                for (_, listener) in self.listeners.get_ref().iter() {
                    listeners.push(listener.clone());
                }
                for listener in listeners {
                    listener(&event);
                }
            }
        }
        self.draining.set(false);
    }
}
