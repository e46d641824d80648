//! `Surface` and `RegistrationHandle` for JS: component definitions read from JS objects, JS
//! functions wrapped into the core's handlers, predicates and bindings.

use super::convert::{
    from_js, get, object, opt_function, opt_json, thrown_message, to_js, type_error, Fields,
};
use super::pattern::BrowserPatterns;
use super::platform::{random_seed, PerformanceClock};
use dpas_host_core::capability::{
    ActionDef, Availability, ComponentDef, Confirmation, Effect, Handler, HandlerError,
    HandlerResult, InvocationContext, ObservationDef, ProcedureDef,
};
use dpas_host_core::envelope::{ErrorCode, Retry, SurfaceError};
use dpas_host_core::registry::{
    self, ComponentHandle, SurfaceEvent, SurfaceOptions, SurfaceVersion,
};
use dpas_protocol::json::Value;
use js_sys::{Array, Function};
use std::rc::Rc;
use wasm_bindgen::convert::TryFromJsValue;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;

/// The registry behind a JS `Surface` object. The object owns it; its hidden `__surface`
/// getter hands out a new `Surface` wrapping the same registry, which is taken back here by
/// value (wasm-bindgen's class check and unwrap), so no table of live surfaces is kept. Any
/// other value, and a freed `Surface` (whose getter throws), is a `TypeError`.
pub(crate) fn core_surface(value: &JsValue) -> Result<registry::Surface, JsValue> {
    JsSurface::try_from_js_value_ref(&get(value, "__surface"))
        .map(|handle| handle.inner)
        .ok_or_else(|| type_error("options.surface must be a live Surface"))
}

#[wasm_bindgen(module = "/src/web/handler.js")]
extern "C" {
    /// Calls `f(...args, context)` with `context.signal`, a fresh `AbortSignal`. A handler
    /// that returns a value settles with it. One that returns a thenable runs under a
    /// deadline of `ms` and the turn's signal: past the deadline, or when the turn is
    /// cancelled, the call's signal aborts and the promise rejects with a capability error
    /// (`code` TIMEOUT with retry after-refresh, or CANCELLED) that [`handler_error`] passes
    /// through; a turn already cancelled never calls `f`. In JS (a wasm-bindgen snippet in
    /// the package) because that is smaller than the same timers and listeners in Rust.
    #[wasm_bindgen(js_name = callHandler)]
    fn call_handler(
        f: &Function,
        args: Array,
        context: &JsValue,
        ms: u32,
        turn: Option<web_sys::AbortSignal>,
    ) -> js_sys::Promise;
}

/// Default deadlines of a handler call (issue 12), overridden per definition by `timeoutMs`.
const OBSERVATION_TIMEOUT_MS: u32 = 5_000;
const ACTION_TIMEOUT_MS: u32 = 10_000;
const PROCEDURE_TIMEOUT_MS: u32 = 30_000;

/// Runs a JS handler under its deadline and the turn's signal; the last argument is
/// `context` with the call's `signal` added.
async fn call(
    f: &Function,
    args: Array,
    context: JsValue,
    ms: u32,
    ctx: &InvocationContext,
) -> HandlerResult {
    let turn = ctx
        .cancel
        .as_ref()
        .and_then(|token| token.0.downcast_ref::<web_sys::AbortSignal>())
        .cloned();
    match JsFuture::from(call_handler(f, args, &context, ms, turn)).await {
        Ok(value) => output(value),
        Err(thrown) => Err(handler_error(&thrown)),
    }
}

/// `timeoutMs`: a positive whole number of milliseconds; `None` when absent (or refused).
fn timeout(def: &mut Fields<'_>) -> Option<u32> {
    let value = def.get("timeoutMs");
    if value.is_undefined() {
        return None;
    }
    match value.as_f64() {
        // setTimeout's own ceiling (2^31 - 1 ms); above it a timer fires at once.
        Some(ms) if (1.0..=2_147_483_647.0).contains(&ms) && ms.fract() == 0.0 => Some(ms as u32),
        _ => {
            def.refuse_field(
                "timeoutMs",
                " must be a positive whole number of milliseconds",
            );
            None
        }
    }
}

/// A thrown value: a typed refusal when it carries a known `code` (e.g. an app's
/// `CapabilityError`), otherwise a plain throw (`EXECUTION_FAILED`, cause kept local).
fn handler_error(thrown: &JsValue) -> HandlerError {
    let code = get(thrown, "code")
        .as_string()
        .and_then(|c| ErrorCode::parse(&c));
    match code {
        Some(code) => {
            let retry = get(thrown, "retry")
                .as_string()
                .and_then(|r| Retry::parse(&r))
                .unwrap_or(Retry::No);
            let mut error = SurfaceError::new(code, retry, thrown_message(thrown));
            if let Ok(Some(details)) = opt_json(thrown, "details") {
                error = error.with_details(details);
            }
            HandlerError::Failed(error)
        }
        None => HandlerError::Threw(thrown_message(thrown)),
    }
}

fn output(value: JsValue) -> HandlerResult {
    if value.is_undefined() {
        return Ok(None);
    }
    from_js(value)
        .map(Some)
        .map_err(|_| HandlerError::Threw("the handler's output is not JSON".into()))
}

/// `read({signal})` / `execute(input, {signal})`.
fn capability_handler(f: Function, with_input: bool, ms: u32) -> Handler {
    let f = Rc::new(f);
    Handler::new(move |input: Value, ctx: InvocationContext| {
        let f = f.clone();
        async move {
            let args = Array::new();
            if with_input {
                args.push(&to_js(&input));
            }
            call(&f, args, object(&[]), ms, &ctx).await
        }
    })
}

/// `executeProcedure(path, input, {invocationId, confirmation, signal})`.
fn executor_handler(f: Function) -> Handler {
    let f = Rc::new(f);
    Handler::new(move |input: Value, ctx: InvocationContext| {
        let f = f.clone();
        async move {
            let path = ctx
                .capability_id
                .strip_prefix("domain:")
                .unwrap_or(&ctx.capability_id);
            let mut context = vec![("invocationId", JsValue::from_str(&ctx.invocation_id))];
            if ctx.confirmed {
                context.push(("confirmation", JsValue::from_str("confirmed")));
            }
            let args = Array::of2(&JsValue::from_str(path), &to_js(&input));
            let ms = ctx.timeout_ms.unwrap_or(PROCEDURE_TIMEOUT_MS);
            call(&f, args, object(&context), ms, &ctx).await
        }
    })
}

fn confirmation(def: &mut Fields<'_>) -> Confirmation {
    match def.opt_string("confirmation").as_deref() {
        None | Some("never") => Confirmation::Never,
        Some("optional") => Confirmation::Optional,
        Some("required") => Confirmation::Required,
        Some(_) => {
            def.refuse_field("confirmation", " must be never, optional or required");
            Confirmation::Never
        }
    }
}

/// `{enabled?, when?, unavailableReason?}`; `enabled: false` is a `when` that is always false.
fn availability(def: &mut Fields<'_>) -> Availability {
    let gates = def.get("availability");
    if gates.is_undefined() || gates.is_null() {
        return Availability::default();
    }
    let what = [def.what(), ".availability"].concat();
    let mut fields = Fields::new(&gates, &what);
    let enabled = fields.opt_bool("enabled").unwrap_or(true);
    let when = fields.opt_function("when");
    if let Err(error) = fields.done(()) {
        def.refuse(error);
        return Availability::default();
    }
    let mut out = Availability::default();
    if !enabled || when.is_some() {
        out.when = Some(Rc::new(move || match (&when, enabled) {
            (_, false) => Ok(false),
            (Some(f), true) => f
                .call0(&JsValue::UNDEFINED)
                .map(|v| v.is_truthy())
                .map_err(|e| thrown_message(&e)),
            (None, true) => Ok(true),
        }));
    }
    let reason = get(&gates, "unavailableReason");
    if let Some(text) = reason.as_string() {
        out.unavailable_reason = Some(Rc::new(move || text.clone()));
    } else if let Ok(f) = reason.dyn_into::<Function>() {
        out.unavailable_reason = Some(Rc::new(move || {
            f.call0(&JsValue::UNDEFINED)
                .ok()
                .and_then(|v| v.as_string())
                .unwrap_or_default()
        }));
    }
    out
}

fn observation(def: &JsValue) -> Result<ObservationDef, JsValue> {
    let mut f = Fields::new(def, "ObservationDef");
    let out = ObservationDef {
        name: f.string("name"),
        description: f.string("description"),
        output_schema: f.json("outputSchema"),
        read: capability_handler(
            f.function("read"),
            false,
            timeout(&mut f).unwrap_or(OBSERVATION_TIMEOUT_MS),
        ),
        availability: availability(&mut f),
        untrusted: f.opt_bool("untrusted").unwrap_or(false),
    };
    f.done(out)
}

fn action(def: &JsValue) -> Result<ActionDef, JsValue> {
    let mut f = Fields::new(def, "ActionDef");
    let effect = Effect::parse(&f.string("effect"))
        .filter(|effect| effect.is_view_action_effect())
        .unwrap_or_else(|| {
            f.refuse(type_error(
                "ActionDef.effect must be local-state or navigation",
            ));
            Effect::LocalState
        });
    let out = ActionDef {
        name: f.string("name"),
        description: f.string("description"),
        input_schema: f.json("inputSchema"),
        output_schema: f.opt_json("outputSchema"),
        effect,
        confirmation: confirmation(&mut f),
        idempotent: f.opt_bool("idempotent").unwrap_or(false),
        execute: capability_handler(
            f.function("execute"),
            true,
            timeout(&mut f).unwrap_or(ACTION_TIMEOUT_MS),
        ),
        availability: availability(&mut f),
        untrusted: f.opt_bool("untrusted").unwrap_or(false),
    };
    f.done(out)
}

/// Domain effects: API.md's short names (`read`, `external`) and agent-surface's names both
/// work.
fn domain_effect(name: &str) -> Option<Effect> {
    let name = match name {
        "read" => "server-query",
        "external" => "external-side-effect",
        other => other,
    };
    Effect::parse(name).filter(|effect| effect.is_domain_effect())
}

fn procedure(def: &JsValue) -> Result<ProcedureDef, JsValue> {
    let mut f = Fields::new(def, "ProcedureDef");
    let effect = domain_effect(&f.string("effect")).unwrap_or_else(|| {
        f.refuse(type_error(
            "ProcedureDef.effect must be read, server-mutation, destructive or external",
        ));
        Effect::ServerQuery
    });
    let mut out = ProcedureDef::new(
        f.string("path"),
        f.string("description"),
        effect,
        f.json("inputSchema"),
    );
    out.output_schema = f.opt_json("outputSchema");
    out.confirmation = confirmation(&mut f);
    out.availability = availability(&mut f);
    out.timeout_ms = timeout(&mut f);
    if let Some(bind) = f.opt_function("bind") {
        out.bind = Some(Rc::new(move || {
            let value = bind
                .call0(&JsValue::UNDEFINED)
                .map_err(|e| thrown_message(&e))?;
            match from_js(value) {
                Ok(Value::Object(map)) => Ok(map),
                _ => Err("bind() must return an object".into()),
            }
        }));
    }
    if let Some(describe) = f.opt_function("describe") {
        out.describe = Some(Rc::new(move || {
            describe
                .call0(&JsValue::UNDEFINED)
                .ok()
                .and_then(|v| v.as_string())
        }));
    }
    let fields = f.get("overridableFields");
    if Array::is_array(&fields) {
        for field in Array::from(&fields).iter() {
            if let Some(field) = field.as_string() {
                out.overridable_fields.push(field);
            }
        }
    }
    f.done(out)
}

/// The items of the array `def[key]`, each read by `read` (none when it is absent). The loop
/// over the array is [`each`], one function for the three item types.
fn list<T>(f: &mut Fields<'_>, key: &str, read: fn(&JsValue) -> Result<T, JsValue>) -> Vec<T> {
    let mut out = Vec::new();
    each(f, key, &mut |item| {
        out.push(read(item)?);
        Ok(())
    });
    out
}

fn each(f: &mut Fields<'_>, key: &str, read: &mut dyn FnMut(&JsValue) -> Result<(), JsValue>) {
    let items = f.get(key);
    if items.is_undefined() || items.is_null() {
        return;
    }
    if !Array::is_array(&items) {
        f.refuse_field(key, " must be an array");
        return;
    }
    for item in Array::from(&items).iter() {
        if let Err(error) = read(&item) {
            f.refuse(error);
            return;
        }
    }
}

/// A `ComponentDef` read from JS.
pub(crate) fn component(def: &JsValue) -> Result<ComponentDef, JsValue> {
    let mut f = Fields::new(def, "ComponentDef");
    let mut out = ComponentDef::new(f.string("type"), f.string("description"));
    out.instance_id = f.opt_string("instanceId");
    out.priority = f.get("priority").as_f64().map_or(0, |p| p as i32);
    out.enabled = f.opt_bool("enabled").unwrap_or(true);
    out.observations = list(&mut f, "observations", observation);
    out.actions = list(&mut f, "actions", action);
    out.procedures = list(&mut f, "procedures", procedure);
    f.done(out)
}

fn definition_error(error: registry::DefinitionError) -> JsValue {
    let js = js_sys::Error::new(&error.message);
    let _ = js_sys::Reflect::set(&js, &"code".into(), &error.code.as_str().into());
    js.into()
}

/// The agent surface registry of this page.
#[wasm_bindgen(js_name = Surface)]
pub struct JsSurface {
    inner: registry::Surface,
}

/// Returned by `Surface.register`.
#[wasm_bindgen]
pub struct RegistrationHandle {
    handle: ComponentHandle,
}

#[wasm_bindgen]
impl RegistrationHandle {
    /// Replaces the definition (same type/instance keeps the registration).
    pub fn update(
        &self,
        #[wasm_bindgen(unchecked_param_type = "ComponentDef")] def: JsValue,
    ) -> Result<(), JsValue> {
        self.handle
            .replace(component(&def)?)
            .map(drop)
            .map_err(definition_error)
    }

    pub fn unregister(&self) {
        self.handle.unregister();
    }
}

/// `surfaceVersion` as the number JS sees.
fn version_number(version: SurfaceVersion) -> f64 {
    version.0 as f64
}

/// A JS array of strings, built in a loop rather than through js-sys's `FromIterator`.
fn strings(items: &[String]) -> JsValue {
    let array = Array::new();
    for item in items {
        array.push(&JsValue::from_str(item));
    }
    array.into()
}

fn event_to_js(
    event: &SurfaceEvent,
    current_version: impl Fn() -> SurfaceVersion,
) -> Option<JsValue> {
    let version = |v: SurfaceVersion| JsValue::from_f64(version_number(v));
    Some(match event {
        SurfaceEvent::SurfaceChanged { surface_version } => object(&[
            ("type", "surface-changed".into()),
            ("surfaceVersion", version(*surface_version)),
        ]),
        SurfaceEvent::AvailabilityChanged { capability_ids } => object(&[
            ("type", "availability-changed".into()),
            ("surfaceVersion", version(current_version())),
            ("capabilityIds", strings(capability_ids)),
        ]),
        SurfaceEvent::InvocationSettled {
            invocation_id,
            capability_id,
            ok,
            ..
        } => object(&[
            ("type", "invocation-settled".into()),
            ("capabilityId", capability_id.as_str().into()),
            ("invocationId", invocation_id.as_str().into()),
            ("ok", (*ok).into()),
        ]),
        _ => return None,
    })
}

#[wasm_bindgen(js_class = Surface)]
impl JsSurface {
    #[wasm_bindgen(constructor)]
    pub fn new(
        #[wasm_bindgen(unchecked_optional_param_type = "SurfaceInit")] options: Option<JsValue>,
    ) -> Result<JsSurface, JsValue> {
        let inner = registry::Surface::new(SurfaceOptions {
            clock: Rc::new(PerformanceClock),
            seed: random_seed(),
            patterns: Rc::new(BrowserPatterns),
        });
        if let Some(options) = options {
            if let Some(executor) = opt_function(&options, "executeProcedure", "options")? {
                inner.set_procedure_executor(executor_handler(executor));
            }
        }
        Ok(JsSurface { inner })
    }

    /// Registers a mounted component. A second live instance of the same type and instance id
    /// is refused as agent-surface has it: a dead handle (its `update`/`unregister` do nothing)
    /// and nothing registered. A malformed definition throws (`code` says why).
    pub fn register(
        &self,
        #[wasm_bindgen(unchecked_param_type = "ComponentDef")] def: JsValue,
    ) -> Result<RegistrationHandle, JsValue> {
        let handle = self
            .inner
            .register(component(&def)?)
            .map_err(definition_error)?;
        Ok(RegistrationHandle { handle })
    }

    #[wasm_bindgen(getter = surfaceVersion)]
    pub fn surface_version(&self) -> f64 {
        version_number(self.inner.version())
    }

    /// Internal: how `runTurn` and `Conversation` reach this registry ([`core_surface`]).
    #[wasm_bindgen(getter = __surface, skip_typescript)]
    pub fn handle(&self) -> JsSurface {
        JsSurface {
            inner: self.inner.clone(),
        }
    }

    /// Listens to surface events; returns the unsubscribe function.
    #[wasm_bindgen(unchecked_return_type = "() => void")]
    pub fn subscribe(
        &self,
        #[wasm_bindgen(unchecked_param_type = "(event: SurfaceEvent) => void")] listener: Function,
    ) -> JsValue {
        let weak = self.inner.downgrade();
        let id = self.inner.subscribe(move |event| {
            let current_version = || {
                weak.upgrade()
                    .map(|surface| surface.version())
                    .unwrap_or_default()
            };
            if let Some(event) = event_to_js(event, current_version) {
                let _ = listener.call1(&JsValue::UNDEFINED, &event);
            }
        });
        let surface = self.inner.clone();
        Closure::<dyn FnMut()>::new(move || {
            surface.unsubscribe(id);
        })
        .into_js_value()
    }

    /// Call when app state that `when`/`describe` read has changed (drives settle-wait).
    #[wasm_bindgen(js_name = notifyAvailabilityChanged)]
    pub fn notify_availability_changed(&self) {
        self.inner.recheck_availability();
    }
}
