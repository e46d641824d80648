//! Snapshots of our own streams for the situations the reference traces do not cover
//! (ids and durations redacted), plus behavioural assertions for each.

use std::time::Duration;

use dpas_protocol::Frame;
use dpas_tests::read_trace_request;
use dpas_tests::server::{self, ChatReply, Model, Options, TestServer};
use serde_json::{json, Value};

/// Replaces values that differ per run.
fn redact(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, v) in map.iter_mut() {
                match key.as_str() {
                    "stepId" => *v = json!("[stepId]"),
                    "durationMs" => *v = json!("[ms]"),
                    "approvalId" => *v = json!("[approvalId]"),
                    "expiresAt" | "requestedAt" | "decidedAt" | "at" => *v = json!("[time]"),
                    "description" => *v = json!("[description]"),
                    _ => redact(v),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(redact),
        _ => {}
    }
}

fn snapshot_of(reply: &ChatReply) -> Value {
    let mut frames = Value::Array(reply.frame_values());
    redact(&mut frames);
    frames
}

/// A v2 request on `pathname` with one user message and the given catalog.
fn request(pathname: &str, text: &str, catalog: Value) -> Value {
    json!({
        "protocolVersion": 2,
        "conversationId": "cnv_snapshot",
        "turnId": "trn_snapshot",
        "stepIndex": 0,
        "pathname": pathname,
        "messages": [{"role": "user", "content": text}],
        "catalog": catalog,
    })
}

/// The real browser's 16 descriptors and state from the Carla trace.
fn carla_catalog() -> Value {
    let body: Value =
        serde_json::from_slice(&read_trace_request("browser-carla-step0").unwrap()).unwrap();
    body["catalog"].clone()
}

fn inspector_events(reply: &ChatReply) -> Vec<String> {
    reply
        .frames
        .iter()
        .filter_map(|f| match f {
            Frame::Inspector(i) => Some(i.event_type.clone()),
            _ => None,
        })
        .collect()
}

fn error_codes(reply: &ChatReply) -> Vec<String> {
    reply.errors().iter().map(|e| e.code.clone()).collect()
}

async fn controller_chat(srv: &TestServer, body: Value) -> ChatReply {
    let reply = srv.chat(&body, "controller").await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    assert_eq!(
        reply
            .types()
            .last()
            .map(String::as_str)
            .filter(|t| *t != "inspector"),
        Some("step-finish")
    );
    reply
}

#[actix_web::test]
async fn collision_and_truncation() {
    let srv = server::start().await;
    let body: Value =
        serde_json::from_slice(&read_trace_request("v2-collision-and-truncated").unwrap()).unwrap();
    let reply = controller_chat(&srv, body).await;
    assert_eq!(
        &inspector_events(&reply)[..2],
        ["catalog.collision", "catalog.truncated"]
    );
    insta::assert_json_snapshot!("collision_and_truncation", snapshot_of(&reply));
}

#[actix_web::test]
async fn wire_name_clash_across_planes_is_a_collision() {
    // Decision 4: same wire name, different canonical id.
    let srv = server::start().await;
    let mut catalog = carla_catalog();
    catalog["frontendTools"].as_array_mut().unwrap().push(json!({
        "wireName": "domain_list-invoices", "canonicalId": "view:impostor.listInvoices", "plane": "view",
        "description": "", "inputSchema": {"type": "object"}, "effect": "read", "confirmation": "never"
    }));
    let reply = controller_chat(&srv, request("/receivables/pending", "hi", catalog)).await;
    let Frame::Inspector(collision) = &reply.frames[1] else {
        panic!("collision frame second")
    };
    assert_eq!(collision.event_type, "catalog.collision");
    assert_eq!(
        collision.data.as_ref().unwrap()["capabilityIds"],
        json!(["view:impostor.listInvoices"])
    );
}

#[actix_web::test]
async fn no_such_tool() {
    let srv = server::start_script(
        r#"{"turns": [
            {"text": ["Let me look."], "toolCalls": [{"name": "domain_collections-aging"}, {"name": "view_nope__made__up"}]},
            {"text": ["Done."]}
        ]}"#,
    )
    .await;
    let reply = controller_chat(&srv, request("/receivables/pending", "hi", carla_catalog())).await;
    assert!(inspector_events(&reply).contains(&"tool.unknown".to_owned()));
    let finish = reply.finish();
    assert_eq!(finish.finish_reason, "stop");
    assert_eq!(
        finish.usage.unwrap().reported_steps,
        2,
        "the model was called again"
    );
    // (c) the NO_SUCH_TOOL answer precedes the server call's answer in the history.
    let v = serde_json::to_value(&finish.response_messages).unwrap();
    assert_eq!(
        v[1]["content"][0]["output"]["value"]["error"]["code"],
        "NO_SUCH_TOOL"
    );
    assert_eq!(
        v[1]["content"][0]["output"]["value"]["error"]["retry"],
        "no"
    );
    insta::assert_json_snapshot!("no_such_tool", snapshot_of(&reply));
}

#[actix_web::test]
async fn orphan_settlement() {
    let srv = server::start_script(
        r#"{"turns": [{"toolCalls": [{"name": "domain_collections-aging"}, {"name": "view_invoices__pending__readState"}], "errorAfterCalls": "The provider hung up."}]}"#,
    )
    .await;
    let reply = controller_chat(&srv, request("/receivables/pending", "hi", carla_catalog())).await;
    assert_eq!(error_codes(&reply), ["MODEL_ERROR"]);
    let finish = reply.finish();
    assert_eq!(finish.finish_reason, "error");
    assert_eq!(finish.pending_tool_calls.len(), 1);
    let v = serde_json::to_value(&finish.response_messages).unwrap();
    assert_eq!(
        v[1]["content"][0]["output"]["value"]["error"],
        json!({"code": "TOOL_NOT_EXECUTED", "message": "The run ended before this tool produced a result. Call it again.", "retry": "yes"})
    );
    insta::assert_json_snapshot!("orphan_settlement", snapshot_of(&reply));
}

#[actix_web::test]
async fn step_cap() {
    let srv = server::start_script(
        r#"{"turns": [{"toolCalls": [{"name": "domain_receivables-summary"}]}]}"#,
    )
    .await;
    let reply = controller_chat(&srv, request("/receivables/pending", "hi", carla_catalog())).await;
    assert_eq!(error_codes(&reply), ["RUN_LIMIT_EXCEEDED"]);
    let finish = reply.finish();
    assert_eq!(finish.usage.unwrap().reported_steps, 5);
    let results = reply
        .frames
        .iter()
        .filter(|f| matches!(f, Frame::ToolResult(_)))
        .count();
    assert_eq!(
        results, 5,
        "every model step's server call ran and was answered"
    );
    insta::assert_json_snapshot!("step_cap", snapshot_of(&reply));
}

#[actix_web::test]
async fn provider_error() {
    let srv = server::start_script(r#"{"turns": [{"error": "The provider refused the request (HTTP 400): bad tool schema."}]}"#).await;
    let reply = controller_chat(&srv, request("/receivables/pending", "hi", carla_catalog())).await;
    assert_eq!(error_codes(&reply), ["MODEL_ERROR"]);
    assert_eq!(reply.finish().finish_reason, "error");
    assert!(
        reply.finish().usage.is_none(),
        "nothing reported: no usage at all"
    );
    insta::assert_json_snapshot!("provider_error", snapshot_of(&reply));
}

#[actix_web::test]
async fn timeout() {
    let srv = server::start_with(Options {
        model: Model::Script(
            r#"{"turns": [{"text": ["Thinking about it"], "silentAfterText": true}]}"#,
        ),
        model_timeout: Duration::from_secs(1),
        ..Options::default()
    })
    .await;
    let reply = controller_chat(&srv, request("/receivables/pending", "hi", carla_catalog())).await;
    assert_eq!(error_codes(&reply), ["MODEL_TIMEOUT"]);
    let Some(Frame::Error { error }) = reply
        .frames
        .iter()
        .find(|f| matches!(f, Frame::Error { .. }))
    else {
        panic!()
    };
    assert_eq!(
        error.message,
        "The model produced no output for 1s; the run was stopped."
    );
    assert_eq!(reply.finish().finish_reason, "timeout");
    insta::assert_json_snapshot!("timeout", snapshot_of(&reply));
}

#[actix_web::test]
async fn analyst() {
    let srv = server::start().await;
    let body: Value =
        serde_json::from_slice(&read_trace_request("browser-carla-step0").unwrap()).unwrap();
    let reply = srv.chat(&body, "analyst").await;
    let Frame::StepStart(start) = &reply.frames[0] else {
        panic!()
    };
    let ids: Vec<&str> = start
        .domain_tools
        .iter()
        .map(|t| t.canonical_id.as_str())
        .collect();
    assert_eq!(
        ids,
        [
            "domain:list-invoices",
            "domain:receivables-summary",
            "domain:collections-aging"
        ]
    );
    assert!(start.domain_tools.iter().all(|t| !t.requires_approval));
    insta::assert_json_snapshot!("analyst", snapshot_of(&reply));
}

#[actix_web::test]
async fn nested_route() {
    let srv = server::start().await;
    let reply = controller_chat(
        &srv,
        request(
            "/receivables/clients/42",
            "hi",
            json!({"mode": "direct", "frontendTools": []}),
        ),
    )
    .await;
    let Frame::StepStart(start) = &reply.frames[0] else {
        panic!()
    };
    assert_eq!(start.scope, ["app", "clients", "invoices"]);
    assert!(start
        .domain_tools
        .iter()
        .any(|t| t.canonical_id == "domain:list-clients"));
    insta::assert_json_snapshot!("nested_route", snapshot_of(&reply));
}

#[actix_web::test]
async fn meta_mode() {
    let srv = server::start_script(
        r#"{"turns": [{"text": ["Looking at the screen."], "toolCalls": [{"name": "surface_discover"}, {"name": "surface_act", "input": {"capabilityId": "view:invoices.pending.setFilters", "input": {"due": "overdue"}}}]}]}"#,
    )
    .await;
    let catalog =
        json!({"mode": "meta", "frontendTools": dpas_protocol::catalog::meta_descriptors()});
    let reply = controller_chat(&srv, request("/receivables/pending", "hi", catalog)).await;
    let Frame::StepStart(start) = &reply.frames[0] else {
        panic!()
    };
    assert_eq!(start.catalog_mode, Some(dpas_protocol::CatalogMode::Meta));
    let pending = &reply.finish().pending_tool_calls;
    assert_eq!(pending[0].canonical_id, "meta:surface_discover");
    assert_eq!(pending[1].canonical_id, "view:invoices.pending.setFilters");
    insta::assert_json_snapshot!("meta_mode", snapshot_of(&reply));
}

#[actix_web::test]
async fn approval_gated_write() {
    let srv = server::start_script(r#"{"turns": [{"text": ["Issuing draft 5."], "toolCalls": [{"name": "domain_issue-invoice", "input": {"id": 5}}]}, {"text": ["It needs your approval."]}]}"#).await;
    let reply = controller_chat(
        &srv,
        request(
            "/receivables/all",
            "issue draft 5",
            json!({"mode": "direct", "frontendTools": []}),
        ),
    )
    .await;
    let Frame::StepStart(start) = &reply.frames[0] else {
        panic!()
    };
    let gated: Vec<&str> = start
        .domain_tools
        .iter()
        .filter(|t| t.requires_approval)
        .map(|t| t.canonical_id.as_str())
        .collect();
    assert_eq!(gated, ["domain:issue-invoice", "domain:delete-invoice"]);
    let result = reply.tool_results()[0];
    assert!(result.ok);
    assert_eq!(result.result["status"], "approval-required");
    // An approval record waits, and nothing was written: draft 5 is still a draft.
    let (_, approvals) = srv.get_json("/api/approvals", "controller").await;
    assert_eq!(approvals.as_array().map(Vec::len), Some(1), "{approvals}");
    let (status, drafts) = srv
        .post_json(
            "/rpc/list-invoices",
            "controller",
            &json!({"kind": "draft"}),
        )
        .await;
    assert_eq!(status, 200);
    let draft_ids: Vec<i64> = drafts["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_i64().unwrap())
        .collect();
    assert!(draft_ids.contains(&5), "{drafts}");
    insta::assert_json_snapshot!("approval_gated_write", snapshot_of(&reply));
}
