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

/// The fields of one options or definition object (`what` names it in errors), read in the
/// caller's order. The first malformed field's `TypeError` is kept and nothing is read after
/// it (a getter is not called), as a `?` after each field did; every reader returns a value
/// whatever happens (an empty one after a refusal), so a caller builds its whole result and
/// [`Fields::done`] returns it or that error: one way out, where a `?` per field had its own
/// drops of everything read before it.
pub(crate) struct Fields<'a> {
    object: &'a JsValue,
    what: &'a str,
    error: Option<JsValue>,
}

impl<'a> Fields<'a> {
    pub(crate) fn new(object: &'a JsValue, what: &'a str) -> Self {
        Fields {
            object,
            what,
            error: None,
        }
    }

    /// `what`, for a nested object's own `Fields`.
    pub(crate) fn what(&self) -> &'a str {
        self.what
    }

    /// `object[key]`; `undefined` once a field was refused.
    pub(crate) fn get(&self, key: &str) -> JsValue {
        match self.error {
            None => get(self.object, key),
            Some(_) => JsValue::UNDEFINED,
        }
    }

    /// `object[key]`, `undefined` and `null` as `None`.
    fn present(&self, key: &str) -> Option<JsValue> {
        let value = self.get(key);
        (!value.is_undefined() && !value.is_null()).then_some(value)
    }

    /// Keeps `error` unless one was kept before.
    pub(crate) fn refuse(&mut self, error: JsValue) {
        if self.error.is_none() {
            self.error = Some(error);
        }
    }

    /// Refuses with `<what>.<key><why>`.
    pub(crate) fn refuse_field(&mut self, key: &str, why: &str) {
        if self.error.is_none() {
            self.error = Some(type_error(&[self.what, ".", key, why].concat()));
        }
    }

    /// `read`'s value, or `None` with its error kept.
    pub(crate) fn check<T>(&mut self, read: Result<T, JsValue>) -> Option<T> {
        match read {
            Ok(value) => Some(value),
            Err(error) => {
                self.refuse(error);
                None
            }
        }
    }

    /// `value`, or the first refusal.
    pub(crate) fn done<T>(self, value: T) -> Result<T, JsValue> {
        match self.error {
            None => Ok(value),
            Some(error) => Err(error),
        }
    }

    /// A required string.
    pub(crate) fn string(&mut self, key: &str) -> String {
        let value = self.get(key).as_string();
        if value.is_none() {
            self.refuse_field(key, " must be a string");
        }
        value.unwrap_or_default()
    }

    /// An optional string.
    pub(crate) fn opt_string(&mut self, key: &str) -> Option<String> {
        let text = self.present(key)?.as_string();
        if text.is_none() {
            self.refuse_field(key, " must be a string");
        }
        text
    }

    /// An optional function.
    pub(crate) fn opt_function(&mut self, key: &str) -> Option<Function> {
        match self.present(key)?.dyn_into::<Function>() {
            Ok(f) => Some(f),
            Err(_) => {
                self.refuse_field(key, " must be a function");
                None
            }
        }
    }

    /// A required function (`undefined` in its place after a refusal: never called, since
    /// [`Fields::done`] then returns the error).
    pub(crate) fn function(&mut self, key: &str) -> Function {
        self.opt_function(key).unwrap_or_else(|| {
            self.refuse_field(key, " must be a function");
            JsValue::UNDEFINED.unchecked_into()
        })
    }

    /// An optional boolean (any other value is absent).
    pub(crate) fn opt_bool(&self, key: &str) -> Option<bool> {
        self.get(key).as_bool()
    }

    /// An optional JSON value.
    pub(crate) fn opt_json(&mut self, key: &str) -> Option<Value> {
        let value = self.present(key)?;
        self.check(from_js(value))
    }

    /// A required JSON value.
    pub(crate) fn json(&mut self, key: &str) -> Value {
        self.opt_json(key).unwrap_or_else(|| {
            self.refuse_field(key, " is required");
            Value::Null
        })
    }
}

/// An optional function field.
pub(crate) fn opt_function(
    object: &JsValue,
    key: &str,
    what: &str,
) -> Result<Option<Function>, JsValue> {
    let mut fields = Fields::new(object, what);
    let value = fields.opt_function(key);
    fields.done(value)
}

/// An optional JSON field.
pub(crate) fn opt_json(object: &JsValue, key: &str) -> Result<Option<Value>, JsValue> {
    // `what` names only a refused type, and a JSON value is refused by `from_js`'s own error.
    let mut fields = Fields::new(object, "");
    let value = fields.opt_json(key);
    fields.done(value)
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
