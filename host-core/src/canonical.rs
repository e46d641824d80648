//! Canonical JSON: object keys sorted recursively, integral floats written as integers.
//!
//! Used for the loop guard's call keys and the dedupe fingerprint, so two inputs that differ
//! only in key order (or `1.0` vs `1`) compare equal.

use dpas_protocol::json::{Map, Number, Value};

/// The canonical form of a value.
pub fn canonicalize(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            // Collected (in O(n log n) for our map, where an `insert` per key is a scan) and
            // sorted by `sort_keys`: a tool call's input is the model's, of any size.
            let mut entries = Vec::with_capacity(map.len());
            for (key, value) in map {
                entries.push((key.clone(), canonicalize(value)));
            }
            let mut sorted: Map<String, Value> = entries.into_iter().collect();
            sorted.sort_keys();
            Value::Object(sorted)
        }
        Value::Array(items) => {
            let mut canonical = Vec::with_capacity(items.len());
            for item in items {
                canonical.push(canonicalize(item));
            }
            Value::Array(canonical)
        }
        Value::Number(number) => Value::Number(canonical_number(number)),
        other => other.clone(),
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
pub fn to_canonical_string(value: &Value) -> String {
    json_text(&canonicalize(value))
}

/// A value's compact JSON text, as its `Display` writes it (`dpas_protocol::json`'s writer:
/// `Display` and `serde_json::to_string` would each link a serializer instance).
pub fn json_text(value: &Value) -> String {
    dpas_protocol::json::to_string(value)
}

#[cfg(test)]
mod tests {
    use super::*;
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
        // (minutes); collected and sorted by `sort_keys`, a fraction of a second.
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
