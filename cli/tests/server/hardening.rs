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
    // Without a declared length (chunked), the running total is capped the same way.
    let chunks =
        futures_util::stream::iter((0..8).map(|_| Ok::<_, std::io::Error>(vec![b' '; 512])));
    let resp = other
        .http
        .post(other.url("/api/session"))
        .header("content-type", "application/json")
        .body(reqwest::Body::wrap_stream(chunks))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 413);
    let body: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(body["error"]["code"], "REQUEST_TOO_LARGE");
}

async fn invoice(s: &TestServer, cookie: &str, id: i64) -> serde_json::Value {
    let (_, all) = s.rpc(cookie, "list-invoices", json!({"kind": "all"})).await;
    all["data"]
        .as_array()
        .and_then(|rows| rows.iter().find(|r| r["id"] == id).cloned())
        .unwrap_or_default()
}

#[actix_web::test]
async fn an_approval_binds_what_the_card_showed_and_refuses_when_it_changed() {
    use host_server::{CallSurface, Correlation};
    let s = start().await;
    let carla = s.sign_in("controller").await;
    let shown = invoice(&s, &carla, 5).await;
    let approval_id = s
        .carla_awaits_approval(CallSurface::Model, "issue-invoice", json!({"id": 5}))
        .await;
    let path = format!("/api/approvals/{approval_id}");
    let card = s.get(&path, Some(&carla)).await.body;
    assert_eq!(
        card["target"],
        json!({
            "reference": shown["reference"],
            "client": shown["client_name"],
            "amount": shown["amount"],
            "status": "draft",
            "dueDate": shown["due_date"],
        }),
        "the card shows what will be acted on"
    );

    // The probe's move: while the card waits, an ungated write changes the invoice.
    let (status, _) = s
        .rpc(
            &carla,
            "update-invoice",
            json!({"id": 5, "amount": 9_000_000_000_000_i64}),
        )
        .await;
    assert_eq!(status, 200);
    let decided = s
        .post(
            &path,
            Some(&carla),
            json!({"approved": true, "threadId": "cnv_stale"}),
        )
        .await;
    assert_eq!(decided.status, 409, "{}", decided.body);
    assert_eq!(decided.body["error"]["code"], "APPROVAL_STALE");
    assert_eq!(
        invoice(&s, &carla, 5).await["status"],
        "draft",
        "nothing was issued"
    );
    let card = s.get(&path, Some(&carla)).await.body;
    assert_eq!(card["status"], "stale");
    let again = s.post(&path, Some(&carla), json!({"approved": true})).await;
    assert_eq!(
        (again.status, again.body["error"]["code"].clone()),
        (409, json!("APPROVAL_STALE"))
    );
    let thread = s
        .get("/api/threads/cnv_stale/model-messages", Some(&carla))
        .await;
    assert!(
        thread
            .body
            .to_string()
            .contains("changed since it was requested"),
        "the receipt says so: {}",
        thread.body
    );

    // And again at execution: an MCP approval decided before the change, resumed after it.
    let mcp = s
        .carla_awaits_approval(CallSurface::Mcp, "delete-invoice", json!({"id": 24}))
        .await;
    let decided = s
        .post(
            &format!("/api/approvals/{mcp}"),
            Some(&carla),
            json!({"approved": true}),
        )
        .await;
    assert_eq!(decided.status, 200);
    let (status, _) = s
        .rpc(&carla, "update-invoice", json!({"id": 24, "amount": 1}))
        .await;
    assert_eq!(status, 200);
    let resumed = s
        .state
        .runtime
        .resume(
            &mcp,
            &crate::common::carla(),
            CallSurface::Mcp,
            Correlation::default(),
        )
        .await
        .to_value();
    assert_eq!(resumed["error"]["code"], "APPROVAL_STALE", "{resumed}");
    assert!(
        invoice(&s, &carla, 24).await.is_object(),
        "the draft was not deleted"
    );
}

#[actix_web::test]
async fn the_demo_reset_is_for_controllers_and_cancels_pending_approvals() {
    use host_server::CallSurface;
    let s = start().await;
    let carla = s.sign_in("controller").await;
    let ada = s.sign_in("analyst").await;
    let (_, created) = s
        .rpc(
            &carla,
            "create-invoice",
            json!({"clientId": 3, "amount": 4200}),
        )
        .await;
    let before = invoice_count(&s, &carla).await;

    let refused = s.post("/api/demo/reset", Some(&ada), json!({})).await;
    assert_eq!(
        (refused.status, refused.body["error"]["code"].clone()),
        (403, json!("FORBIDDEN"))
    );
    assert_eq!(
        invoice_count(&s, &carla).await,
        before,
        "the analyst wiped nothing"
    );
    assert!(invoice(&s, &carla, created["data"]["id"].as_i64().unwrap())
        .await
        .is_object());

    let approval_id = s
        .carla_awaits_approval(CallSurface::Model, "delete-invoice", json!({"id": 5}))
        .await;
    let reset = s.post("/api/demo/reset", Some(&carla), json!({})).await;
    assert_eq!(reset.status, 200);
    assert_eq!(invoice_count(&s, &carla).await, before - 1, "re-seeded");
    let path = format!("/api/approvals/{approval_id}");
    assert_eq!(s.get(&path, Some(&carla)).await.body["status"], "cancelled");
    assert_eq!(s.get("/api/approvals", Some(&carla)).await.body, json!([]));
    let decided = s.post(&path, Some(&carla), json!({"approved": true})).await;
    assert_eq!(
        (decided.status, decided.body["error"]["code"].clone()),
        (409, json!("APPROVAL_CANCELLED"))
    );
    assert!(
        invoice(&s, &carla, 5).await.is_object(),
        "the re-seeded row was not touched"
    );
}

#[actix_web::test]
async fn the_pending_list_takes_no_write_lock_and_expired_approvals_are_purged() {
    use dpas_governance::ManualClock;
    use host_server::CallSurface;
    use std::sync::Arc;
    use std::time::Duration;

    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!("sqlite://{}/approvals.sqlite3", dir.path().display());
    let clock = Arc::new(ManualClock::new(time::OffsetDateTime::now_utc()));
    let s = start_with(
        builder()
            .clock(clock.clone())
            .with_config(|c| c.database_url = url.clone()),
    )
    .await;
    let carla = s.sign_in("controller").await;
    let approval_id = s
        .carla_awaits_approval(CallSurface::Model, "issue-invoice", json!({"id": 5}))
        .await;

    // Another writer holds the database's write lock: the list must not queue behind it.
    let mut writer = s.state.pool.acquire().await.unwrap();
    sqlx::query("BEGIN IMMEDIATE")
        .execute(&mut *writer)
        .await
        .unwrap();
    let list = tokio::time::timeout(
        Duration::from_secs(3),
        s.get("/api/approvals", Some(&carla)),
    )
    .await
    .expect("answered while a writer holds the lock");
    assert_eq!(list.status, 200);
    assert_eq!(list.body[0]["id"], json!(approval_id));
    sqlx::query("ROLLBACK").execute(&mut *writer).await.unwrap();
    drop(writer);

    // Past expiry and the retention, the record is gone.
    let retention = s.state.config.approval_retention;
    clock.advance(Duration::from_secs(15 * 60) + retention - Duration::from_secs(60));
    assert_eq!(s.state.runtime.purge_approvals(retention).await.unwrap(), 0);
    clock.advance(Duration::from_secs(120));
    assert_eq!(s.state.runtime.purge_approvals(retention).await.unwrap(), 1);
    let path = format!("/api/approvals/{approval_id}");
    assert_eq!(s.get(&path, Some(&carla)).await.status, 404);
}
