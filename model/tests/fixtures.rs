//! Every recorded vendor stream in `fixtures/provider-streams/`, replayed through the
//! stand-in whole, byte by byte and at random chunk boundaries, and through `decode_body`
//! at proptest-chosen boundaries: the events must be right and identical every time.

mod common;

use common::*;
use dpas_model::{FinishReason, ModelErrorKind, ModelEvent, ToolCall};
use dpas_protocol::UsageReport;
use proptest::prelude::*;
use serde_json::{json, Value};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Adapter {
    OpenAi,
    Anthropic,
}

/// Which adapter reads a fixture (the Responses API one goes to chat completions to show
/// it is refused safely).
fn adapter_for(name: &str) -> Adapter {
    if name.starts_with("anthropic-") {
        Adapter::Anthropic
    } else {
        Adapter::OpenAi
    }
}

fn usage(
    input: u64,
    output: u64,
    total: u64,
    cached: Option<u64>,
    reasoning: Option<u64>,
    cache_write: Option<u64>,
) -> UsageReport {
    UsageReport {
        input_tokens: Some(input),
        output_tokens: Some(output),
        total_tokens: Some(total),
        cached_input_tokens: cached,
        reasoning_tokens: reasoning,
        cache_write_input_tokens: cache_write,
    }
}

fn call(id: &str, name: &str, input: Value) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        input,
        invalid_input: None,
    }
}

/// The concatenated `delta.content` of a chunks fixture, computed from the JSON directly.
fn jsonl_text(name: &str) -> String {
    fixture_lines(name)
        .iter()
        .filter_map(|c| {
            c.pointer("/choices/0/delta/content")?
                .as_str()
                .map(str::to_owned)
        })
        .collect()
}

/// The concatenated Anthropic `text_delta`s of a fixture body.
fn anthropic_text(body: &[u8]) -> String {
    String::from_utf8_lossy(body)
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .filter(|v| v.pointer("/delta/type") == Some(&json!("text_delta")))
        .filter_map(|v| v.pointer("/delta/text")?.as_str().map(str::to_owned))
        .collect()
}

/// What a fixture must decode to.
struct Expect {
    text: String,
    reasoning: String,
    calls: Vec<ToolCall>,
    /// Signatures of the reasoning blocks, with the block text.
    blocks: Vec<(String, String)>,
    finish: &'static str,
    usage: UsageReport,
}

fn expectation(name: &str) -> Option<Expect> {
    let body = fixture_body(name);
    let signature = |prefix: &str| -> String {
        let text = String::from_utf8_lossy(&body).to_string();
        let start = text.find(prefix).expect("signature in fixture");
        let rest = &text[start..];
        rest[..rest.find('"').expect("end of signature")].to_owned()
    };
    Some(match name {
        "openai-chat-parallel-tool-calls.sse" => Expect {
            text: String::new(),
            reasoning: String::new(),
            calls: vec![
                call(
                    "call_JMW1whyEaYG438VE1OIflxA2",
                    "GetWeatherArgs",
                    json!({"city": "Edinburgh", "country": "GB", "units": "c"}),
                ),
                call(
                    "call_DNYTawLBoN8fj3KN6qU9N1Ou",
                    "get_stock_price",
                    json!({"ticker": "AAPL", "exchange": "NASDAQ"}),
                ),
            ],
            blocks: vec![],
            finish: "tool-calls",
            usage: usage(149, 60, 209, None, Some(0), None),
        },
        "openai-chat-text-usage.chunks.jsonl" => Expect {
            text: jsonl_text(name),
            reasoning: String::new(),
            calls: vec![],
            blocks: vec![],
            finish: "stop",
            usage: usage(16, 300, 316, Some(0), Some(0), None),
        },
        "deepseek-reasoning-tool-call-cache.chunks.jsonl" => Expect {
            text: String::new(),
            reasoning: "The user is asking for the weather in San Francisco. I need to use the weather tool to get this information. Let me invoke the weather tool with the location parameter set to \"San Francisco\".".into(),
            calls: vec![call(
                "call_00_ioIn7yN9p1ZOMNpDLwd4MgAF",
                "weather",
                json!({"location": "San Francisco"}),
            )],
            blocks: vec![],
            finish: "tool-calls",
            usage: usage(339, 83, 422, Some(320), Some(39), None),
        },
        "groq-whole-tool-call.chunks.jsonl" => Expect {
            text: String::new(),
            reasoning: String::new(),
            calls: vec![call("tk85n1k4m", "weather", json!({}))],
            blocks: vec![],
            finish: "tool-calls",
            usage: usage(210, 15, 225, None, None, None),
        },
        "openrouter-claude-reasoning.sse" => Expect {
            text: "2 + 2 = 4".into(),
            reasoning: "This is a simple arithmetic question. 2+2 equals 4.".into(),
            calls: vec![],
            blocks: vec![],
            finish: "stop",
            usage: usage(43, 36, 79, Some(0), Some(13), None),
        },
        "anthropic-parallel-tool-use.sse" => Expect {
            text: anthropic_text(&body),
            reasoning: String::new(),
            calls: vec![
                call("toolu_011ouQLPrqhKSuFJtuJrpaUX", "pelican_name_generator", json!({})),
                call("toolu_01NtJRxGhJcEQ4axN1FzHayX", "pelican_name_generator", json!({})),
            ],
            blocks: vec![],
            finish: "tool-calls",
            usage: usage(310, 84, 394, Some(0), None, Some(0)),
        },
        "anthropic-text-then-tool-use.sse" => Expect {
            text: "I'll check the current weather in Paris for you.".into(),
            reasoning: String::new(),
            calls: vec![call(
                "toolu_01NRLabsLyVHZPKxbKvkfSMn",
                "get_weather",
                json!({"location": "Paris"}),
            )],
            blocks: vec![],
            finish: "tool-calls",
            usage: usage(377, 65, 442, Some(0), None, Some(0)),
        },
        "anthropic-thinking-text-padded.sse" => {
            let reasoning = "This is a straightforward question about pedestrian safety. I should provide clear, helpful advice about how to safely cross a street. This is basic safety information that could help prevent accidents.".to_owned();
            Expect {
                text: anthropic_text(&body),
                blocks: vec![(signature("EvMCCkYICxgC"), reasoning.clone())],
                reasoning,
                calls: vec![],
                finish: "stop",
                usage: usage(43, 282, 325, Some(0), None, Some(0)),
            }
        }
        "anthropic-thinking-then-tool-use.sse" => {
            let reasoning = "The user wants me to:\n1. Use the fixed_version tool\n2. Tell them the version\n3. Make a short joke about it\n\nLet me first call the fixed_version tool to see what version it returns.".to_owned();
            Expect {
                text: String::new(),
                blocks: vec![(signature("EoQDCm0IDhgC"), reasoning.clone())],
                reasoning,
                calls: vec![call("toolu_01825dXWLSoJwCst1qTsiWdb", "fixed_version", json!({}))],
                finish: "tool-calls",
                usage: usage(598, 92, 690, Some(0), Some(53), Some(0)),
            }
        }
        "anthropic-prompt-cache-usage.chunks.jsonl" => Expect {
            text: "The sum of the squares of the numbers 1 through 12 is **650**.".into(),
            reasoning: String::new(),
            calls: vec![],
            blocks: vec![],
            finish: "stop",
            usage: usage(
                6 + 6289 + 3337,
                198,
                6 + 6289 + 3337 + 198,
                Some(6289),
                Some(0),
                Some(3337),
            ),
        },
        _ => return None,
    })
}

/// Fixtures that are not chat-completions or Messages streams: refused without a panic.
const FOREIGN: &[&str] = &["openai-responses-function-calls-4-turns.chunks.jsonl"];

fn check(name: &str, events: &[ModelEvent], error: Option<&dpas_model::ModelError>) {
    if FOREIGN.contains(&name) {
        assert!(events.is_empty(), "{name}: {events:?}");
        let error = error.expect("a foreign stream is an error");
        assert_eq!(error.kind, ModelErrorKind::Transport, "{name}");
        return;
    }
    assert!(error.is_none(), "{name}: {error:?}");
    let expect = expectation(name).expect("every fixture has an expectation");
    assert_eq!(text_of(events), expect.text, "{name}: text");
    assert_eq!(reasoning_of(events), expect.reasoning, "{name}: reasoning");
    assert_eq!(calls_of(events), expect.calls, "{name}: calls");
    let blocks: Vec<(String, String)> = events
        .iter()
        .filter_map(|e| match e {
            ModelEvent::ReasoningBlock {
                text,
                provider_options,
            } => Some((
                provider_options["anthropic"]["signature"]
                    .as_str()
                    .expect("signature")
                    .to_owned(),
                text.clone(),
            )),
            _ => None,
        })
        .collect();
    assert_eq!(blocks, expect.blocks, "{name}: reasoning blocks");
    let finishes: Vec<_> = events
        .iter()
        .filter(|e| matches!(e, ModelEvent::Finish { .. }))
        .collect();
    assert_eq!(finishes.len(), 1, "{name}: one finish");
    assert_eq!(
        events.last(),
        Some(&ModelEvent::Finish {
            reason: FinishReason(expect.finish.into()),
            usage: expect.usage,
        }),
        "{name}: finish last, with usage"
    );
    let u = expect.usage;
    assert!(
        u.cached_input_tokens.unwrap_or(0) + u.cache_write_input_tokens.unwrap_or(0)
            <= u.input_tokens.unwrap_or(0)
    );
    assert!(u.reasoning_tokens.unwrap_or(0) <= u.output_tokens.unwrap_or(0));
}

#[test]
fn every_fixture_is_covered() {
    let names = fixture_names();
    assert_eq!(names.len(), 11, "{names:?}");
    for name in names {
        assert!(
            FOREIGN.contains(&name.as_str()) || expectation(&name).is_some(),
            "no expectation for {name}"
        );
    }
}

async fn replay(
    name: &str,
    chunks: Vec<Vec<u8>>,
) -> (Vec<ModelEvent>, Option<dpas_model::ModelError>) {
    let server = StandIn::start(vec![Reply::Sse {
        chunks,
        end: End::Complete,
    }])
    .await;
    let (events, error) = match adapter_for(name) {
        Adapter::OpenAi => run(&openai(&server.base_url), simple_request()).await,
        Adapter::Anthropic => run(&anthropic(&server.base_url), simple_request()).await,
    };
    assert_eq!(server.requests().len(), 1, "{name}: one request");
    (events, error)
}

#[tokio::test]
async fn fixtures_over_http_whole_byte_by_byte_and_random() {
    for name in fixture_names() {
        let body = fixture_body(&name);
        let (whole, error) = replay(&name, vec![body.clone()]).await;
        check(&name, &whole, error.as_ref());
        let (bytes, error) = replay(&name, byte_by_byte(&body)).await;
        check(&name, &bytes, error.as_ref());
        assert_eq!(bytes, whole, "{name}: byte by byte");
        for seed in 0..3 {
            let cuts = random_cuts(body.len(), seed, 40);
            let (random, error) = replay(&name, split_at(&body, &cuts)).await;
            check(&name, &random, error.as_ref());
            assert_eq!(random, whole, "{name}: seed {seed}");
        }
    }
}

fn decode_blocking(
    name: &str,
    chunks: Vec<Vec<u8>>,
) -> (Vec<ModelEvent>, Option<dpas_model::ModelError>) {
    block_on(collect(decode(
        adapter_for(name) == Adapter::Anthropic,
        chunks,
    )))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn fixtures_decode_identically_at_any_boundaries(
        index in 0usize..11,
        cuts in proptest::collection::vec(any::<usize>(), 0..64),
    ) {
        let names = fixture_names();
        let name = &names[index % names.len()];
        let body = fixture_body(name);
        let (events, error) = decode_blocking(name, split_at(&body, &cuts));
        check(name, &events, error.as_ref());
        let (whole, _) = decode_blocking(name, vec![body]);
        prop_assert_eq!(events, whole);
    }
}
