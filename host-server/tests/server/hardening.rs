//! Findings of the outside probe, each closed at its root: cross-site writes (CSRF), security
//! headers, the anonymous sign-in's rate and size, and the session secret's length.

use serde_json::json;

use crate::common::{builder, start, start_with, TestServer};

/// A write as a browser page would send it: with `Origin` and a content type of its choosing.
async fn write_from(
    s: &TestServer,
    cookie: &str,
    origin: Option<&str>,
    content_type: &str,
    body: &str,
) -> (u16, serde_json::Value) {
    let mut req = s
        .http
        .post(s.url("/rpc/create-invoice"))
        .header("cookie", cookie)
        .header("content-type", content_type)
        .body(body.to_owned());
    if let Some(o) = origin {
        req = req.header("origin", o);
    }
    let resp = req.send().await.expect("answered");
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or_default())
}

async fn invoice_count(s: &TestServer, cookie: &str) -> i64 {
    let (_, summary) = s.rpc(cookie, "receivables-summary", json!({})).await;
    summary["data"]["invoiceCount"].as_i64().expect("count")
}

#[actix_web::test]
async fn cross_site_and_non_json_writes_are_refused_before_any_handler() {
    let s = start_with(
        builder().with_config(|c| c.allowed_origins = vec!["https://app.example.com".into()]),
    )
    .await;
    let carla = s.sign_in("controller").await;
    let before = invoice_count(&s, &carla).await;
    let body = r#"{"clientId": 3, "amount": 4200}"#;

    // The probe's attack: a page on another port of the same host posting text/plain.
    let other_port = "http://127.0.0.1:1";
    let (status, err) = write_from(&s, &carla, Some(other_port), "text/plain", body).await;
    assert_eq!(
        (status, err["error"]["code"].clone()),
        (403, json!("ORIGIN_REFUSED"))
    );
    let (status, err) = write_from(&s, &carla, Some(other_port), "application/json", body).await;
    assert_eq!(
        (status, err["error"]["code"].clone()),
        (403, json!("ORIGIN_REFUSED"))
    );
    let (status, err) = write_from(&s, &carla, Some("null"), "application/json", body).await;
    assert_eq!(
        (status, err["error"]["code"].clone()),
        (403, json!("ORIGIN_REFUSED"))
    );
    // Same origin, but not JSON: a form post needs no preflight, so it never gets in.
    let own = s.base.clone();
    for ct in [
        "text/plain",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
    ] {
        let (status, err) = write_from(&s, &carla, Some(&own), ct, body).await;
        assert_eq!(
            (status, err["error"]["code"].clone()),
            (415, json!("UNSUPPORTED_MEDIA_TYPE")),
            "{ct}"
        );
    }
    // No Origin but the browser says cross-site.
    let resp = s
        .http
        .post(s.url("/rpc/create-invoice"))
        .header("cookie", &carla)
        .header("content-type", "application/json")
        .header("sec-fetch-site", "cross-site")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 403);
    assert_eq!(
        invoice_count(&s, &carla).await,
        before,
        "nothing was written"
    );

    // The app itself, a configured origin, and clients that send no Origin all write.
    let (status, _) = write_from(&s, &carla, Some(&own), "application/json", body).await;
    assert_eq!(status, 200);
    let (status, _) = write_from(
        &s,
        &carla,
        Some("https://APP.example.com"),
        "application/json; charset=utf-8",
        body,
    )
    .await;
    assert_eq!(status, 200);
    let (status, _) = write_from(&s, &carla, None, "application/json", body).await;
    assert_eq!(status, 200);
    assert_eq!(invoice_count(&s, &carla).await, before + 3);
    // Body-less writes need no content type (DELETE of a thread, an empty /rpc).
    let resp = s
        .http
        .post(s.url("/rpc/receivables-summary"))
        .header("cookie", &carla)
        .header("origin", own.as_str())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
}

#[actix_web::test]
async fn every_answer_carries_the_security_headers_and_api_json_is_not_stored() {
    let s = start().await;
    let carla = s.sign_in("controller").await;
    for (path, cookie) in [
        ("/api/health", None),
        ("/api/session", Some(carla.as_str())),
        ("/api/session", None),
        ("/api/nothing-here", None),
    ] {
        let mut req = s.http.get(s.url(path));
        if let Some(c) = cookie {
            req = req.header("cookie", c);
        }
        let resp = req.send().await.unwrap();
        let h = |name: &str| {
            resp.headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_owned()
        };
        assert_eq!(h("x-content-type-options"), "nosniff", "{path}");
        assert_eq!(h("referrer-policy"), "no-referrer", "{path}");
        assert_eq!(h("x-frame-options"), "DENY", "{path}");
        assert!(
            h("content-security-policy").contains("frame-ancestors 'none'"),
            "{path}"
        );
        assert_eq!(h("cache-control"), "no-store", "{path}");
    }
}

#[actix_web::test]
async fn the_web_app_gets_its_content_security_policy() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("index.html"),
        "<!doctype html><title>app</title>",
    )
    .unwrap();
    let root = dir.path().to_path_buf();
    let s = start_with(builder().with_config(move |c| c.static_dir = Some(root))).await;
    let resp = s.http.get(s.url("/receivables")).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    let csp = resp.headers()["content-security-policy"].to_str().unwrap();
    for directive in [
        "default-src 'self'",
        "script-src 'self' 'wasm-unsafe-eval'",
        "frame-ancestors 'none'",
        "object-src 'none'",
    ] {
        assert!(csp.contains(directive), "{directive} in {csp}");
    }
    assert_eq!(resp.headers()["x-content-type-options"], "nosniff");
}

#[actix_web::test]
async fn anonymous_sign_in_is_rate_limited_per_address_and_small() {
    let s = start_with(builder().with_config(|c| c.sign_in_per_minute = 3)).await;
    for _ in 0..3 {
        s.sign_in("analyst").await;
    }
    let resp = s
        .http
        .post(s.url("/api/session"))
        .json(&json!({"role": "analyst"}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 429);
    let wait: u64 = resp.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=20).contains(&wait), "{wait}");
    let body: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(body["error"]["code"], "RATE_LIMITED");

    // Nobody signed in gets more than a small body parsed.
    let other = start().await;
    let big = json!({"role": "analyst", "padding": "x".repeat(4096)});
    let reply = other.post("/api/session", None, big).await;
    assert_eq!(
        (reply.status, reply.body["error"]["code"].clone()),
        (413, json!("REQUEST_TOO_LARGE"))
    );
}
