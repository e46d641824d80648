//! [`ConversationDriver`]: a chat conversation's orchestration over the platform traits. One
//! turn at a time (a second `send` answers `TURN_IN_PROGRESS`), each turn's cancellation, the
//! generation counter that stops a turn outlived by `reset`/`restore` from writing, and the
//! restore of a stored thread. The [`Conversation`] reducer holds the state; the
//! binding builds each turn's platform parts ([`TurnParts`]) and converts, nothing more.

use crate::cell::Access;
use crate::conversation::Conversation;
use crate::registry::Surface;
use crate::settle::{Clock, SettlePolicy, TaskYield};
use crate::turn::{
    body, run_turn, AbortSignal, Transport, TurnEnv, TurnEvent, TurnObserver, TurnOptions,
    TurnOutcome, TurnStatus, TurnUi,
};
use dpas_protocol::frame::{decode_messages, decode_usage};
use dpas_protocol::json::Value;
use dpas_protocol::tool::CatalogMode;
use dpas_protocol::{Frame, HostError, HostErrorCode, RouteFloors, Usage};
use futures_util::future::LocalBoxFuture;
use std::cell::{Cell, Ref, RefCell};
use std::rc::Rc;

/// A stored thread as read: its model messages (`Err`: the HTTP status, 0 when unreachable),
/// and its summed usage when that can be read.
pub type StoredThread = (Result<Value, u16>, Option<Value>);

/// Where stored threads are read from: in the browser `GET /api/threads/:id/model-messages`
/// and `GET /api/threads/:id`, together.
pub trait ThreadSource {
    fn load(&self, conversation_id: &str) -> LocalBoxFuture<'static, StoredThread>;
}

/// What one turn runs against, made by the binding as the turn starts.
pub struct TurnParts {
    pub turn_id: String,
    /// The window's pathname as the turn starts.
    pub pathname: String,
    pub transport: Box<dyn Transport>,
    pub signal: Box<dyn AbortSignal>,
    pub ui: Box<dyn TurnUi>,
    /// Cancels this turn: its requests, its running handlers, its pending confirmation.
    pub abort: Box<dyn Fn()>,
}

/// Why [`ConversationDriver::restore`] failed; the conversation is left as it was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RestoreError {
    /// The messages could not be loaded: the HTTP status, 0 when unreachable.
    Unavailable(u16),
    /// The server answered something that is not model messages.
    Malformed,
}

/// What every turn of a conversation shares.
pub struct DriverOptions {
    pub surface: Surface,
    pub clock: Rc<dyn Clock>,
    pub yielder: Rc<dyn TaskYield>,
    pub threads: Rc<dyn ThreadSource>,
    pub route_floors: Option<RouteFloors>,
    /// Told after every change of the store, once its borrow is released.
    pub on_change: Box<dyn Fn()>,
    /// Also sees the frames and loop events of the current generation (the app's `onEvent`).
    pub observer: Box<dyn TurnObserver>,
}

/// A chat conversation bound to one surface: the reducer behind it, and its turns.
pub struct ConversationDriver {
    options: DriverOptions,
    store: RefCell<Conversation>,
    /// Bumped by `reset`/`restore`: a turn of an older generation no longer writes.
    generation: Cell<u64>,
    abort: RefCell<Option<Box<dyn Fn()>>>,
    model_id: RefCell<Option<String>>,
    catalog_mode: Cell<CatalogMode>,
}

/// The outcome of a `send` refused because a turn is running: the history as it stands.
fn busy(history: Vec<dpas_protocol::WireModelMessage>) -> TurnOutcome {
    TurnOutcome {
        status: TurnStatus::Error,
        messages: history,
        usage: None,
        error: Some(body(HostError::of(HostErrorCode::TurnInProgress))),
    }
}

/// Feeds the reducer with the running turn's frames and events while its generation is
/// current, then the app's observer.
struct StoreObserver {
    driver: Rc<ConversationDriver>,
    generation: u64,
}

impl StoreObserver {
    fn current(&self) -> bool {
        self.driver.generation.get() == self.generation
    }
}

impl TurnObserver for StoreObserver {
    fn on_frame(&self, frame: &Frame, raw: Option<&str>) {
        if !self.current() {
            return;
        }
        let now = self.driver.options.clock.now_ms();
        self.driver.store.get_mut_ref().observe_frame(frame, now);
        (self.driver.options.on_change)();
        self.driver.options.observer.on_frame(frame, raw);
    }

    fn on_event(&self, event: &TurnEvent) {
        if !self.current() {
            return;
        }
        let now = self.driver.options.clock.now_ms();
        self.driver.store.get_mut_ref().observe_event(event, now);
        (self.driver.options.on_change)();
        self.driver.options.observer.on_event(event);
    }
}

/// What [`ConversationDriver::start`] made of a message.
pub enum Started {
    /// A turn is running: the history as it stands, answered `TURN_IN_PROGRESS`.
    Busy(TurnOutcome),
    /// A resume with nothing to answer: no turn was started.
    Idle,
    /// The turn to run, and its options.
    Running(Box<DriverTurn>, TurnOptions),
}

/// A conversation's admitted turn: its platform parts, and the observer that feeds the store
/// while its generation is current.
pub struct DriverTurn {
    transport: Box<dyn Transport>,
    signal: Box<dyn AbortSignal>,
    ui: Box<dyn TurnUi>,
    observer: StoreObserver,
}

impl DriverTurn {
    /// What the turn runs against.
    pub fn env(&self) -> TurnEnv<'_> {
        let options = &self.observer.driver.options;
        TurnEnv {
            surface: &options.surface,
            transport: &*self.transport,
            clock: &*options.clock,
            yielder: &*options.yielder,
            signal: &*self.signal,
            ui: &*self.ui,
            observer: &self.observer,
        }
    }

    /// The turn ended: its outcome into the store, unless `reset`/`restore` outlived it.
    pub fn finish(&self, outcome: &TurnOutcome) {
        if self.observer.current() {
            let driver = &self.observer.driver;
            driver.abort.get_mut_ref().take();
            driver.store.get_mut_ref().finish_turn(outcome);
            (driver.options.on_change)();
        }
    }
}

impl ConversationDriver {
    pub fn new(
        conversation_id: String,
        model_id: Option<String>,
        catalog_mode: CatalogMode,
        options: DriverOptions,
    ) -> Rc<Self> {
        Rc::new(Self {
            options,
            store: RefCell::new(Conversation::new(conversation_id)),
            generation: Cell::new(0),
            abort: RefCell::new(None),
            model_id: RefCell::new(model_id),
            catalog_mode: Cell::new(catalog_mode),
        })
    }

    /// The reducer (its `state()` is what the app renders).
    pub fn store(&self) -> Ref<'_, Conversation> {
        self.store.get_ref()
    }

    pub fn set_model_id(&self, model_id: Option<String>) {
        *self.model_id.get_mut_ref() = model_id;
    }

    pub fn set_catalog_mode(&self, mode: CatalogMode) {
        self.catalog_mode.set(mode);
    }

    /// Cancels the running turn, if any; its `send` resolves `cancelled`.
    pub fn cancel(&self) {
        let abort = self.abort.get_mut_ref().take();
        if let Some(abort) = abort {
            abort();
        }
    }

    /// A new conversation with an empty history; a running turn is cancelled and stops writing.
    pub fn reset(&self, conversation_id: String) {
        self.replace_store(Conversation::new(conversation_id));
    }

    fn replace_store(&self, store: Conversation) {
        self.cancel();
        self.generation.set(self.generation.get() + 1);
        *self.store.get_mut_ref() = store;
        (self.options.on_change)();
    }

    /// Sends a user message and runs the turn. `begin` makes the turn's platform parts once
    /// the turn is admitted; its error ends `send` with the turn left open, as it was.
    pub async fn send<E>(
        self: Rc<Self>,
        text: &str,
        begin: impl FnOnce() -> Result<TurnParts, E>,
    ) -> Result<TurnOutcome, E> {
        let (turn, options) = match self.start(Some(text), begin)? {
            Started::Busy(outcome) => return Ok(outcome),
            // Not for a message: `begin_turn` either starts or is busy.
            Started::Idle => return Ok(busy(self.store.get_ref().history().to_vec())),
            Started::Running(turn, options) => (turn, options),
        };
        let outcome = run_turn(&turn.env(), options).await;
        turn.finish(&outcome);
        Ok(outcome)
    }

    /// [`send`](Self::send) up to the turn: the user message into the store, the turn's
    /// parts made and its options; a busy conversation's answer instead. Synchronous, so a
    /// binding can run the turn in its own future rather than a nested one (the crate's size
    /// rule); then [`DriverTurn::env`], `run_turn`, [`DriverTurn::finish`].
    ///
    /// Without a `text` the turn resumes a restored thread: it answers the browser calls the
    /// history's last assistant message left unanswered, asking for confirmation where a
    /// capability requires it, then goes on as any turn ([`Started::Idle`] when nothing is
    /// unanswered or a turn runs).
    pub fn start<E>(
        self: &Rc<Self>,
        text: Option<&str>,
        begin: impl FnOnce() -> Result<TurnParts, E>,
    ) -> Result<Started, E> {
        let begun = match text {
            Some(text) => self
                .store
                .get_mut_ref()
                .begin_turn(text)
                .map(|messages| (messages, Vec::new())),
            None => self.store.get_mut_ref().begin_resume(),
        };
        let Some((messages, resume)) = begun else {
            if text.is_none() {
                return Ok(Started::Idle);
            }
            let history = self.store.get_ref().history().to_vec();
            return Ok(Started::Busy(busy(history)));
        };
        (self.options.on_change)();
        let parts = begin()?;
        *self.abort.get_mut_ref() = Some(parts.abort);
        let options = TurnOptions {
            conversation_id: self.store.get_ref().state().conversation_id.clone(),
            turn_id: parts.turn_id,
            messages,
            pathname: parts.pathname,
            route_floors: self.options.route_floors.clone(),
            model_id: self.model_id.get_ref().clone(),
            catalog_mode: self.catalog_mode.get(),
            settle: SettlePolicy::default(),
            resume,
        };
        let turn = DriverTurn {
            transport: parts.transport,
            signal: parts.signal,
            ui: parts.ui,
            observer: StoreObserver {
                driver: self.clone(),
                generation: self.generation.get(),
            },
        };
        Ok(Started::Running(Box::new(turn), options))
    }

    /// Loads a stored thread's messages, and its summed usage when it can be read, and
    /// continues that thread (a running turn is cancelled and stops writing).
    pub async fn restore(self: Rc<Self>, conversation_id: String) -> Result<(), RestoreError> {
        let loaded = self.options.threads.load(&conversation_id).await;
        self.restored(conversation_id, loaded)
    }

    /// [`restore`](Self::restore) in two halves, so a binding awaits the load in its own
    /// future: the thread's load, started.
    pub fn load(&self, conversation_id: &str) -> LocalBoxFuture<'static, StoredThread> {
        self.options.threads.load(conversation_id)
    }

    /// The loaded thread taken in, or why not (the conversation is then left as it was).
    pub fn restored(
        &self,
        conversation_id: String,
        (messages, usage): StoredThread,
    ) -> Result<(), RestoreError> {
        let messages = decode_messages(messages.map_err(RestoreError::Unavailable)?)
            .ok_or(RestoreError::Malformed)?;
        // Usage is what the meter shows, not what the conversation needs: a thread whose
        // metadata cannot be read (or has no usage yet) is restored without it.
        let usage: Option<Usage> = usage.and_then(decode_usage);
        self.replace_store(Conversation::restore(conversation_id, messages, usage));
        Ok(())
    }
}

#[cfg(test)]
mod tests;
