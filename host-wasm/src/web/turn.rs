//! `runTurn(options)`: the options read from JS, the core loop over the browser's traits, and
//! frames and loop events handed back to JS.

use super::convert::{from_js, get, object, parse_js, to_js, type_error, typed_to_js, Fields};
use super::platform::{random_seed, ChannelYield, FetchTransport, PerformanceClock, Signal};
use super::surface::core_surface;
use dpas_host_core::capability::CancelToken;
use dpas_host_core::ids::IdRng;
use dpas_host_core::registry;
use dpas_host_core::settle::SettlePolicy;
use dpas_host_core::turn::{
    run_turn, ConfirmRequest, TurnEnv, TurnEvent, TurnObserver, TurnOptions, TurnOutcome,
    TurnStatus, TurnUi,
};
use dpas_protocol::json::Value;
use dpas_protocol::tool::CatalogMode;
use dpas_protocol::wire_name::is_browser_tool;
use dpas_protocol::{Frame, RouteFloors, WireModelMessage};
use futures_util::future::LocalBoxFuture;
use futures_util::FutureExt;
use js_sys::Function;
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;

/// The scope token every non-empty route floor starts with (the app shell).
const SHELL_SCOPE: &str = "app";

/// A fresh id such as `trn_k3j9x0a1b2c4` (12 base-36 characters).
pub(crate) fn mint_id(prefix: &str) -> String {
    [prefix, &IdRng::new(random_seed()).base36(12)].concat()
}

pub(crate) fn catalog_mode(value: Option<&str>) -> Result<CatalogMode, JsValue> {
    match value {
        None | Some("direct") => Ok(CatalogMode::Direct),
        Some("meta") => Ok(CatalogMode::Meta),
        Some(_) => Err(type_error("catalogMode must be direct or meta")),
    }
}

/// `{"/route": ["token", …]}` → the core's route-floor table.
pub(crate) fn route_floors(value: JsValue) -> Result<Option<RouteFloors>, JsValue> {
    if value.is_undefined() || value.is_null() {
        return Ok(None);
    }
    let Value::Object(map) = from_js(value)? else {
        return Err(type_error("routeScopes must be an object"));
    };
    let mut routes = Vec::new();
    let refused = || type_error("routeScopes values must be arrays of strings");
    for (route, tokens) in map {
        let Value::Array(tokens) = tokens else {
            return Err(refused());
        };
        let mut strings = Vec::with_capacity(tokens.len());
        for token in tokens {
            let Value::String(token) = token else {
                return Err(refused());
            };
            strings.push(token);
        }
        routes.push((route, strings));
    }
    // The table as read, not through `RouteFloors::new`, whose generic conversions copy it
    // again.
    Ok(Some(RouteFloors {
        shell_token: SHELL_SCOPE.into(),
        routes,
    }))
}

pub(crate) fn messages_from_js(value: JsValue) -> Result<Vec<WireModelMessage>, JsValue> {
    dpas_protocol::frame::decode_messages(from_js(value)?)
        .ok_or_else(|| type_error("messages must be model messages ({role, content})"))
}

#[wasm_bindgen(module = "/src/web/handler.js")]
extern "C" {
    /// Calls `confirm(request)` (a throw is `Err`) and resolves `true` only for an answer of
    /// `true`: a rejection, another answer, or the turn's signal aborting while it is pending
    /// resolve `false`. In JS (the handler snippet) because the race and its listener are
    /// smaller there than as wasm-bindgen closures.
    #[wasm_bindgen(js_name = askConfirm, catch)]
    fn ask_confirm(
        confirm: &Function,
        request: &JsValue,
        turn: Option<web_sys::AbortSignal>,
    ) -> Result<js_sys::Promise, JsValue>;
}

/// The app's side of the turn: pathname, `until`, `confirm`.
pub(crate) struct JsUi {
    pub(crate) pathname: Option<Function>,
    pub(crate) fallback_pathname: String,
    pub(crate) until: Option<Function>,
    pub(crate) confirm: Option<Function>,
    pub(crate) signal: Option<web_sys::AbortSignal>,
}

fn location_pathname() -> Option<String> {
    let location = get(&js_sys::global(), "location");
    get(&location, "pathname").as_string()
}

pub(crate) fn confirm_request_to_js(request: &ConfirmRequest) -> JsValue {
    object(&[
        ("toolCallId", request.tool_call_id.as_str().into()),
        ("wireName", request.wire_name.as_str().into()),
        ("canonicalId", request.capability_id.as_str().into()),
        ("description", request.summary.as_str().into()),
        ("summary", request.summary.as_str().into()),
        ("effect", request.effect.as_str().into()),
        ("input", to_js(&request.input)),
    ])
}

impl TurnUi for JsUi {
    fn current_pathname(&self) -> String {
        self.pathname
            .as_ref()
            .and_then(|f| f.call0(&JsValue::UNDEFINED).ok())
            .and_then(|v| v.as_string())
            .or_else(location_pathname)
            .unwrap_or_else(|| self.fallback_pathname.clone())
    }

    fn has_until(&self) -> bool {
        self.until.is_some()
    }

    fn until(&self) -> bool {
        self.until
            .as_ref()
            .and_then(|f| f.call0(&JsValue::UNDEFINED).ok())
            .is_some_and(|v| v.is_truthy())
    }

    /// No callback, a throw, a rejection or an abort while asking all count as denial.
    fn confirm(&self, request: &ConfirmRequest) -> LocalBoxFuture<'static, bool> {
        let asked = self.confirm.as_ref().map(|confirm| {
            ask_confirm(
                confirm,
                &confirm_request_to_js(request),
                self.signal.clone(),
            )
        });
        async move {
            match asked {
                Some(Ok(asked)) => JsFuture::from(asked)
                    .await
                    .is_ok_and(|v| v.as_bool() == Some(true)),
                Some(Err(_)) | None => false,
            }
        }
        .boxed_local()
    }
    fn cancel_token(&self) -> Option<CancelToken> {
        let signal = self.signal.clone()?;
        Some(CancelToken(Rc::new(signal)))
    }
}

/// A frame as the `TurnEvent` API.md names for it, if any.
pub(crate) fn frame_event(frame: &Frame, frame_js: &JsValue) -> Option<JsValue> {
    Some(match frame {
        Frame::TextDelta { text } => object(&[
            ("type", "text-delta".into()),
            ("text", text.as_str().into()),
        ]),
        Frame::ReasoningDelta { text } => object(&[
            ("type", "reasoning-delta".into()),
            ("text", text.as_str().into()),
        ]),
        Frame::Inspector(_) => object(&[("type", "inspector".into()), ("frame", frame_js.clone())]),
        Frame::ToolCall(call) => object(&[
            ("type", "tool-call".into()),
            ("toolCallId", call.tool_call_id.as_str().into()),
            ("wireName", call.wire_name.as_str().into()),
            ("canonicalId", call.canonical_id.as_str().into()),
            ("executor", call.executor.as_str().into()),
            ("input", to_js(&call.input)),
        ]),
        // Browser results are reported by the loop, with the value the model receives.
        Frame::ToolResult(result) if !is_browser_tool(&result.wire_name) => object(&[
            ("type", "tool-result".into()),
            ("toolCallId", result.tool_call_id.as_str().into()),
            ("wireName", result.wire_name.as_str().into()),
            ("canonicalId", result.canonical_id.as_str().into()),
            ("executor", "server".into()),
            ("ok", result.ok.into()),
            ("result", to_js(&result.result)),
        ]),
        _ => return None,
    })
}

/// A loop event as the `TurnEvent` API.md names for it, if any.
pub(crate) fn loop_event(event: &TurnEvent) -> Option<JsValue> {
    Some(match event {
        TurnEvent::StepStarted { step_index } => object(&[
            ("type", "step-start".into()),
            ("stepIndex", (*step_index as f64).into()),
        ]),
        TurnEvent::StepRetry {
            step_index,
            attempt,
            delay_ms,
        } => object(&[
            ("type", "step-retry".into()),
            ("stepIndex", (*step_index as f64).into()),
            ("attempt", (*attempt as f64).into()),
            ("delayMs", f64::from(*delay_ms).into()),
        ]),
        TurnEvent::ToolCallStarted {
            tool_call_id,
            wire_name,
            canonical_id,
            input,
        } => object(&[
            ("type", "tool-call".into()),
            ("toolCallId", tool_call_id.as_str().into()),
            ("wireName", wire_name.as_str().into()),
            ("canonicalId", canonical_id.as_str().into()),
            ("executor", "browser".into()),
            ("input", to_js(input)),
        ]),
        TurnEvent::ToolCallSettled {
            tool_call_id,
            wire_name,
            canonical_id,
            ok,
            value,
        } => object(&[
            ("type", "tool-result".into()),
            ("toolCallId", tool_call_id.as_str().into()),
            ("wireName", wire_name.as_str().into()),
            ("canonicalId", canonical_id.as_str().into()),
            ("executor", "browser".into()),
            ("ok", (*ok).into()),
            ("result", to_js(value)),
        ]),
        TurnEvent::Usage(usage) => {
            object(&[("type", "usage".into()), ("usage", typed_to_js(usage))])
        }
        TurnEvent::Reconcile { .. } => object(&[("type", "reconcile".into())]),
        TurnEvent::AssistantBoundary => object(&[("type", "message-boundary".into())]),
        TurnEvent::CatalogUndecodable { .. } | TurnEvent::Settled(_) => return None,
    })
}

/// `onFrame` / `onEvent`.
pub(crate) struct JsObserver {
    pub(crate) on_frame: Option<Function>,
    pub(crate) on_event: Option<Function>,
}

impl TurnObserver for JsObserver {
    fn on_frame(&self, frame: &Frame, raw: Option<&str>) {
        if self.on_frame.is_none() && self.on_event.is_none() {
            return;
        }
        // The server's own line, parsed by the browser: no second serialisation of the frame.
        let frame_js = match (raw, frame) {
            (Some(text), _) => parse_js(text),
            (None, Frame::Error { error }) => object(&[
                ("type", "error".into()),
                (
                    "error",
                    object(&[
                        ("code", error.code.as_str().into()),
                        ("message", error.message.as_str().into()),
                    ]),
                ),
            ]),
            (None, _) => JsValue::UNDEFINED,
        };
        if let Some(on_frame) = &self.on_frame {
            let _ = on_frame.call1(&JsValue::UNDEFINED, &frame_js);
        }
        if let (Some(on_event), Some(event)) = (&self.on_event, frame_event(frame, &frame_js)) {
            let _ = on_event.call1(&JsValue::UNDEFINED, &event);
        }
    }

    fn on_event(&self, event: &TurnEvent) {
        if let (Some(on_event), Some(event)) = (&self.on_event, loop_event(event)) {
            let _ = on_event.call1(&JsValue::UNDEFINED, &event);
        }
    }
}

pub(crate) fn status_name(status: TurnStatus) -> &'static str {
    match status {
        TurnStatus::Completed => "completed",
        TurnStatus::Cancelled => "cancelled",
        TurnStatus::Error => "error",
    }
}

pub(crate) fn outcome_to_js(outcome: &TurnOutcome) -> JsValue {
    let result = object(&[
        ("status", status_name(outcome.status).into()),
        ("messages", typed_to_js(&outcome.messages)),
    ]);
    if let Some(usage) = &outcome.usage {
        let _ = js_sys::Reflect::set(&result, &"usage".into(), &typed_to_js(usage));
    }
    if let Some(error) = &outcome.error {
        let _ = js_sys::Reflect::set(&result, &"error".into(), &typed_to_js(error));
    }
    result
}

/// Everything a turn runs against, owned.
pub(crate) struct Run {
    pub(crate) surface: registry::Surface,
    pub(crate) transport: FetchTransport,
    pub(crate) signal: Signal,
    pub(crate) ui: JsUi,
    pub(crate) observer: JsObserver,
}

/// `options.signal`: absent, or an `AbortSignal`.
fn signal_of(signal: JsValue) -> Result<Option<web_sys::AbortSignal>, JsValue> {
    if signal.is_undefined() || signal.is_null() {
        return Ok(None);
    }
    signal
        .dyn_into::<web_sys::AbortSignal>()
        .map(Some)
        .map_err(|_| type_error("options.signal must be an AbortSignal"))
}

/// `runTurn`'s options, read in order through one [`Fields`] reader: the first bad field is
/// the one a `TypeError` names and nothing after it is read. Synchronous, so the turn's
/// future holds only the turn. Out of line: inlined into the export's future, it is larger.
#[inline(never)]
fn read_options(options: &JsValue) -> Result<(Run, TurnOptions), JsValue> {
    if !options.is_object() {
        return Err(type_error("runTurn needs an options object"));
    }
    let mut f = Fields::new(options, "RunTurnOptions");
    let signal = f.get("signal");
    let signal = f.check(signal_of(signal)).flatten();
    let pathname = f.string("pathname");
    let surface = f.get("surface");
    let surface = f.check(core_surface(&surface));
    let endpoint = f.string("endpoint");
    let until = f.opt_function("until");
    let confirm = f.opt_function("confirm");
    let conversation_id = f.string("conversationId");
    let turn_id = f.opt_string("turnId");
    let messages = f.get("messages");
    let messages = f.check(messages_from_js(messages)).unwrap_or_default();
    let routes = f.get("routeScopes");
    let route_floors = f.check(route_floors(routes)).flatten();
    let model_id = f.opt_string("modelId");
    let mode = f.opt_string("catalogMode");
    let catalog_mode = f.check(catalog_mode(mode.as_deref())).unwrap_or_default();
    let on_frame = f.opt_function("onFrame");
    let on_event = f.opt_function("onEvent");
    f.done(())?;
    // `None` only when a field was refused, which `done` has returned.
    let Some(surface) = surface else {
        return Err(JsValue::UNDEFINED);
    };
    let run = Run {
        surface,
        transport: FetchTransport {
            endpoint,
            signal: signal.clone(),
        },
        signal: Signal(signal.clone()),
        ui: JsUi {
            pathname: None,
            fallback_pathname: pathname.clone(),
            until,
            confirm,
            signal,
        },
        observer: JsObserver { on_frame, on_event },
    };
    let turn = TurnOptions {
        conversation_id,
        turn_id: turn_id.unwrap_or_else(|| mint_id("trn_")),
        messages,
        pathname,
        route_floors,
        model_id,
        catalog_mode,
        settle: SettlePolicy::default(),
        resume: Vec::new(),
    };
    Ok((run, turn))
}

/// Runs one turn: steps until the model answers, the turn is cancelled, or it fails. Rejects
/// only for invalid options; every other ending resolves with a `TurnResult`.
#[wasm_bindgen(js_name = runTurn, unchecked_return_type = "Promise<TurnResult>")]
pub fn run_turn_export(
    #[wasm_bindgen(unchecked_param_type = "RunTurnOptions")] options: JsValue,
) -> js_sys::Promise {
    super::convert::promise(async move {
        let (run, turn) = read_options(&options)?;
        let env = TurnEnv {
            surface: &run.surface,
            transport: &run.transport,
            clock: &PerformanceClock,
            yielder: &ChannelYield,
            signal: &run.signal,
            ui: &run.ui,
            observer: &run.observer,
        };
        Ok(outcome_to_js(&run_turn(&env, turn).await))
    })
}
