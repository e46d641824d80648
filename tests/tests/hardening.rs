//! Findings of the outside probe of the chat endpoint, each closed at its root: the session is
//! checked before a byte of the body is read, bodies and heads arrive on a deadline, and one
//! actor's concurrent steps are bounded.

use std::time::Duration;

use dpas_tests::read_trace_request;
use dpas_tests::server::{self, Model, Options};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Generous cap on anything the server must do promptly; hitting it fails the test.
const PROMPT: Duration = Duration::from_secs(5);

/// Everything the server writes until it closes the connection (or `cap` passes).
async fn read_until_closed(stream: &mut TcpStream, cap: Duration) -> (String, bool) {
    let mut out = Vec::new();
    let closed = tokio::time::timeout(cap, async {
        let mut buf = [0u8; 4096];
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => out.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await
    .is_ok();
    (String::from_utf8_lossy(&out).into_owned(), closed)
}

/// The JSON body of a raw HTTP/1.1 answer.
fn body_of(raw: &str) -> Value {
    let body = raw.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    serde_json::from_str(body).unwrap_or(Value::Null)
}

#[actix_web::test]
async fn an_anonymous_trickled_chat_upload_is_refused_before_its_body_arrives() {
    let srv = server::start().await;
    let mut stream = TcpStream::connect(srv.addr).await.unwrap();
    // Headers promising 100 kB, then one byte: the old server waited for the rest forever.
    stream
        .write_all(
            b"POST /agent/chat HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
              Content-Length: 100000\r\n\r\n{",
        )
        .await
        .unwrap();
    let (raw, closed) = read_until_closed(&mut stream, PROMPT).await;
    assert!(raw.starts_with("HTTP/1.1 401"), "{raw}");
    assert_eq!(body_of(&raw)["error"]["code"], "UNAUTHENTICATED");
    assert!(
        closed,
        "the connection of an unread body is closed, not kept"
    );
}

#[actix_web::test]
async fn a_signed_in_body_that_stops_arriving_is_408_and_closed() {
    let srv = server::start_with(Options {
        configure: Some(|c| c.request_timeout = Duration::from_secs(1)),
        ..Options::default()
    })
    .await;
    // `/api/session` reads its body through `web::Json`, the others through `read_limited`.
    for path in ["/agent/chat", "/rpc/list-invoices", "/api/session"] {
        let mut stream = TcpStream::connect(srv.addr).await.unwrap();
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: {}\r\n\
             Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{{\"a\":",
            srv.cookie("controller")
        );
        stream.write_all(head.as_bytes()).await.unwrap();
        let (raw, closed) = read_until_closed(&mut stream, PROMPT).await;
        assert!(raw.starts_with("HTTP/1.1 408"), "{path}: {raw}");
        assert_eq!(body_of(&raw)["error"]["code"], "REQUEST_TIMEOUT", "{path}");
        assert!(closed, "{path}: closed after the 408");
    }
}

#[actix_web::test]
async fn a_head_that_stops_arriving_is_cut_off_at_the_request_timeout() {
    let srv = server::start_with(Options {
        configure: Some(|c| c.request_timeout = Duration::from_secs(1)),
        ..Options::default()
    })
    .await;
    let mut stream = TcpStream::connect(srv.addr).await.unwrap();
    stream
        .write_all(b"GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        .await
        .unwrap();
    // actix's own default is 5 s: within 3 s only the configured deadline can close it.
    let (raw, closed) = read_until_closed(&mut stream, Duration::from_secs(3)).await;
    assert!(closed, "still open after 3 s: {raw}");
    assert!(raw.is_empty() || raw.starts_with("HTTP/1.1 408"), "{raw}");
}

#[actix_web::test]
async fn one_actor_runs_at_most_the_configured_steps_at_once() {
    let srv = server::start_with(Options {
        // Each step streams a little, then goes silent until the model timeout ends it.
        model: Model::Script(r#"{"turns": [{"text": ["Thinking"], "silentAfterText": true}]}"#),
        model_timeout: Duration::from_secs(2),
        configure: Some(|c| c.max_concurrent_steps = 2),
        ..Options::default()
    })
    .await;
    let body: Value =
        serde_json::from_slice(&read_trace_request("browser-carla-step0").unwrap()).unwrap();
    // Each post a turn of its own: the same ids again would follow the step already running.
    let turns = std::sync::atomic::AtomicU64::new(0);
    let start = |role: &'static str| {
        let mut body = body.clone();
        let turn = turns.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        body["turnId"] = format!("trn_{turn}").into();
        srv.http
            .post(srv.url("/agent/chat"))
            .header("content-type", "application/json")
            .header("cookie", srv.cookie(role))
            .body(serde_json::to_vec(&body).unwrap())
            .send()
    };
    let first = start("controller").await.unwrap();
    let second = start("controller").await.unwrap();
    assert_eq!(
        (first.status().as_u16(), second.status().as_u16()),
        (200, 200)
    );

    let third = start("controller").await.unwrap();
    assert_eq!(third.status(), 429);
    assert_eq!(
        third
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok()),
        Some("2")
    );
    let refusal: Value = third.json().await.unwrap();
    assert_eq!(refusal["error"]["code"], "RATE_LIMITED");
    // Another actor is not held back by Carla's steps.
    let other = start("analyst").await.unwrap();
    assert_eq!(other.status(), 200);

    // Once Carla's steps have ended (their streams are complete), she may start again.
    for reply in [first, second, other] {
        tokio::time::timeout(Duration::from_secs(10), reply.bytes())
            .await
            .expect("the step ends at the model timeout")
            .unwrap();
    }
    let again = start("controller").await.unwrap();
    assert_eq!(again.status(), 200);
}

/// A step's response head goes out in one write with the step's first frames, not alone: the
/// client's first read, waiting before the server has written anything, returns the head
/// and `step-start` together. (With the head written alone, the read returns as soon as the
/// head arrives, without the frames.)
#[actix_web::test]
async fn a_steps_head_is_written_with_its_first_frames() {
    let srv = server::start().await;
    let body = include_str!("../../bench/carla-step0.request.json");
    for _ in 0..5 {
        let mut stream = TcpStream::connect(srv.addr).await.unwrap();
        stream.set_nodelay(true).unwrap();
        let request = format!(
            "POST /agent/chat HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: {}\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            srv.cookie("controller"),
            body.len()
        );
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut buf = vec![0u8; 1 << 16];
        let n = tokio::time::timeout(PROMPT, stream.read(&mut buf))
            .await
            .expect("an answer within the deadline")
            .unwrap();
        let first = String::from_utf8_lossy(&buf[..n]);
        assert!(first.starts_with("HTTP/1.1 200"), "{first}");
        assert!(
            first.contains(r#"{"type":"step-start""#),
            "the first read holds step-start: {first}"
        );
    }
}
