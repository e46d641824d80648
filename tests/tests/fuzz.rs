//! Fuzzing on stable Rust: property-based targets (proptest) over every decoder that reads
//! untrusted bytes — the step-request decoder, the NDJSON frame decoder, the OpenAI and
//! Anthropic SSE stream decoders — and the `/rpc` input path through the governed runtime.
//! Inputs are random bytes and mutations (flips, inserts, deletions, truncations, splices) of
//! valid seeds, so most cases get past the first byte. The bar: no panic, and every refusal
//! is a typed error.
//!
//! `FUZZ_CASES` sets the cases per target (default 300: a few seconds in a debug build);
//! `scripts/fuzz.sh` runs long campaigns in release. Each target prints its executions and
//! findings; a finding fails the test with proptest's shrunk input.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use dpas_governance::{CallSurface, CapabilityErrorCode};
use dpas_model::{ModelError, ModelErrorKind};
use dpas_protocol::ndjson::FrameDecoder;
use dpas_protocol::{
    decode_request, decode_request_value, ChatStepRequest, HostError, HostErrorCode, RawSchema,
};
use futures_util::StreamExt;
use host_server::config::ServerConfig;
use host_server::{Correlation, Envelope};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use serde_json::{json, Value};

fn cases() -> u32 {
    std::env::var("FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300)
}

/// One edit of a seed: what to do, where (modulo the length), with which byte.
#[derive(Debug, Clone)]
enum Edit {
    Flip(usize, u8),
    Insert(usize, u8),
    Delete(usize, usize),
    Truncate(usize),
    /// Copies a slice of the input over another place (duplicated keys, nested repeats).
    Splice(usize, usize, usize),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(p, b)| Edit::Flip(p, b)),
        (
            any::<usize>(),
            prop::sample::select(b"{}[]\",:0-1e.\\ntu\x00\xff ".to_vec())
        )
            .prop_map(|(p, b)| Edit::Insert(p, b)),
        (any::<usize>(), 1usize..16).prop_map(|(p, n)| Edit::Delete(p, n)),
        any::<usize>().prop_map(Edit::Truncate),
        (any::<usize>(), any::<usize>(), 1usize..64).prop_map(|(a, b, n)| Edit::Splice(a, b, n)),
    ]
}

fn apply(seed: &[u8], edits: &[Edit]) -> Vec<u8> {
    let mut out = seed.to_vec();
    for e in edits {
        let len = out.len().max(1);
        match *e {
            Edit::Flip(p, b) => {
                if !out.is_empty() {
                    out[p % len] ^= b;
                }
            }
            Edit::Insert(p, b) => out.insert(p % (out.len() + 1), b),
            Edit::Delete(p, n) => {
                let start = p % len;
                let end = (start + n).min(out.len());
                if start < end {
                    out.drain(start..end);
                }
            }
            Edit::Truncate(p) => out.truncate(p % (out.len() + 1)),
            Edit::Splice(a, b, n) => {
                let from = a % len;
                let to = b % len;
                let piece: Vec<u8> = out.iter().skip(from).take(n).copied().collect();
                let at = to.min(out.len());
                out.splice(at..at, piece);
            }
        }
    }
    out
}

/// Random bytes, or a seed with up to 8 edits.
fn input(seeds: Vec<Vec<u8>>) -> impl Strategy<Value = Vec<u8>> {
    let mutated = (
        prop::sample::select(seeds),
        prop::collection::vec(edit(), 0..8),
    )
        .prop_map(|(seed, edits)| apply(&seed, &edits));
    prop_oneof![
        1 => prop::collection::vec(any::<u8>(), 0..512),
        4 => mutated,
    ]
}

/// Runs `target` over `strategy`, counting executions, and prints the tally.
fn campaign<S: Strategy>(
    name: &str,
    strategy: S,
    target: impl Fn(S::Value) -> Result<(), TestCaseError>,
) {
    let executions = AtomicU64::new(0);
    let mut runner = TestRunner::new(Config {
        cases: cases(),
        failure_persistence: None,
        ..Config::default()
    });
    let result = runner.run(&strategy, |value| {
        executions.fetch_add(1, Ordering::Relaxed);
        target(value)
    });
    let findings = u32::from(result.is_err());
    println!(
        "fuzz {name}: {} executions, {findings} findings",
        executions.load(Ordering::Relaxed)
    );
    if let Err(e) = result {
        panic!("fuzz {name}: finding: {e}");
    }
}

fn request_seeds() -> Vec<Vec<u8>> {
    let mut seeds: Vec<Vec<u8>> = dpas_tests::trace_names()
        .iter()
        .filter_map(|n| dpas_tests::read_trace_request(n))
        .collect();
    seeds.push(
        json!({
            "protocolVersion": 2, "turnId": "t1", "conversationId": "c1", "stepIndex": 0,
            "modelId": "scripted", "scope": {"pathname": "/receivables/pending"},
            "messages": [{"role": "user", "content": "What is overdue?"},
                         {"role": "assistant", "content": [{"type": "tool-call", "toolCallId": "a", "toolName": "x", "input": {}}]},
                         {"role": "tool", "content": [{"type": "tool-result", "toolCallId": "a", "toolName": "x", "output": {"type": "json", "value": 1}}]}],
            "catalog": {"frontendTools": [{"wireName": "view_a__b__c", "description": "d",
                "inputSchema": {"type": "object"}, "executor": "browser"}]},
        })
        .to_string()
        .into_bytes(),
    );
    seeds
}

/// `r` with each schema's text written as its parsed value would be.
fn canonical(mut r: ChatStepRequest) -> ChatStepRequest {
    for d in &mut r.frontend_tools {
        d.input_schema = RawSchema::from(&d.input_schema.to_map());
    }
    r
}

#[test]
fn fuzz_decode_request() {
    campaign("decode_request", input(request_seeds()), |bytes| {
        // The byte reader decides as a parse into a `Value` first does (the decoder before
        // it, still `decode_request_value`): the same request, or the same refusal.
        let parsed = match serde_json::from_slice::<Value>(&bytes) {
            Ok(value) => decode_request_value(value),
            Err(_) => Err(HostError::of(HostErrorCode::ProtocolDecodeError)),
        };
        match (decode_request(&bytes), parsed) {
            (Ok(read), Ok(parsed)) => prop_assert_eq!(canonical(read), canonical(parsed)),
            (Err(read), Err(parsed)) => {
                prop_assert_eq!((read.code, &read.message), (parsed.code, &parsed.message));
            }
            (read, parsed) => {
                prop_assert!(false, "read {:?}, parsed {:?}", read, parsed);
            }
        }
        if let Err(e) = decode_request(&bytes) {
            // A refusal is one of the request codes, with a message to show.
            prop_assert!(matches!(
                e.code,
                HostErrorCode::ProtocolDecodeError
                    | HostErrorCode::ProtocolVersionMismatch
                    | HostErrorCode::CatalogTooLarge
                    | HostErrorCode::CatalogCollision
            ));
            prop_assert!(!e.message.is_empty());
        }
        Ok(())
    });
}

fn frame_seeds() -> Vec<Vec<u8>> {
    let mut seeds: Vec<Vec<u8>> = dpas_tests::trace_names()
        .iter()
        .map(|n| dpas_tests::read_trace_response(n).body)
        .filter(|b| !b.is_empty())
        .collect();
    seeds.push(
        concat!(
            r#"{"type":"step-start","stepId":"stp_1","turnId":"t","conversationId":"c","domainTools":[],"scope":{"pathname":"/"}}"#, "\n",
            r#"{"type":"text-delta","delta":"hi"}"#, "\n",
            r#"{"type":"error","error":{"code":"MODEL_ERROR","message":"m"}}"#, "\n",
        )
        .as_bytes()
        .to_vec(),
    );
    seeds
}

#[test]
fn fuzz_frame_decoder() {
    let strategy = (
        input(frame_seeds()),
        prop::collection::vec(any::<usize>(), 0..8),
    );
    campaign("FrameDecoder", strategy, |(bytes, cuts)| {
        let mut decoder = FrameDecoder::new();
        let mut frames = Vec::new();
        for chunk in split_at(&bytes, &cuts) {
            decoder.push_into(&chunk, &mut frames);
        }
        let complete_lines = bytes.iter().filter(|b| **b == b'\n').count();
        // Every complete line is one frame (a malformed one becomes the decode-error frame).
        prop_assert!(frames.len() <= complete_lines);
        let _ = decoder.finish();
        Ok(())
    });
}

const OPENAI_SEED: &str = concat!(
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Hi\"}}]}\n\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"list\",\"arguments\":\"{\\\"a\\\":\"}}]}}]}\n\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"1}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\n",
    "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":2,\"total_tokens\":7}}\n\n",
    "data: [DONE]\n\n",
);

const ANTHROPIC_SEED: &str = concat!(
    "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n",
    "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n",
    "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"tu_1\",\"name\":\"list\",\"input\":{}}}\n\n",
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"a\\\":1}\"}}\n\n",
    "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":9}}\n\n",
    "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
);

/// A recorded body as the vendor decoders take it.
type Body = futures_util::stream::Iter<std::vec::IntoIter<Result<Vec<u8>, ModelError>>>;

/// Drains a vendor stream decoded from `chunks`; an `Err` item ends it as the loop would.
fn drain(
    rt: &tokio::runtime::Runtime,
    decode: fn(Body) -> dpas_model::EventStream,
    chunks: Vec<Vec<u8>>,
) -> usize {
    let stream = decode(futures_util::stream::iter(
        chunks.into_iter().map(Ok).collect::<Vec<_>>(),
    ));
    rt.block_on(stream.take_while(|e| std::future::ready(e.is_ok())).count())
}

/// `bytes` cut at the given offsets (taken modulo the length, in order).
fn split_at(bytes: &[u8], cuts: &[usize]) -> Vec<Vec<u8>> {
    let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
    cuts.sort_unstable();
    let mut out = Vec::new();
    let mut start = 0;
    for cut in cuts {
        out.push(bytes[start..cut].to_vec());
        start = cut;
    }
    out.push(bytes[start..].to_vec());
    out
}

fn chunked(seeds: Vec<Vec<u8>>) -> impl Strategy<Value = Vec<Vec<u8>>> {
    (input(seeds), prop::collection::vec(any::<usize>(), 0..6))
        .prop_map(|(bytes, cuts)| split_at(&bytes, &cuts))
}

#[test]
fn fuzz_vendor_sse_decoders() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    campaign(
        "openai SSE",
        chunked(vec![OPENAI_SEED.as_bytes().to_vec()]),
        |chunks| {
            drain(&rt, dpas_model::providers::openai::decode_body, chunks);
            Ok(())
        },
    );
    campaign(
        "anthropic SSE",
        chunked(vec![ANTHROPIC_SEED.as_bytes().to_vec()]),
        |chunks| {
            drain(&rt, dpas_model::providers::anthropic::decode_body, chunks);
            Ok(())
        },
    );
    // A transport error mid-stream ends the stream with that error, never a panic.
    let broken = futures_util::stream::iter(vec![
        Ok(OPENAI_SEED.as_bytes()[..40].to_vec()),
        Err(ModelError::new(ModelErrorKind::Transport, "reset")),
    ]);
    let events: Vec<_> = rt.block_on(dpas_model::providers::openai::decode_body(broken).collect());
    assert!(events.last().is_some_and(Result::is_err));
}

/// JSON values that look like capability inputs: right keys, wrong types, extremes.
fn json_input() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        prop::sample::select(vec![
            "",
            "draft",
            "sent",
            "2026-02-30",
            "2026-12-01",
            "9999-12-31",
            "x\u{0}y",
            "pending",
            "all",
            "\u{202e}",
            "promised",
        ])
        .prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec(
                (
                    prop::sample::select(vec![
                        "id",
                        "amount",
                        "clientId",
                        "kind",
                        "dueDate",
                        "issueDate",
                        "notes",
                        "paidDate",
                        "status",
                        "overdueOnly",
                        "invoiceId",
                        "x",
                    ]),
                    inner
                ),
                0..5
            )
            .prop_map(|kv| Value::Object(kv.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())),
        ]
    })
}

#[test]
fn fuzz_rpc_inputs_through_the_runtime() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let state = rt
        .block_on(
            dpas_tests::testing::demo_builder(ServerConfig::for_tests(
                "fuzz-secret-of-at-least-32-bytes!",
            ))
            .build(),
        )
        .expect("app state");
    let runtime = Arc::clone(&state.runtime);
    let ids: Vec<String> = runtime.registry().ids().map(str::to_owned).collect();
    let carla = dpas_demo::CONTROLLER.actor();
    let strategy = (prop::sample::select(ids), json_input());
    campaign("/rpc input", strategy, |(id, input)| {
        let envelope = rt.block_on(runtime.invoke_envelope(
            &carla,
            CallSurface::Direct,
            &id,
            input,
            Correlation::default(),
        ));
        // Bad input is refused by validation or a domain rule, never a server fault.
        if let Envelope::Error(e) = &envelope {
            prop_assert_ne!(
                e.code,
                CapabilityErrorCode::InternalError,
                "{}: {:?}",
                id,
                e
            );
        }
        Ok(())
    });
}
