//! Crossing the JS boundary: JSON values as JSON text (`dpas_protocol::json` on this side,
//! `JSON.parse`/`JSON.stringify` on the JS side, reusing the JSON code the wire already links;
//! `serde-wasm-bindgen` measured 6 KB gzip more), and small readers for the fields of the
//! option objects the app passes.

use dpas_protocol::json::Value;
use dpas_protocol::json::WriteJson;
use js_sys::{Function, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_namespace = JSON, js_name = parse, catch)]
    fn json_parse(text: &str) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(js_namespace = JSON, js_name = stringify, catch)]
    fn json_stringify(value: &JsValue) -> Result<JsValue, JsValue>;
}

/// A JSON value as a plain JS value.
pub(crate) fn to_js(value: &Value) -> JsValue {
    typed_to_js(value)
}

/// JSON text as a JS value (`undefined` if it does not parse).
pub(crate) fn parse_js(text: &str) -> JsValue {
    json_parse(text).unwrap_or(JsValue::UNDEFINED)
}

/// Any Rust value with a JSON text, through that text.
pub(crate) fn typed_to_js(value: &dyn WriteJson) -> JsValue {
    json_parse(&dpas_protocol::json::to_string(value)).unwrap_or(JsValue::UNDEFINED)
}

/// A JS value as JSON; `Err` for what JSON cannot hold (functions, symbols, bigints).
pub(crate) fn from_js(value: JsValue) -> Result<Value, JsValue> {
    let text = json_stringify(&value)?
        .as_string()
        .ok_or_else(|| type_error("not a JSON value"))?;
    dpas_protocol::json::parse(text.as_bytes()).map_err(|_| type_error("not a JSON value"))
}

/// `object[key]`, `undefined` when absent or when `object` is not an object.
pub(crate) fn get(object: &JsValue, key: &str) -> JsValue {
    if !object.is_object() {
        return JsValue::UNDEFINED;
    }
    Reflect::get(object, &JsValue::from_str(key)).unwrap_or(JsValue::UNDEFINED)
}

pub(crate) fn type_error(message: &str) -> JsValue {
    js_sys::TypeError::new(message).into()
}

/// A required string field.
pub(crate) fn string(object: &JsValue, key: &str, what: &str) -> Result<String, JsValue> {
    get(object, key)
        .as_string()
        .ok_or_else(|| type_error(&[what, ".", key, " must be a string"].concat()))
}

/// An optional string field (`undefined`/`null` are absent).
pub(crate) fn opt_string(
    object: &JsValue,
    key: &str,
    what: &str,
) -> Result<Option<String>, JsValue> {
    let value = get(object, key);
    if value.is_undefined() || value.is_null() {
        return Ok(None);
    }
    value
        .as_string()
        .map(Some)
        .ok_or_else(|| type_error(&[what, ".", key, " must be a string"].concat()))
}

/// An optional function field.
pub(crate) fn opt_function(
    object: &JsValue,
    key: &str,
    what: &str,
) -> Result<Option<Function>, JsValue> {
    let value = get(object, key);
    if value.is_undefined() || value.is_null() {
        return Ok(None);
    }
    value
        .dyn_into::<Function>()
        .map(Some)
        .map_err(|_| type_error(&[what, ".", key, " must be a function"].concat()))
}

/// An optional boolean field.
pub(crate) fn opt_bool(object: &JsValue, key: &str) -> Option<bool> {
    get(object, key).as_bool()
}

/// An optional JSON field.
pub(crate) fn opt_json(object: &JsValue, key: &str) -> Result<Option<Value>, JsValue> {
    let value = get(object, key);
    if value.is_undefined() || value.is_null() {
        return Ok(None);
    }
    from_js(value).map(Some)
}

/// The message of a thrown value: `error.message`, a thrown string, or a fixed text.
pub(crate) fn thrown_message(thrown: &JsValue) -> String {
    thrown
        .as_string()
        .or_else(|| get(thrown, "message").as_string())
        .unwrap_or_else(|| "the handler threw".into())
}

/// A plain object built from `(key, value)` pairs.
pub(crate) fn object(entries: &[(&str, JsValue)]) -> JsValue {
    let object = js_sys::Object::new();
    for (key, value) in entries {
        // Setting a property on a fresh plain object cannot fail.
        let _ = Reflect::set(&object, &JsValue::from_str(key), value);
    }
    object.into()
}

/// A promise for a Rust future. Boxed, so every export shares one `future_to_promise`.
pub(crate) fn promise(
    future: impl std::future::Future<Output = Result<JsValue, JsValue>> + 'static,
) -> js_sys::Promise {
    wasm_bindgen_futures::future_to_promise(futures_util::FutureExt::boxed_local(future))
}
