//! JSON on the paths the browser build runs, without serde's (de)serializers: [`Value`],
//! [`Map`] and [`Number`] (the value types every crate of the browser build names), [`parse`]
//! (text → [`Value`]), [`WriteJson`] (values and wire types → compact text), and
//! [`object`] (building objects without `serde_json::json!`).
//!
//! `json!` passes every leaf but `null`/`true`/`false` through `to_value(..).unwrap()`;
//! that `unwrap` links serde_json's `Debug` error formatting, and with it core's Unicode
//! escaping tables, into the `.wasm` (a few kilobytes gzip). The values built here are the
//! same, keys in the order written.

mod parse;
pub mod value;
mod write;

pub use parse::{parse, ParseError};
pub use write::{to_string, write_str, ObjectWriter, WriteJson};

/// The JSON value types of the protocol's wire types and of every browser-build crate:
/// serde_json's with the `serde-json-value` feature (the server, its model adapters), this
/// crate's own [`value`] types without it (the browser build).
#[cfg(feature = "serde-json-value")]
pub use serde_json::{Map, Number, Value};
#[cfg(not(feature = "serde-json-value"))]
pub use value::{Map, Number, Value};

/// `{"k1": v1, "k2": v2, …}` in the order given (a later duplicate key replaces the value).
pub fn object<const N: usize>(mut entries: [(&str, Value); N]) -> Value {
    // Only this call is instantiated per array length; the loop is one function.
    object_of(&mut entries)
}

/// `object`'s loop over the entries in place (each value taken, no `Vec` made): `insert`,
/// not `collect`, which instantiated the ordered map's `FromIterator` and `Extend` once per
/// array length (0.9 KB raw of the browser build).
fn object_of(entries: &mut [(&str, Value)]) -> Value {
    let mut map = Map::with_capacity(entries.len());
    for (key, value) in entries {
        map.insert((*key).to_owned(), value.take());
    }
    Value::Object(map)
}

/// `{"error": {…}}`, the envelope of every tool-result error.
pub fn error_object<const N: usize>(fields: [(&str, Value); N]) -> Value {
    object([("error", object(fields))])
}

#[cfg(test)]
mod oracle;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_json as json;

    #[test]
    fn builds_what_the_macro_builds_with_its_key_order() {
        let built = object([
            ("zeta", Value::from("z")),
            ("alpha", Value::from(3u64)),
            (
                "nested",
                object([("b", Value::Null), ("a", Value::from(true))]),
            ),
            ("list", Value::from(vec!["x", "y"])),
        ]);
        let expected = json!({ "zeta": "z", "alpha": 3, "nested": { "b": null, "a": true }, "list": ["x", "y"] });
        assert_eq!(built, expected);
        assert_eq!(
            serde_json::to_string(&built).unwrap(),
            serde_json::to_string(&expected).unwrap(),
            "same bytes, so the same key order"
        );
        assert_eq!(
            error_object([("code", "X".into())]),
            json!({ "error": { "code": "X" } })
        );
    }
}
