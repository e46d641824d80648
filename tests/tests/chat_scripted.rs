//! The scripted model through the server: a script that names tools by canonical id gets
//! the wire names the step offers, and the host's answer to an id it does not offer.

use dpas_tests::server;
use serde_json::{json, Value};

/// A step on the pending-invoices screen whose one browser tool the browser named with an
/// instance (`_at_main`), as it does for a component mounted with an `instanceId`.
fn request(text: &str) -> Value {
    json!({
        "protocolVersion": 2,
        "conversationId": "cnv_scripted",
        "turnId": "trn_1",
        "stepIndex": 0,
        "pathname": "/receivables/pending",
        "messages": [{"role": "user", "content": text}],
        "catalog": {"mode": "direct", "frontendTools": [{
            "wireName": "view_invoices__pending__setFilters_at_main",
            "canonicalId": "view:invoices.pending.setFilters",
            "plane": "view",
            "description": "[view · local-state] Narrow this table.",
            "inputSchema": {"type": "object", "properties": {"due": {"type": "string"}}},
            "effect": "local-state",
            "confirmation": "never"
        }]}
    })
}

const SCRIPT: &str = r#"{"turns": [
    {"when": {"lastUserContains": "ageing", "lacksResult": "domain:collections-aging"},
     "toolCalls": [{"name": "domain:collections-aging"}]},
    {"when": {"hasResult": "domain:collections-aging", "lacksResult": "domain:issue-invoice"},
     "toolCalls": [{"name": "domain:issue-invoice", "input": {"id": 21}}]},
    {"when": {"hasResult": "domain:issue-invoice", "offered": "view:invoices.pending.setFilters"},
     "text": ["Narrowing."],
     "toolCalls": [{"name": "view:invoices.pending.setFilters", "input": {"due": "overdue"}}]},
    {"when": {}, "text": ["fallback"]}
]}"#;

#[actix_web::test]
async fn a_script_names_tools_by_canonical_id() {
    let srv = server::start_script(SCRIPT).await;
    // The analyst may read the ageing but not issue invoices: no `domain:issue-invoice`.
    let reply = srv.chat(&request("show me the ageing"), "analyst").await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    let frames = reply.frame_values();
    let of_type = |t: &str| -> Vec<&Value> { frames.iter().filter(|f| f["type"] == t).collect() };

    // Each id went out under the wire name this step offers for it.
    let calls: Vec<(&Value, &Value, &Value)> = of_type("tool-call")
        .into_iter()
        .map(|f| (&f["wireName"], &f["canonicalId"], &f["executor"]))
        .collect();
    assert_eq!(
        calls,
        [
            (
                &json!("domain_collections-aging"),
                &json!("domain:collections-aging"),
                &json!("server")
            ),
            (
                &json!("view_invoices__pending__setFilters_at_main"),
                &json!("view:invoices.pending.setFilters"),
                &json!("browser")
            ),
        ],
        "{:?}",
        reply.types()
    );
    let results = reply.tool_results();
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].wire_name, "domain_collections-aging");
    assert!(results[0].ok);

    // The id the step does not offer was called as written and answered NO_SUCH_TOOL.
    let unknown: Vec<&Value> = of_type("inspector")
        .into_iter()
        .filter(|f| f["eventType"] == "tool.unknown")
        .collect();
    assert_eq!(unknown.len(), 1, "{frames:?}");
    assert!(
        unknown[0].to_string().contains("domain:issue-invoice"),
        "{}",
        unknown[0]
    );
    let finish = reply.finish();
    let answered = serde_json::to_string(&finish.response_messages).unwrap();
    assert!(
        answered.contains(r#""toolName":"domain:issue-invoice""#)
            && answered.contains("NO_SUCH_TOOL"),
        "{answered}"
    );

    // The browser's call waits for the browser, under its instance name.
    assert_eq!(reply.text(), "Narrowing.");
    assert_eq!(finish.pending_tool_calls.len(), 1);
    assert_eq!(
        finish.pending_tool_calls[0].wire_name,
        "view_invoices__pending__setFilters_at_main"
    );
    assert_eq!(
        finish.pending_tool_calls[0].input,
        json!({"due": "overdue"})
    );
}
