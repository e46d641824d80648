//! The approval cycle: a model-surface write becomes a record; only its requester decides;
//! approval resumes it once as the original actor; rejection and expiry change nothing.

use std::sync::Arc;
use std::time::Duration;

use dpas_governance::{CallSurface, ManualClock};
use host_server::Correlation;
use serde_json::{json, Value};
use time::OffsetDateTime;

use crate::common::{ada, builder, carla, start, start_with, TestServer};

async fn invoice(s: &TestServer, cookie: &str, id: i64) -> Option<Value> {
    let (_, all) = s.rpc(cookie, "list-invoices", json!({"kind": "all"})).await;
    all["data"]
        .as_array()
        .and_then(|rows| rows.iter().find(|r| r["id"] == id).cloned())
}

fn step(step: &str, call: &str) -> Correlation {
    Correlation {
        step_id: Some(step.to_owned()),
        invocation_id: Some(call.to_owned()),
        ..Correlation::default()
    }
}

#[actix_web::test]
async fn approve_resumes_once_and_changes_the_ledger() {
    let s = start().await;
    let carla_cookie = s.sign_in("controller").await;
    let ada_cookie = s.sign_in("analyst").await;

    let env = s
        .state
        .runtime
        .invoke(
            &carla(),
            CallSurface::Model,
            "issue-invoice",
            json!({"id": 5}),
            step("stp_1", "stc_1"),
        )
        .await;
    assert_eq!(env["status"], "approval-required", "{env}");
    assert_eq!(
        env["message"],
        "Awaiting approval: issue-invoice was initiated from a model loop."
    );
    let approval_id = env["approvalId"].as_str().expect("approval id").to_owned();
    assert!(approval_id.starts_with("apr_"));
    assert_eq!(
        invoice(&s, &carla_cookie, 5)
            .await
            .map(|i| i["status"].clone()),
        Some(json!("draft")),
        "nothing written yet"
    );

    let list = s.get("/api/approvals", Some(&carla_cookie)).await;
    assert_eq!(list.status, 200);
    let cards = list.body.as_array().cloned().unwrap_or_default();
    assert_eq!(cards.len(), 1);
    let card = &cards[0];
    assert_eq!(card["id"], json!(approval_id));
    assert_eq!(card["capabilityId"], "issue-invoice");
    assert_eq!(card["status"], "pending");
    assert_eq!(card["surface"], "aiSdk");
    assert_eq!(card["risk"], "high");
    assert_eq!(card["input"], json!({"id": 5}));
    assert_eq!(
        card["reasons"],
        json!(["issue-invoice was initiated from a model loop"])
    );
    assert!(card.get("decision").is_none());

    // Another actor neither sees nor decides it.
    let path = format!("/api/approvals/{approval_id}");
    assert_eq!(
        s.get("/api/approvals", Some(&ada_cookie)).await.body,
        json!([])
    );
    assert_eq!(s.get(&path, Some(&ada_cookie)).await.status, 404);
    let stolen = s
        .post(&path, Some(&ada_cookie), json!({"approved": true}))
        .await;
    assert_eq!(stolen.status, 404);
    assert_eq!(
        s.get(&path, Some(&carla_cookie)).await.body["status"],
        "pending"
    );

    let bad = s
        .post(&path, Some(&carla_cookie), json!({"approved": "yes"}))
        .await;
    assert_eq!(
        (bad.status, bad.body),
        (
            400,
            json!({"error": {"code": "BAD_REQUEST", "message": "Invalid decision body."}})
        )
    );

    let decided = s
        .post(
            &path,
            Some(&carla_cookie),
            json!({"approved": true, "threadId": "cnv_approval"}),
        )
        .await;
    assert_eq!(decided.status, 200, "{}", decided.body);
    assert_eq!(
        decided.body["receipt"],
        json!({"text": "You approved issue-invoice (invoice 5), and it completed.", "ok": true})
    );
    assert_eq!(decided.body["resolution"]["status"], "completed");
    assert_eq!(decided.body["resolution"]["output"]["status"], "sent");
    assert_eq!(
        decided.body["resolution"]["output"]["summary"],
        "AUR-0141 · €12,750 · due 2026-12-29"
    );
    let after = invoice(&s, &carla_cookie, 5).await.expect("invoice 5");
    assert_eq!(
        (after["status"].clone(), after["issue_date"].clone()),
        (json!("sent"), json!("2026-11-29"))
    );
    let (_, summary) = s.rpc(&carla_cookie, "receivables-summary", json!({})).await;
    assert_eq!(summary["data"]["outstanding"], 20_050_000 + 1_275_000);

    let card = s.get(&path, Some(&carla_cookie)).await.body;
    assert_eq!(card["status"], "consumed");
    assert_eq!(card["decision"]["status"], "approved");
    assert_eq!(card["decision"]["approver"], "Carla Controller");
    assert_eq!(
        s.get("/api/approvals", Some(&carla_cookie)).await.body,
        json!([]),
        "only pending records are listed"
    );

    // It ran once: deciding again conflicts, and resuming again is refused.
    let again = s
        .post(&path, Some(&carla_cookie), json!({"approved": true}))
        .await;
    assert_eq!(again.status, 409);
    let resumed = s
        .state
        .runtime
        .resume(
            &approval_id,
            &carla(),
            CallSurface::Model,
            Correlation::default(),
        )
        .await
        .to_value();
    assert_eq!(resumed["error"]["code"], "APPROVAL_CONSUMED");

    // The receipt landed in the requester's thread.
    let messages = s
        .get(
            "/api/threads/cnv_approval/model-messages",
            Some(&carla_cookie),
        )
        .await;
    assert_eq!(
        messages.body,
        json!([{"role": "assistant", "content": "You approved issue-invoice (invoice 5), and it completed."}])
    );
}

#[actix_web::test]
async fn reject_changes_nothing_and_cannot_be_resumed() {
    let s = start().await;
    let carla_cookie = s.sign_in("controller").await;
    let approval_id = s
        .carla_awaits_approval(CallSurface::Mcp, "delete-invoice", json!({"id": 10}))
        .await;

    let decided = s
        .post(
            &format!("/api/approvals/{approval_id}"),
            Some(&carla_cookie),
            json!({"approved": false}),
        )
        .await;
    assert_eq!(decided.status, 200);
    assert_eq!(
        decided.body["receipt"]["text"],
        "You denied delete-invoice (invoice 10). Nothing was changed."
    );
    assert_eq!(decided.body["resolution"], json!({"status": "rejected"}));
    assert!(
        invoice(&s, &carla_cookie, 10).await.is_some(),
        "the draft is still there"
    );
    let resumed = s
        .state
        .runtime
        .resume(
            &approval_id,
            &carla(),
            CallSurface::Mcp,
            Correlation::default(),
        )
        .await
        .to_value();
    assert_eq!(resumed["error"]["code"], "APPROVAL_REJECTED");
}

#[actix_web::test]
async fn approved_mcp_records_wait_for_their_session_and_guards_conceal_mismatches() {
    let s = start().await;
    let carla_cookie = s.sign_in("controller").await;
    let rt = &s.state.runtime;
    let approval_id = s
        .carla_awaits_approval(CallSurface::Mcp, "delete-invoice", json!({"id": 24}))
        .await;

    let pending = rt
        .resume(
            &approval_id,
            &carla(),
            CallSurface::Mcp,
            Correlation::default(),
        )
        .await
        .to_value();
    assert_eq!(
        (
            pending["error"]["code"].clone(),
            pending["error"]["retryable"].clone()
        ),
        (json!("APPROVAL_PENDING"), json!(true))
    );

    let decided = s
        .post(
            &format!("/api/approvals/{approval_id}"),
            Some(&carla_cookie),
            json!({"approved": true}),
        )
        .await;
    assert_eq!(decided.body["resolution"], json!({"status": "approved"}));
    assert_eq!(
        decided.body["receipt"]["text"],
        "You approved delete-invoice (invoice 24). The requesting MCP session can now run it."
    );
    assert!(
        invoice(&s, &carla_cookie, 24).await.is_some(),
        "deciding executes nothing"
    );

    // Wrong actor or wrong surface looks exactly like an unknown approval.
    let unknown = rt
        .resume(
            "apr_nope",
            &carla(),
            CallSurface::Mcp,
            Correlation::default(),
        )
        .await
        .to_value();
    let other_actor = rt
        .resume(
            &approval_id,
            &ada(),
            CallSurface::Mcp,
            Correlation::default(),
        )
        .await
        .to_value();
    let other_surface = rt
        .resume(
            &approval_id,
            &carla(),
            CallSurface::Model,
            Correlation::default(),
        )
        .await
        .to_value();
    assert_eq!(unknown["error"]["code"], "APPROVAL_NOT_FOUND");
    assert_eq!(other_actor, unknown);
    assert_eq!(other_surface, unknown);

    // Concurrent resumes: exactly one executes.
    let requester = carla();
    let (a, b) = tokio::join!(
        rt.resume(
            &approval_id,
            &requester,
            CallSurface::Mcp,
            Correlation::default()
        ),
        rt.resume(
            &approval_id,
            &requester,
            CallSurface::Mcp,
            Correlation::default()
        )
    );
    let oks = [&a, &b].iter().filter(|e| e.is_ok()).count();
    assert_eq!(oks, 1, "{a:?} / {b:?}");
    assert!(
        invoice(&s, &carla_cookie, 24).await.is_none(),
        "the draft is gone"
    );
}

#[actix_web::test]
async fn approvals_expire() {
    let clock = Arc::new(ManualClock::new(OffsetDateTime::now_utc()));
    let s = start_with(builder().clock(clock.clone())).await;
    let carla_cookie = s.sign_in("controller").await;
    let approval_id = s
        .carla_awaits_approval(CallSurface::Model, "issue-invoice", json!({"id": 16}))
        .await;
    let path = format!("/api/approvals/{approval_id}");

    clock.advance(Duration::from_secs(14 * 60));
    assert_eq!(
        s.get(&path, Some(&carla_cookie)).await.body["status"],
        "pending"
    );
    clock.advance(Duration::from_secs(60));
    assert_eq!(
        s.get(&path, Some(&carla_cookie)).await.body["status"],
        "expired"
    );
    let late = s
        .post(&path, Some(&carla_cookie), json!({"approved": true}))
        .await;
    assert_eq!(
        (late.status, late.body["error"]["code"].clone()),
        (409, json!("APPROVAL_EXPIRED"))
    );
    assert_eq!(
        invoice(&s, &carla_cookie, 16)
            .await
            .map(|i| i["status"].clone()),
        Some(json!("draft"))
    );
}

/// Two tabs deciding the same approval at once (the kit's `useApprovals` in each): one decision
/// runs the operation, the other is refused, and the operation ran once.
#[actix_web::test]
async fn two_concurrent_decisions_run_the_operation_once() {
    let s = start().await;
    let carla_cookie = s.sign_in("controller").await;
    let approval_id = s
        .carla_awaits_approval(CallSurface::Model, "issue-invoice", json!({"id": 16}))
        .await;
    let path = format!("/api/approvals/{approval_id}");
    let decision = json!({"approved": true, "threadId": "cnv_two_tabs"});
    let (a, b) = tokio::join!(
        s.post(&path, Some(&carla_cookie), decision.clone()),
        s.post(&path, Some(&carla_cookie), decision.clone())
    );
    let mut statuses = [a.status, b.status];
    statuses.sort_unstable();
    assert_eq!(statuses, [200, 409], "{} / {}", a.body, b.body);
    let (won, lost) = if a.status == 200 { (a, b) } else { (b, a) };
    assert_eq!(
        won.body["resolution"]["status"], "completed",
        "{}",
        won.body
    );
    assert_eq!(won.body["resolution"]["output"]["status"], "sent");
    assert!(
        lost.body["error"]["code"]
            .as_str()
            .is_some_and(|code| code.starts_with("APPROVAL_")),
        "{}",
        lost.body
    );
    let card = s.get(&path, Some(&carla_cookie)).await.body;
    assert_eq!(card["status"], "consumed", "{card}");
    assert_eq!(card["outcome"], "completed", "{card}");
    assert_eq!(
        s.get("/api/approvals", Some(&carla_cookie)).await.body,
        json!([]),
        "nothing is left pending"
    );
}

/// The model asks to issue the demo's draft 5 or 16, as the user's message says.
const ISSUE_SCRIPT: &str = r#"{"turns": [
    {"when": {"lastUserContains": "five", "lacksResult": "domain_issue-invoice"},
     "toolCalls": [{"name": "domain_issue-invoice", "input": {"id": 5}}]},
    {"when": {"lastUserContains": "sixteen", "lacksResult": "domain_issue-invoice"},
     "toolCalls": [{"name": "domain_issue-invoice", "input": {"id": 16}}]},
    {"text": ["Waiting for your approval."]}
]}"#;

fn issue_step(conversation: &str, text: &str) -> Value {
    json!({
        "protocolVersion": 2, "conversationId": conversation, "turnId": "trn_1", "stepIndex": 0,
        "pathname": "/receivables/pending",
        "messages": [{"role": "user", "content": text}],
        "catalog": {"mode": "direct", "frontendTools": []}
    })
}

#[actix_web::test]
async fn a_conversations_pending_approvals_are_listed_by_its_id() {
    use dpas_engine::{ChatConfig, ModelSet};
    use dpas_model::scripted::{Script, ScriptedProvider};

    let script = Script::from_json(ISSUE_SCRIPT.as_bytes()).expect("script");
    let chat = ChatConfig {
        models: ModelSet::new(vec![ScriptedProvider::from_script(script).into_arc()]),
        floors: Arc::new(dpas_demo::route_floors()),
        app_prompt: Arc::from(dpas_demo::APP_PROMPT),
        model_timeout: Duration::from_secs(45),
    };
    let s = crate::common::start_with_routes(builder(), host_server::doors::mount(chat)).await;
    let carla_cookie = s.sign_in("controller").await;
    let ada_cookie = s.sign_in("analyst").await;

    // Two conversations, each asking for one approval through a real chat step.
    let mut requested = Vec::new();
    for (conversation, text) in [("cnv_five", "issue five"), ("cnv_sixteen", "issue sixteen")] {
        let reply = s.chat(&issue_step(conversation, text), "controller").await;
        assert_eq!(reply.status, 200, "{:?}", reply.body);
        let results = reply.tool_results();
        assert_eq!(results.len(), 1, "{:?}", reply.frame_values());
        assert_eq!(results[0].result["status"], "approval-required");
        requested.push(
            results[0].result["approvalId"]
                .as_str()
                .expect("id")
                .to_owned(),
        );
    }
    // One without a conversation (an app's own call).
    let unscoped = s
        .carla_awaits_approval(CallSurface::Model, "delete-invoice", json!({"id": 10}))
        .await;

    let ids = |body: &Value| -> Vec<String> {
        body.as_array()
            .expect("a list")
            .iter()
            .map(|c| c["id"].as_str().expect("id").to_owned())
            .collect()
    };
    let all = s.get("/api/approvals", Some(&carla_cookie)).await;
    assert_eq!(all.status, 200);
    assert_eq!(
        ids(&all.body),
        [requested[0].clone(), requested[1].clone(), unscoped.clone()]
    );
    let cards = all.body.as_array().expect("cards");
    assert_eq!(cards[0]["conversationId"], "cnv_five");
    assert_eq!(cards[1]["conversationId"], "cnv_sixteen");
    assert!(cards[2].get("conversationId").is_none(), "{}", cards[2]);

    let five = s
        .get(
            "/api/approvals?conversationId=cnv_five",
            Some(&carla_cookie),
        )
        .await;
    assert_eq!(
        (five.status, ids(&five.body)),
        (200, vec![requested[0].clone()])
    );
    assert_eq!(five.body[0]["input"], json!({"id": 5}));
    let unknown = s
        .get(
            "/api/approvals?conversationId=cnv_none",
            Some(&carla_cookie),
        )
        .await;
    assert_eq!((unknown.status, unknown.body), (200, json!([])));
    // The card of one approval names its conversation too.
    let one = s
        .get(
            &format!("/api/approvals/{}", requested[1]),
            Some(&carla_cookie),
        )
        .await;
    assert_eq!(one.body["conversationId"], "cnv_sixteen");

    // Another actor never sees them, by conversation or not.
    for path in ["/api/approvals?conversationId=cnv_five", "/api/approvals"] {
        let theirs = s.get(path, Some(&ada_cookie)).await;
        assert_eq!((theirs.status, theirs.body), (200, json!([])), "{path}");
    }

    // Decided, it leaves its conversation's list.
    let decided = s
        .post(
            &format!("/api/approvals/{}", requested[0]),
            Some(&carla_cookie),
            json!({"approved": false, "threadId": "cnv_five"}),
        )
        .await;
    assert_eq!(decided.status, 200, "{}", decided.body);
    let five = s
        .get(
            "/api/approvals?conversationId=cnv_five",
            Some(&carla_cookie),
        )
        .await;
    assert_eq!(five.body, json!([]));

    // A query the list does not take is a typed 400.
    for bad in [
        "/api/approvals?conversationId=",
        "/api/approvals?conversationId=a&conversationId=b",
        "/api/approvals?thread=cnv_five",
    ] {
        let refused = s.get(bad, Some(&carla_cookie)).await;
        assert_eq!(
            (refused.status, refused.body["error"]["code"].clone()),
            (400, json!("BAD_REQUEST")),
            "{bad}"
        );
    }
    // Without a session, the same 401 as ever.
    let anonymous = s.get("/api/approvals?conversationId=cnv_five", None).await;
    assert_eq!(anonymous.status, 401);
}
