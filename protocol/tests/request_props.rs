//! Property tests of request decoding: the byte reader (`decode_request`) decides every body
//! as the body parsed into a `Value` first decides it (`decode_request_value`, each message
//! through serde's derive), over generated histories: both message forms, roles in every
//! form serde accepts or refuses, repeated and unknown keys, text and part contents, values a
//! `Value` parse refuses, bytes that are not UTF-8, under good and bad versions.
#![cfg(feature = "server")]

use dpas_protocol::{decode_request, decode_request_value, ChatStepRequest, HostErrorCode};
use proptest::prelude::*;
use serde_json::Value;

/// JSON texts that a `Value` parse refuses.
const REFUSED: [&str; 3] = ["1e400", r#""\ud800""#, "[1,]"];

/// Byte sequences that are not UTF-8: a lone continuation byte, a lead byte without its
/// continuation, an overlong encoding, a surrogate's encoding, a byte UTF-8 never uses.
const NOT_UTF8: [&[u8]; 5] = [b"\x80", b"\xc3", b"\xc0\xaf", b"\xed\xa0\x80", b"\xff"];

fn string() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "user",
        "assistant",
        "tool",
        "system",
        "robot",
        "",
        "User",
        "text",
        "reasoning",
        "tool-call",
        "tool-result",
        "image",
        "c1",
        "view_a__b",
        r"\u0075ser",
        "é\\n😀",
    ])
    .prop_map(|s| format!("\"{s}\""))
}

fn key() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "role",
        "content",
        "type",
        "text",
        "toolCallId",
        "toolName",
        "input",
        "output",
        "providerOptions",
        "user",
        "tool",
        r"r\u006fle",
        "x",
        "$serde_json::private::RawValue",
    ])
    .prop_map(|s| format!("\"{s}\""))
}

/// An object's text from its entries (keys may repeat).
fn object(entries: Vec<(String, String)>) -> String {
    let entries: Vec<String> = entries
        .into_iter()
        .map(|(k, v)| format!("{k}:{v}"))
        .collect();
    format!("{{{}}}", entries.join(","))
}

fn array(items: Vec<String>) -> String {
    format!("[{}]", items.join(","))
}

/// Any JSON text, now and then one a `Value` parse refuses.
fn json() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        8 => prop::sample::select(vec!["null", "true", "false", "0", "-0", "7", "-3", "1.5", "1e2"])
            .prop_map(str::to_owned),
        8 => string(),
        1 => prop::sample::select(REFUSED.to_vec()).prop_map(str::to_owned),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(array),
            prop::collection::vec((key(), inner), 0..4).prop_map(object),
        ]
    })
}

fn role() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => string(),
        1 => prop::sample::select(vec![
            r#"{"user":null}"#,
            r#"{"tool":null}"#,
            r#"{"robot":null}"#,
            r#"{"user":1}"#,
            r#"{"user":null,"user":null}"#,
            r#"{"user":null,"tool":null}"#,
            r#"{}"#,
            r#"["user"]"#,
            "5",
            "null",
        ])
        .prop_map(str::to_owned),
        1 => json(),
    ]
}

/// A content part: a known type with its fields (some missing or of the wrong type), or
/// any value.
fn part() -> impl Strategy<Value = String> {
    let field = prop_oneof![
        (Just("\"type\"".to_owned()), string()),
        (Just("\"text\"".to_owned()), prop_oneof![string(), json()]),
        (Just("\"toolCallId\"".to_owned()), string()),
        (Just("\"toolName\"".to_owned()), string()),
        (Just("\"input\"".to_owned()), json()),
        (Just("\"output\"".to_owned()), json()),
        (key(), json()),
    ];
    prop_oneof![
        6 => (
            prop::sample::select(vec!["text", "reasoning", "tool-call", "tool-result", "image"]),
            prop::collection::vec(field, 0..5),
        )
            .prop_map(|(kind, mut fields)| {
                fields.insert(0, ("\"type\"".to_owned(), format!("\"{kind}\"")));
                object(fields)
            }),
        1 => json(),
    ]
}

fn content() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => string(),
        4 => prop::collection::vec(part(), 0..4).prop_map(array),
        1 => json(),
    ]
}

/// A message: the object form with its keys in any order, repeated or missing, and unknown
/// ones; the `[role, content]` array form with an item too few or too many; any value.
fn message() -> impl Strategy<Value = String> {
    let entry = prop_oneof![
        3 => (Just("\"role\"".to_owned()), role()),
        3 => (Just("\"content\"".to_owned()), content()),
        1 => (key(), json()),
    ];
    prop_oneof![
        8 => (role(), content(), prop::collection::vec(entry, 0..3)).prop_map(
            |(role, content, mut entries)| {
                entries.insert(0, ("\"role\"".to_owned(), role));
                entries.insert(1, ("\"content\"".to_owned(), content));
                let rotate = entries.len() / 2;
                entries.rotate_left(rotate);
                object(entries)
            }
        ),
        1 => (role(), content(), prop::collection::vec(json(), 0..2)).prop_map(
            |(role, content, extra)| {
                let mut items = vec![role, content];
                items.extend(extra);
                array(items)
            }
        ),
        1 => prop::collection::vec(prop_oneof![role(), content()], 0..2).prop_map(array),
        1 => json(),
    ]
}

/// A v2 body whose `messages` is `messages` (and, when `again` is given, is repeated with it
/// last), under `version`.
fn body(version: &str, messages: &str, again: Option<&str>) -> Vec<u8> {
    let again = again.map_or(String::new(), |m| format!(r#","messages":{m}"#));
    format!(
        r#"{{"protocolVersion":{version},"conversationId":"c","turnId":"t","stepIndex":0,"pathname":"/x","messages":{messages},"catalog":{{"frontendTools":[]}},"frontendTools":[]{again}}}"#
    )
    .into_bytes()
}

/// The decision on `body` parsed as a `Value` first, against the byte reader's.
fn assert_as_parsed(body: &[u8]) -> Result<(), TestCaseError> {
    let parsed = match serde_json::from_slice::<Value>(body) {
        Ok(value) => decode_request_value(value),
        Err(_) => Err(dpas_protocol::HostError::of(
            HostErrorCode::ProtocolDecodeError,
        )),
    };
    let read = decode_request(body);
    let shown = String::from_utf8_lossy(body);
    match (read, parsed) {
        (Ok(read), Ok(parsed)) => {
            // As written too: a map's equality does not see its order.
            let written = |r: &ChatStepRequest| serde_json::to_string(&r.messages).unwrap();
            prop_assert_eq!(written(&read), written(&parsed), "{}", shown);
            prop_assert_eq!(read, parsed, "{}", shown);
        }
        (Err(read), Err(parsed)) => prop_assert_eq!(
            (read.code, read.message),
            (parsed.code, parsed.message),
            "{}",
            shown
        ),
        (read, parsed) => prop_assert!(false, "{shown}: read {read:?}, parsed {parsed:?}"),
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    #[test]
    fn messages_are_read_as_a_parsed_value_decodes_them(
        version in prop::sample::select(vec!["2", "1", "3"]),
        messages in prop::collection::vec(message(), 0..4),
        again in prop::option::weighted(0.1, prop::collection::vec(message(), 1..3)),
    ) {
        let again = again.map(array);
        assert_as_parsed(&body(version, &array(messages), again.as_deref()))?;
    }

    #[test]
    fn a_body_with_bytes_that_are_not_utf8_is_read_as_a_parsed_value_decides_it(
        messages in prop::collection::vec(message(), 1..3),
        bytes in prop::sample::select(NOT_UTF8.to_vec()),
        at in any::<prop::sample::Index>(),
    ) {
        // The bytes go anywhere: inside a string, between tokens, after the body.
        let mut body = body("2", &array(messages), None);
        let at = at.index(body.len() + 1);
        body.splice(at..at, bytes.iter().copied());
        assert_as_parsed(&body)?;
    }

    #[test]
    fn a_messages_value_of_any_shape_is_read_as_a_parsed_value_decodes_it(
        version in prop::sample::select(vec!["2", "3"]),
        messages in json(),
    ) {
        assert_as_parsed(&body(version, &messages, None))?;
    }
}

#[test]
fn the_generated_histories_decode() {
    // The generator's typical message decodes (the properties above are not all refusals).
    let good = r#"[{"role":"user","content":"hi"},["assistant",[{"type":"text","text":"a"}]],{"content":[],"role":{"tool":null}}]"#;
    let request = decode_request(&body("2", good, None)).expect("decodes");
    assert_eq!(request.messages.len(), 3);
    assert!(assert_as_parsed(&body("2", good, None)).is_ok());
}
