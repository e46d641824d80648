//! The audit trail of real chat turns: each step's catalog, each server operation, each
//! approval and each new browser tool result is one record of the exported chain, once (a
//! replayed step and a result posted again with a later step add none), and the export
//! verifies with the binary's `audit verify`; two PostgreSQL replicas running steps at once
//! write one chain.

use std::sync::Arc;
use std::time::Duration;

use dpas_engine::{ChatConfig, ModelSet};
use dpas_model::scripted::{Script, ScriptedProvider};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::audit::{export, verify};
use crate::common::{builder, start_with_routes, TestServer};

/// A read on the server, then a filter in the browser, then an approval-gated issue.
const TURN_SCRIPT: &str = r#"{"turns": [
    {"when": {"lacksResult": "domain:collections-aging"},
     "toolCalls": [{"name": "domain:collections-aging"}]},
    {"when": {"lacksResult": "view:invoices.pending.setFilters"},
     "toolCalls": [{"name": "view:invoices.pending.setFilters", "input": {"due": "overdue"}}]},
    {"when": {"lacksResult": "domain:issue-invoice"},
     "toolCalls": [{"name": "domain:issue-invoice", "input": {"id": 5}}]},
    {"text": ["Waiting for your approval."]}
]}"#;

/// A read on the server, then an answer.
const READ_SCRIPT: &str = r#"{"turns": [
    {"when": {"lacksResult": "domain:collections-aging"},
     "toolCalls": [{"name": "domain:collections-aging"}]},
    {"text": ["Here is the ageing ladder."]}
]}"#;

/// A demo server on `url` whose step doors run `script`.
async fn server(url: &str, script: &str) -> TestServer {
    let script = Script::from_json(script.as_bytes()).expect("script");
    let chat = ChatConfig {
        models: ModelSet::new(vec![ScriptedProvider::from_script(script).into_arc()]),
        floors: Arc::new(dpas_demo::route_floors()),
        app_prompt: Arc::from(dpas_demo::APP_PROMPT),
        model_timeout: Duration::from_secs(45),
    };
    let url = url.to_owned();
    start_with_routes(
        builder().with_config(move |c| c.database_url = url),
        host_server::doors::mount(chat),
    )
    .await
}

/// A step on the pending-invoices screen with the reference browser's tools (its first
/// recorded request, with these ids and messages; the route decides the scope).
fn step(conversation: &str, turn: &str, index: u64, messages: &[Value]) -> Value {
    let recorded = dpas_tests::read_trace_request("browser-carla-step0").expect("the trace");
    let mut body: Value = serde_json::from_slice(&recorded).expect("JSON");
    let obj = body.as_object_mut().expect("an object");
    obj.remove("modelId");
    obj["catalog"]
        .as_object_mut()
        .expect("catalog")
        .remove("scope");
    obj.insert("conversationId".into(), conversation.into());
    obj.insert("turnId".into(), turn.into());
    obj.insert("stepIndex".into(), index.into());
    obj.insert("messages".into(), Value::Array(messages.to_vec()));
    body
}

/// `jcs:` and the SHA-256 of `canonical`, a value's RFC 8785 text as the test writes it.
fn digest(canonical: &str) -> String {
    format!("jcs:{}", hex::encode(Sha256::digest(canonical.as_bytes())))
}

/// The export's records (the lines after its checkpoint), parsed.
fn records(lines: &[String]) -> Vec<Value> {
    lines[1..]
        .iter()
        .map(|l| serde_json::from_str(l).expect("a record"))
        .collect()
}

/// The records of a step that runs the ageing read, in order: its catalog, then the read.
const READ_STEP: [&str; 5] = [
    "catalog.composed",
    "capability.requested",
    "capability.started",
    "capability.completed",
    "operation.outcome",
];

/// The entry types of `records`, in order.
fn kinds<'a>(records: impl IntoIterator<Item = &'a Value>) -> Vec<&'a str> {
    records
        .into_iter()
        .map(|r| r["entry"]["type"].as_str().expect("type"))
        .collect()
}

/// The step's `step-finish` as JSON.
fn finish(reply: &dpas_tests::testing::ChatReply) -> Value {
    let frames = reply.frame_values();
    frames
        .iter()
        .find(|f| f["type"] == "step-finish")
        .cloned()
        .unwrap_or_else(|| panic!("a step-finish: {frames:?}"))
}

#[actix_web::test]
async fn a_turn_is_recorded_once_in_order_and_its_export_verifies() {
    let s = server("sqlite::memory:", TURN_SCRIPT).await;
    let carla = s.sign_in("controller").await;
    let conversation = "cnv_audited";
    let user = json!({"role": "user", "content": "What is overdue? Then issue draft five."});

    // Step 0: the ageing read runs on the server; the filter is left to the browser.
    let step0 = step(conversation, "trn_1", 0, std::slice::from_ref(&user));
    let frontend: Vec<String> = step0["catalog"]["frontendTools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t["canonicalId"].as_str().expect("id").to_owned())
        .collect();
    let reply0 = s.chat(&step0, "controller").await;
    assert_eq!(reply0.status, 200, "{:?}", reply0.body);
    let start = &reply0.frame_values()[0];
    let mut offered: Vec<String> = start["domainTools"]
        .as_array()
        .expect("domain tools")
        .iter()
        .map(|t| t["canonicalId"].as_str().expect("id").to_owned())
        .collect();
    let domain_count = offered.len();
    offered.extend(frontend.iter().cloned());
    let finish0 = finish(&reply0);
    let pending = &finish0["pendingToolCalls"][0];
    assert_eq!(pending["canonicalId"], "view:invoices.pending.setFilters");
    let (call_id, wire_name) = (
        pending["toolCallId"].as_str().expect("id").to_owned(),
        pending["wireName"].as_str().expect("name").to_owned(),
    );

    // Step 1 carries the browser's result; the model then asks to issue draft 5.
    let mut history = vec![user];
    history.extend(
        finish0["responseMessages"]
            .as_array()
            .expect("messages")
            .clone(),
    );
    history.push(json!({"role": "tool", "content": [{"type": "tool-result",
        "toolCallId": call_id, "toolName": wire_name,
        "output": {"type": "json", "value": {"applied": true}}}]}));
    let step1 = step(conversation, "trn_1", 1, &history);
    let reply1 = s.chat(&step1, "controller").await;
    assert_eq!(reply1.status, 200, "{:?}", reply1.body);
    let results = reply1.tool_results();
    assert_eq!(results.len(), 1, "{:?}", reply1.frame_values());
    assert_eq!(results[0].result["status"], "approval-required");
    let approval = results[0].result["approvalId"]
        .as_str()
        .expect("approval id")
        .to_owned();
    let step1_id = reply1.frame_values()[0]["stepId"].clone();

    // The same step posted again is answered from its record.
    let again = s
        .http
        .post(s.url("/agent/chat"))
        .header("content-type", "application/json")
        .header("cookie", s.cookie("controller"))
        .body(serde_json::to_vec(&step1).expect("JSON"))
        .send()
        .await
        .expect("answered");
    assert_eq!(again.status(), 200);
    assert!(again.headers().get("dpas-step-replay").is_some());
    let _ = again.bytes().await.expect("the replayed body");

    // The approval decided and run.
    let decided = s
        .post(
            &format!("/api/approvals/{approval}"),
            Some(&carla),
            json!({"approved": true, "threadId": conversation}),
        )
        .await;
    assert_eq!(decided.status, 200, "{}", decided.body);

    // The next turn posts the whole history again, the browser's result with it.
    history.extend(
        finish(&reply1)["responseMessages"]
            .as_array()
            .expect("messages")
            .clone(),
    );
    history.push(json!({"role": "user", "content": "Thanks."}));
    let reply2 = s
        .chat(&step(conversation, "trn_2", 0, &history), "controller")
        .await;
    assert_eq!(reply2.status, 200, "{:?}", reply2.body);

    let (status, _, lines) = export(&s, "", &carla).await;
    assert_eq!(status, 200, "{lines:?}");
    let (code, _, err) = verify(&lines, false);
    assert_eq!(code, 0, "{err}");
    let all = records(&lines);
    let ours: Vec<&Value> = all
        .iter()
        .filter(|r| {
            r["entry"]["correlation"]["conversationId"] == conversation
                || r["entry"]["data"]["approvalId"] == approval.as_str()
        })
        .collect();
    // Step 0: its catalog, then the ageing read.
    let mut expected = READ_STEP.to_vec();
    expected.extend([
        // Step 1: its catalog, the gated issue, then the browser's result as stored.
        "catalog.composed",
        "capability.requested",
        "approval.requested",
        "operation.outcome",
        "browser.result",
        // The decision and the approved run (the replayed step added nothing).
        "approval.approved",
        "approval.consumed",
        "capability.started",
        "capability.completed",
        "operation.outcome",
        // Turn 2: its catalog only; the result it carries again is not new.
        "catalog.composed",
    ]);
    assert_eq!(kinds(ours.iter().copied()), expected, "{ours:#?}");
    let data = |i: usize| &ours[i]["entry"]["data"];

    // What the catalog offered: counts, and the digest of the offered ids in order.
    let composed = data(0);
    assert_eq!(composed["route"], "/receivables/pending");
    assert_eq!(composed["mode"], "direct");
    assert_eq!(composed["domainTools"], domain_count);
    assert_eq!(composed["frontendTools"], frontend.len());
    assert_eq!(
        composed["toolsDigest"],
        digest(&serde_json::to_string(&offered).expect("JSON"))
    );
    assert_eq!(composed["withheld"], json!([]));
    assert_eq!(ours[0]["entry"]["actorId"], "carla@example.com");

    // The server operations: outcome, surface and the digest of the input.
    let read = data(4);
    assert_eq!(
        (&read["outcome"], &read["surface"], &read["inputDigest"]),
        (&json!("ok"), &json!("aiSdk"), &json!(digest("{}")))
    );
    assert_eq!(ours[4]["entry"]["capabilityId"], "collections-aging");
    assert_eq!(
        ours[4]["entry"]["executionId"],
        ours[3]["entry"]["executionId"]
    );
    let gated = data(8);
    assert_eq!(gated["outcome"], "approval-required");
    assert_eq!(gated["approvalId"], approval.as_str());
    assert_eq!(gated["inputDigest"], digest(r#"{"id":5}"#));
    let ran = data(14);
    assert_eq!(
        (&ran["outcome"], &ran["approvalId"], &ran["inputDigest"]),
        (
            &json!("ok"),
            &json!(approval),
            &json!(digest(r#"{"id":5}"#))
        )
    );
    assert_eq!(data(10)["approver"]["id"], "carla@example.com");

    // The browser's result: the call, the step that carried it, its tool and output digest.
    let result = &ours[9]["entry"];
    assert_eq!(result["correlation"]["invocationId"], call_id.as_str());
    assert_eq!(result["correlation"]["stepId"], step1_id);
    assert_eq!(
        result["data"],
        json!({
            "toolName": wire_name,
            "canonicalId": "view:invoices.pending.setFilters",
            "ok": true,
            "outputDigest": digest(r#"{"type":"json","value":{"applied":true}}"#),
        })
    );

    // One edit of that record is found, naming its seq.
    let seq = ours[9]["seq"].as_i64().expect("seq");
    let at = lines
        .iter()
        .position(|l| l.contains(&format!("\"seq\":{seq},")))
        .expect("its line");
    let mut edited = lines.clone();
    assert!(edited[at].contains("\"ok\":true"));
    edited[at] = edited[at].replace("\"ok\":true", "\"ok\":false");
    let (code, _, err) = verify(&edited, false);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains(&format!("broken at seq {seq}:")), "{err}");
    assert!(err.contains("edited"), "{err}");
}

/// What a composition withholds, and why, is in its record: a browser tool colliding with a
/// governed one, and the tools the browser dropped itself.
#[actix_web::test]
async fn the_catalog_record_says_what_was_withheld_and_why() {
    let s = server("sqlite::memory:", READ_SCRIPT).await;
    let carla = s.sign_in("controller").await;
    let body = dpas_tests::read_trace_request("v2-collision-and-truncated").expect("the trace");
    let request: Value = serde_json::from_slice(&body).expect("JSON");
    let reply = s.chat(&request, "controller").await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    let frames = reply.frame_values();
    let collided = frames
        .iter()
        .find(|f| f["eventType"] == "catalog.collision")
        .expect("the collision's inspector frame");
    let truncated = &request["catalog"]["truncated"];

    let stored = s.get("/api/audit?limit=500", Some(&carla)).await;
    assert_eq!(stored.status, 200, "{}", stored.body);
    let composed: Vec<&Value> = stored.body["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .filter(|e| e["type"] == "catalog.composed")
        .collect();
    assert_eq!(composed.len(), 1, "{composed:?}");
    let ids = &collided["data"]["capabilityIds"];
    assert_eq!(
        composed[0]["data"]["withheld"],
        json!([
            {"reason": "collision", "count": ids.as_array().expect("ids").len(), "ids": ids},
            {"reason": "truncated", "count": truncated["dropped"], "detail": truncated["reason"]},
        ])
    );
    assert_eq!(
        composed[0]["correlation"]["stepId"], frames[0]["stepId"],
        "the record names its step"
    );
}

/// Two replicas on one PostgreSQL database, each running steps while the other does: the
/// export is one chain, 1, 2, 3, … with no gap and no seq twice, holding every step of both,
/// and it verifies.
#[actix_web::test]
async fn two_replicas_running_steps_at_once_write_one_chain() {
    let Some(url) = crate::pg::fresh_database().await else {
        return;
    };
    let (a, b) = tokio::join!(server(&url, READ_SCRIPT), server(&url, READ_SCRIPT));
    let user = json!({"role": "user", "content": "How old is what we are owed?"});
    // Four steps per user on each replica at once (the per-user limit of a replica).
    let steps = (0..16).map(|i| {
        let server = if i % 2 == 0 { &a } else { &b };
        let role = if i % 4 < 2 { "controller" } else { "analyst" };
        let body = step(
            &format!("cnv_replica_{i}"),
            "trn_1",
            0,
            std::slice::from_ref(&user),
        );
        async move { server.chat(&body, role).await }
    });
    let replies = futures_util::future::join_all(steps).await;
    for (i, reply) in replies.iter().enumerate() {
        assert_eq!(reply.status, 200, "step {i}: {:?}", reply.body);
        let results = reply.tool_results();
        assert!(
            results.len() == 1 && results[0].ok,
            "step {i}: {:?}",
            reply.frame_values()
        );
    }
    b.state.audit_log.flush(Duration::from_secs(5)).await;

    let carla = a.sign_in("controller").await;
    let (status, _, lines) = export(&a, "", &carla).await;
    assert_eq!(status, 200, "{lines:?}");
    let (code, out, err) = verify(&lines, false);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("from genesis"), "{out}");
    let all = records(&lines);
    let seqs: Vec<i64> = all
        .iter()
        .map(|r| r["seq"].as_i64().expect("seq"))
        .collect();
    assert_eq!(seqs, (1..=seqs.len() as i64).collect::<Vec<_>>());
    for i in 0..16 {
        let conversation = format!("cnv_replica_{i}");
        let of_step = all
            .iter()
            .filter(|r| r["entry"]["correlation"]["conversationId"] == conversation.as_str());
        assert_eq!(kinds(of_step), READ_STEP, "{conversation}");
    }
    // The table holds exactly that chain: every row in it, each seq once.
    let (rows, distinct, last): (i64, i64, Option<i64>) = sqlx::query_as(
        "SELECT COUNT(*), COUNT(DISTINCT chain_seq), MAX(chain_seq) FROM audit WHERE tenant = $1",
    )
    .bind("default")
    .fetch_one(&*a.state.pool)
    .await
    .expect("counts");
    let n = seqs.len() as i64;
    assert_eq!((rows, distinct, last), (n, n, Some(n)));
}
