//! Step requests, v2 (current) and v1 (served beside it), and the one decoding entry point
//! from raw bytes to the normalised internal request ([`decode_request`]).
//!
//! Precedence (reference-behaviour B12, DESIGN decision 1): a body naming a version that is
//! not the number 1 or 2 is 409 `PROTOCOL_VERSION_MISMATCH`; any other malformation is 400
//! `PROTOCOL_DECODE_ERROR`; a well-formed body with more frontend tools or messages than the
//! version allows is 413 `CATALOG_TOO_LARGE` naming plane, count and limit.

use serde::Serialize;
use serde_json::{Map, Value};

use crate::error::{HostError, HostErrorCode, LimitPlane};
use crate::json::{ObjectWriter, WriteJson};
use crate::limits::*;
use crate::message::WireModelMessage;
use crate::tool::{CatalogMode, Truncated, WireToolDescriptor, WireToolState};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProtocolVersion {
    V1,
    V2,
}

impl ProtocolVersion {
    pub const CURRENT: Self = Self::V2;

    pub const fn as_u8(self) -> u8 {
        match self {
            Self::V1 => 1,
            Self::V2 => 2,
        }
    }
}

/// The catalog envelope of a v2 request, as the browser builds it. It borrows: a step
/// request is written once per step from the loop's own history and projection, which are
/// not copied for it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CatalogV2<'a> {
    pub mode: CatalogMode,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<&'a [String]>,
    pub frontend_tools: &'a [WireToolDescriptor],
    pub frontend_state: &'a [WireToolState],
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncated: Option<Truncated>,
}

/// A v2 step request as the browser posts it (borrowing, like [`CatalogV2`]). Decoding goes
/// through [`decode_request`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StepRequestV2<'a> {
    pub protocol_version: u8,
    pub conversation_id: &'a str,
    pub turn_id: &'a str,
    pub step_index: u32,
    pub pathname: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_id: Option<&'a str>,
    pub messages: &'a [WireModelMessage],
    pub catalog: CatalogV2<'a>,
}

/// A v1 step request (deprecated; accepted for one minor release).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StepRequestV1 {
    pub protocol_version: u8,
    pub conversation_id: String,
    pub turn_id: String,
    pub step_index: u32,
    pub messages: Vec<WireModelMessage>,
    pub frontend_tools: Vec<WireToolDescriptor>,
}

impl StepRequestV2<'_> {
    /// The request body: the bytes of the `Serialize` derive (`serde_json::to_vec`), written
    /// by [`WriteJson`] so the browser build links no serializer.
    pub fn to_json(&self) -> Vec<u8> {
        crate::json::to_string(self).into_bytes()
    }
}

impl WriteJson for StepRequestV2<'_> {
    fn write_json(&self, out: &mut String) {
        ObjectWriter::new(out)
            .field("protocolVersion", &self.protocol_version)
            .field("conversationId", &self.conversation_id)
            .field("turnId", &self.turn_id)
            .field("stepIndex", &self.step_index)
            .field("pathname", &self.pathname)
            .opt_field("modelId", self.model_id.as_ref().map(|v| v as _))
            .field("messages", &self.messages)
            .field("catalog", &self.catalog)
            .end();
    }
}

impl WriteJson for CatalogV2<'_> {
    fn write_json(&self, out: &mut String) {
        ObjectWriter::new(out)
            .field("mode", &self.mode)
            .opt_field("scope", self.scope.as_ref().map(|v| v as _))
            .field("frontendTools", &self.frontend_tools)
            .field("frontendState", &self.frontend_state)
            .opt_field("truncated", self.truncated.as_ref().map(|v| v as _))
            .end();
    }
}

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
    pub frontend_tools: Vec<WireToolDescriptor>,
    pub frontend_state: Vec<WireToolState>,
    pub truncated: Option<Truncated>,
}

/// A validation failure; becomes 400 `PROTOCOL_DECODE_ERROR` with the fixed message.
struct Malformed;

type Check<T> = Result<T, Malformed>;

fn utf16_len(s: &str) -> usize {
    if s.is_ascii() {
        s.len()
    } else {
        s.encode_utf16().count()
    }
}

fn take(obj: &mut Map<String, Value>, key: &str) -> Option<Value> {
    obj.remove(key)
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

fn messages(items: Vec<Value>) -> Check<Vec<WireModelMessage>> {
    if items.is_empty() {
        return Err(Malformed);
    }
    items
        .into_iter()
        .map(|m| serde_json::from_value::<WireModelMessage>(m).map_err(|_| Malformed))
        .collect()
}

fn descriptor(value: Value, version: ProtocolVersion) -> Check<WireToolDescriptor> {
    let mut obj = object(value)?;
    let wire_name = string(take(&mut obj, "wireName"), 1, MAX_ID_LEN)?;
    let canonical_id = string(take(&mut obj, "canonicalId"), 1, 128)?;
    let plane =
        serde_json::from_value(take(&mut obj, "plane").ok_or(Malformed)?).map_err(|_| Malformed)?;
    let description = string(take(&mut obj, "description"), 0, MAX_DESCRIPTION_LEN)?;
    let input_schema = object(take(&mut obj, "inputSchema").ok_or(Malformed)?)?;
    let effect = string(take(&mut obj, "effect"), 0, MAX_EFFECT_LEN)?;
    let confirmation = serde_json::from_value(take(&mut obj, "confirmation").ok_or(Malformed)?)
        .map_err(|_| Malformed)?;
    let (available, unavailable_reason) = match version {
        // v2 carries availability in frontendState; the keys are stripped unread.
        ProtocolVersion::V2 => (None, None),
        ProtocolVersion::V1 => {
            let available = match take(&mut obj, "available") {
                None => None,
                Some(Value::Bool(b)) => Some(b),
                Some(_) => return Err(Malformed),
            };
            (
                available,
                opt_string(take(&mut obj, "unavailableReason"), MAX_REASON_LEN)?,
            )
        }
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
    })
}

fn tool_state(value: Value) -> Check<WireToolState> {
    let mut obj = object(value)?;
    let wire_name = string(take(&mut obj, "wireName"), 1, MAX_ID_LEN)?;
    let available = match take(&mut obj, "available") {
        Some(Value::Bool(b)) => b,
        _ => return Err(Malformed),
    };
    Ok(WireToolState {
        wire_name,
        available,
        unavailable_reason: opt_string(take(&mut obj, "unavailableReason"), MAX_REASON_LEN)?,
        note: opt_string(take(&mut obj, "note"), MAX_REASON_LEN)?,
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

/// Decodes and normalises a step request from the raw body.
pub fn decode_request(body: &[u8]) -> Result<ChatStepRequest, HostError> {
    // A body that is not JSON is treated as `null`, which fails validation (B1).
    let value: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    decode_request_value(value)
}

/// [`decode_request`] for an already parsed body.
pub fn decode_request_value(value: Value) -> Result<ChatStepRequest, HostError> {
    let decode_error = || HostError::of(HostErrorCode::ProtocolDecodeError);
    let Value::Object(mut obj) = value else {
        return Err(decode_error());
    };
    let version = match obj.get("protocolVersion") {
        None => return Err(decode_error()),
        Some(v) => match v.as_f64() {
            Some(1.0) => ProtocolVersion::V1,
            Some(2.0) => ProtocolVersion::V2,
            _ => return Err(HostError::of(HostErrorCode::ProtocolVersionMismatch)),
        },
    };
    let decoded = match version {
        ProtocolVersion::V2 => decode_v2(&mut obj),
        ProtocolVersion::V1 => decode_v1(&mut obj),
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

fn decode_common(obj: &mut Map<String, Value>) -> Check<(String, String, u32)> {
    let conversation_id = string(take(obj, "conversationId"), 1, MAX_ID_LEN)?;
    let turn_id = string(take(obj, "turnId"), 1, MAX_ID_LEN)?;
    let step_index = integer(take(obj, "stepIndex"), MAX_STEP_INDEX)? as u32;
    Ok((conversation_id, turn_id, step_index))
}

fn decode_v2(obj: &mut Map<String, Value>) -> Check<ChatStepRequest> {
    let (conversation_id, turn_id, step_index) = decode_common(obj)?;
    let pathname = string(take(obj, "pathname"), 1, MAX_PATHNAME_LEN)?;
    let model_id = opt_string(take(obj, "modelId"), MAX_MODEL_ID_LEN)?;
    let messages = messages(array(take(obj, "messages"))?)?;
    let mut catalog = object(take(obj, "catalog").ok_or(Malformed)?)?;
    let catalog_mode = match take(&mut catalog, "mode") {
        None => CatalogMode::Direct,
        Some(v) => serde_json::from_value(v).map_err(|_| Malformed)?,
    };
    let requested_scope = match take(&mut catalog, "scope") {
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
    let frontend_tools = array(take(&mut catalog, "frontendTools"))?
        .into_iter()
        .map(|d| descriptor(d, ProtocolVersion::V2))
        .collect::<Check<Vec<_>>>()?;
    let frontend_state = match take(&mut catalog, "frontendState") {
        None => Vec::new(),
        Some(v) => {
            let items = array(Some(v))?;
            if items.len() > MAX_FRONTEND_STATE {
                return Err(Malformed);
            }
            items
                .into_iter()
                .map(tool_state)
                .collect::<Check<Vec<_>>>()?
        }
    };
    let truncated = take(&mut catalog, "truncated").map(truncated).transpose()?;
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

fn decode_v1(obj: &mut Map<String, Value>) -> Check<ChatStepRequest> {
    let (conversation_id, turn_id, step_index) = decode_common(obj)?;
    let messages = messages(array(take(obj, "messages"))?)?;
    let frontend_tools = array(take(obj, "frontendTools"))?
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

    /// `to_json` writes the bytes of the `Serialize` derives, every optional field present
    /// and absent, every content part kind (with extra keys), odd strings and numbers.
    #[test]
    fn to_json_is_the_serialize_derive_byte_for_byte() {
        use crate::message::{ContentPart, MessageContent, Role};
        use crate::tool::{Confirmation, Plane, TruncationReason};
        let messages: Vec<WireModelMessage> = serde_json::from_value(json!([
            {"role": "system", "content": "be \"brief\"\n\u{1}"},
            {"role": "user", "content": [{"type": "text", "text": "é😀", "providerOptions": {"x": 1}}]},
            {"role": "assistant", "content": [
                {"type": "reasoning", "text": "hm"},
                {"type": "tool-call", "toolCallId": "c1", "toolName": "view_a", "input": {"b": 2, "a": [1.5, -3, null]}, "z": true},
                {"type": "image", "image": "data:", "mediaType": "image/png"},
                {"type": "text", "text": 5}
            ]},
            {"role": "tool", "content": [
                {"type": "tool-result", "toolCallId": "c1", "toolName": "view_a", "output": {"type": "json", "value": {"ok": 1e21}}}
            ]}
        ]))
        .unwrap();
        let mut messages = messages;
        messages.push(WireModelMessage::new(
            Role::Assistant,
            MessageContent::Parts(vec![ContentPart::tool_call("c2", "view_b", json!(0.1))]),
        ));
        let descriptor = |available: Option<bool>, reason: Option<&str>| WireToolDescriptor {
            wire_name: "view_a".into(),
            canonical_id: "view:a".into(),
            plane: Plane::View,
            description: "[view · read] A \\ B".into(),
            input_schema: json!({"type": "object", "properties": {"q": {"type": "string"}}})
                .as_object()
                .unwrap()
                .clone(),
            effect: "read".into(),
            confirmation: Confirmation::Required,
            available,
            unavailable_reason: reason.map(Into::into),
        };
        let tools = [
            descriptor(None, None),
            descriptor(Some(false), Some("closed")),
        ];
        let states = [
            WireToolState {
                wire_name: "view_a".into(),
                available: true,
                unavailable_reason: None,
                note: None,
            },
            WireToolState {
                wire_name: "view_b".into(),
                available: false,
                unavailable_reason: Some("no rows".into()),
                note: Some("tab\t".into()),
            },
        ];
        let scope = ["app".to_owned(), "receivables".to_owned()];
        for (model_id, scope, truncated, mode) in [
            (None, None, None, CatalogMode::Direct),
            (
                Some("openai:gpt"),
                Some(&scope[..]),
                Some(Truncated {
                    dropped: 3,
                    reason: TruncationReason::Budget,
                }),
                CatalogMode::Meta,
            ),
        ] {
            let request = StepRequestV2 {
                protocol_version: 2,
                conversation_id: "conv_1",
                turn_id: "turn \"1\"",
                step_index: 4_000_000_000,
                pathname: "/a/b",
                model_id,
                messages: &messages,
                catalog: CatalogV2 {
                    mode,
                    scope,
                    frontend_tools: &tools,
                    frontend_state: &states,
                    truncated,
                },
            };
            assert_eq!(
                String::from_utf8(request.to_json()).unwrap(),
                serde_json::to_string(&request).unwrap()
            );
        }
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
}
