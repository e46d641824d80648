//! The `Conversation` store for assistant-ui's external-store runtime: the core reducer
//! behind `getState`/`subscribe`, turns run with `fetch`, cancelled through an
//! `AbortController`, and threads restored from the server.

use super::convert::{from_js, get, type_error, typed_to_js, Fields};
use super::platform::{json_of, send_get, ChannelYield, FetchTransport, PerformanceClock, Signal};
use super::surface::core_surface;
use super::turn::{catalog_mode, mint_id, outcome_to_js, route_floors, JsObserver, JsUi};
use dpas_host_core::cell::Access;
use dpas_host_core::driver::{
    ConversationDriver, DriverOptions, RestoreError, Started, StoredThread, ThreadSource, TurnParts,
};
use dpas_host_core::turn::run_turn;
use dpas_protocol::json::Value;
use futures_util::future::LocalBoxFuture;
use futures_util::FutureExt;
use js_sys::Function;
use std::cell::RefCell;
use std::rc::Rc;
use wasm_bindgen::prelude::*;

/// What a turn needs from the app, read once from `ConversationOptions`.
struct Options {
    endpoint: String,
    get_pathname: Function,
    until: Option<Function>,
    confirm: Option<Function>,
}

#[wasm_bindgen(module = "/src/web/handler.js")]
extern "C" {
    /// The store's listeners, in JS (the handler snippet): `add` returns the unsubscribe
    /// function, `notify` calls every listener added before it (a throw is ignored). Smaller
    /// there than a list, its ids and a wasm-bindgen closure per unsubscribe.
    type ListenerSet;
    /// `catch` keeps the import behind the glue, as `yieldTask`'s does (platform.rs).
    #[wasm_bindgen(js_name = listeners, catch)]
    fn listener_set() -> Result<ListenerSet, JsValue>;
    #[wasm_bindgen(method)]
    fn add(this: &ListenerSet, listener: &Function) -> JsValue;
    #[wasm_bindgen(method)]
    fn notify(this: &ListenerSet);
}

/// The store's JS side: listeners, and the snapshot `getState` hands out until a change.
struct Listeners {
    set: ListenerSet,
    snapshot: RefCell<Option<JsValue>>,
}

impl Listeners {
    /// The store changed: drop the cached snapshot and tell every listener.
    fn changed(&self) {
        self.snapshot.get_mut_ref().take();
        self.set.notify();
    }
}

/// `GET {threadsEndpoint}/:id/model-messages` and `GET {threadsEndpoint}/:id` with the session
/// cookie.
struct FetchThreads {
    endpoint: String,
}

impl ThreadSource for FetchThreads {
    fn load(&self, conversation_id: &str) -> LocalBoxFuture<'static, StoredThread> {
        let encoded: String = js_sys::encode_uri_component(conversation_id).into();
        let thread_url = [self.endpoint.as_str(), "/", &encoded].concat();
        let messages_url = [thread_url.as_str(), "/model-messages"].concat();
        // The messages and the thread's metadata (which carries its usage): both requests are
        // on their way before either answer is read (awaited in turn, not through `join`).
        let messages = send_get(&messages_url);
        let thread = send_get(&thread_url);
        async move {
            let body = json_of(messages).await;
            let thread = json_of(thread).await;
            // Not JSON-shaped is not messages: the core refuses `null` as malformed.
            let messages = body.map(|body| from_js(body).unwrap_or(Value::Null));
            let usage = thread
                .ok()
                .and_then(|thread| from_js(get(&thread, "usage")).ok());
            (messages, usage)
        }
        .boxed_local()
    }
}

/// A chat conversation bound to one surface.
#[wasm_bindgen]
pub struct Conversation {
    options: Rc<Options>,
    driver: Rc<ConversationDriver>,
    listeners: Rc<Listeners>,
}

/// The platform parts of one turn: an `AbortController` of its own, so `cancel` also aborts
/// the fetch, the running handlers and a pending confirmation.
fn turn_parts(options: &Options) -> Result<TurnParts, JsValue> {
    let controller = web_sys::AbortController::new()?;
    let signal = controller.signal();
    let pathname = options
        .get_pathname
        .call0(&JsValue::UNDEFINED)
        .ok()
        .and_then(|p| p.as_string())
        .unwrap_or_else(|| "/".into());
    Ok(TurnParts {
        turn_id: mint_id("trn_"),
        pathname: pathname.clone(),
        transport: Box::new(FetchTransport {
            endpoint: options.endpoint.clone(),
            signal: Some(signal.clone()),
        }),
        signal: Box::new(Signal(Some(signal.clone()))),
        ui: Box::new(JsUi {
            pathname: Some(options.get_pathname.clone()),
            fallback_pathname: pathname,
            until: options.until.clone(),
            confirm: options.confirm.clone(),
            signal: Some(signal),
        }),
        abort: Box::new(move || controller.abort()),
    })
}

/// A message's turn, or with no `text` a restored thread's resumed one (`null` when there was
/// nothing to resume).
async fn send(
    driver: Rc<ConversationDriver>,
    options: Rc<Options>,
    text: Option<String>,
) -> Result<JsValue, JsValue> {
    // The driver's `send`, with the turn run in this future rather than in a nested one.
    let (turn, turn_options) = match driver.start(text.as_deref(), || turn_parts(&options))? {
        Started::Busy(outcome) => return Ok(outcome_to_js(&outcome)),
        Started::Idle => return Ok(JsValue::NULL),
        Started::Running(turn, turn_options) => (turn, turn_options),
    };
    let outcome = run_turn(&turn.env(), turn_options).await;
    turn.finish(&outcome);
    Ok(outcome_to_js(&outcome))
}

async fn restore(
    driver: Rc<ConversationDriver>,
    conversation_id: String,
) -> Result<JsValue, JsValue> {
    let loaded = driver.load(&conversation_id).await;
    match driver.restored(conversation_id, loaded) {
        Ok(()) => Ok(JsValue::UNDEFINED),
        Err(RestoreError::Unavailable(status)) => Err(js_sys::Error::new(
            &[
                "Could not load the thread (HTTP ",
                // As a u64, whose formatter the wasm already has (a `u16`'s is another).
                &u64::from(status).to_string(),
                ").",
            ]
            .concat(),
        )
        .into()),
        Err(RestoreError::Malformed) => Err(type_error(
            "messages must be model messages ({role, content})",
        )),
    }
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
        // Read in this order: the first bad field is the one a TypeError names.
        let mut f = Fields::new(&options, what);
        let get_pathname = f.function("getPathname");
        let endpoint = f.string("endpoint");
        let threads_endpoint = f
            .opt_string("threadsEndpoint")
            .unwrap_or_else(|| "/api/threads".into());
        let surface = f.get("surface");
        let surface = f.check(core_surface(&surface));
        let routes = f.get("routeScopes");
        let route_floors = f.check(route_floors(routes)).flatten();
        let until = f.opt_function("until");
        let confirm = f.opt_function("confirm");
        let on_event = f.opt_function("onEvent");
        let mode = f.opt_string("catalogMode");
        let mode = f.check(catalog_mode(mode.as_deref())).unwrap_or_default();
        let model_id = f.opt_string("modelId");
        f.done(())?;
        // `None` only when a field was refused, which `done` has returned.
        let Some(surface) = surface else {
            return Err(JsValue::UNDEFINED);
        };
        let listeners = Rc::new(Listeners {
            set: listener_set()?,
            snapshot: RefCell::new(None),
        });
        let told = listeners.clone();
        let driver = ConversationDriver::new(
            mint_id("cnv_"),
            model_id,
            mode,
            DriverOptions {
                surface,
                clock: Rc::new(PerformanceClock),
                yielder: Rc::new(ChannelYield),
                threads: Rc::new(FetchThreads {
                    endpoint: threads_endpoint,
                }),
                route_floors,
                on_change: Box::new(move || told.changed()),
                observer: Box::new(JsObserver {
                    on_frame: None,
                    on_event,
                }),
            },
        );
        Ok(Conversation {
            options: Rc::new(Options {
                endpoint,
                get_pathname,
                until,
                confirm,
            }),
            driver,
            listeners,
        })
    }

    /// The current state; the same object until the store changes (for `useSyncExternalStore`).
    #[wasm_bindgen(js_name = getState, unchecked_return_type = "ConversationState")]
    pub fn get_state(&self) -> JsValue {
        let mut snapshot = self.listeners.snapshot.get_mut_ref();
        snapshot
            .get_or_insert_with(|| typed_to_js(self.driver.store().state()))
            .clone()
    }

    /// Listens to every change; returns the unsubscribe function.
    #[wasm_bindgen(unchecked_return_type = "() => void")]
    pub fn subscribe(
        &self,
        #[wasm_bindgen(unchecked_param_type = "() => void")] listener: Function,
    ) -> JsValue {
        self.listeners.set.add(&listener)
    }

    /// Sends a user message and runs the turn.
    #[wasm_bindgen(unchecked_return_type = "Promise<TurnResult>")]
    pub fn send(&self, text: String) -> js_sys::Promise {
        super::convert::promise(send(self.driver.clone(), self.options.clone(), Some(text)))
    }

    /// After `restore`: answers the browser calls the thread's last assistant message left
    /// unanswered (a reload while a call waited for the user's confirmation asks again) and
    /// continues that turn. Resolves `null` when nothing is unanswered or a turn runs.
    #[wasm_bindgen(unchecked_return_type = "Promise<TurnResult | null>")]
    pub fn resume(&self) -> js_sys::Promise {
        super::convert::promise(send(self.driver.clone(), self.options.clone(), None))
    }

    /// Cancels the running turn, if any; its `send` resolves `cancelled`.
    pub fn cancel(&self) {
        self.driver.cancel();
    }

    /// Loads `/api/threads/:id/model-messages`, and the summed usage from `/api/threads/:id`
    /// when it can be read, and continues that thread.
    #[wasm_bindgen(unchecked_return_type = "Promise<void>")]
    pub fn restore(
        &self,
        #[wasm_bindgen(js_name = conversationId)] conversation_id: String,
    ) -> js_sys::Promise {
        super::convert::promise(restore(self.driver.clone(), conversation_id))
    }

    /// A new conversation id and an empty history (a running turn is cancelled).
    pub fn reset(&self) {
        self.driver.reset(mint_id("cnv_"));
    }

    #[wasm_bindgen(js_name = setModelId)]
    pub fn set_model_id(&self, id: Option<String>) {
        self.driver.set_model_id(id);
    }

    #[wasm_bindgen(js_name = setCatalogMode)]
    pub fn set_catalog_mode(
        &self,
        #[wasm_bindgen(unchecked_param_type = "\"direct\" | \"meta\"")] mode: String,
    ) -> Result<(), JsValue> {
        self.driver.set_catalog_mode(catalog_mode(Some(&mode))?);
        Ok(())
    }
}
