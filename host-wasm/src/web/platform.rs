//! The core's traits over the browser: `performance.now()`, `MessageChannel` task yields,
//! `fetch` with credentials and a streamed body, and `AbortSignal`.

use dpas_host_core::settle::{Clock, TaskYield};
use dpas_host_core::turn::{AbortSignal, StepResponse, Transport, TransportFailure};
use futures_util::future::LocalBoxFuture;
use futures_util::FutureExt;
use js_sys::{Promise, Uint8Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::{ReadableStreamDefaultReader, Response};

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_namespace = performance, js_name = now)]
    fn performance_now() -> f64;

    #[wasm_bindgen(js_namespace = Math, js_name = random)]
    fn math_random() -> f64;
}

/// 64 random bits for id seeds.
pub(crate) fn random_seed() -> u64 {
    let high = (math_random() * 4_294_967_296.0) as u64;
    let low = (math_random() * 4_294_967_296.0) as u64;
    (high << 32) | low
}

/// `performance.now()`.
pub(crate) struct PerformanceClock;

impl Clock for PerformanceClock {
    fn now_ms(&self) -> f64 {
        performance_now()
    }
}

/// One macrotask through a `MessageChannel` round trip: unlike `setTimeout(0)` it is not
/// clamped to 4 ms when nested, and it still lets rendering and other tasks run.
pub(crate) struct ChannelYield;

#[wasm_bindgen(module = "/src/web/handler.js")]
extern "C" {
    /// Resolves once a message posted through a fresh `MessageChannel` has arrived. The port
    /// is closed once it has served: in Node an open port with a listener keeps the event loop
    /// alive, and a script that ran a turn would never end. In JS (the handler snippet): the
    /// promise, the port's listener and the channel are smaller there than as wasm-bindgen
    /// closures and `web-sys` calls.
    /// `catch` keeps the import behind the glue: an import with nothing to convert is
    /// otherwise taken from the snippet module directly, a second import module that the
    /// build's name shortening (`scripts/lib/shorten-imports.mjs`) refuses.
    #[wasm_bindgen(js_name = yieldTask, catch)]
    fn channel_round_trip() -> Result<Promise, JsValue>;
}

/// A `MessageChannel` round trip. Where there is none, the promise rejects (the channel is
/// made in its executor) and the yield ignores that; the `Err` arm is for `catch` only.
pub(crate) fn yield_task() -> Promise {
    channel_round_trip().unwrap_or_else(|_| Promise::resolve(&JsValue::UNDEFINED))
}

impl TaskYield for ChannelYield {
    fn yield_task(&self) -> LocalBoxFuture<'static, ()> {
        let promise = yield_task();
        async move {
            let _ = JsFuture::from(promise).await;
        }
        .boxed_local()
    }
}

/// The caller's `AbortSignal`, if any.
pub(crate) struct Signal(pub(crate) Option<web_sys::AbortSignal>);

impl AbortSignal for Signal {
    fn aborted(&self) -> bool {
        self.0.as_ref().is_some_and(web_sys::AbortSignal::aborted)
    }
}

/// POSTs JSON to the chat endpoint with the session cookie, and streams the body.
pub(crate) struct FetchTransport {
    pub(crate) endpoint: String,
    pub(crate) signal: Option<web_sys::AbortSignal>,
}

/// A response body's chunks: one `reader.read()` in flight at a time. A stream of its own
/// rather than `stream::unfold` over an `async fn`, which is larger in the wasm.
struct Chunks {
    reader: ReadableStreamDefaultReader,
    read: Option<JsFuture>,
    done: bool,
}

impl futures_util::Stream for Chunks {
    type Item = Result<Vec<u8>, TransportFailure>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        let this = &mut *self;
        if this.done {
            return std::task::Poll::Ready(None);
        }
        let read = this
            .read
            .get_or_insert_with(|| JsFuture::from(this.reader.read()));
        let std::task::Poll::Ready(result) = read.poll_unpin(cx) else {
            return std::task::Poll::Pending;
        };
        this.read = None;
        std::task::Poll::Ready(match result {
            // A failed read (an abort, a dropped connection) ends the stream with a failure.
            Err(_) => {
                this.done = true;
                Some(Err(TransportFailure))
            }
            Ok(read) if super::convert::get(&read, "done").as_bool() == Some(true) => {
                this.done = true;
                None
            }
            // Not checked with `instanceof Uint8Array`: under jsdom (vitest) the global
            // `Uint8Array` is another realm's than the one Node's fetch hands out. Copying reads
            // it either way.
            Ok(read) => Some(Ok(super::convert::get(&read, "value")
                .unchecked_into::<Uint8Array>()
                .to_vec())),
        })
    }
}

#[wasm_bindgen(module = "/src/web/handler.js")]
extern "C" {
    /// `fetch(new Request(url, init))` with the session cookie (`credentials: "include"`): a
    /// POST of `body` as JSON when there is one, else a GET; with `signal` when given. A URL
    /// the `Request` refuses is `Err`. In JS (the handler snippet): the init object is smaller
    /// there than `web-sys`'s `RequestInit`, `Headers` and `Request` calls.
    #[wasm_bindgen(js_name = sendRequest, catch)]
    fn send_request(
        url: &str,
        body: Option<Uint8Array>,
        signal: Option<web_sys::AbortSignal>,
    ) -> Result<Promise, JsValue>;
}

/// The step's `fetch`, sent now: POST with the session cookie and the caller's signal.
fn send_post(
    endpoint: &str,
    signal: Option<&web_sys::AbortSignal>,
    body: &[u8],
) -> Result<JsFuture, TransportFailure> {
    // The body goes over as bytes: a string would be decoded from UTF-8 into a JS string
    // here and encoded back by `Request` (a 51 KB request at 128 capabilities pays both).
    send_request(endpoint, Some(Uint8Array::from(body)), signal.cloned())
        .map(JsFuture::from)
        .map_err(|_| TransportFailure)
}

/// The step's response: its status and its body as chunks.
fn step_response(fetched: Result<JsValue, JsValue>) -> Result<StepResponse, TransportFailure> {
    let response: Response = fetched
        .map_err(|_| TransportFailure)?
        .dyn_into()
        .map_err(|_| TransportFailure)?;
    let status = response.status();
    // The contract marks a step's stream `cache-control: no-store`, and Chromium cancels such a
    // request (DevTools: "(canceled)", net::ERR_ABORTED) after a script has read its body to
    // the end, in about one step of three. Once cloned, the body the script reads is one branch
    // of a tee inside the browser, and the request finishes. The clone is left unread.
    let _ = response.clone();
    let body = match response.body() {
        Some(stream) => {
            let reader: ReadableStreamDefaultReader = stream
                .get_reader()
                .dyn_into()
                .map_err(|_| TransportFailure)?;
            let chunks = Chunks {
                reader,
                read: None,
                done: false,
            };
            Some(futures_util::StreamExt::boxed_local(chunks))
        }
        None => None,
    };
    Ok(StepResponse { status, body })
}

impl Transport for FetchTransport {
    /// Sends the request at once; the future is the response. The work before and after the
    /// one await is in plain functions, not in an `async fn` holding all of it.
    fn post(
        &self,
        body: Vec<u8>,
    ) -> LocalBoxFuture<'static, Result<StepResponse, TransportFailure>> {
        let sent = send_post(&self.endpoint, self.signal.as_ref(), &body);
        async move { step_response(sent?.await) }.boxed_local()
    }
}

/// A GET with the session cookie, sent now; `Err(0)` when it cannot be made.
pub(crate) fn send_get(url: &str) -> Result<JsFuture, u16> {
    send_request(url, None, None)
        .map(JsFuture::from)
        .map_err(|_| 0u16)
}

/// The JSON body of a sent GET; `Err` carries the status (0 when unreachable).
pub(crate) async fn json_of(sent: Result<JsFuture, u16>) -> Result<JsValue, u16> {
    let response: Response = sent?
        .await
        .map_err(|_| 0u16)?
        .dyn_into()
        .map_err(|_| 0u16)?;
    if !response.ok() {
        return Err(response.status());
    }
    let json = response.json().map_err(|_| response.status())?;
    JsFuture::from(json).await.map_err(|_| response.status())
}
