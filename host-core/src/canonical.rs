//! Canonical JSON: object keys sorted recursively, integral floats written as integers.
//!
//! Used for the loop guard's call keys and the dedupe fingerprint, so two inputs that differ
//! only in key order (or `1.0` vs `1`) compare equal.

use dpas_protocol::json::{Number, Value};

/// The canonical form of a value.
#[cfg(test)]
pub(crate) fn canonicalize(value: &Value) -> Value {
    let mut canonical = value.clone();
    make_canonical(&mut canonical);
    canonical
}

/// Makes `value` canonical in place. Each object's keys are sorted once by `sort_keys` (in
/// O(n log n): a tool call's input is the model's, of any size).
pub(crate) fn make_canonical(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.sort_keys();
            for item in map.values_mut() {
                make_canonical(item);
            }
        }
        Value::Array(items) => {
            for item in items {
                make_canonical(item);
            }
        }
        Value::Number(number) => *number = canonical_number(number),
        _ => {}
    }
}

fn canonical_number(number: &Number) -> Number {
    match number.as_f64() {
        // -0 and integral floats inside the exact-integer range become plain integers.
        Some(f) if number.is_f64() && f.fract() == 0.0 && f.abs() < 9_007_199_254_740_992.0 => {
            Number::from(f as i64)
        }
        _ => number.clone(),
    }
}

/// The canonical JSON text of a value.
pub(crate) fn to_canonical_string(value: &Value) -> String {
    into_canonical_string(value.clone())
}

/// The canonical JSON text of a value the caller no longer needs (no copy is made).
pub(crate) fn into_canonical_string(mut value: Value) -> String {
    make_canonical(&mut value);
    json_text(&value)
}

/// A value's compact JSON text, as its `Display` writes it (`dpas_protocol::json`'s writer:
/// `Display` and `serde_json::to_string` would each link a serializer instance).
pub(crate) fn json_text(value: &Value) -> String {
    dpas_protocol::json::to_string(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use dpas_protocol::json::Map;
    use dpas_protocol::test_json as json;

    #[test]
    fn keys_sort_recursively_and_numbers_normalise() {
        let a = json!({ "b": 1, "a": { "z": [ { "y": 1.0, "x": -0.0 } ], "c": "s" } });
        assert_eq!(
            to_canonical_string(&a),
            r#"{"a":{"c":"s","z":[{"x":0,"y":1}]},"b":1}"#
        );
        let b = json!({ "a": { "c": "s", "z": [ { "x": 0, "y": 1 } ] }, "b": 1 });
        assert_eq!(to_canonical_string(&a), to_canonical_string(&b));
        assert_eq!(to_canonical_string(&json!(1.5)), "1.5");
    }

    #[test]
    fn an_input_of_100k_keys_in_reverse_order_is_canonicalised_whole() {
        // A tool call's input is the model's. An insertion sort of these keys was 5·10⁹ swaps
        // (minutes); sorted by `sort_keys`, a fraction of a second.
        const N: usize = 100_000;
        let input: Map<String, Value> = (0..N)
            .rev()
            .map(|i| (format!("k{i:06}"), Value::from(i as f64)))
            .collect();
        let canonical = canonicalize(&Value::Object(input));
        let map = canonical.as_object().unwrap();
        assert_eq!(map.len(), N);
        for (i, (key, value)) in map.iter().enumerate() {
            assert_eq!(key, &format!("k{i:06}"));
            // Integral floats became integers.
            assert_eq!(value.as_u64(), Some(i as u64));
        }
    }
}
