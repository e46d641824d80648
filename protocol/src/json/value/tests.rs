//! `json::value` against serde_json's `Value`, `Map` and `Number` (with `preserve_order`, as
//! this workspace builds it): the same results for generated operation sequences, the same
//! serde text both ways, and objects with very many keys read and compared in O(n log n).

use super::{Map, Number, Value};
use proptest::prelude::*;

type Theirs = serde_json::Value;
type TheirMap = serde_json::Map<String, serde_json::Value>;

/// Ours as serde_json's value (the conversion under test is checked apart: `conversions_…`).
fn theirs(value: &Value) -> Theirs {
    value.clone().into()
}

fn arb_key() -> impl Strategy<Value = String> {
    // A few keys, so that operations meet existing ones often.
    prop_oneof!["[a-e]", "[a-e]{2}"]
}

fn arb_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<u64>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        (0u64..4).prop_map(Value::from),
        (-4i64..4).prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        prop_oneof![Just(0.0), Just(-0.0), Just(1.0), Just(-1.0)].prop_map(Value::from),
        "[a-z\"\\\\é]{0,4}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 32, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec((arb_key(), inner), 0..6)
                .prop_map(|entries| Value::Object(entries.into_iter().collect())),
        ]
    })
}

#[derive(Debug, Clone)]
enum Op {
    Insert(String, Value),
    Remove(String),
    ShiftRemove(String),
    IndexSet(String, Value),
}

fn arb_op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (arb_key(), arb_value()).prop_map(|(k, v)| Op::Insert(k, v)),
        1 => arb_key().prop_map(Op::Remove),
        1 => arb_key().prop_map(Op::ShiftRemove),
        1 => (arb_key(), arb_value()).prop_map(|(k, v)| Op::IndexSet(k, v)),
    ]
}

/// Applies `op` to both; what each returned, as serde_json values.
fn apply(op: &Op, ours: &mut Value, oracle: &mut Theirs) -> (Option<Theirs>, Option<Theirs>) {
    let (mine, their) = (
        ours.as_object_mut().unwrap(),
        oracle.as_object_mut().unwrap(),
    );
    match op {
        Op::Insert(k, v) => (
            mine.insert(k.clone(), v.clone()).map(|v| theirs(&v)),
            their.insert(k.clone(), theirs(v)),
        ),
        Op::Remove(k) => (mine.remove(k).map(|v| theirs(&v)), their.remove(k)),
        Op::ShiftRemove(k) => (
            mine.shift_remove(k).map(|v| theirs(&v)),
            their.shift_remove(k),
        ),
        Op::IndexSet(k, v) => {
            ours[k.as_str()] = v.clone();
            oracle[k.as_str()] = theirs(v);
            (None, None)
        }
    }
}

/// Same keys in the same order with the same values, and the same answers to lookups.
fn assert_same_map(mine: &Map, their: &TheirMap) -> Result<(), TestCaseError> {
    prop_assert_eq!(mine.len(), their.len());
    prop_assert_eq!(mine.is_empty(), their.is_empty());
    let keys: Vec<&String> = mine.keys().collect();
    prop_assert_eq!(keys, their.keys().collect::<Vec<_>>());
    let pairs: Vec<(String, Theirs)> = mine.iter().map(|(k, v)| (k.clone(), theirs(v))).collect();
    let their_pairs: Vec<(String, Theirs)> =
        their.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    prop_assert_eq!(pairs, their_pairs);
    let back: Vec<Theirs> = mine.values().rev().map(theirs).collect();
    prop_assert_eq!(back, their.values().rev().cloned().collect::<Vec<_>>());
    for key in ["a", "b", "c", "d", "e", "ab", "zz", ""] {
        prop_assert_eq!(mine.contains_key(key), their.contains_key(key));
        prop_assert_eq!(mine.get(key).map(theirs), their.get(key).cloned());
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn map_operations_behave_as_serde_json(ops in prop::collection::vec(arb_op(), 0..40)) {
        let mut ours = Value::Object(Map::new());
        let mut oracle = Theirs::Object(TheirMap::new());
        for op in &ops {
            let (mine, their) = apply(op, &mut ours, &mut oracle);
            prop_assert_eq!(mine, their, "{:?}", op);
            assert_same_map(ours.as_object().unwrap(), oracle.as_object().unwrap())?;
        }
        prop_assert_eq!(theirs(&ours), oracle);
    }

    #[test]
    fn equality_is_serde_jsons(
        a in prop::collection::vec(arb_op(), 0..12),
        b in prop::collection::vec(arb_op(), 0..12),
        reorder in any::<bool>(),
    ) {
        // Two maps from two sequences (often the same keys in another order) and a value.
        let build = |ops: &[Op]| {
            let mut ours = Value::Object(Map::new());
            let mut oracle = Theirs::Object(TheirMap::new());
            for op in ops {
                apply(op, &mut ours, &mut oracle);
            }
            (ours, oracle)
        };
        let (ours_a, oracle_a) = build(&a);
        let (ours_b, oracle_b) = if reorder {
            let mut reversed = a.clone();
            reversed.reverse();
            build(&reversed)
        } else {
            build(&b)
        };
        prop_assert_eq!(ours_a == ours_b, oracle_a == oracle_b);
        prop_assert_eq!(ours_a.as_object() == ours_b.as_object(), oracle_a == oracle_b);
    }

    #[test]
    fn values_answer_as_serde_json(value in arb_value(), index in 0usize..6) {
        let oracle = theirs(&value);
        prop_assert_eq!(value.is_null(), oracle.is_null());
        prop_assert_eq!(value.is_boolean(), oracle.is_boolean());
        prop_assert_eq!(value.is_number(), oracle.is_number());
        prop_assert_eq!(value.is_string(), oracle.is_string());
        prop_assert_eq!(value.is_array(), oracle.is_array());
        prop_assert_eq!(value.is_object(), oracle.is_object());
        prop_assert_eq!(value.is_u64(), oracle.is_u64());
        prop_assert_eq!(value.is_i64(), oracle.is_i64());
        prop_assert_eq!(value.is_f64(), oracle.is_f64());
        prop_assert_eq!(value.as_bool(), oracle.as_bool());
        prop_assert_eq!(value.as_u64(), oracle.as_u64());
        prop_assert_eq!(value.as_i64(), oracle.as_i64());
        prop_assert_eq!(value.as_f64().map(f64::to_bits), oracle.as_f64().map(f64::to_bits));
        prop_assert_eq!(value.as_str(), oracle.as_str());
        prop_assert_eq!(value.as_array().map(Vec::len), oracle.as_array().map(Vec::len));
        prop_assert_eq!(value.as_object().map(Map::len), oracle.as_object().map(TheirMap::len));
        // Indexing: `Null` for a missing key or index and for a value of another kind.
        for key in ["a", "ab", "zz"] {
            prop_assert_eq!(theirs(&value[key]), oracle[key].clone());
            prop_assert_eq!(value.get(key).map(theirs), oracle.get(key).cloned());
        }
        prop_assert_eq!(theirs(&value[index]), oracle[index].clone());
        prop_assert_eq!(value.get(index).map(theirs), oracle.get(index).cloned());
        // Text through serde both ways, and our own writer.
        let text = serde_json::to_string(&value).unwrap();
        prop_assert_eq!(&text, &serde_json::to_string(&oracle).unwrap());
        prop_assert_eq!(&super::super::to_string(&value), &text);
        let read: Value = serde_json::from_str(&text).unwrap();
        prop_assert_eq!(theirs(&read), serde_json::from_str::<Theirs>(&text).unwrap());
        prop_assert_eq!(value.to_string(), oracle.to_string());
    }

    #[test]
    fn numbers_compare_and_convert_as_serde_json(
        a in prop_oneof![
            any::<u64>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            (-3i64..3).prop_map(Value::from),
            (-3i64..3).prop_map(|n| Value::from(n as f64)),
        ],
        b in prop_oneof![
            (-3i64..3).prop_map(Value::from),
            (0u64..3).prop_map(Value::from),
            (-3i64..3).prop_map(|n| Value::from(n as f64)),
        ],
    ) {
        prop_assert_eq!(a == b, theirs(&a) == theirs(&b));
        for n in [-1i64, 0, 1, 2] {
            prop_assert_eq!(a == n, theirs(&a) == n);
            prop_assert_eq!(a == n as f64, theirs(&a) == n as f64);
        }
        prop_assert_eq!(a == 1u64, theirs(&a) == 1u64);
        prop_assert_eq!(a == 1usize, theirs(&a) == 1usize);
        prop_assert_eq!(a == 1u32, theirs(&a) == 1u32);
    }

    #[test]
    fn conversions_keep_the_value(value in arb_value()) {
        // Through the serde derive-facing path too: serde_json's `to_value` of ours.
        let oracle = theirs(&value);
        prop_assert_eq!(&serde_json::to_value(&value).unwrap(), &oracle);
        prop_assert_eq!(Value::from(oracle.clone()), value.clone());
        let deserialized: Value = serde_json::from_value(oracle).unwrap();
        prop_assert_eq!(deserialized, value);
    }

    #[test]
    fn building_from_entries_applies_the_duplicate_rule(
        entries in prop::collection::vec((arb_key(), 0u64..1000), 0..60),
    ) {
        // Above and below the size where the sort takes over (`SMALL`), with duplicates.
        let ours: Map = entries.iter().map(|(k, v)| (k.clone(), Value::from(*v))).collect();
        let oracle: TheirMap = entries.iter().map(|(k, v)| (k.clone(), Theirs::from(*v))).collect();
        assert_same_map(&ours, &oracle)?;
        let mut by_insert = Map::new();
        for (k, v) in &entries {
            by_insert.insert(k.clone(), Value::from(*v));
        }
        prop_assert_eq!(ours.keys().collect::<Vec<_>>(), by_insert.keys().collect::<Vec<_>>());
        let (mut ours, mut oracle) = (ours, oracle);
        ours.sort_keys();
        oracle.sort_keys();
        assert_same_map(&ours, &oracle)?;
    }
}

#[test]
fn missing_keys_and_indexes_are_null_and_index_assignment_inserts() {
    let mut value = Value::Null;
    assert_eq!(value["x"], Value::Null);
    assert_eq!(value[3], Value::Null);
    value["b"] = Value::from(1);
    value["a"] = Value::from("x");
    value["b"] = Value::from(2);
    assert_eq!(value.to_string(), r#"{"b":2,"a":"x"}"#);
    assert_eq!(value["a"]["nested"], Value::Null);
    assert_eq!(value.pointer("/b"), Some(&Value::from(2)));
    assert_eq!(value.pointer(""), Some(&value));
    assert_eq!(value.pointer("b"), None);
    let mut array = Value::from(vec![Value::from(1), Value::from(vec!["a/b"])]);
    assert_eq!(array.pointer("/1/0"), Some(&Value::from("a/b")));
    assert_eq!(array.pointer("/01"), None);
    *array.pointer_mut("/0").unwrap() = Value::Null;
    assert_eq!(array.to_string(), r#"[null,["a/b"]]"#);
    assert_eq!(Value::from(f64::NAN), Value::Null);
    assert_eq!(Number::from_f64(f64::INFINITY), None);
}

#[test]
fn remove_moves_the_last_entry_into_the_gap_as_serde_json_does() {
    let mut map: Map = ["a", "b", "c", "d"]
        .into_iter()
        .map(|k| (k.to_owned(), Value::Null))
        .collect();
    map.remove("b");
    assert_eq!(map.keys().collect::<Vec<_>>(), ["a", "d", "c"]);
    map.shift_remove("a");
    assert_eq!(map.keys().collect::<Vec<_>>(), ["d", "c"]);
}

/// Our value of JSON text: through `json::parse` when it builds this type (the browser's
/// build, the `serde-json-value` feature off), else through our `Deserialize` on serde_json's
/// parser. Both gather an object's entries and build the map at once (`Map::from_entries`).
fn parse(text: &str) -> Value {
    #[cfg(not(feature = "serde-json-value"))]
    return super::super::parse(text.as_bytes()).unwrap();
    #[cfg(feature = "serde-json-value")]
    return serde_json::from_str(text).unwrap();
}

/// Keys `k0`…`k{n-1}`, zero-padded so that sorting them is not their order here.
fn key(i: usize) -> String {
    format!("k{:06}", (i * 7919) % 1_000_000)
}

#[test]
fn a_hostile_object_of_200k_keys_parses_and_compares_in_n_log_n() {
    // 200,000 distinct keys, then each again in reverse order with a new value: 3.6 MB of text.
    // An insert per key into the vector would be 2·10¹⁰ key comparisons to parse it and as
    // many to compare two such maps (minutes); sorted, it is a fraction of a second.
    const N: usize = 200_000;
    let mut text = String::from("{");
    for i in 0..N {
        text.push_str(&format!("\"{}\":{},", key(i), i));
    }
    for i in (0..N).rev() {
        text.push_str(&format!("\"{}\":{},", key(i), i + N));
    }
    text.pop();
    text.push('}');
    let parsed = parse(&text);
    let map = parsed.as_object().unwrap();
    assert_eq!(map.len(), N);
    // First positions kept, last values taken: serde_json's rule.
    for (i, (k, v)) in map.iter().enumerate().step_by(9_973) {
        assert_eq!(k, &key(i));
        assert_eq!(v.as_u64(), Some((i + N) as u64));
    }
    let oracle: Theirs = serde_json::from_str(&text).unwrap();
    assert_eq!(theirs(&parsed), oracle);

    // The same entries in another order: equal; one value changed: not.
    let mut reversed: Map = map
        .iter()
        .rev()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    assert_eq!(map, &reversed);
    reversed.insert(key(N / 2), Value::Null);
    assert_ne!(map, &reversed);
}
