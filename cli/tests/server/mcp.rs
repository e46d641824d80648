//! `/mcp` at the HTTP level: what no well-behaved client sends (malformed JSON-RPC, batches,
//! wrong content type, bad params) gets a typed answer and runs nothing; identity comes from
//! the bearer token or the cookie and never from anywhere else. The happy paths run with the
//! official TypeScript client in tests/interop.

use host_server::session::COOKIE_NAME;
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, COOKIE, WWW_AUTHENTICATE};
use serde_json::{json, Value};

use crate::common::{builder, start, start_with, TestServer};

struct McpReply {
    status: u16,
    www_authenticate: Option<String>,
    body: Value,
}

async fn mcp(
    s: &TestServer,
    auth: Option<(&str, &str)>,
    content_type: &str,
    body: &str,
) -> McpReply {
    let mut req = s
        .http
        .post(s.url("/mcp"))
        .header(CONTENT_TYPE, content_type)
        .header("accept", "application/json, text/event-stream")
        .body(body.to_owned());
    if let Some((name, value)) = auth {
        req = req.header(name, value);
    }
    let resp = req.send().await.expect("answered");
    let status = resp.status().as_u16();
    let www_authenticate = resp
        .headers()
        .get(WWW_AUTHENTICATE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let text = resp.text().await.expect("body");
    McpReply {
        status,
        www_authenticate,
        body: serde_json::from_str(&text).unwrap_or(Value::Null),
    }
}

/// The bearer token `POST /api/session/token` hands a signed-in role.
async fn token(s: &TestServer, role: &str) -> String {
    let cookie = s.sign_in(role).await;
    let reply = s
        .send("POST", "/api/session/token", Some(&cookie), None)
        .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    reply.body["token"].as_str().expect("token").to_owned()
}

fn request(method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params}).to_string()
}

async fn draft_count(s: &TestServer, cookie: &str) -> usize {
    let (status, env) = s
        .rpc(cookie, "list-invoices", json!({"kind": "draft"}))
        .await;
    assert_eq!(status, 200);
    env["data"].as_array().map_or_else(
        || env["data"]["rows"].as_array().expect("rows").len(),
        Vec::len,
    )
}

#[actix_web::test]
async fn identity_is_the_bearer_token_or_the_cookie_and_nothing_else() {
    let s = start().await;
    let list = request("tools/list", json!({}));
    let none = mcp(&s, None, "application/json", &list).await;
    assert_eq!(none.status, 401);
    assert_eq!(none.body["error"]["code"], "UNAUTHENTICATED");
    assert_eq!(
        none.www_authenticate.as_deref(),
        Some("Bearer realm=\"dpas\"")
    );

    let bearer = format!("Bearer {}", token(&s, "analyst").await);
    let ok = mcp(
        &s,
        Some(("authorization", &bearer)),
        "application/json",
        &list,
    )
    .await;
    assert_eq!(ok.status, 200, "{}", ok.body);
    assert!(ok.body["result"]["tools"]
        .as_array()
        .is_some_and(|t| !t.is_empty()));

    // The scheme is case-insensitive; the token is exactly the cookie's value.
    let lower = bearer.replacen("Bearer", "bearer", 1);
    assert_eq!(
        mcp(
            &s,
            Some(("authorization", &lower)),
            "application/json",
            &list
        )
        .await
        .status,
        200
    );
    let cookie = s.sign_in("controller").await;
    assert_eq!(
        mcp(&s, Some(("cookie", &cookie)), "application/json", &list)
            .await
            .status,
        200
    );

    // A bad Authorization header is not rescued by a good cookie.
    let resp = s
        .http
        .post(s.url("/mcp"))
        .header(CONTENT_TYPE, "application/json")
        .header(AUTHORIZATION, "Bearer forged")
        .header(COOKIE, &cookie)
        .body(list.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 401);
    for bad in ["Basic abc", "Bearer", "Bearer ", "forged"] {
        let r = mcp(&s, Some(("authorization", bad)), "application/json", &list).await;
        assert_eq!(r.status, 401, "{bad}");
    }
    let raw = cookie.trim_start_matches(&format!("{COOKIE_NAME}="));
    let as_bearer = format!("Bearer {raw}");
    assert_eq!(
        mcp(
            &s,
            Some(("authorization", &as_bearer)),
            "application/json",
            &list
        )
        .await
        .status,
        200
    );
}

#[actix_web::test]
async fn malformed_messages_are_typed_json_rpc_errors_and_nothing_runs() {
    let s = start().await;
    let cookie = s.sign_in("controller").await;
    let auth = Some(("cookie", cookie.as_str()));
    let drafts = draft_count(&s, &cookie).await;
    let create = json!({"name": "create-invoice", "arguments": {"clientId": 1, "amount": 500}});

    let r = mcp(&s, auth, "application/json", "{not json").await;
    assert_eq!(
        (r.status, r.body["error"]["code"].clone()),
        (400, json!(-32700))
    );
    assert_eq!(r.body["id"], Value::Null);

    let batch = format!("[{}]", request("tools/call", create.clone()));
    let r = mcp(&s, auth, "application/json", &batch).await;
    assert_eq!(
        (r.status, r.body["error"]["code"].clone()),
        (400, json!(-32600))
    );

    for bad in [
        json!({"id": 1, "method": "tools/list"}),
        json!({"jsonrpc": "1.0", "id": 1, "method": "tools/list"}),
        json!({"jsonrpc": "2.0", "id": {"x": 1}, "method": "tools/list"}),
        json!({"jsonrpc": "2.0", "id": 1}),
        json!({"jsonrpc": "2.0", "id": 1, "method": 5}),
        json!("tools/list"),
    ] {
        let r = mcp(&s, auth, "application/json", &bad.to_string()).await;
        assert_eq!(r.status, 400, "{bad}");
        assert_eq!(r.body["error"]["code"], -32600, "{bad}");
    }

    let r = mcp(
        &s,
        auth,
        "application/json",
        &request("resources/list", json!({})),
    )
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body["error"]["code"], -32601);
    assert_eq!(r.body["id"], 7);

    for params in [
        json!(null),
        json!({"arguments": {}}),
        json!({"name": 5}),
        json!({"name": "create-invoice", "arguments": [1, 500]}),
    ] {
        let r = mcp(
            &s,
            auth,
            "application/json",
            &request("tools/call", params.clone()),
        )
        .await;
        assert_eq!(r.status, 200);
        assert_eq!(r.body["error"]["code"], -32602, "{params}");
    }

    // Wrong content type: refused before the body is read as JSON-RPC.
    let call = request("tools/call", create.clone());
    for ct in [
        "text/plain",
        "application/x-www-form-urlencoded",
        "application/jsonx",
    ] {
        let r = mcp(&s, auth, ct, &call).await;
        assert_eq!(r.status, 415, "{ct}");
        assert_eq!(r.body["error"]["code"], "UNSUPPORTED_MEDIA_TYPE");
    }
    let r = mcp(&s, auth, "application/json", "").await;
    assert_eq!(r.body["error"]["code"], -32700);

    // An unsupported MCP-Protocol-Version header is a 400.
    let resp = s
        .http
        .post(s.url("/mcp"))
        .header(CONTENT_TYPE, "application/json")
        .header(COOKIE, &cookie)
        .header("mcp-protocol-version", "1999-01-01")
        .body(call.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 400);

    // Wrong schema and unknown tools are governed tool errors, not protocol errors.
    let wrong = json!({"name": "create-invoice", "arguments": {"clientId": "one", "amount": 500}});
    let r = mcp(&s, auth, "application/json", &request("tools/call", wrong)).await;
    assert_eq!(r.body["result"]["isError"], true);
    assert_eq!(
        r.body["result"]["structuredContent"]["error"]["code"],
        "INPUT_INVALID"
    );
    let unknown = json!({"name": "drop-tables", "arguments": {}});
    let r = mcp(
        &s,
        auth,
        "application/json",
        &request("tools/call", unknown),
    )
    .await;
    assert_eq!(
        r.body["result"]["structuredContent"]["error"]["code"],
        "CAPABILITY_NOT_FOUND"
    );
    let no_id = json!({"name": "approvals_resume", "arguments": {}});
    let r = mcp(&s, auth, "application/json", &request("tools/call", no_id)).await;
    assert_eq!(
        r.body["result"]["structuredContent"]["error"]["code"],
        "INPUT_INVALID"
    );

    assert_eq!(
        draft_count(&s, &cookie).await,
        drafts,
        "nothing was created"
    );

    // A well-formed create does run (the count above can move).
    let r = mcp(&s, auth, "application/json", &request("tools/call", create)).await;
    assert_eq!(
        r.body["result"]["structuredContent"]["status"], "ok",
        "{}",
        r.body
    );
    assert_eq!(draft_count(&s, &cookie).await, drafts + 1);
}

#[actix_web::test]
async fn notifications_are_accepted_and_there_is_no_stream() {
    let s = start().await;
    let cookie = s.sign_in("analyst").await;
    let auth = Some(("cookie", cookie.as_str()));
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
    let r = mcp(&s, auth, "application/json", &note).await;
    assert_eq!(r.status, 202);
    let response = json!({"jsonrpc": "2.0", "id": 3, "result": {}}).to_string();
    assert_eq!(
        mcp(&s, auth, "application/json", &response).await.status,
        202
    );
    let r = mcp(&s, auth, "application/json", &request("ping", json!({}))).await;
    assert_eq!(r.body, json!({"jsonrpc": "2.0", "id": 7, "result": {}}));
    for method in ["GET", "DELETE"] {
        let reply = s.send(method, "/mcp", Some(&cookie), None).await;
        assert_eq!(reply.status, 405, "{method}");
    }
}

#[actix_web::test]
async fn approval_links_use_the_public_url() {
    let s = start_with(builder().with_config(|c| {
        c.public_url = Some("https://receivables.example.com".to_owned());
    }))
    .await;
    let cookie = s.sign_in("controller").await;
    let auth = Some(("cookie", cookie.as_str()));
    let (_, drafts) = s
        .rpc(&cookie, "list-invoices", json!({"kind": "draft"}))
        .await;
    let id = drafts["data"]["rows"][0]["id"]
        .as_i64()
        .or_else(|| drafts["data"][0]["id"].as_i64())
        .expect("a draft");
    let issue = json!({"name": "issue-invoice", "arguments": {"id": id}});
    let r = mcp(&s, auth, "application/json", &request("tools/call", issue)).await;
    let content = &r.body["result"]["structuredContent"];
    assert_eq!(content["status"], "approval-required", "{}", r.body);
    let approval = content["approvalId"].as_str().unwrap();
    assert_eq!(
        content["approvalUrl"],
        format!("https://receivables.example.com/approvals/{approval}")
    );
    let token = s
        .send("POST", "/api/session/token", Some(&cookie), None)
        .await;
    assert_eq!(token.body["mcpUrl"], "https://receivables.example.com/mcp");
    // The app's card for the deep link is the caller's own record.
    let card = s
        .get(&format!("/api/approvals/{approval}"), Some(&cookie))
        .await;
    assert_eq!(card.body["surface"], "mcp");
    assert_eq!(card.body["status"], "pending");
}
