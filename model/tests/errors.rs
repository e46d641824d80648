//! Failure behaviour of both adapters against the stand-in: vendor errors are safe and
//! short, 429/5xx are retried (boundedly) before the first byte only, broken, malformed,
//! garbage and silent streams end in a typed error, and no byte sequence panics.

mod common;

use std::time::{Duration, Instant};

use common::*;
use dpas_model::{HttpSettings, ModelError, ModelErrorKind, ModelEvent, ModelProvider};
use futures_util::StreamExt;
use proptest::prelude::*;

/// A message is safe when it names no key, URL, host or address.
fn assert_safe(error: &ModelError, server: &StandIn) {
    let port = server.base_url.rsplit(':').next().expect("port");
    for leak in [
        OPENAI_KEY,
        ANTHROPIC_KEY,
        "Zq8vK2",
        "Hj4kL7",
        "http",
        "127.0.0.1",
        "internal.example.com",
        "10.2.3.4",
        port,
    ] {
        assert!(
            !error.message.contains(leak),
            "{leak} leaked in {:?}",
            error.message
        );
    }
    assert!(error.message.chars().count() <= 300);
}

fn providers(server: &StandIn) -> [Box<dyn ModelProvider>; 2] {
    [
        Box::new(openai(&server.base_url)),
        Box::new(anthropic(&server.base_url)),
    ]
}

/// An error body naming a key, a URL, a host, an address and this stand-in's own base URL.
fn secret_body() -> String {
    format!(
        r#"{{"error":{{"type":"api_error","message":"Backend https://internal.example.com:8443/v1 at 10.2.3.4 refused key {OPENAI_KEY} / {ANTHROPIC_KEY} via {BASE_PLACEHOLDER}/v1"}}}}"#
    )
}

#[tokio::test]
async fn a_500_with_secrets_is_retried_then_reported_without_them() {
    for which in 0..2 {
        let server = StandIn::start(vec![Reply::status(500, &secret_body()); 3]).await;
        let provider = &providers(&server)[which];
        let (events, error) = run(provider.as_ref(), simple_request()).await;
        assert!(events.is_empty());
        let error = error.expect("error");
        assert_eq!(error.kind, ModelErrorKind::Vendor);
        assert_eq!(
            error.message,
            "The model provider failed (HTTP 500): Backend [redacted] at [redacted] refused key [redacted] / [redacted] via [redacted]"
        );
        assert_safe(&error, &server);
        assert_eq!(server.requests().len(), 3, "one try and two retries");
    }
}

#[tokio::test]
async fn the_configured_base_url_and_key_are_redacted_anywhere() {
    let server = StandIn::start(vec![Reply::status(
        400,
        &format!(r#"{{"error":{{"message":"bad request to {BASE_PLACEHOLDER}/v1/chat/completions (key={OPENAI_KEY})"}}}}"#),
    )])
    .await;
    let (_, error) = run(&openai(&server.base_url), simple_request()).await;
    let error = error.expect("error");
    assert_safe(&error, &server);
    assert_eq!(
        error.message,
        "The model provider rejected the request (HTTP 400): bad request to [redacted] (key=[redacted])"
    );
}

#[tokio::test]
async fn rate_limits_and_5xx_are_retried_before_the_first_byte() {
    let ok = fixture_body("groq-whole-tool-call.chunks.jsonl");
    let server = StandIn::start(vec![
        Reply::Status {
            status: 429,
            body: br#"{"error":{"message":"Rate limit reached"}}"#.to_vec(),
            // Far longer than the policy allows: the wait is capped.
            retry_after: Some("30".into()),
        },
        Reply::status(503, "upstream down"),
        Reply::sse(&ok),
    ])
    .await;
    let started = Instant::now();
    let (events, error) = run(&openai(&server.base_url), simple_request()).await;
    assert_eq!(error, None);
    assert_eq!(calls_of(&events).len(), 1);
    assert!(matches!(events.last(), Some(ModelEvent::Finish { .. })));
    assert_eq!(server.requests().len(), 3);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "retry-after was capped"
    );
}

#[tokio::test]
async fn a_persistent_429_is_reported_after_bounded_retries() {
    let server = StandIn::start(vec![
        Reply::status(
            429,
            r#"{"type":"error","error":{"type":"rate_limit_error","message":"Too many requests"}}"#
        );
        5
    ])
    .await;
    let (_, error) = run(&anthropic(&server.base_url), simple_request()).await;
    let error = error.expect("error");
    assert_eq!(
        error.message,
        "The model provider is rate limiting requests (HTTP 429): Too many requests"
    );
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn client_errors_are_not_retried() {
    let server = StandIn::start(vec![Reply::status(
        400,
        r#"{"type":"error","error":{"type":"invalid_request_error","message":"messages.1.content.0.tool_use.input: Field required"}}"#,
    )])
    .await;
    let (_, error) = run(&anthropic(&server.base_url), simple_request()).await;
    let error = error.expect("error");
    assert_eq!(error.kind, ModelErrorKind::Vendor);
    assert_eq!(
        error.message,
        "The model provider rejected the request (HTTP 400): messages.1.content.0.tool_use.input: Field required"
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_json_answer_instead_of_a_stream() {
    let server = StandIn::start(vec![
        Reply::status(
            200,
            &format!(r#"{{"error":{{"message":"quota exceeded for {OPENAI_KEY}"}}}}"#),
        ),
        Reply::status(200, r#"{"id":"x","choices":[]}"#),
    ])
    .await;
    let (_, error) = run(&openai(&server.base_url), simple_request()).await;
    let error = error.expect("error");
    assert_eq!(error.kind, ModelErrorKind::Vendor);
    assert_eq!(
        error.message,
        "The model provider reported an error: quota exceeded for [redacted]"
    );
    let (_, error) = run(&anthropic(&server.base_url), simple_request()).await;
    let error = error.expect("error");
    assert_eq!(error.kind, ModelErrorKind::Protocol);
    assert_eq!(
        error.message,
        "The model provider answered without streaming."
    );
    assert_eq!(server.requests().len(), 2, "a 2xx is never retried");
}

/// The first `len` bytes of a fixture.
fn prefix(name: &str, len: usize) -> Vec<u8> {
    fixture_body(name)[..len].to_vec()
}

/// A cut point in the middle of the `n`th `data:` line of a fixture.
fn mid_event(name: &str, n: usize) -> usize {
    let body = fixture_body(name);
    let text = String::from_utf8_lossy(&body);
    let start = text.match_indices("data:").nth(n).expect("event").0;
    start + 20
}

#[tokio::test]
async fn a_connection_cut_mid_event_keeps_what_came_and_fails() {
    let cases = [
        ("openai-chat-text-usage.chunks.jsonl", 40),
        ("anthropic-thinking-text-padded.sse", 30),
    ];
    for (i, (name, n)) in cases.into_iter().enumerate() {
        let cut = mid_event(name, n);
        let body = prefix(name, cut);
        let server = StandIn::start(vec![Reply::Sse {
            chunks: split_at(&body, &random_cuts(body.len(), 7, 10)),
            end: End::Cut,
        }])
        .await;
        let provider = &providers(&server)[i];
        let (events, error) = run(provider.as_ref(), simple_request()).await;
        let error = error.expect("error");
        assert_eq!(error.kind, ModelErrorKind::Transport, "{name}");
        assert_safe(&error, &server);
        let streamed = format!("{}{}", reasoning_of(&events), text_of(&events));
        assert!(
            !streamed.is_empty(),
            "{name}: the deltas before the cut arrive"
        );
        assert!(
            !events
                .iter()
                .any(|e| matches!(e, ModelEvent::Finish { .. })),
            "{name}: no finish"
        );
    }
}

#[tokio::test]
async fn a_body_ending_mid_event_is_malformed() {
    let name = "openai-chat-parallel-tool-calls.sse";
    let body = prefix(name, mid_event(name, 6));
    let server = StandIn::start(vec![Reply::sse(&body)]).await;
    let (events, error) = run(&openai(&server.base_url), simple_request()).await;
    let error = error.expect("error");
    assert_eq!(error.kind, ModelErrorKind::Protocol);
    assert_eq!(
        calls_of(&events).len(),
        0,
        "calls are only complete at the finish"
    );
}

#[tokio::test]
async fn anthropic_cut_after_the_stop_reason_still_finishes() {
    let name = "anthropic-text-then-tool-use.sse";
    let text = String::from_utf8(fixture_body(name)).expect("utf-8");
    let end = text.find("event: message_stop").expect("stop");
    let server = StandIn::start(vec![Reply::sse(&text.as_bytes()[..end])]).await;
    let (events, error) = run(&anthropic(&server.base_url), simple_request()).await;
    assert_eq!(error, None);
    assert_eq!(calls_of(&events).len(), 1);
    assert!(matches!(events.last(), Some(ModelEvent::Finish { .. })));
}

#[tokio::test]
async fn garbage_bytes_are_protocol_errors() {
    let bodies: [&[u8]; 3] = [
        b"\xff\xfe\x00garbage\x80\x81\n\n",
        b"data: this is not json\n\n",
        b"data: [1, 2, 3]\n\n",
    ];
    for body in bodies {
        let server = StandIn::start(vec![Reply::sse(body), Reply::sse(body)]).await;
        for provider in providers(&server) {
            let (events, error) = run(provider.as_ref(), simple_request()).await;
            assert!(events.is_empty());
            let error = error.expect("error");
            assert_eq!(error.kind, ModelErrorKind::Protocol, "{body:?}");
            assert_safe(&error, &server);
        }
    }
    // Text that is no SSE at all carries no event: the step never finished.
    let server = StandIn::start(vec![Reply::sse(b"<html>hello</html>")]).await;
    let (events, error) = run(&openai(&server.base_url), simple_request()).await;
    assert!(events.is_empty());
    assert_eq!(error.expect("error").kind, ModelErrorKind::Transport);
}

#[tokio::test]
async fn mid_stream_vendor_errors_are_reported_safely() {
    let server = StandIn::start(vec![
        Reply::sse(
            b"data: {\"choices\":[{\"delta\":{\"content\":\"Hel\"}}]}\n\n\
              data: {\"error\":{\"message\":\"Provider returned error from https://internal.example.com\",\"code\":502}}\n\n",
        ),
        Reply::sse(
            b"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":5}}}\n\n\
              event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n",
        ),
    ])
    .await;
    let (events, error) = run(&openai(&server.base_url), simple_request()).await;
    assert_eq!(text_of(&events), "Hel");
    let error = error.expect("error");
    assert_eq!(error.kind, ModelErrorKind::Vendor);
    assert_eq!(
        error.message,
        "The model provider reported an error: Provider returned error from [redacted]"
    );
    let (_, error) = run(&anthropic(&server.base_url), simple_request()).await;
    assert_eq!(
        error.expect("error").message,
        "The model provider reported an error: Overloaded"
    );
}

#[tokio::test]
async fn a_bom_and_crlf_line_endings_are_accepted() {
    let body = b"\xef\xbb\xbfdata: {\"choices\":[{\"delta\":{\"content\":\"ok\"},\"finish_reason\":\"stop\"}]}\r\n\r\ndata: [DONE]\r\n\r\n";
    let server = StandIn::start(vec![Reply::Sse {
        chunks: byte_by_byte(body),
        end: End::Complete,
    }])
    .await;
    let (events, error) = run(&openai(&server.base_url), simple_request()).await;
    assert_eq!(error, None);
    assert_eq!(text_of(&events), "ok");
}

#[tokio::test]
async fn nothing_is_read_after_the_finish() {
    // Both vendors keep the connection open after their last event: the step still ends.
    let server = StandIn::start(vec![
        Reply::Sse {
            chunks: vec![b"data: {\"choices\":[{\"delta\":{\"content\":\"a\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n".to_vec()],
            end: End::Hang,
        },
        Reply::Sse {
            chunks: vec![b"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n".to_vec()],
            end: End::Hang,
        },
    ])
    .await;
    for provider in providers(&server) {
        let stream = provider.stream(simple_request()).await.expect("stream");
        let (events, error) = tokio::time::timeout(Duration::from_secs(10), collect(stream))
            .await
            .expect("the stream ends at its finish");
        assert_eq!(error, None);
        assert!(matches!(events.last(), Some(ModelEvent::Finish { .. })));
    }
}

#[tokio::test]
async fn a_silent_vendor() {
    // Silent before the headers: the response timeout fires.
    let server = StandIn::start(vec![Reply::Silent]).await;
    let provider = dpas_model::OpenAiProvider::new(dpas_model::OpenAiConfig {
        api_key: None,
        base_url: format!("{}/v1", server.base_url),
        model: "m".into(),
        http: HttpSettings {
            response_timeout: Duration::from_millis(200),
            ..fast_http()
        },
    })
    .expect("provider");
    let (_, error) = run(&provider, simple_request()).await;
    let error = error.expect("error");
    assert_eq!(error.kind, ModelErrorKind::Transport);
    assert_eq!(error.message, "The model provider did not respond in time.");

    // Silent mid-stream: the stream stays pending, so the loop's inactivity timeout (a
    // timeout around `next()`) is what ends the step.
    let server = StandIn::start(vec![Reply::Sse {
        chunks: vec![b"data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n".to_vec()],
        end: End::Hang,
    }])
    .await;
    let mut stream = openai(&server.base_url)
        .stream(simple_request())
        .await
        .expect("stream");
    let first = stream.next().await;
    assert!(matches!(first, Some(Ok(ModelEvent::TextDelta(ref t))) if t == "a"));
    let next = tokio::time::timeout(Duration::from_millis(200), stream.next()).await;
    assert!(next.is_err(), "a silent vendor yields nothing: {next:?}");
}

#[tokio::test]
async fn connection_refused_is_a_safe_transport_error() {
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = closed.local_addr().expect("addr");
    // Nothing listens on this port any more.
    drop(closed);
    let provider = dpas_model::AnthropicProvider::new(dpas_model::AnthropicConfig {
        api_key: ANTHROPIC_KEY.into(),
        base_url: format!("http://{addr}"),
        model: "m".into(),
        max_tokens: 10,
        thinking_budget: None,
        http: fast_http(),
    })
    .expect("provider");
    let (_, error) = run(&provider, simple_request()).await;
    let error = error.expect("error");
    assert_eq!(error.kind, ModelErrorKind::Transport);
    assert_eq!(error.message, "Could not connect to the model provider.");
}

/// Any stream ends, with at most one `Finish` (last) or one error (last).
fn well_formed(events: &[ModelEvent], error: &Option<ModelError>) {
    let finishes = events
        .iter()
        .filter(|e| matches!(e, ModelEvent::Finish { .. }))
        .count();
    assert!(finishes <= 1);
    if finishes == 1 {
        assert!(matches!(events.last(), Some(ModelEvent::Finish { .. })));
        assert!(error.is_none());
    } else {
        assert!(
            error.is_some(),
            "a stream without a finish ends in an error"
        );
    }
    if let Some(error) = error {
        assert!(error.message.chars().count() <= 300);
    }
}

/// Pieces of both vendors' streams, recombined at random by the noise property.
const SSE_TOKENS: &[&[u8]] = &[
    b"data: ", b"data:", b"event: ", b"id: 1", b"retry: 5", b": comment", b"\n", b"\r\n",
    b"\r", b"\n\n", b"\xef\xbb\xbf", b"\xc3", b"\xa9", b"[DONE]", b"{", b"}", b"[", b"]",
    b",", b"\"", b"null", b"1", b"-2", b"1e400", b"\"type\":", b"\"index\":", b"\"index\":0,",
    b"\"message_start\"", b"\"content_block_start\"", b"\"content_block_delta\"",
    b"\"content_block_stop\"", b"\"message_delta\"", b"\"message_stop\"", b"\"error\"",
    b"\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"n\",\"input\":{}}",
    b"\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"a\"}",
    b"\"delta\":{\"stop_reason\":\"end_turn\"}", b"\"usage\":{\"input_tokens\":3}",
    b"\"choices\":[{\"delta\":{\"content\":\"x\"}}]",
    b"\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\"}}]}}]",
    b"\"choices\":[{\"finish_reason\":\"stop\"}]",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn no_byte_sequence_panics(
        adapter in 0usize..2,
        bytes in proptest::collection::vec(any::<u8>(), 0..512),
        cuts in proptest::collection::vec(any::<usize>(), 0..16),
    ) {
        let (events, error) = block_on(collect(decode(adapter == 1, split_at(&bytes, &cuts))));
        well_formed(&events, &error);
    }

    #[test]
    fn sse_like_noise_never_panics(
        adapter in 0usize..2,
        tokens in proptest::collection::vec(proptest::sample::select(SSE_TOKENS), 0..96),
        cuts in proptest::collection::vec(any::<usize>(), 0..16),
    ) {
        let bytes: Vec<u8> = tokens.concat();
        let (events, error) = block_on(collect(decode(adapter == 1, split_at(&bytes, &cuts))));
        well_formed(&events, &error);
    }

    #[test]
    fn corrupted_fixtures_never_panic(
        index in 0usize..11,
        position in any::<usize>(),
        garbage in proptest::collection::vec(any::<u8>(), 1..8),
        cuts in proptest::collection::vec(any::<usize>(), 0..16),
    ) {
        let names = fixture_names();
        let name = &names[index % names.len()];
        let mut body = fixture_body(name);
        let at = position % (body.len() + 1);
        body.splice(at..at, garbage);
        let anthropic = name.starts_with("anthropic-");
        let (events, error) = block_on(collect(decode(anthropic, split_at(&body, &cuts))));
        well_formed(&events, &error);
    }
}
