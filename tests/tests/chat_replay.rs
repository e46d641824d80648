//! Replays every request of the reference traces against our server (scripted model) and
//! compares the answers, modulo what the traces README allows to differ: ids, timestamps,
//! durations, tool descriptions, `catalogMode` (which the reference never sends) and the
//! `invocationId` we add to inspector correlation.

use std::collections::HashMap;

use dpas_protocol::ndjson::decode_all;
use dpas_protocol::{CatalogMode, Frame};
use dpas_tests::server::{self, Model, Options};
use dpas_tests::{chat_trace_names, read_trace_request, read_trace_response};
use serde_json::{json, Value};

/// Renames tool-call ids by first appearance and drops what may differ.
fn normalise(frames: &[Value]) -> Vec<Value> {
    let mut ids: HashMap<String, String> = HashMap::new();
    let mut rename = |v: &mut Value| {
        if let Some(Value::String(id)) = v.get_mut("toolCallId") {
            let n = ids.len();
            let new = ids
                .entry(id.clone())
                .or_insert_with(|| format!("call#{n}"))
                .clone();
            *id = new;
        }
    };
    frames
        .iter()
        .map(|frame| {
            let mut f = frame.clone();
            let obj = f.as_object_mut().expect("frame object");
            obj.remove("stepId");
            obj.remove("catalogMode");
            if let Some(Value::Array(tools)) = obj.get_mut("domainTools") {
                for t in tools {
                    t.as_object_mut().expect("tool").remove("description");
                }
            }
            if let Some(Value::Object(c)) = obj.get_mut("correlation") {
                c.remove("stepId");
                c.remove("invocationId");
            }
            if let Some(Value::Object(d)) = obj.get_mut("data") {
                d.remove("durationMs");
            }
            rename(&mut f);
            if let Some(Value::Array(pending)) = f.get_mut("pendingToolCalls") {
                pending.iter_mut().for_each(&mut rename);
            }
            if let Some(Value::Array(messages)) = f.get_mut("responseMessages") {
                for m in messages {
                    if let Some(Value::Array(parts)) = m.get_mut("content") {
                        parts.iter_mut().for_each(&mut rename);
                    }
                }
            }
            f
        })
        .collect()
}

#[actix_web::test]
async fn every_reference_request_gets_the_reference_answer() {
    let srv = server::start().await;
    let mut replayed = 0;
    for name in chat_trace_names() {
        let Some(request) = read_trace_request(&name) else {
            continue;
        };
        let recorded = read_trace_response(&name);
        let cookie = srv.cookie("controller");
        let ours = srv.chat_bytes(request, Some(&cookie)).await;
        let status = recorded.status.expect("status");
        assert_eq!(ours.status, status, "{name}: status");
        if status != 200 {
            let body: Value = serde_json::from_slice(&recorded.body).unwrap();
            assert_eq!(ours.body, body, "{name}: error body");
            assert_eq!(ours.version, None, "{name}: no version header on errors");
            replayed += 1;
            continue;
        }
        assert_eq!(
            ours.content_type.as_deref(),
            recorded.header("content-type"),
            "{name}"
        );
        assert_eq!(ours.cache_control.as_deref(), Some("no-store"), "{name}");
        assert_eq!(
            ours.version.as_deref(),
            recorded.header("x-dpas-protocol-version"),
            "{name}"
        );
        let (theirs, _) = decode_all(&recorded.body);
        let mut theirs: Vec<Value> = theirs
            .iter()
            .map(|f| serde_json::to_value(f).unwrap())
            .collect();
        // Decision 8: a controller's model calls of issue and delete are gated, and we say so.
        for tool in theirs[0]["domainTools"].as_array_mut().unwrap() {
            let gated = ["domain:issue-invoice", "domain:delete-invoice"]
                .contains(&tool["canonicalId"].as_str().unwrap());
            tool["requiresApproval"] = json!(gated);
        }
        assert_eq!(
            normalise(&ours.frame_values()),
            normalise(&theirs),
            "{name}: frames"
        );
        let Frame::StepStart(start) = &ours.frames[0] else {
            panic!("{name}: step-start first")
        };
        let expected_mode = if name.contains("meta") {
            CatalogMode::Meta
        } else {
            CatalogMode::Direct
        };
        assert_eq!(start.catalog_mode, Some(expected_mode), "{name}");
        replayed += 1;
    }
    assert!(replayed >= 12, "replayed {replayed}");
}

#[actix_web::test]
async fn no_model_is_the_recorded_503() {
    let srv = server::start_with(Options {
        model: Model::None,
        ..Options::default()
    })
    .await;
    let recorded = read_trace_response("err-model-not-configured");
    let request = read_trace_request("browser-carla-step0").unwrap();
    let cookie = srv.cookie("controller");
    let ours = srv.chat_bytes(request, Some(&cookie)).await;
    assert_eq!(Some(ours.status), recorded.status);
    assert_eq!(
        ours.body,
        serde_json::from_slice::<Value>(&recorded.body).unwrap()
    );
    // Decode still comes first: a malformed body is 400 even without a model (K4).
    let bad = srv.chat_bytes(b"{not json".to_vec(), Some(&cookie)).await;
    assert_eq!(bad.status, 400);
}

#[actix_web::test]
async fn the_whole_carla_turn_runs_on_our_own_messages() {
    let srv = server::start().await;
    let step0_request: Value =
        serde_json::from_slice(&read_trace_request("browser-carla-step0").unwrap()).unwrap();
    let step2_request: Value =
        serde_json::from_slice(&read_trace_request("browser-carla-step2").unwrap()).unwrap();
    // What the browser's readState returned in the real turn: 7 overdue rows.
    let read_state = step2_request["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()["content"][0]["output"]["value"]
        .clone();

    let mut history = step0_request["messages"].as_array().unwrap().clone();
    let mut body = step0_request.clone();
    let mut answer = String::new();
    for step in 0..3 {
        body["stepIndex"] = json!(step);
        body["messages"] = Value::Array(history.clone());
        let reply = srv.chat(&body, "controller").await;
        assert_eq!(reply.status, 200, "step {step}");
        assert!(
            !reply.types().contains(&"error".to_owned()),
            "step {step}: {:?}",
            reply.types()
        );
        let finish = reply.finish();
        history.extend(
            finish
                .response_messages
                .iter()
                .map(|m| serde_json::to_value(m).unwrap()),
        );
        // The browser executes each pending call and appends its result.
        for call in &finish.pending_tool_calls {
            let value = match call.wire_name.as_str() {
                "view_invoices__pending__setFilters" => json!({"done": true}),
                "view_invoices__pending__readState" => read_state.clone(),
                other => panic!("unexpected browser call {other}"),
            };
            history.push(json!({"role": "tool", "content": [{"type": "tool-result", "toolCallId": call.tool_call_id, "toolName": call.wire_name, "output": {"type": "json", "value": value}}]}));
        }
        let usage = finish.usage.expect("usage each step");
        assert_eq!(
            (
                usage.input_tokens,
                usage.output_tokens,
                usage.reported_steps
            ),
            (16, 16, 1)
        );
        answer = reply.text();
        if finish.pending_tool_calls.is_empty() {
            assert_eq!(step, 2, "the answer comes at step 2");
            break;
        }
    }
    assert!(
        answer.contains("7** invoices are overdue, worth €102,600"),
        "{answer}"
    );
    assert!(answer
        .replace("**", "")
        .contains("7 invoices are overdue, worth €102,600"));

    // The thread kept every call answered, browser results included (decision 3), and the
    // usage of three steps.
    let conv = step0_request["conversationId"].as_str().unwrap();
    let (status, stored) = srv
        .get_json(&format!("/api/threads/{conv}/model-messages"), "controller")
        .await;
    assert_eq!(status, 200);
    let stored = stored.as_array().unwrap();
    let calls: Vec<&str> = stored
        .iter()
        .filter_map(|m| m["content"].as_array())
        .flatten()
        .filter(|p| p["type"] == "tool-call")
        .map(|p| p["toolCallId"].as_str().unwrap())
        .collect();
    let answers: Vec<&str> = stored
        .iter()
        .filter_map(|m| m["content"].as_array())
        .flatten()
        .filter(|p| p["type"] == "tool-result")
        .map(|p| p["toolCallId"].as_str().unwrap())
        .collect();
    assert_eq!(calls.len(), 3);
    for c in &calls {
        assert_eq!(
            answers.iter().filter(|a| *a == c).count(),
            1,
            "{c} answered once"
        );
    }
    assert_eq!(stored.first().unwrap()["role"], "user");
    let (_, meta) = srv
        .get_json(&format!("/api/threads/{conv}"), "controller")
        .await;
    assert_eq!(meta["usage"]["totalTokens"], 96);
    assert_eq!(meta["usage"]["reportedSteps"], 3);
    // Another user cannot read it.
    assert_eq!(
        srv.get_json(&format!("/api/threads/{conv}"), "analyst")
            .await
            .0,
        404
    );
}

#[actix_web::test]
async fn refusals_come_in_the_contract_order_before_any_stream() {
    let srv = server::start().await;
    let request = read_trace_request("browser-carla-step0").unwrap();
    // Session before decode (hardening: nobody anonymous gets a body parsed): any body
    // without a valid session is 401, never a default user.
    for body in [
        b"[]".to_vec(),
        br#"{"protocolVersion":3}"#.to_vec(),
        request.clone(),
    ] {
        let anonymous = srv.chat_bytes(body, None).await;
        assert_eq!(anonymous.status, 401);
        assert_eq!(anonymous.body["error"]["code"], "UNAUTHENTICATED");
    }
    // Signed in, decode errors come first.
    let cookie = srv.cookie("controller");
    assert_eq!(
        srv.chat_bytes(b"[]".to_vec(), Some(&cookie)).await.status,
        400
    );
    assert_eq!(
        srv.chat_bytes(br#"{"protocolVersion":3}"#.to_vec(), Some(&cookie))
            .await
            .status,
        409
    );
    let forged = srv
        .chat_bytes(request.clone(), Some("dpas_session=forged.value"))
        .await;
    assert_eq!(forged.status, 401);
    // Over the frontend limit is 413 naming plane, count and limit.
    let mut big: Value = serde_json::from_slice(&request).unwrap();
    let tool = big["catalog"]["frontendTools"][0].clone();
    big["catalog"]["frontendTools"] = Value::Array(
        (0..129)
            .map(|i| {
                let mut t = tool.clone();
                t["wireName"] = json!(format!("view_x__t{i}"));
                t
            })
            .collect(),
    );
    let too_large = srv
        .chat_bytes(serde_json::to_vec(&big).unwrap(), Some(&cookie))
        .await;
    assert_eq!(too_large.status, 413);
    assert_eq!(too_large.body["error"]["code"], "CATALOG_TOO_LARGE");
    assert!(too_large.body["error"]["message"]
        .as_str()
        .unwrap()
        .starts_with("The frontend catalog has 129 entries, over the limit of 128."));
    // Only POST.
    let get = srv.http.get(srv.url("/agent/chat")).send().await.unwrap();
    assert_eq!(get.status().as_u16(), 405);
}

#[actix_web::test]
async fn v1_collisions_abort_with_the_exact_message() {
    let srv = server::start().await;
    let mut body: Value = serde_json::from_slice(&read_trace_request("v1-step0").unwrap()).unwrap();
    body["frontendTools"].as_array_mut().unwrap().push(json!({
        "wireName": "domain_collections-aging", "canonicalId": "domain:collections-aging", "plane": "domain",
        "description": "", "inputSchema": {"type": "object"}, "effect": "read", "confirmation": "never"
    }));
    let reply = srv.chat(&body, "controller").await;
    assert_eq!(reply.status, 409);
    assert_eq!(
        reply.body,
        json!({"error": {"code": "CATALOG_COLLISION", "message": "Domain operation(s) exposed through two paths: domain:collections-aging. A capability must be either a direct server tool or a contextual surface reference, never both."}})
    );
}
