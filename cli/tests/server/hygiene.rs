//! Request hygiene: the body cap is enforced while reading, malformed bodies are typed 400s,
//! unknown routes are JSON 404s, and the static app falls back to index.html.

use std::time::Duration;

use host_server::config::DEFAULT_BODY_LIMIT;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::common::{builder, start, start_with, TestServer};

const MIB: usize = 1024 * 1024;

/// Reads one HTTP response head and body from a raw connection (the server closes or sends
/// `content-length`); returns status and body.
async fn read_response(stream: &mut TcpStream) -> (u16, String) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        let n = tokio::time::timeout(Duration::from_secs(20), stream.read(&mut chunk))
            .await
            .expect("the server answers without waiting for the whole body")
            .expect("read");
        buf.extend_from_slice(&chunk[..n]);
        let text = String::from_utf8_lossy(&buf).to_string();
        if let Some(head_end) = text.find("\r\n\r\n") {
            let head = &text[..head_end];
            let length = head.lines().find_map(|l| {
                l.to_ascii_lowercase()
                    .strip_prefix("content-length:")
                    .map(|v| v.trim().parse::<usize>().unwrap_or(0))
            });
            let body = &text[head_end + 4..];
            if n == 0 || length.is_some_and(|len| body.len() >= len) {
                let status = head
                    .split(' ')
                    .nth(1)
                    .and_then(|s| s.parse().ok())
                    .unwrap_or(0);
                return (status, body.to_owned());
            }
        } else if n == 0 {
            panic!("connection closed before a response: {text}");
        }
    }
}

async fn open(s: &TestServer, head: &str) -> TcpStream {
    let mut stream = TcpStream::connect(s.addr).await.expect("connect");
    stream.write_all(head.as_bytes()).await.expect("write head");
    stream
}

#[actix_web::test]
async fn a_64_mib_body_is_refused_without_being_read_whole() {
    let s = start().await;
    let cookie = s.sign_in("controller").await;
    let declared = 64 * MIB;
    let head = format!(
        "POST /rpc/list-invoices HTTP/1.1\r\nhost: {}\r\ncookie: {cookie}\r\ncontent-type: application/json\r\ncontent-length: {declared}\r\n\r\n",
        s.addr
    );
    let mut stream = open(&s, &head).await;
    // Only one MiB of the declared 64 is ever sent: a server that buffered the body whole
    // would wait for the rest and the read below would time out.
    stream
        .write_all(&vec![b' '; MIB])
        .await
        .expect("write part of the body");
    let (status, body) = read_response(&mut stream).await;
    assert_eq!(status, 413);
    let body: serde_json::Value = serde_json::from_str(&body).expect("json body");
    assert_eq!(body["error"]["code"], "REQUEST_TOO_LARGE");
}

#[actix_web::test]
async fn a_chunked_body_is_cut_off_once_it_passes_the_cap() {
    let s = start().await;
    let cookie = s.sign_in("controller").await;
    let head = format!(
        "POST /rpc/list-invoices HTTP/1.1\r\nhost: {}\r\ncookie: {cookie}\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n",
        s.addr
    );
    let mut stream = open(&s, &head).await;
    // No length is declared; the stream is left open after just over the cap, so only a
    // server that counts while reading can answer.
    let piece = vec![b' '; 256 * 1024];
    let pieces = DEFAULT_BODY_LIMIT / piece.len() + 2;
    for _ in 0..pieces {
        stream
            .write_all(format!("{:x}\r\n", piece.len()).as_bytes())
            .await
            .expect("chunk size");
        stream.write_all(&piece).await.expect("chunk");
        stream.write_all(b"\r\n").await.expect("chunk end");
    }
    let (status, body) = read_response(&mut stream).await;
    assert_eq!(status, 413, "{body}");
    assert!(body.contains("REQUEST_TOO_LARGE"));
}

#[actix_web::test]
async fn malformed_and_odd_input_gets_typed_errors_never_500() {
    let s = start().await;
    let cookie = s.sign_in("controller").await;

    let malformed = s
        .send(
            "POST",
            "/rpc/list-invoices",
            Some(&cookie),
            Some("{\"kind\":".into()),
        )
        .await;
    assert_eq!(malformed.status, 400);
    assert_eq!(malformed.body["error"]["code"], "INPUT_INVALID");
    assert_eq!(
        malformed.body["error"]["details"]["issues"][0]["message"],
        "The body is not valid JSON."
    );

    for (path, body) in [
        ("/rpc/list-invoices", "[]"),
        ("/rpc/list-invoices", "\"text\""),
        ("/rpc/issue-invoice", "{\"id\": 99999999999999999999999}"),
        ("/rpc/issue-invoice", "{\"id\": 1.5}"),
        (
            "/rpc/create-invoice",
            "{\"clientId\": 1, \"amount\": 1, \"notes\": \"x\"}",
        ),
        (
            "/rpc/update-collection-status",
            "{\"invoiceId\": 1, \"remindersSent\": 100}",
        ),
        (
            "/rpc/create-invoice",
            "{\"clientId\": 1, \"amount\": 1, \"dueDate\": \"2026-02-30\"}",
        ),
        (
            "/rpc/mark-invoice-paid",
            "{\"id\": 4, \"paidDate\": \"9999-99-99\"}",
        ),
        (
            "/rpc/create-invoice",
            r#"{"clientId": 4, "amount": 1, "issueDate": "9999-12-31"}"#,
        ),
        (
            "/rpc/mark-invoice-paid",
            r#"{"id": 9, "paidDate": "0000-01-01"}"#,
        ),
        (
            "/rpc/create-invoice",
            r#"{"clientId": 1, "amount": 9007199254740991}"#,
        ),
        ("/rpc/receivables-summary", "{}"),
        ("/api/approvals/apr_x", "{\"approved\":"),
        ("/api/session", "\u{0}"),
    ] {
        let r = s
            .send("POST", path, Some(&cookie), Some(body.to_owned()))
            .await;
        assert!(
            (200..500).contains(&r.status),
            "{path} {body} answered {}: {}",
            r.status,
            r.body
        );
        assert!(
            r.body.get("error").is_some() || r.body["status"] == "ok",
            "{path} {body}: {}",
            r.body
        );
    }
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let r = s
        .send("POST", "/rpc/list-invoices", Some(&cookie), Some(deep))
        .await;
    assert_eq!(r.status, 400);

    let unknown = s.get("/api/nope", Some(&cookie)).await;
    assert_eq!(
        (unknown.status, unknown.body["error"]["code"].clone()),
        (404, json!("NOT_FOUND"))
    );
    let wrong_method = s.get("/rpc/list-invoices", Some(&cookie)).await;
    assert_eq!(
        (
            wrong_method.status,
            wrong_method.body["error"]["code"].clone()
        ),
        (405, json!("METHOD_NOT_ALLOWED"))
    );
}

#[actix_web::test]
async fn static_files_with_spa_fallback() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("index.html"),
        "<!doctype html><title>app</title>",
    )
    .expect("index");
    std::fs::create_dir(dir.path().join("assets")).expect("assets dir");
    std::fs::write(dir.path().join("assets/app.js"), "console.log(1)").expect("asset");
    let root = dir.path().to_path_buf();
    let s = start_with(builder().with_config(|c| c.static_dir = Some(root))).await;

    let get = |path: &'static str| {
        let http = s.http.clone();
        let url = s.url(path);
        async move {
            let r = http.get(url).send().await.expect("answered");
            let ct = r
                .headers()
                .get("content-type")
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_owned();
            (r.status().as_u16(), ct, r.text().await.unwrap_or_default())
        }
    };
    let (status, ct, body) = get("/").await;
    assert_eq!(
        (status, ct.as_str(), body.as_str()),
        (
            200,
            "text/html; charset=utf-8",
            "<!doctype html><title>app</title>"
        )
    );
    let (status, _, body) = get("/receivables/pending").await;
    assert_eq!((status, body.contains("<title>app</title>")), (200, true));
    let (status, ct, body) = get("/assets/app.js").await;
    assert_eq!(
        (status, ct.as_str(), body.as_str()),
        (200, "text/javascript; charset=utf-8", "console.log(1)")
    );
    assert_eq!(get("/assets/missing.js").await.0, 404);
    assert_eq!(get("/../Cargo.toml").await.0, 404);
    assert_eq!(get("/%2e%2e/%2e%2e/Cargo.toml").await.0, 404);
    let (status, ct, _) = get("/api/nope").await;
    assert_eq!((status, ct.as_str()), (404, "application/json"));

    // Conditional requests and ranges, as a browser and a CDN make them.
    let first = s
        .http
        .get(s.url("/assets/app.js"))
        .send()
        .await
        .expect("answered");
    let etag = first.headers().get("etag").expect("an ETag").clone();
    assert_eq!(
        first.headers().get("cache-control").map(|v| v.as_bytes()),
        Some(&b"public, max-age=3600"[..])
    );
    let again = s
        .http
        .get(s.url("/assets/app.js"))
        .header("if-none-match", etag)
        .send()
        .await
        .expect("answered");
    assert_eq!(again.status().as_u16(), 304);
    let part = s
        .http
        .get(s.url("/assets/app.js"))
        .header("range", "bytes=8-13")
        .send()
        .await
        .expect("answered");
    assert_eq!(part.status().as_u16(), 206);
    assert_eq!(part.text().await.expect("body"), "log(1)");
    let head = s.http.head(s.url("/")).send().await.expect("answered");
    assert_eq!(
        (
            head.status().as_u16(),
            head.headers().get("cache-control").map(|v| v.as_bytes())
        ),
        (200, Some(&b"no-cache"[..]))
    );
}
