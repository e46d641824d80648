//! Conformance against the reference implementation's recorded traffic
//! (`fixtures/reference-traces/`).

use dpas_protocol::catalog::capability_state_message;
use dpas_protocol::ndjson::decode_all;
use dpas_protocol::wire_name::{decode_wire_name, encode_wire_name};
use dpas_protocol::{decode_request, encode_frame, Frame, FrameDecoder, HostErrorCode, Lane};
use dpas_tests::{
    chat_trace_names as trace_names, read_trace_request, read_trace_response, RecordedResponse,
};
use proptest::prelude::*;
use serde_json::Value;

fn stream_traces() -> Vec<(String, RecordedResponse)> {
    trace_names()
        .into_iter()
        .map(|n| {
            let r = read_trace_response(&n);
            (n, r)
        })
        .filter(|(_, r)| {
            r.header("content-type")
                .is_some_and(|c| c.starts_with("application/x-ndjson"))
        })
        .collect()
}

fn body_lines(body: &[u8]) -> Vec<Value> {
    std::str::from_utf8(body)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn the_trace_set_is_present() {
    let names = trace_names();
    assert!(names.len() >= 13, "{names:?}");
    assert!(stream_traces().len() >= 6);
}

#[test]
fn every_recorded_request_decodes_or_fails_exactly_as_recorded() {
    let mut checked = 0;
    for name in trace_names() {
        let Some(request) = read_trace_request(&name) else {
            continue;
        };
        let response = read_trace_response(&name);
        let decoded = decode_request(&request);
        match response.status.expect("chat traces have a status") {
            200 => {
                let r = decoded.unwrap_or_else(|e| panic!("{name}: {e}"));
                let version = response.header("x-dpas-protocol-version").unwrap();
                assert_eq!(r.version.as_u8().to_string(), version, "{name}");
            }
            // A 503 is decided after decoding: the body itself is well formed.
            503 => assert!(decoded.is_ok(), "{name}"),
            status => {
                let err = decoded.expect_err(&name);
                let recorded: Value = serde_json::from_slice(&response.body).unwrap();
                assert_eq!(err.http_status(), Some(status), "{name}");
                assert_eq!(err.to_body(), recorded, "{name}");
            }
        }
        checked += 1;
    }
    assert!(checked >= 12, "only {checked} requests checked");
}

#[test]
fn recorded_error_bodies_match_the_error_table() {
    for name in trace_names() {
        let response = read_trace_response(&name);
        let status = response.status.unwrap();
        if status == 200 {
            continue;
        }
        let body: Value = serde_json::from_slice(&response.body).unwrap();
        let code =
            HostErrorCode::parse(body["error"]["code"].as_str().unwrap()).expect("known code");
        assert_eq!(code.http_status(), Some(status), "{name}");
        assert_eq!(body["error"]["message"], code.default_message(), "{name}");
    }
}

#[test]
fn every_recorded_stream_decodes_and_re_encodes_json_equal() {
    for (name, response) in stream_traces() {
        let (frames, end) = decode_all(&response.body);
        assert!(end.is_ok(), "{name}: trailing fragment");
        let lines = body_lines(&response.body);
        assert_eq!(frames.len(), lines.len(), "{name}");
        for (frame, line) in frames.iter().zip(&lines) {
            assert!(
                !matches!(frame, Frame::Unknown(_)),
                "{name}: unknown frame {line}"
            );
            assert!(
                !matches!(frame, Frame::Error { .. }),
                "{name}: malformed {line}"
            );
            let re: Value = serde_json::from_slice(&encode_frame(frame)).unwrap();
            assert_eq!(&re, line, "{name}");
        }
        assert!(
            matches!(frames.first(), Some(Frame::StepStart(_))),
            "{name}"
        );
        assert!(
            frames.iter().any(|f| matches!(f, Frame::StepFinish(_))),
            "{name}"
        );
    }
}

#[test]
fn recorded_names_scope_and_usage_follow_the_protocol_rules() {
    let floors = dpas_protocol::test_support::reference_route_floors();
    for (name, response) in stream_traces() {
        let request: Value = serde_json::from_slice(&read_trace_request(&name).unwrap()).unwrap();
        let decoded = decode_request(&serde_json::to_vec(&request).unwrap()).unwrap();
        let (frames, _) = decode_all(&response.body);
        for d in &decoded.frontend_tools {
            if decode_wire_name(&d.wire_name).is_some() {
                assert_eq!(
                    decode_wire_name(&d.wire_name).as_deref(),
                    Some(d.canonical_id.as_str()),
                    "{name}"
                );
            }
        }
        for frame in &frames {
            match frame {
                Frame::StepStart(s) => {
                    let expected =
                        floors.resolve(&decoded.pathname, decoded.requested_scope.as_deref());
                    assert_eq!(s.scope, expected, "{name}: scope");
                    for t in &s.domain_tools {
                        assert_eq!(
                            encode_wire_name(&t.canonical_id, None, 0),
                            t.wire_name,
                            "{name}"
                        );
                        assert_eq!(
                            decode_wire_name(&t.wire_name).as_deref(),
                            Some(t.canonical_id.as_str())
                        );
                    }
                }
                Frame::Inspector(i) if i.event_type == "model.usage" => {
                    assert_eq!(i.lane, Lane::Runtime);
                    let finish = frames.iter().find_map(|f| match f {
                        Frame::StepFinish(f) => f.usage,
                        _ => None,
                    });
                    let usage = finish.expect("usage on step-finish when model.usage is sent");
                    assert_eq!(i.summary, usage.summary(), "{name}");
                    assert_eq!(
                        i.data.as_ref().unwrap(),
                        &serde_json::to_value(usage).unwrap()
                    );
                }
                _ => {}
            }
        }
    }
}

#[test]
fn carla_step0_capability_state_is_the_documented_message() {
    let request = read_trace_request("browser-carla-step0").unwrap();
    let r = decode_request(&request).unwrap();
    assert_eq!(r.frontend_tools.len(), 16);
    assert_eq!(r.frontend_state.len(), 16);
    assert_eq!(
        capability_state_message(&r.frontend_state, &r.frontend_tools).unwrap(),
        "Capability state (this step):\n- domain:update-collection-status — unavailable: Open an invoice's chase dialog first"
    );
}

#[test]
fn recorded_message_histories_round_trip_unchanged() {
    for name in trace_names() {
        let Some(request) = read_trace_request(&name) else {
            continue;
        };
        let Ok(raw) = serde_json::from_slice::<Value>(&request) else {
            continue;
        };
        let Ok(decoded) = decode_request(&request) else {
            continue;
        };
        let original = raw["messages"].as_array().unwrap();
        let re = serde_json::to_value(&decoded.messages).unwrap();
        // Messages lose only keys outside {role, content}; content is kept exactly.
        for (o, r) in original.iter().zip(re.as_array().unwrap()) {
            assert_eq!(o["role"], r["role"], "{name}");
            assert_eq!(o["content"], r["content"], "{name}");
        }
    }
}

fn frames_with_splits(body: &[u8], cuts: &[usize]) -> Vec<Frame> {
    let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (body.len() + 1)).collect();
    cuts.sort_unstable();
    let mut decoder = FrameDecoder::new();
    let mut out = Vec::new();
    let mut start = 0;
    for cut in cuts {
        decoder.push_into(&body[start..cut], &mut out);
        start = cut;
    }
    decoder.push_into(&body[start..], &mut out);
    assert!(decoder.finish().is_ok());
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn recorded_bodies_decode_the_same_at_any_chunk_boundaries(
        cuts in prop::collection::vec(any::<usize>(), 0..40),
    ) {
        for (name, response) in stream_traces() {
            let whole = decode_all(&response.body).0;
            let split = frames_with_splits(&response.body, &cuts);
            prop_assert_eq!(&whole, &split, "{}", name);
        }
    }

    #[test]
    fn byte_by_byte_and_crlf_bodies_decode_the_same(pick in 0usize..64) {
        let traces = stream_traces();
        let (_, response) = &traces[pick % traces.len()];
        let whole = decode_all(&response.body).0;
        let all_cuts: Vec<usize> = (0..response.body.len()).collect();
        prop_assert_eq!(&whole, &frames_with_splits(&response.body, &all_cuts));
        let crlf: Vec<u8> = response.body.iter().flat_map(|&b| if b == b'\n' { vec![b'\r', b'\n'] } else { vec![b] }).collect();
        prop_assert_eq!(&whole, &decode_all(&crlf).0);
    }
}
