//! `parse` and `WriteJson` against serde_json, the oracle: the same text for every value,
//! the same verdict and value for every input, valid or not.

use super::{parse, to_string};
use super::{Number, Value};
use proptest::prelude::*;

fn arb_string() -> impl Strategy<Value = String> {
    // Any characters, control characters, quotes, backslashes and astral ones included.
    prop_oneof![
        prop::collection::vec(any::<char>(), 0..12).prop_map(String::from_iter),
        "[a-z\"\\\\/\\x00-\\x1f\\x7f é😀]{0,12}",
    ]
}

fn arb_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<u64>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        (0u64..1000).prop_map(Value::from),
        any::<f64>().prop_filter_map("finite", |f| Number::from_f64(f).map(Value::Number)),
        (-1e6f64..1e6).prop_filter_map("finite", |f| Number::from_f64(f).map(Value::Number)),
        arb_string().prop_map(Value::String),
    ];
    leaf.prop_recursive(5, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((arb_string(), inner), 0..6)
                .prop_map(|entries| Value::Object(entries.into_iter().collect())),
        ]
    })
}

/// Equal, but for floats: serde_json in this workspace's native build rounds them exactly
/// (`float_roundtrip`, enabled by another crate), `parse` as the browser build's serde_json
/// does, which may be an ulp or two off.
fn same(ours: &Value, oracle: &Value) -> bool {
    match (ours, oracle) {
        (Value::Number(a), Value::Number(b)) if a.is_f64() && b.is_f64() => {
            let (a, b) = (a.as_f64().unwrap(), b.as_f64().unwrap());
            // Within a few units in the last place, counted on the bits: a bound relative to
            // the value refused subnormals (`-1.18880448509098e-309` read one unit off), whose
            // last place is a far larger share of them than a normal number's.
            a == b
                || (a.is_sign_negative() == b.is_sign_negative()
                    && a.to_bits().abs_diff(b.to_bits()) <= 8)
        }
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(a, b)| same(a, b))
        }
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len()
                && a.iter()
                    .zip(b)
                    .all(|((ka, va), (kb, vb))| ka == kb && same(va, vb))
        }
        _ => ours == oracle,
    }
}

/// `parse` and `serde_json::from_slice` agree on `text`: both refuse it, or both read it
/// (and to the same value).
fn agrees(text: &[u8]) -> Result<(), String> {
    let ours = parse(text);
    let oracle = serde_json::from_slice::<Value>(text);
    match (&ours, &oracle) {
        (Ok(a), Ok(b)) if same(a, b) => Ok(()),
        (Err(_), Err(_)) => Ok(()),
        _ => Err(format!(
            "{:?}: ours {ours:?}, serde_json {oracle:?}",
            String::from_utf8_lossy(text)
        )),
    }
}

#[track_caller]
fn assert_agrees(text: &[u8]) {
    if let Err(why) = agrees(text) {
        panic!("{why}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn writes_what_serde_json_writes(value in arb_value()) {
        prop_assert_eq!(to_string(&value), serde_json::to_string(&value).unwrap());
    }

    #[test]
    fn reads_what_serde_json_writes(value in arb_value()) {
        let compact = serde_json::to_string(&value).unwrap();
        let parsed = parse(compact.as_bytes()).unwrap();
        prop_assert!(same(&parsed, &value), "{} read as {:?}", compact, parsed);
        let pretty = serde_json::to_string_pretty(&value).unwrap();
        prop_assert!(same(&parse(pretty.as_bytes()).unwrap(), &value));
    }

    /// Valid text with one byte inserted, removed or replaced: mostly not JSON any more,
    /// sometimes still JSON; the two parsers agree either way.
    #[test]
    fn agrees_on_damaged_text(
        value in arb_value(),
        at in any::<prop::sample::Index>(),
        edit in 0..3u8,
        byte in prop_oneof![any::<u8>(), prop::sample::select(b"{}[],:\"\\ -+.eE0123456789tfnu".to_vec())],
    ) {
        let mut text = serde_json::to_vec(&value).unwrap();
        let i = at.index(text.len() + 1);
        match edit {
            0 => text.insert(i, byte),
            1 if i < text.len() => { text.remove(i); }
            _ if i < text.len() => text[i] = byte,
            _ => text.push(byte),
        }
        prop_assert!(agrees(&text).is_ok(), "{}", agrees(&text).unwrap_err());
    }

    #[test]
    fn agrees_on_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..24)) {
        prop_assert!(agrees(&bytes).is_ok(), "{}", agrees(&bytes).unwrap_err());
    }

    #[test]
    fn agrees_on_number_text(text in "-?(0|[1-9][0-9]{0,24})(\\.[0-9]{1,20})?([eE][-+]?[0-9]{1,4})?") {
        prop_assert!(agrees(text.as_bytes()).is_ok(), "{}", agrees(text.as_bytes()).unwrap_err());
        // Whole numbers are exact and of the same kind (u64, i64 or f64) as serde_json's.
        if let (Ok(Value::Number(a)), Ok(Value::Number(b))) =
            (parse(text.as_bytes()), serde_json::from_str::<Value>(&text))
        {
            prop_assert_eq!((a.is_u64(), a.is_i64(), a.is_f64()), (b.is_u64(), b.is_i64(), b.is_f64()));
            if !a.is_f64() {
                prop_assert_eq!(a, b);
            }
        }
    }
}

#[test]
fn malformed_text_is_an_error_as_in_serde_json() {
    let cases: &[&[u8]] = &[
        b"",
        b"   ",
        b"nul",
        b"nulll",
        b"tru",
        b"True",
        b"[1,]",
        b"[,1]",
        b"[1 2]",
        b"{\"a\":1,}",
        b"{\"a\" 1}",
        b"{a:1}",
        b"{1:2}",
        b"{\"a\":}",
        b"01",
        b"-01",
        b"-",
        b"1.",
        b".5",
        b"1e",
        b"1e+",
        b"+1",
        b"0x10",
        b"NaN",
        b"Infinity",
        b"-Infinity",
        b"1e400",
        b"-1e400",
        b"123456789e999999999999",
        b"\"unterminated",
        b"\"bad escape \\x\"",
        b"\"short \\u12\"",
        b"\"\\uD800\"",
        b"\"\\uDC00\"",
        b"\"\\uD800\\u0041\"",
        b"\"\\uD800\\uD800\"",
        b"\"\\uD800x\"",
        b"\"raw\ncontrol\"",
        b"\"raw\x00nul\"",
        b"\"\xff\"",
        b"\"\xc3\"",
        b"\"\xed\xa0\x80\"",
        b"\xef\xbb\xbf{}",
        b"[1] x",
        b"{} {}",
        b"[",
        b"{",
        b"]",
        b"'single'",
    ];
    for text in cases {
        assert!(parse(text).is_err(), "{:?}", String::from_utf8_lossy(text));
        assert_agrees(text);
    }
}

#[test]
fn edge_values_read_as_serde_json_reads_them() {
    let cases: &[&str] = &[
        "0",
        "-0",
        "-0.0",
        "0e999999999999",
        "1e-400",
        "-1e-400",
        "1e-999999999999",
        "18446744073709551615",
        "18446744073709551616",
        "184467440737095516150",
        "18446744073709551616.5",
        "18446744073709551616.0e-2",
        "1844674407370955161.5",
        "-9223372036854775808",
        "-9223372036854775809",
        "1E+2",
        "1e-2",
        "123456789012345678901234567890",
        "0.1",
        "1.7976931348623157e308",
        "5e-324",
        "2.2250738585072014e-308",
        " \t\r\n[ 1 , { \"a\" : [ ] } ] \n",
        "\"\\u0000\\u001f\\\"\\\\\\/\\b\\f\\n\\r\\t\"",
        "\"\\uD83D\\uDE00 \\u00e9 \\u00E9\"",
        "\"é😀\u{7f}\"",
        "{\"a\":1,\"b\":2,\"a\":3}",
        "[true,false,null]",
    ];
    for text in cases {
        assert_agrees(text.as_bytes());
    }
    // A later duplicate key replaces the value in the first key's place, as serde_json's map.
    let dup = parse(br#"{"a":1,"b":2,"a":3}"#).unwrap();
    assert_eq!(to_string(&dup), r#"{"a":3,"b":2}"#);
    assert_eq!(to_string(&parse(b"-0").unwrap()), "-0.0");
    assert_eq!(
        parse(b"\"\\uD83D\\uDE00\"").unwrap(),
        Value::String("😀".into())
    );
}

#[test]
fn depth_is_limited_as_in_serde_json_and_never_overflows_the_stack() {
    for depth in [126, 127, 128, 129] {
        for (open, close) in [("[", "]"), ("{\"k\":", "}")] {
            let text = format!("{}1{}", open.repeat(depth), close.repeat(depth));
            assert_agrees(text.as_bytes());
        }
    }
    assert!(parse(format!("{}1{}", "[".repeat(127), "]".repeat(127)).as_bytes()).is_ok());
    assert!(parse(format!("{}1{}", "[".repeat(128), "]".repeat(128)).as_bytes()).is_err());
    // Far past the limit, unterminated: refused at the limit, not by running out of stack.
    assert!(parse("[".repeat(1_000_000).as_bytes()).is_err());
    assert!(parse("{\"a\":".repeat(100_000).as_bytes()).is_err());
}

#[test]
fn huge_inputs_read_whole() {
    let long = format!("\"{}\"", "é\\n".repeat(200_000));
    assert_agrees(long.as_bytes());
    let many = format!(
        "[{}]",
        (0..100_000)
            .map(|i| (i * 7919).to_string())
            .collect::<Vec<_>>()
            .join(",")
    );
    assert_agrees(many.as_bytes());
    let wide: super::Map<String, Value> = (0..20_000)
        .map(|i| (format!("k{i}"), Value::from(i)))
        .collect();
    let text = serde_json::to_string(&wide).unwrap();
    assert_eq!(to_string(&parse(text.as_bytes()).unwrap()), text);
}

#[test]
fn floats_exactly_representable_read_exactly() {
    // significand < 2^53 and |exponent| <= 22: one correctly rounded operation, the same f64
    // as correctly rounded parsing. (A 17-digit significand such as 4503599627370495.5's is
    // past 2^53: it is rounded once on the way in, and serde_json agrees with us on it only
    // without `float_roundtrip`, which the workspace's `jsonschema` turns on for every test.)
    for text in [
        "1.5",
        "-2.25",
        "123456.789",
        "1e22",
        "450359962737049.5",
        "0.000001",
    ] {
        let ours = parse(text.as_bytes()).unwrap();
        assert_eq!(ours, serde_json::from_str::<Value>(text).unwrap(), "{text}");
    }
}

#[test]
fn writes_control_characters_and_floats_as_serde_json() {
    let all_controls: String = (0u8..0x20).map(char::from).collect();
    for value in [
        Value::String(all_controls),
        Value::String("\"\\/\u{7f}é😀".into()),
        Value::from(f64::MIN_POSITIVE),
        Value::from(5e-324),
        Value::from(1e21),
        Value::from(1e15),
        Value::from(123456789.125),
        Value::from(-0.0),
        Value::from(u64::MAX),
        Value::from(i64::MIN),
        Value::from(f64::NAN), // not a Number: `Value::Null`
    ] {
        assert_eq!(to_string(&value), serde_json::to_string(&value).unwrap());
    }
    assert_eq!(to_string(&f64::INFINITY), "null");
}
