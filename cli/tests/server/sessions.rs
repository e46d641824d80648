//! Sessions: signed cookies, and 401 for every endpoint but health and the demo sign-in when the
//! cookie is missing, forged, tampered with or expired. There is no default user.

use host_server::config::ServerConfig;
use host_server::session::{SessionKeys, COOKIE_NAME};
use host_server::AppBuilder;
use serde_json::json;
use std::time::Duration;
use time::OffsetDateTime;

use crate::common::{carla, start, start_with, TestServer, SECRET};

/// Every endpoint that needs a session, with a body where it takes one.
const PROTECTED: &[(&str, &str, Option<&str>)] = &[
    ("GET", "/api/session", None),
    ("POST", "/rpc/list-invoices", Some("{}")),
    ("POST", "/rpc/no-such-capability", Some("{}")),
    ("GET", "/api/approvals", None),
    ("GET", "/api/approvals/apr_x", None),
    ("POST", "/api/approvals/apr_x", Some(r#"{"approved":true}"#)),
    ("GET", "/api/threads", None),
    ("GET", "/api/threads/cnv_x", None),
    ("GET", "/api/threads/cnv_x/model-messages", None),
    ("DELETE", "/api/threads/cnv_x", None),
    ("POST", "/api/demo/reset", Some("{}")),
    ("POST", "/api/session/token", None),
    (
        "POST",
        "/mcp",
        Some(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#),
    ),
];

async fn assert_all_unauthenticated(s: &TestServer, cookie: Option<&str>, label: &str) {
    for (method, path, body) in PROTECTED {
        let reply = s.send(method, path, cookie, body.map(str::to_owned)).await;
        assert_eq!(reply.status, 401, "{label}: {method} {path}");
        assert_eq!(
            reply.body,
            json!({"error": {"code": "UNAUTHENTICATED", "message": "Sign in to continue."}}),
            "{label}: {method} {path}"
        );
    }
}

#[actix_web::test]
async fn missing_forged_tampered_and_expired_cookies_are_401() {
    let s = start().await;
    assert_all_unauthenticated(&s, None, "no cookie").await;
    assert_all_unauthenticated(&s, Some("dpas_session=not-a-signed-value"), "garbage").await;

    let keys = SessionKeys::from_secret(SECRET, Duration::from_secs(3600));
    let valid = keys.sign(&keys.claims_for(&carla()));
    // The reference's default secret, and any other key, forge nothing.
    let foreign = SessionKeys::from_secret("dpas-dev-secret-change-me", Duration::from_secs(3600));
    let forged = foreign.sign(&foreign.claims_for(&carla()));
    assert_all_unauthenticated(&s, Some(&format!("{COOKIE_NAME}={forged}")), "forged").await;

    let tampered = valid.replace("controller", "analyst");
    assert_ne!(tampered, valid);
    assert_all_unauthenticated(&s, Some(&format!("{COOKIE_NAME}={tampered}")), "tampered").await;

    let mut claims = keys.claims_for(&carla());
    claims.exp = OffsetDateTime::now_utc().unix_timestamp() - 1;
    let expired = keys.sign(&claims);
    assert_all_unauthenticated(&s, Some(&format!("{COOKIE_NAME}={expired}")), "expired").await;

    // The same valid value is accepted, so the 401s above are about the cookie alone.
    let ok = s
        .get("/api/session", Some(&format!("{COOKIE_NAME}={valid}")))
        .await;
    assert_eq!(ok.status, 200);
}

#[actix_web::test]
async fn health_and_demo_sign_in_need_no_session() {
    let s = start().await;
    let health = s.get("/api/health", None).await;
    assert_eq!((health.status, health.body), (200, json!({"ok": true})));

    let reply = s
        .post("/api/session", None, json!({"role": "analyst"}))
        .await;
    assert_eq!(reply.status, 200);
    assert_eq!(
        reply.body,
        json!({"user": {"id": "ada@example.com", "email": "ada@example.com", "name": "Ada Analyst", "role": "analyst"}})
    );
    let set = reply.set_cookie.expect("a cookie is set");
    assert!(set.starts_with("dpas_session="));
    for attribute in ["HttpOnly", "SameSite=Lax", "Path=/"] {
        assert!(
            set.split("; ").any(|a| a == attribute),
            "{attribute} missing in {set}"
        );
    }
    let cookie = set.split(';').next().unwrap_or_default();
    let session = s.get("/api/session", Some(cookie)).await;
    assert_eq!(
        session.body,
        // No chat endpoint is mounted here, so no model serves (the chat tests list theirs).
        json!({"user": {"id": "ada@example.com", "email": "ada@example.com", "name": "Ada Analyst", "role": "analyst"}, "models": [], "defaultModel": null})
    );

    let bad = s.post("/api/session", None, json!({"role": "admin"})).await;
    assert_eq!(
        (bad.status, bad.body),
        (
            400,
            json!({"error": {"code": "BAD_REQUEST", "message": "Unknown role."}})
        )
    );
    let malformed = s
        .send("POST", "/api/session", None, Some("{role:".into()))
        .await;
    assert_eq!(
        (malformed.status, malformed.body["error"]["code"].clone()),
        (400, json!("BAD_REQUEST"))
    );
}

#[actix_web::test]
async fn without_demo_there_is_no_sign_in_no_reset_and_no_model() {
    let mut config = ServerConfig::for_tests(SECRET);
    config.demo = false;
    config.model = host_server::ModelSpec::None;
    let s = start_with(dpas_tests::testing::demo_builder(config)).await;
    let sign_in = s
        .post("/api/session", None, json!({"role": "controller"}))
        .await;
    assert_eq!((sign_in.status, sign_in.set_cookie), (404, None));

    let keys = SessionKeys::from_secret(SECRET, Duration::from_secs(60));
    let cookie = format!("{COOKIE_NAME}={}", keys.sign(&keys.claims_for(&carla())));
    let session = s.get("/api/session", Some(&cookie)).await;
    assert_eq!(session.body["models"], json!([]));
    assert_eq!(session.body["defaultModel"], json!(null));
    assert_eq!(
        s.post("/api/demo/reset", Some(&cookie), json!({}))
            .await
            .status,
        404
    );
    // The demo's endpoints are not mounted at all: no session is asked for first.
    assert_eq!(s.post("/api/demo/reset", None, json!({})).await.status, 404);
    // The domain is registered but not seeded without --demo.
    let (status, env) = s.rpc(&cookie, "receivables-summary", json!({})).await;
    assert_eq!(
        (status, env["data"]["invoiceCount"].clone()),
        (200, json!(0))
    );
}

/// `/api/session` answers every method alike with and without `--demo` but `POST`, the demo's
/// sign-in (mounted as a resource of its own ahead of the session's).
#[actix_web::test]
async fn the_session_resource_answers_alike_with_and_without_demo() {
    let mut config = ServerConfig::for_tests(SECRET);
    config.demo = false;
    let plain = start_with(AppBuilder::new(config)).await;
    let demo = start().await;
    let keys = SessionKeys::from_secret(SECRET, Duration::from_secs(60));
    for (label, s) in [("plain", &plain), ("demo", &demo)] {
        let cookie = format!("{COOKIE_NAME}={}", keys.sign(&keys.claims_for(&carla())));
        for method in ["PUT", "PATCH"] {
            let reply = s
                .send(method, "/api/session", Some(&cookie), Some("{}".into()))
                .await;
            assert_eq!(
                (reply.status, reply.body),
                (
                    405,
                    json!({"error": {"code": "METHOD_NOT_ALLOWED", "message": "This method is not allowed here."}})
                ),
                "{label} {method}"
            );
        }
        assert_eq!(s.get("/api/session", None).await.status, 401, "{label}");
        let me = s.get("/api/session", Some(&cookie)).await;
        assert_eq!(me.body["user"]["role"], "controller", "{label}");
        let out = s.send("DELETE", "/api/session", Some(&cookie), None).await;
        assert_eq!(
            (out.status, out.body),
            (200, json!({"ok": true})),
            "{label}"
        );
    }
    let sign_in = json!({"role": "controller"});
    let refused = plain.post("/api/session", None, sign_in.clone()).await;
    assert_eq!(refused.refusal(), (404, Some("NOT_FOUND")));
    let signed_in = demo.post("/api/session", None, sign_in).await;
    assert_eq!(signed_in.status, 200, "{}", signed_in.text());
    assert!(signed_in.set_cookie.is_some());
}

/// The demo's sign-in and reset are the binary's to mount (`dpas_demo::http::with_demo`): the
/// library's own routes answer them 404 even with the demo on, and mounted as the binary
/// mounts them they sign in and reset.
#[actix_web::test]
async fn the_demo_endpoints_are_mounted_by_the_binary_not_by_the_http_layer() {
    use actix_web::test::{call_service, init_service, TestRequest};
    let state = crate::common::builder().build().await.unwrap();
    assert!(state.config.demo);
    let sign_in = || {
        TestRequest::post()
            .uri("/api/session")
            .set_json(json!({"role": "controller"}))
            .to_request()
    };
    let reset = |cookie: &str| {
        TestRequest::post()
            .uri("/api/demo/reset")
            .insert_header(("cookie", cookie.to_owned()))
            .to_request()
    };
    let cookie = {
        let keys = SessionKeys::from_secret(SECRET, Duration::from_secs(60));
        format!("{COOKIE_NAME}={}", keys.sign(&keys.claims_for(&carla())))
    };

    let library = init_service(host_server::app(state.clone())).await;
    assert_eq!(call_service(&library, sign_in()).await.status(), 404);
    assert_eq!(call_service(&library, reset(&cookie)).await.status(), 404);

    let ledger = dpas_demo::ledger::Ledger::with_today(
        state.pool.clone(),
        std::sync::Arc::new(|| crate::common::TODAY),
    );
    let routes = dpas_demo::http::with_demo(ledger, |_| {});
    let binary = init_service(host_server::app_with(state, routes)).await;
    let signed_in = call_service(&binary, sign_in()).await;
    assert_eq!(signed_in.status(), 200);
    assert!(signed_in.headers().contains_key("set-cookie"));
    assert_eq!(call_service(&binary, reset(&cookie)).await.status(), 200);
}

#[actix_web::test]
async fn signing_out_revokes_that_cookie_on_the_server_also_across_a_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!("sqlite://{}/sessions.sqlite3", dir.path().display());
    let first =
        start_with(crate::common::builder().with_config(|c| c.database_url = url.clone())).await;
    let leaving = first.sign_in("controller").await;
    let staying = first.sign_in("controller").await;

    let out = first
        .send("DELETE", "/api/session", Some(&leaving), None)
        .await;
    assert_eq!((out.status, out.body), (200, json!({"ok": true})));
    let removal = out.set_cookie.expect("the browser is told to drop it");
    assert!(removal.starts_with("dpas_session=;"), "{removal}");
    assert!(removal.contains("Max-Age=0"), "{removal}");
    // A copy of the cookie kept by anyone is dead on the server, not only in the browser.
    assert_eq!(first.get("/api/session", Some(&leaving)).await.status, 401);
    assert_eq!(first.get("/api/session", Some(&staying)).await.status, 200);
    assert_eq!(
        first
            .send("DELETE", "/api/session", Some(&leaving), None)
            .await
            .status,
        401
    );
    first.state.close().await;

    let second =
        start_with(crate::common::builder().with_config(|c| c.database_url = url.clone())).await;
    assert_eq!(second.get("/api/session", Some(&leaving)).await.status, 401);
    assert_eq!(second.get("/api/session", Some(&staying)).await.status, 200);
}
