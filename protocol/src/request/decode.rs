//! Decoding a step request (the server's half): the one entry point from raw bytes to the
//! normalised internal request, [`decode_request`].

use serde_json::{Map, Value};

use super::version::ProtocolVersion;
use crate::error::{HostError, HostErrorCode, LimitPlane};
use crate::limits::*;
use crate::message::WireModelMessage;
use crate::tool::{CatalogMode, RawSchema, Truncated, WireToolDescriptor, WireToolState};
use fields::{CatalogFields, Check, DescriptorFields, Fields, Malformed, StateFields};

mod fields;
mod read;

/// The normalised internal request (B8): both versions become this one shape.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatStepRequest {
    pub version: ProtocolVersion,
    pub conversation_id: String,
    pub turn_id: String,
    pub step_index: u32,
    /// Empty for v1, which makes the route floor empty (unscoped).
    pub pathname: String,
    pub model_id: Option<String>,
    pub messages: Vec<WireModelMessage>,
    pub catalog_mode: CatalogMode,
    /// `None` when the browser made no request (the key was absent).
    pub requested_scope: Option<Vec<String>>,
    /// Each schema as the request carried it (the server only forwards it).
    pub frontend_tools: Vec<WireToolDescriptor<RawSchema>>,
    pub frontend_state: Vec<WireToolState>,
    pub truncated: Option<Truncated>,
}

/// The length in UTF-16 units: one per character, two for one past U+FFFF. Counted from the
/// bytes (a character is its one byte that is not a continuation byte, and one of four bytes
/// starts with 0xF0 or more), a loop the compiler vectorises: the descriptions of a catalog
/// are mostly not ASCII (`[view · read]`), and decoding them char by char showed in a step's
/// profile.
fn utf16_len(s: &str) -> usize {
    s.bytes()
        .map(|b| usize::from(b & 0xC0 != 0x80) + usize::from(b >= 0xF0))
        .sum()
}

fn string(value: Option<Value>, min: usize, max: usize) -> Check<String> {
    match value {
        Some(Value::String(s)) if (min..=max).contains(&utf16_len(&s)) => Ok(s),
        _ => Err(Malformed),
    }
}

/// An optional field: absent is fine, `null` is not (the reference's schema rejects it).
fn opt_string(value: Option<Value>, max: usize) -> Check<Option<String>> {
    value.map(|v| string(Some(v), 0, max)).transpose()
}

fn integer(value: Option<Value>, max: u64) -> Check<u64> {
    let n = value.as_ref().and_then(Value::as_f64).ok_or(Malformed)?;
    if n.fract() == 0.0 && n >= 0.0 && n <= max as f64 {
        Ok(n as u64)
    } else {
        Err(Malformed)
    }
}

fn array(value: Option<Value>) -> Check<Vec<Value>> {
    match value {
        Some(Value::Array(items)) => Ok(items),
        _ => Err(Malformed),
    }
}

fn object(value: Value) -> Check<Map<String, Value>> {
    match value {
        Value::Object(map) => Ok(map),
        _ => Err(Malformed),
    }
}

fn take(obj: &mut Map<String, Value>, key: &str) -> Option<Value> {
    obj.remove(key)
}

/// The messages as serde's derive decodes each one from its parsed `Value`: what the byte
/// reader's `Message` reads them as, and the decoding of an already parsed body.
fn messages_from_value(value: Value) -> Check<Vec<WireModelMessage>> {
    let mut out = Vec::new();
    for m in array(Some(value))? {
        out.push(serde_json::from_value::<WireModelMessage>(m).map_err(|_| Malformed)?);
    }
    Ok(out)
}

/// The history: present, and not empty.
fn messages(items: Option<Check<Vec<WireModelMessage>>>) -> Check<Vec<WireModelMessage>> {
    match items.ok_or(Malformed)? {
        Ok(items) if !items.is_empty() => Ok(items),
        _ => Err(Malformed),
    }
}

impl Fields {
    fn from_map(map: Map<String, Value>) -> Self {
        let mut fields = Self::default();
        for (key, value) in map {
            match key.as_str() {
                "catalog" => fields.catalog = Some(CatalogFields::from_value(value)),
                "frontendTools" => fields.frontend_tools = Some(descriptors_from_value(value)),
                "messages" => fields.messages = Some(messages_from_value(value)),
                key => {
                    if let Some(slot) = fields.slot(key) {
                        *slot = Some(value);
                    }
                }
            }
        }
        fields
    }
}

impl CatalogFields {
    fn from_value(value: Value) -> Check<Self> {
        let mut fields = Self::default();
        for (key, value) in object(value)? {
            match key.as_str() {
                "frontendTools" => fields.frontend_tools = Some(descriptors_from_value(value)),
                "frontendState" => fields.frontend_state = Some(states_from_value(value)),
                key => {
                    if let Some(slot) = fields.slot(key) {
                        *slot = Some(value);
                    }
                }
            }
        }
        Ok(fields)
    }
}

impl StateFields {
    fn from_value(value: Value) -> Check<Self> {
        let mut fields = Self::default();
        for (key, value) in object(value)? {
            if let Some(slot) = fields.slot(&key) {
                *slot = Some(value);
            }
        }
        Ok(fields)
    }
}

fn states_from_value(value: Value) -> Check<Vec<StateFields>> {
    array(Some(value))?
        .into_iter()
        .map(StateFields::from_value)
        .collect()
}

impl DescriptorFields {
    fn from_value(value: Value) -> Check<Self> {
        let mut fields = Self::default();
        for (key, value) in object(value)? {
            match key.as_str() {
                "inputSchema" => {
                    fields.input_schema = Some(match &value {
                        Value::Object(map) => Ok(RawSchema::from(map)),
                        _ => Err(Malformed),
                    });
                }
                key => {
                    if let Some(slot) = fields.slot(key) {
                        *slot = Some(value);
                    }
                }
            }
        }
        Ok(fields)
    }
}

fn descriptors_from_value(value: Value) -> Check<Vec<DescriptorFields>> {
    array(Some(value))?
        .into_iter()
        .map(DescriptorFields::from_value)
        .collect()
}

fn descriptor(
    d: DescriptorFields,
    version: ProtocolVersion,
) -> Check<WireToolDescriptor<RawSchema>> {
    let wire_name = string(d.wire_name, 1, MAX_ID_LEN)?;
    let canonical_id = string(d.canonical_id, 1, 128)?;
    let plane = serde_json::from_value(d.plane.ok_or(Malformed)?).map_err(|_| Malformed)?;
    let description = string(d.description, 0, MAX_DESCRIPTION_LEN)?;
    let input_schema = d.input_schema.ok_or(Malformed)??;
    let effect = string(d.effect, 0, MAX_EFFECT_LEN)?;
    let confirmation =
        serde_json::from_value(d.confirmation.ok_or(Malformed)?).map_err(|_| Malformed)?;
    let (available, unavailable_reason) = match version {
        // v2 carries availability in frontendState; the keys are ignored unread.
        ProtocolVersion::V2 => (None, None),
        ProtocolVersion::V1 => {
            let available = match d.available {
                None => None,
                Some(Value::Bool(b)) => Some(b),
                Some(_) => return Err(Malformed),
            };
            (available, opt_string(d.unavailable_reason, MAX_REASON_LEN)?)
        }
    };
    // Optional in both versions; absent is false, anything but a boolean is malformed (U1).
    let untrusted = match d.untrusted {
        None => false,
        Some(Value::Bool(b)) => b,
        Some(_) => return Err(Malformed),
    };
    Ok(WireToolDescriptor {
        wire_name,
        canonical_id,
        plane,
        description,
        input_schema,
        effect,
        confirmation,
        available,
        unavailable_reason,
        untrusted,
    })
}

fn tool_state(s: StateFields) -> Check<WireToolState> {
    let wire_name = string(s.wire_name, 1, MAX_ID_LEN)?;
    let available = match s.available {
        Some(Value::Bool(b)) => b,
        _ => return Err(Malformed),
    };
    Ok(WireToolState {
        wire_name,
        available,
        unavailable_reason: opt_string(s.unavailable_reason, MAX_REASON_LEN)?,
        note: opt_string(s.note, MAX_REASON_LEN)?,
    })
}

fn truncated(value: Value) -> Check<Truncated> {
    let mut obj = object(value)?;
    let dropped = integer(take(&mut obj, "dropped"), u64::MAX)?;
    let reason = serde_json::from_value(take(&mut obj, "reason").ok_or(Malformed)?)
        .map_err(|_| Malformed)?;
    Ok(Truncated { dropped, reason })
}

/// Limits that make a well-formed request too large (decision 1): checked after everything
/// else is valid, so a malformed body is still a 400.
fn over_limit(plane: LimitPlane, count: usize, limit: usize) -> Result<(), HostError> {
    if count > limit {
        Err(HostError::catalog_too_large(plane, count, limit))
    } else {
        Ok(())
    }
}

fn decode_error() -> HostError {
    HostError::of(HostErrorCode::ProtocolDecodeError)
}

/// Decodes and normalises a step request from the raw body. The body is read in one pass
/// into the fields the decoder reads ([`read`]), each frontend tool's schema kept as its
/// text; what it accepts and refuses is exactly what [`decode_request_value`] does with the
/// body parsed as a `Value`.
pub fn decode_request(body: &[u8]) -> Result<ChatStepRequest, HostError> {
    // A body that is not a JSON object is treated as `null`, which fails validation (B1).
    let fields = read::fields(body).map_err(|_| decode_error())?;
    decode_fields(fields)
}

/// [`decode_request`] for an already parsed body.
pub fn decode_request_value(value: Value) -> Result<ChatStepRequest, HostError> {
    let Value::Object(obj) = value else {
        return Err(decode_error());
    };
    decode_fields(Fields::from_map(obj))
}

fn decode_fields(mut fields: Fields) -> Result<ChatStepRequest, HostError> {
    let version = match &fields.protocol_version {
        None => return Err(decode_error()),
        Some(v) => match v.as_f64() {
            Some(1.0) => ProtocolVersion::V1,
            Some(2.0) => ProtocolVersion::V2,
            _ => return Err(HostError::of(HostErrorCode::ProtocolVersionMismatch)),
        },
    };
    let decoded = match version {
        ProtocolVersion::V2 => decode_v2(&mut fields),
        ProtocolVersion::V1 => decode_v1(&mut fields),
    };
    let request = decoded.map_err(|Malformed| decode_error())?;
    let (tool_limit, message_limit) = match version {
        ProtocolVersion::V2 => (MAX_FRONTEND_TOOLS, MAX_MESSAGES),
        ProtocolVersion::V1 => (V1_MAX_FRONTEND_TOOLS, V1_MAX_MESSAGES),
    };
    over_limit(
        LimitPlane::Frontend,
        request.frontend_tools.len(),
        tool_limit,
    )?;
    over_limit(LimitPlane::Messages, request.messages.len(), message_limit)?;
    Ok(request)
}

fn decode_common(fields: &mut Fields) -> Check<(String, String, u32)> {
    let conversation_id = string(fields.conversation_id.take(), 1, MAX_ID_LEN)?;
    let turn_id = string(fields.turn_id.take(), 1, MAX_ID_LEN)?;
    let step_index = integer(fields.step_index.take(), MAX_STEP_INDEX)? as u32;
    Ok((conversation_id, turn_id, step_index))
}

fn decode_v2(fields: &mut Fields) -> Check<ChatStepRequest> {
    let (conversation_id, turn_id, step_index) = decode_common(fields)?;
    let pathname = string(fields.pathname.take(), 1, MAX_PATHNAME_LEN)?;
    let model_id = opt_string(fields.model_id.take(), MAX_MODEL_ID_LEN)?;
    let messages = messages(fields.messages.take())?;
    let catalog = fields.catalog.take().ok_or(Malformed)??;
    let catalog_mode = match catalog.mode {
        None => CatalogMode::Direct,
        Some(v) => serde_json::from_value(v).map_err(|_| Malformed)?,
    };
    let requested_scope = match catalog.scope {
        None => None,
        Some(v) => {
            let tokens = array(Some(v))?;
            if tokens.len() > MAX_SCOPE_TOKENS {
                return Err(Malformed);
            }
            Some(
                tokens
                    .into_iter()
                    .map(|t| string(Some(t), 0, MAX_SCOPE_TOKEN_LEN))
                    .collect::<Check<Vec<_>>>()?,
            )
        }
    };
    let frontend_tools = catalog
        .frontend_tools
        .ok_or(Malformed)??
        .into_iter()
        .map(|d| descriptor(d, ProtocolVersion::V2))
        .collect::<Check<Vec<_>>>()?;
    let frontend_state = match catalog.frontend_state {
        None => Vec::new(),
        Some(items) => {
            let items = items?;
            if items.len() > MAX_FRONTEND_STATE {
                return Err(Malformed);
            }
            items
                .into_iter()
                .map(tool_state)
                .collect::<Check<Vec<_>>>()?
        }
    };
    let truncated = catalog.truncated.map(truncated).transpose()?;
    Ok(ChatStepRequest {
        version: ProtocolVersion::V2,
        conversation_id,
        turn_id,
        step_index,
        pathname,
        model_id,
        messages,
        catalog_mode,
        requested_scope,
        frontend_tools,
        frontend_state,
        truncated,
    })
}

fn decode_v1(fields: &mut Fields) -> Check<ChatStepRequest> {
    let (conversation_id, turn_id, step_index) = decode_common(fields)?;
    let messages = messages(fields.messages.take())?;
    let frontend_tools = fields
        .frontend_tools
        .take()
        .ok_or(Malformed)??
        .into_iter()
        .map(|d| descriptor(d, ProtocolVersion::V1))
        .collect::<Check<Vec<_>>>()?;
    // v1 state is derived from the descriptors (B8).
    let frontend_state = frontend_tools
        .iter()
        .map(|d| WireToolState {
            wire_name: d.wire_name.clone(),
            available: d.available.unwrap_or(true),
            unavailable_reason: d.unavailable_reason.clone().filter(|r| !r.is_empty()),
            note: None,
        })
        .collect();
    Ok(ChatStepRequest {
        version: ProtocolVersion::V1,
        conversation_id,
        turn_id,
        step_index,
        pathname: String::new(),
        model_id: None,
        messages,
        catalog_mode: CatalogMode::Direct,
        requested_scope: None,
        frontend_tools,
        frontend_state,
        truncated: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{ContentPart, MessageContent, Role};
    use serde_json::json;

    fn v2() -> Value {
        json!({
            "protocolVersion": 2,
            "conversationId": "conv_1",
            "turnId": "turn_1",
            "stepIndex": 0,
            "pathname": "/receivables/pending",
            "messages": [{"role": "user", "content": "hi"}],
            "catalog": {"mode": "direct", "frontendTools": []}
        })
    }

    fn descriptor_json(i: usize) -> Value {
        json!({
            "wireName": format!("view_a__b{i}"), "canonicalId": format!("view:a.b{i}"), "plane": "view",
            "description": "", "inputSchema": {"type": "object"}, "effect": "read", "confirmation": "never"
        })
    }

    fn code(v: Value) -> (u16, HostErrorCode, String) {
        let e = decode_request_value(v).unwrap_err();
        (e.http_status().unwrap(), e.code, e.message)
    }

    #[test]
    fn a_minimal_v2_request_decodes_with_defaults() {
        let mut body = v2();
        body["catalog"].as_object_mut().unwrap().remove("mode");
        body["unknownKey"] = json!(1);
        let r = decode_request(&serde_json::to_vec(&body).unwrap()).unwrap();
        assert_eq!(r.version, ProtocolVersion::V2);
        assert_eq!(r.catalog_mode, CatalogMode::Direct);
        assert_eq!(r.requested_scope, None);
        assert!(r.frontend_state.is_empty());
    }

    #[test]
    fn b12_version_precedence() {
        for bad in [
            json!(3),
            json!("2"),
            json!(null),
            json!(true),
            json!(2.5),
            json!(0),
            json!({}),
        ] {
            let mut body = v2();
            body["protocolVersion"] = bad.clone();
            // Even with other fields broken, a bad version is a mismatch.
            body["turnId"] = json!(5);
            let (status, c, msg) = code(body);
            assert_eq!(
                (status, c),
                (409, HostErrorCode::ProtocolVersionMismatch),
                "{bad}"
            );
            assert_eq!(
                msg,
                "The browser and server speak different host protocol versions. Reload the page."
            );
        }
        let mut body = v2();
        body.as_object_mut().unwrap().remove("protocolVersion");
        assert_eq!(code(body).1, HostErrorCode::ProtocolDecodeError);
        // 2.0 is the number 2.
        let mut body = v2();
        body["protocolVersion"] = json!(2.0);
        assert!(decode_request_value(body).is_ok());
    }

    #[test]
    fn b12_decode_errors_have_the_fixed_message() {
        let mut cases: Vec<Value> = vec![json!(null), json!([]), json!("x")];
        let mutate: Vec<(&str, Value)> = vec![
            ("turnId", json!("x".repeat(65))),
            ("turnId", json!("")),
            ("conversationId", json!(null)),
            ("stepIndex", json!(65)),
            ("stepIndex", json!(-1)),
            ("stepIndex", json!(1.5)),
            ("stepIndex", json!("1")),
            ("pathname", json!("")),
            ("pathname", json!("/".repeat(513))),
            ("modelId", json!(null)),
            ("modelId", json!("m".repeat(129))),
            ("messages", json!([])),
            ("messages", json!([{"role": "robot", "content": "x"}])),
            ("messages", json!([{"role": "user"}])),
            ("messages", json!([{"role": "user", "content": [1]}])),
            ("catalog", json!(null)),
            ("catalog", json!({"mode": "direct"})),
            ("catalog", json!({"mode": "fancy", "frontendTools": []})),
            ("catalog", json!({"scope": null, "frontendTools": []})),
            (
                "catalog",
                json!({"scope": vec!["a"; 33], "frontendTools": []}),
            ),
            (
                "catalog",
                json!({"scope": ["x".repeat(65)], "frontendTools": []}),
            ),
            ("catalog", json!({"frontendTools": [{"wireName": "x"}]})),
            (
                "catalog",
                json!({"frontendTools": [], "frontendState": [{"wireName": "x"}]}),
            ),
            (
                "catalog",
                json!({"frontendTools": [], "truncated": {"dropped": -1, "reason": "budget"}}),
            ),
            (
                "catalog",
                json!({"frontendTools": [], "truncated": {"dropped": 1, "reason": "other"}}),
            ),
        ];
        for (key, value) in mutate {
            let mut body = v2();
            body[key] = value;
            cases.push(body);
        }
        let mut missing = v2();
        missing.as_object_mut().unwrap().remove("pathname");
        cases.push(missing);
        for body in cases {
            let (status, c, msg) = code(body.clone());
            assert_eq!(
                (status, c, msg.as_str()),
                (
                    400,
                    HostErrorCode::ProtocolDecodeError,
                    "Malformed chat step request."
                ),
                "{body}"
            );
        }
        let e = decode_request(b"{not json").unwrap_err();
        assert_eq!(e.code, HostErrorCode::ProtocolDecodeError);
        assert_eq!(
            decode_request(b"").unwrap_err().code,
            HostErrorCode::ProtocolDecodeError
        );
    }

    #[test]
    fn utf16_lengths_are_counted_from_the_bytes_as_encode_utf16_counts() {
        for s in [
            "",
            "a",
            "é",
            "[view · read] x",
            "😀",
            "a😀é\u{ffff}\u{10000}\u{10ffff}",
        ] {
            assert_eq!(utf16_len(s), s.encode_utf16().count(), "{s}");
        }
    }

    #[test]
    fn utf16_lengths_are_counted_like_the_reference() {
        // 32 astral characters are 64 UTF-16 units: allowed; 33 are 66: refused.
        let mut body = v2();
        body["turnId"] = json!("😀".repeat(32));
        assert!(decode_request_value(body).is_ok());
        let mut body = v2();
        body["turnId"] = json!("😀".repeat(33));
        assert_eq!(code(body).1, HostErrorCode::ProtocolDecodeError);
    }

    #[test]
    fn decision_1_over_limit_is_413_not_400() {
        let mut body = v2();
        body["catalog"]["frontendTools"] = Value::Array((0..129).map(descriptor_json).collect());
        let (status, c, msg) = code(body);
        assert_eq!((status, c), (413, HostErrorCode::CatalogTooLarge));
        assert_eq!(msg, "The frontend catalog has 129 entries, over the limit of 128. Scope the route to fewer capabilities, or switch the catalog to meta mode.");

        let mut body = v2();
        body["messages"] = Value::Array(vec![json!({"role": "user", "content": "x"}); 401]);
        let (status, _, msg) = code(body);
        assert_eq!(status, 413);
        assert!(msg.starts_with("The messages catalog has 401 entries, over the limit of 400."));

        // Malformed wins over too large.
        let mut body = v2();
        body["catalog"]["frontendTools"] = Value::Array((0..129).map(descriptor_json).collect());
        body["turnId"] = json!("");
        assert_eq!(code(body).0, 400);

        let mut body = v2();
        body["catalog"]["frontendTools"] = Value::Array((0..128).map(descriptor_json).collect());
        body["messages"] = Value::Array(vec![json!({"role": "user", "content": "x"}); 400]);
        assert!(decode_request_value(body).is_ok());
    }

    #[test]
    fn v1_is_normalised_and_has_its_own_limits() {
        let mut d = descriptor_json(1);
        d["available"] = json!(false);
        d["unavailableReason"] = json!("Open it first");
        let mut d2 = descriptor_json(2);
        d2["unavailableReason"] = json!("");
        let body = json!({
            "protocolVersion": 1, "conversationId": "c", "turnId": "t", "stepIndex": 3,
            "pathname": "/receivables/pending", "catalog": "ignored", "modelId": 5,
            "messages": [{"role": "user", "content": "hi"}],
            "frontendTools": [d, d2]
        });
        let r = decode_request_value(body).unwrap();
        assert_eq!(r.version, ProtocolVersion::V1);
        assert_eq!(r.pathname, "");
        assert_eq!(r.model_id, None);
        assert_eq!(r.requested_scope, None);
        assert_eq!(r.catalog_mode, CatalogMode::Direct);
        assert_eq!(r.frontend_state.len(), 2);
        assert!(!r.frontend_state[0].available);
        assert_eq!(
            r.frontend_state[0].unavailable_reason.as_deref(),
            Some("Open it first")
        );
        assert!(r.frontend_state[1].available);
        assert_eq!(r.frontend_state[1].unavailable_reason, None);

        let v1 = |tools: usize, msgs: usize| {
            json!({
                "protocolVersion": 1, "conversationId": "c", "turnId": "t", "stepIndex": 0,
                "messages": vec![json!({"role": "user", "content": "x"}); msgs],
                "frontendTools": (0..tools).map(descriptor_json).collect::<Vec<_>>()
            })
        };
        assert!(decode_request_value(v1(64, 200)).is_ok());
        assert!(code(v1(65, 1))
            .2
            .starts_with("The frontend catalog has 65 entries, over the limit of 64."));
        assert!(code(v1(1, 201))
            .2
            .starts_with("The messages catalog has 201 entries, over the limit of 200."));
        let mut missing = v1(1, 1);
        missing.as_object_mut().unwrap().remove("frontendTools");
        assert_eq!(code(missing).0, 400);
    }

    /// `r` with each schema's text written as its parsed value would be.
    fn canonical(mut r: ChatStepRequest) -> ChatStepRequest {
        for d in &mut r.frontend_tools {
            d.input_schema = RawSchema::from(&d.input_schema.to_map());
        }
        r
    }

    /// What the body gives when it is parsed as a `Value` first (the decoder before the
    /// byte reader, still `decode_request_value`): the reader must decide the same.
    fn assert_as_parsed(body: &[u8]) {
        let parsed = match serde_json::from_slice::<Value>(body) {
            Ok(value) => decode_request_value(value),
            Err(_) => Err(decode_error()),
        };
        let read = decode_request(body);
        let shown = String::from_utf8_lossy(body);
        match (read, parsed) {
            (Ok(read), Ok(parsed)) => {
                // As written too: a map's equality does not see its order.
                let written = |r: &ChatStepRequest| serde_json::to_string(&r.messages).unwrap();
                assert_eq!(written(&read), written(&parsed), "{shown}");
                assert_eq!(canonical(read), canonical(parsed), "{shown}");
            }
            (Err(read), Err(parsed)) => assert_eq!(
                (read.code, read.message),
                (parsed.code, parsed.message),
                "{shown}"
            ),
            (read, parsed) => panic!("{shown}: read {read:?}, parsed {parsed:?}"),
        }
    }

    /// A v2 body with `schema` as the one descriptor's schema and `extra` keys at the root.
    fn with_schema(version: &str, schema: &str, extra: &str) -> Vec<u8> {
        format!(
            r#"{{"protocolVersion":{version},"conversationId":"c","turnId":"t","stepIndex":0,"pathname":"/x","messages":[{{"role":"user","content":"hi"}}],"catalog":{{"frontendTools":[{{"wireName":"view_a__b","canonicalId":"view:a.b","plane":"view","description":"","inputSchema":{schema},"effect":"read","confirmation":"never"}}]}}{extra}}}"#
        )
        .into_bytes()
    }

    #[test]
    fn the_byte_reader_decides_as_a_parsed_value_does() {
        let carla = include_bytes!("../../../bench/carla-step0.request.json");
        assert_as_parsed(carla);
        let r = decode_request(carla).unwrap();
        assert_eq!(r.frontend_tools.len(), 16);
        assert!(r.frontend_tools[1]
            .input_schema
            .get()
            .starts_with(r#"{"type":"object""#));

        let mut bodies: Vec<Vec<u8>> = vec![
            b"".to_vec(),
            b"{".to_vec(),
            b"null".to_vec(),
            b"[1]".to_vec(),
            b"{} x".to_vec(),
            b" {\"protocolVersion\":3} ".to_vec(),
            b"{\"protocolVersion\":3,\"catalog\":[1,{\"a\":[]}],\"frontendTools\":\"x\"}".to_vec(),
            b"{\"protocolVersion\":2e0,\"protocolVersion\":1}".to_vec(),
        ];
        // Values a `Value` parse refuses, where the decoder keeps them and where it does not
        // look, under a good and a bad version: the body is a 400 before it is a 409.
        for bad in [
            "1e400",
            r#""\ud800""#,
            r#"{"\ud800":1}"#,
            "-",
            "[1,]",
            r#""\x""#,
        ] {
            for version in ["2", "3"] {
                bodies.push(with_schema(version, &format!(r#"{{"a":{bad}}}"#), ""));
                bodies.push(with_schema(version, "{}", &format!(r#","unknown":{bad}"#)));
                bodies.push(with_schema(
                    version,
                    "{}",
                    &format!(r#","catalog":{{"x":{bad},"frontendTools":[]}}"#),
                ));
            }
        }
        // Not UTF-8, in a schema and in an unknown key.
        let mut bytes = with_schema("2", r#"{"a":"é"}"#, "");
        let at = bytes.iter().position(|&b| b == 0xc3).unwrap();
        bytes[at] = 0xff;
        bodies.push(bytes);
        // Schemas that are not objects, empty ones, and ones with space and escapes.
        for schema in [
            "[]",
            "null",
            r#""{}""#,
            "{}",
            " { } ",
            r#"{"d": "\u00e9\n", "n": [1.0, -0, 1e2, 18446744073709551616]}"#,
        ] {
            bodies.push(with_schema("2", schema, ""));
            bodies.push(with_schema("1", schema, ""));
        }
        // The descriptor's own keys repeated: the last counts.
        bodies.push(
            String::from_utf8(with_schema("2", "{}", ""))
                .unwrap()
                .replace(
                    r#""wireName":"view_a__b""#,
                    r#""wireName":5,"wireName":"view_a__b""#,
                )
                .replace(
                    r#""inputSchema":{}"#,
                    r#""inputSchema":[],"inputSchema":{}"#,
                )
                .into_bytes(),
        );
        // frontendState: as sent, odd entries, repeated and unknown keys, past its limit.
        for state in [
            r#"[{"wireName":"view_a__b","available":false,"unavailableReason":"r","note":"n"}]"#,
            r#"[{"wireName":"view_a__b","available":true,"available":false,"x":[1e2]}]"#,
            r#"[{"wireName":"view_a__b"}]"#,
            r#"[{"wireName":"","available":true}]"#,
            r#"[{"wireName":"view_a__b","available":true,"note":null}]"#,
            r#"[{"wireName":"view_a__b","available":true,"x":1e400}]"#,
            r#"[7]"#,
            r#"{}"#,
            r#"null"#,
        ] {
            for version in ["2", "3"] {
                bodies.push(
                    String::from_utf8(with_schema(version, "{}", ""))
                        .unwrap()
                        .replace(
                            r#""catalog":{"#,
                            &format!(r#""catalog":{{"frontendState":{state},"#),
                        )
                        .into_bytes(),
                );
            }
        }
        let many = vec![r#"{"wireName":"v","available":true}"#; MAX_FRONTEND_STATE + 1].join(",");
        bodies.push(
            String::from_utf8(with_schema("2", "{}", ""))
                .unwrap()
                .replace(
                    r#""catalog":{"#,
                    &format!(r#""catalog":{{"frontendState":[{many}],"#),
                )
                .into_bytes(),
        );
        // v1's descriptors at the root.
        bodies.push(
            br#"{"protocolVersion":1,"conversationId":"c","turnId":"t","stepIndex":0,"messages":[{"role":"user","content":"x"}],"frontendTools":[{"wireName":"view_a__b","canonicalId":"view:a.b","plane":"view","description":"","inputSchema":{"type":"object"},"effect":"read","confirmation":"never","available":false,"unavailableReason":"r"}],"catalog":7}"#
                .to_vec(),
        );
        for body in &bodies {
            assert_as_parsed(body);
        }
    }

    #[test]
    fn a_schema_nests_as_deep_as_a_parsed_body_may() {
        // serde_json refuses the 128th nested container; a v2 schema sits in four (root,
        // catalog, tool list, descriptor), a v1 schema in three.
        for (version, enclosing) in [("2", 4), ("1", 3)] {
            for depth in [126 - enclosing, 127 - enclosing, 128 - enclosing] {
                let schema =
                    format!("{}{}", "{\"a\":".repeat(depth - 1), "{}") + &"}".repeat(depth - 1);
                let body = if version == "2" {
                    with_schema("2", &schema, "")
                } else {
                    format!(
                        r#"{{"protocolVersion":1,"conversationId":"c","turnId":"t","stepIndex":0,"messages":[{{"role":"user","content":"x"}}],"frontendTools":[{{"wireName":"view_a__b","canonicalId":"view:a.b","plane":"view","description":"","inputSchema":{schema},"effect":"read","confirmation":"never"}}]}}"#
                    )
                    .into_bytes()
                };
                assert_as_parsed(&body);
                assert_eq!(
                    decode_request(&body).is_ok(),
                    depth + enclosing <= 127,
                    "v{version}, a schema {depth} deep"
                );
            }
        }
    }

    /// A v2 (or, with `version` 1, v1) body whose `messages` is the text `messages`.
    fn with_messages(version: &str, messages: &str) -> Vec<u8> {
        format!(
            r#"{{"protocolVersion":{version},"conversationId":"c","turnId":"t","stepIndex":0,"pathname":"/x","messages":{messages},"catalog":{{"frontendTools":[]}},"frontendTools":[]}}"#
        )
        .into_bytes()
    }

    #[test]
    fn messages_are_read_as_their_derive_reads_a_parsed_value() {
        let part = r#"{"type":"tool-call","toolCallId":"c1","toolName":"view_a__b","input":{"x":[1,{"y":null}]},"providerOptions":{"a":1}}"#;
        let messages = [
            // Both forms, and the array form with an item too few or too many.
            r#"{"role":"user","content":"hi"}"#,
            r#"["user","hi"]"#,
            r#"["user"]"#,
            r#"["user","hi",1]"#,
            r#"[]"#,
            // Roles: the names, escaped, a map naming one with null, and forms refused.
            r#"{"role":"\u0075ser","content":"hi"}"#,
            r#"{"role":{"user":null},"content":"hi"}"#,
            r#"{"role":{"tool":null,"tool":null},"content":"hi"}"#,
            r#"{"role":{"user":1},"content":"hi"}"#,
            r#"{"role":{"user":null,"tool":null},"content":"hi"}"#,
            r#"{"role":{},"content":"hi"}"#,
            r#"{"role":["user"],"content":"hi"}"#,
            r#"{"role":"User","content":"hi"}"#,
            r#"{"role":null,"content":"hi"}"#,
            r#"{"role":5,"content":"hi"}"#,
            r#"[{"assistant":null},"hi"]"#,
            // Repeated keys: the last counts, whatever the first was.
            r#"{"role":"robot","content":7,"role":"user","content":"hi"}"#,
            r#"{"role":"user","content":"hi","role":"robot"}"#,
            r#"{"r\u006fle":"tool","content":[],"role":"system"}"#,
            // Keys missing, unknown ones, contents of every shape.
            r#"{"content":"hi"}"#,
            r#"{"role":"user"}"#,
            r#"{"role":"user","content":"hi","extra":{"a":[1e2,-0,"\u00e9"]}}"#,
            r#"{"role":"user","content":null}"#,
            r#"{"role":"user","content":{}}"#,
            r#"{"role":"user","content":true}"#,
            r#"{"role":"user","content":[]}"#,
            r#"{"role":"user","content":[1]}"#,
            r#"{"role":"user","content":[{"type":"text","text":"a"},"x",{"type":"text","text":"b"}]}"#,
            // Parts: typed, kept verbatim when a field is odd, with repeated keys.
            r#"{"role":"assistant","content":[{"type":"text","text":"a","type":"reasoning"}]}"#,
            r#"{"role":"assistant","content":[{"type":"text","text":5},{"noType":true}]}"#,
            r#"{"role":"tool","content":[{"type":"tool-result","toolCallId":"c1","toolName":"w","output":{"type":"json","value":1},"output":null}]}"#,
            r#"{"role":"tool","content":[{"type":"tool-result","toolCallId":"c1","output":1}]}"#,
            // serde_json's raw-value key, first in an object: a `Value` parse reads the
            // string's text in its place, and refuses what follows it or a text not JSON.
            r#"{"$serde_json::private::RawValue":"{\"role\":\"user\",\"content\":\"hi\"}"}"#,
            r#"{"role":"user","content":{"$serde_json::private::RawValue":"\"hi\""}}"#,
            r#"{"role":"user","content":[{"$serde_json::private::RawValue":"{\"type\":\"text\",\"text\":\"a\"}"}]}"#,
            r#"{"role":"user","content":[{"type":"text","text":"a","x":{"$serde_json::private::RawValue":"[1,{}]"}}]}"#,
            r#"{"role":{"$serde_json::private::RawValue":"{\"tool\":null}"},"content":"hi"}"#,
            r#"{"role":"user","content":"hi","x":{"$serde_json::private::RawValue":"1"}}"#,
            r#"{"role":"user","content":"hi","x":{"$serde_json::private::RawValue":5}}"#,
            r#"{"role":"user","content":"hi","x":{"$serde_json::private::RawValue":"1","y":2}}"#,
            r#"{"role":"user","content":"hi","x":{"$serde_json::private::RawValue":"[1,"}}"#,
            r#"{"role":"user","content":"hi","x":{"y":2,"$serde_json::private::RawValue":5}}"#,
            // Not messages.
            "null",
            "7",
            r#""hi""#,
        ];
        let mut bodies = Vec::new();
        for version in ["2", "1", "3"] {
            let assistant = format!(r#"{{"role":"assistant","content":[{part}]}}"#);
            bodies.push(with_messages(version, &format!("[{assistant}]")));
            for message in messages {
                bodies.push(with_messages(version, &format!("[{message}]")));
                // After a malformed message the rest are read: a later one may be invalid JSON.
                bodies.push(with_messages(
                    version,
                    &format!(r#"[{message},{{"role":"user","content":"x"}}]"#),
                ));
                for bad in ["1e400", r#""\ud800""#, "[1,]"] {
                    bodies.push(with_messages(
                        version,
                        &format!(r#"[{message},{{"role":"user","content":{bad}}}]"#),
                    ));
                }
            }
            for not_a_list in [
                "null",
                "{}",
                r#""x""#,
                "[]",
                r#"{"$serde_json::private::RawValue":"[{\"role\":\"user\",\"content\":\"hi\"}]"}"#,
            ] {
                bodies.push(with_messages(version, not_a_list));
            }
        }
        // `messages` repeated: the last counts.
        bodies.push(
            String::from_utf8(with_messages("2", r#"[{"role":"robot","content":"x"}]"#))
                .unwrap()
                .replace(
                    r#""frontendTools":[]}"#,
                    r#""frontendTools":[],"messages":[["tool",[]]]}"#,
                )
                .into_bytes(),
        );
        // A catalog in the raw-value form under a bad version: still 409.
        bodies.push(
            String::from_utf8(with_messages("3", r#"[{"role":"user","content":"x"}]"#))
                .unwrap()
                .replace(
                    r#""catalog":{"frontendTools":[]}"#,
                    r#""catalog":{"$serde_json::private::RawValue":"{"frontendTools":[{"wireName":"view_a__b","canonicalId":"view:a.b","plane":"view","description":"","inputSchema":{},"effect":"read","confirmation":"never"}]}"}"#,
                )
                .into_bytes(),
        );
        for body in &bodies {
            assert_as_parsed(body);
        }

        // The order of errors holds: a bad version answers 409 over a malformed message, and
        // a body that is not JSON answers 400 over a bad version.
        let malformed = with_messages("3", r#"[{"role":"robot","content":7}]"#);
        assert_eq!(
            decode_request(&malformed).unwrap_err().code,
            HostErrorCode::ProtocolVersionMismatch
        );
        let not_json = with_messages("3", r#"[{"role":"robot","content":1e400}]"#);
        assert_eq!(
            decode_request(&not_json).unwrap_err().code,
            HostErrorCode::ProtocolDecodeError
        );

        // What the forms decode to.
        let r = decode_request(&with_messages(
            "2",
            &format!(
                r#"[["user","hi"],{{"role":{{"assistant":null}},"content":[{part}]}},{{"role":"robot","content":"x","role":"tool","content":[]}}]"#
            ),
        ))
        .unwrap();
        assert_eq!(r.messages[0], WireModelMessage::user_text("hi"));
        assert_eq!(r.messages[1].role, Role::Assistant);
        assert!(matches!(
            &r.messages[1].parts()[0],
            ContentPart::ToolCall { input, extra, .. }
                if *input == json!({"x": [1, {"y": null}]}) && extra["providerOptions"] == json!({"a": 1})
        ));
        assert_eq!(
            r.messages[2],
            WireModelMessage::new(Role::Tool, MessageContent::Parts(Vec::new()))
        );
    }

    #[test]
    fn a_schema_that_repeats_a_key_is_kept_as_a_parsed_object_keeps_it() {
        let body = with_schema(
            "2",
            r#"{"type":"object","properties":{"a":{"type":"string"},"b":{},"a":{"type":"number"}},"type":"object"}"#,
            "",
        );
        assert_as_parsed(&body);
        let r = decode_request(&body).unwrap();
        assert_eq!(
            r.frontend_tools[0].input_schema.get(),
            r#"{"type":"object","properties":{"a":{"type":"number"},"b":{}}}"#
        );
        // Past the keys compared one by one, a set finds the repeat.
        let keys: Vec<String> = (0..40).map(|i| format!(r#""k{i}":{i}"#)).collect();
        let body = with_schema("2", &format!("{{{},\"k3\":\"last\"}}", keys.join(",")), "");
        let r = decode_request(&body).unwrap();
        let schema = r.frontend_tools[0].input_schema.to_map();
        assert_eq!(schema.len(), 40);
        assert_eq!(schema["k3"], json!("last"));
        assert_eq!(
            r.frontend_tools[0]
                .input_schema
                .get()
                .matches("\"k3\"")
                .count(),
            1
        );
        // A schema without repeats keeps its text.
        let text = r#"{ "type" : "object", "title": "\u00e9" }"#;
        let r = decode_request(&with_schema("2", text, "")).unwrap();
        assert_eq!(r.frontend_tools[0].input_schema.get(), text.trim());
    }

    #[test]
    fn v2_ignores_descriptor_availability_and_keeps_state() {
        let mut d = descriptor_json(1);
        d["available"] = json!("not even a bool");
        let mut body = v2();
        body["catalog"]["frontendTools"] = json!([d]);
        body["catalog"]["frontendState"] = json!([{"wireName": "view_a__b1", "available": false, "unavailableReason": "r", "note": "n"}]);
        body["catalog"]["scope"] = json!(["invoices"]);
        body["catalog"]["truncated"] = json!({"dropped": 2, "reason": "undecodable"});
        let r = decode_request_value(body).unwrap();
        assert_eq!(r.frontend_tools[0].available, None);
        assert_eq!(r.frontend_state[0].note.as_deref(), Some("n"));
        assert_eq!(
            r.requested_scope.as_deref(),
            Some(&["invoices".to_owned()][..])
        );
        assert_eq!(r.truncated.unwrap().dropped, 2);
    }

    /// U1: `untrusted` is optional in both versions (absent is false, so the reference's
    /// descriptors decode as before), and anything but a boolean is a decode error.
    #[test]
    fn u1_untrusted_is_an_optional_boolean() {
        let decode = |version: u8, untrusted: Option<Value>| {
            let mut d = descriptor_json(1);
            if let Some(u) = untrusted {
                d["untrusted"] = u;
            }
            let mut body = v2();
            if version == 1 {
                body["protocolVersion"] = json!(1);
                body.as_object_mut().unwrap().remove("catalog");
                body["frontendTools"] = json!([d]);
            } else {
                body["catalog"]["frontendTools"] = json!([d]);
            }
            let bytes = serde_json::to_vec(&body).unwrap();
            let from_bytes = decode_request(&bytes);
            let from_value = decode_request_value(body);
            assert_eq!(
                from_bytes.as_ref().map(|r| r.frontend_tools[0].untrusted),
                from_value.as_ref().map(|r| r.frontend_tools[0].untrusted),
            );
            from_bytes.map(|r| r.frontend_tools[0].untrusted)
        };
        for version in [1, 2] {
            assert_eq!(decode(version, None), Ok(false));
            assert_eq!(decode(version, Some(json!(false))), Ok(false));
            assert_eq!(decode(version, Some(json!(true))), Ok(true));
            for bad in [json!(null), json!("true"), json!(1), json!({})] {
                let err = decode(version, Some(bad.clone())).unwrap_err();
                assert_eq!(err.code, HostErrorCode::ProtocolDecodeError, "{bad}");
            }
        }
    }
}
