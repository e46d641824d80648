//! The `Conversation` store for assistant-ui's external-store runtime: the core reducer
//! behind `getState`/`subscribe`, turns run with `fetch`, cancelled through an
//! `AbortController`, and threads restored from the server.

use super::convert::{from_js, get, opt_function, opt_string, string, type_error, typed_to_js};
use super::platform::{get_json, FetchTransport, PerformanceClock, Signal};
use super::surface::core_surface;
use super::turn::{
    catalog_mode, messages_from_js, mint_id, outcome_to_js, route_floors, JsObserver, JsUi, Run,
};
use dpas_host_core::conversation;
use dpas_host_core::settle::{Clock, SettlePolicy};
use dpas_host_core::turn::{TurnEvent, TurnObserver, TurnOptions, TurnOutcome, TurnStatus};
use dpas_protocol::frame::decode_usage;
use dpas_protocol::tool::CatalogMode;
use dpas_protocol::{ErrorBody, Frame, RouteFloors};
use futures_util::future::join;
use js_sys::Function;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use wasm_bindgen::prelude::*;

struct Options {
    endpoint: String,
    threads_endpoint: String,
    surface: dpas_host_core::registry::Surface,
    get_pathname: Function,
    route_floors: Option<RouteFloors>,
    until: Option<Function>,
    confirm: Option<Function>,
    on_event: Option<Function>,
}

struct Inner {
    options: Options,
    store: RefCell<conversation::Conversation>,
    /// Bumped by `reset`/`restore`: a turn of an older generation no longer writes.
    generation: Cell<u64>,
    listeners: RefCell<Vec<(u32, Function)>>,
    next_listener: Cell<u32>,
    snapshot: RefCell<Option<JsValue>>,
    controller: RefCell<Option<web_sys::AbortController>>,
    model_id: RefCell<Option<String>>,
    catalog_mode: Cell<CatalogMode>,
}

impl Inner {
    /// The store changed: drop the cached snapshot and tell every listener.
    fn changed(&self) {
        self.snapshot.borrow_mut().take();
        let listeners: Vec<Function> = self
            .listeners
            .borrow()
            .iter()
            .map(|(_, f)| f.clone())
            .collect();
        for listener in listeners {
            let _ = listener.call0(&JsValue::UNDEFINED);
        }
    }

    fn abort(&self) {
        if let Some(controller) = self.controller.borrow_mut().take() {
            controller.abort();
        }
    }

    fn replace_store(&self, store: conversation::Conversation) {
        self.abort();
        self.generation.set(self.generation.get() + 1);
        *self.store.borrow_mut() = store;
        self.changed();
    }
}

/// Feeds the reducer with the running turn's frames and events, then tells JS.
struct StoreObserver {
    inner: Rc<Inner>,
    generation: u64,
    js: JsObserver,
}

impl StoreObserver {
    fn current(&self) -> bool {
        self.inner.generation.get() == self.generation
    }
}

impl TurnObserver for StoreObserver {
    fn on_frame(&self, frame: &Frame, raw: Option<&str>) {
        if !self.current() {
            return;
        }
        self.inner
            .store
            .borrow_mut()
            .observe_frame(frame, PerformanceClock.now_ms());
        self.inner.changed();
        self.js.on_frame(frame, raw);
    }

    fn on_event(&self, event: &TurnEvent) {
        if !self.current() {
            return;
        }
        self.inner
            .store
            .borrow_mut()
            .observe_event(event, PerformanceClock.now_ms());
        self.inner.changed();
        self.js.on_event(event);
    }
}

/// A chat conversation bound to one surface.
#[wasm_bindgen]
pub struct Conversation {
    inner: Rc<Inner>,
}

fn busy(history: Vec<dpas_protocol::WireModelMessage>) -> TurnOutcome {
    TurnOutcome {
        status: TurnStatus::Error,
        messages: history,
        usage: None,
        error: Some(ErrorBody {
            code: "TURN_IN_PROGRESS".into(),
            message: "A turn is already running in this conversation.".into(),
        }),
    }
}

async fn send(inner: Rc<Inner>, text: String) -> Result<JsValue, JsValue> {
    let Some(messages) = inner.store.borrow_mut().begin_turn(&text) else {
        let history = inner.store.borrow().history().to_vec();
        return Ok(outcome_to_js(&busy(history)));
    };
    inner.changed();
    let controller = web_sys::AbortController::new()?;
    let signal = controller.signal();
    *inner.controller.borrow_mut() = Some(controller);
    let options = &inner.options;
    let pathname = options
        .get_pathname
        .call0(&JsValue::UNDEFINED)
        .ok()
        .and_then(|p| p.as_string())
        .unwrap_or_else(|| "/".into());
    let run = Run {
        surface: options.surface.clone(),
        transport: FetchTransport {
            endpoint: options.endpoint.clone(),
            signal: Some(signal.clone()),
        },
        signal: Signal(Some(signal.clone())),
        ui: JsUi {
            pathname: Some(options.get_pathname.clone()),
            fallback_pathname: pathname.clone(),
            until: options.until.clone(),
            confirm: options.confirm.clone(),
            signal: Some(signal),
        },
    };
    let turn = TurnOptions {
        conversation_id: inner.store.borrow().state().conversation_id.clone(),
        turn_id: mint_id("trn_"),
        messages,
        pathname,
        route_floors: options.route_floors.clone(),
        model_id: inner.model_id.borrow().clone(),
        catalog_mode: inner.catalog_mode.get(),
        settle: SettlePolicy::default(),
    };
    let observer = StoreObserver {
        inner: inner.clone(),
        generation: inner.generation.get(),
        js: JsObserver {
            on_frame: None,
            on_event: options.on_event.clone(),
        },
    };
    let outcome = run.run(turn, &observer).await;
    if observer.current() {
        inner.controller.borrow_mut().take();
        inner.store.borrow_mut().finish_turn(&outcome);
        inner.changed();
    }
    Ok(outcome_to_js(&outcome))
}

async fn restore(inner: Rc<Inner>, conversation_id: String) -> Result<JsValue, JsValue> {
    let encoded: String = js_sys::encode_uri_component(&conversation_id).into();
    let thread_url = [inner.options.threads_endpoint.as_str(), "/", &encoded].concat();
    let messages_url = [thread_url.as_str(), "/model-messages"].concat();
    // The messages and the thread's metadata (which carries its summed usage), together.
    let (body, thread) = join(get_json(&messages_url), get_json(&thread_url)).await;
    let body = body.map_err(|status| {
        JsValue::from(js_sys::Error::new(
            &[
                "Could not load the thread (HTTP ",
                &status.to_string(),
                ").",
            ]
            .concat(),
        ))
    })?;
    let messages = messages_from_js(&body)?;
    // Usage is what the meter shows, not what the conversation needs: a thread whose
    // metadata cannot be read (or has no usage yet) is restored without it.
    let usage = thread
        .ok()
        .and_then(|thread| from_js(get(&thread, "usage")).ok())
        .and_then(decode_usage);
    inner.replace_store(conversation::Conversation::restore(
        conversation_id,
        messages,
        usage,
    ));
    Ok(JsValue::UNDEFINED)
}

#[wasm_bindgen]
impl Conversation {
    #[wasm_bindgen(constructor)]
    pub fn new(
        #[wasm_bindgen(unchecked_param_type = "ConversationOptions")] options: JsValue,
    ) -> Result<Conversation, JsValue> {
        let what = "ConversationOptions";
        if !options.is_object() {
            return Err(type_error("Conversation needs an options object"));
        }
        let get_pathname = opt_function(&options, "getPathname", what)?
            .ok_or_else(|| type_error("ConversationOptions.getPathname must be a function"))?;
        let parsed = Options {
            endpoint: string(&options, "endpoint", what)?,
            threads_endpoint: opt_string(&options, "threadsEndpoint", what)?
                .unwrap_or_else(|| "/api/threads".into()),
            surface: core_surface(&get(&options, "surface"))?,
            get_pathname,
            route_floors: route_floors(&get(&options, "routeScopes"))?,
            until: opt_function(&options, "until", what)?,
            confirm: opt_function(&options, "confirm", what)?,
            on_event: opt_function(&options, "onEvent", what)?,
        };
        let mode = catalog_mode(opt_string(&options, "catalogMode", what)?.as_deref())?;
        Ok(Conversation {
            inner: Rc::new(Inner {
                options: parsed,
                store: RefCell::new(conversation::Conversation::new(mint_id("cnv_"))),
                generation: Cell::new(0),
                listeners: RefCell::new(Vec::new()),
                next_listener: Cell::new(0),
                snapshot: RefCell::new(None),
                controller: RefCell::new(None),
                model_id: RefCell::new(opt_string(&options, "modelId", what)?),
                catalog_mode: Cell::new(mode),
            }),
        })
    }

    /// The current state; the same object until the store changes (for `useSyncExternalStore`).
    #[wasm_bindgen(js_name = getState, unchecked_return_type = "ConversationState")]
    pub fn get_state(&self) -> JsValue {
        let mut snapshot = self.inner.snapshot.borrow_mut();
        snapshot
            .get_or_insert_with(|| typed_to_js(self.inner.store.borrow().state()))
            .clone()
    }

    /// Listens to every change; returns the unsubscribe function.
    #[wasm_bindgen(unchecked_return_type = "() => void")]
    pub fn subscribe(
        &self,
        #[wasm_bindgen(unchecked_param_type = "() => void")] listener: Function,
    ) -> JsValue {
        let id = self.inner.next_listener.get();
        self.inner.next_listener.set(id + 1);
        self.inner.listeners.borrow_mut().push((id, listener));
        let inner = Rc::downgrade(&self.inner);
        Closure::<dyn FnMut()>::new(move || {
            if let Some(inner) = inner.upgrade() {
                inner.listeners.borrow_mut().retain(|(i, _)| *i != id);
            }
        })
        .into_js_value()
    }

    /// Sends a user message and runs the turn.
    #[wasm_bindgen(unchecked_return_type = "Promise<TurnResult>")]
    pub fn send(&self, text: String) -> js_sys::Promise {
        super::convert::promise(send(self.inner.clone(), text))
    }

    /// Cancels the running turn, if any; its `send` resolves `cancelled`.
    pub fn cancel(&self) {
        self.inner.abort();
    }

    /// Loads `/api/threads/:id/model-messages`, and the summed usage from `/api/threads/:id`
    /// when it can be read, and continues that thread.
    #[wasm_bindgen(unchecked_return_type = "Promise<void>")]
    pub fn restore(
        &self,
        #[wasm_bindgen(js_name = conversationId)] conversation_id: String,
    ) -> js_sys::Promise {
        super::convert::promise(restore(self.inner.clone(), conversation_id))
    }

    /// A new conversation id and an empty history (a running turn is cancelled).
    pub fn reset(&self) {
        self.inner
            .replace_store(conversation::Conversation::new(mint_id("cnv_")));
    }

    #[wasm_bindgen(js_name = setModelId)]
    pub fn set_model_id(&self, id: Option<String>) {
        *self.inner.model_id.borrow_mut() = id;
    }

    #[wasm_bindgen(js_name = setCatalogMode)]
    pub fn set_catalog_mode(
        &self,
        #[wasm_bindgen(unchecked_param_type = "\"direct\" | \"meta\"")] mode: String,
    ) -> Result<(), JsValue> {
        self.inner.catalog_mode.set(catalog_mode(Some(&mode))?);
        Ok(())
    }
}
