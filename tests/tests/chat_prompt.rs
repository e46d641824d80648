//! What the model is actually sent: the tool block stays byte-identical when only
//! availability changes, the capability-state message comes last, and the system prompt
//! follows the catalog mode.

use std::sync::{Arc, Mutex};

use dpas_model::scripted::ScriptedProvider;
use dpas_model::{EventStream, ModelError, ModelProvider, ModelRequest};
use dpas_protocol::{MessageContent, Role};
use dpas_tests::read_trace_request;
use dpas_tests::server::{self, Model, Options};
use futures_util::future::BoxFuture;
use serde_json::{json, Value};

/// Records every request, then answers like the golden scenario.
struct Recorder {
    inner: ScriptedProvider,
    seen: Mutex<Vec<ModelRequest>>,
}

impl ModelProvider for Recorder {
    fn id(&self) -> &str {
        self.inner.id()
    }

    fn stream(&self, request: ModelRequest) -> BoxFuture<'_, Result<EventStream, ModelError>> {
        self.seen.lock().unwrap().push(request.clone());
        self.inner.stream(request)
    }
}

/// A server on the golden scenario whose provider records every request.
async fn recording_server() -> (server::TestServer, Arc<Recorder>) {
    let recorder = Arc::new(Recorder {
        inner: ScriptedProvider::golden(),
        seen: Mutex::new(Vec::new()),
    });
    let srv = server::start_with(Options {
        model: Model::Custom(recorder.clone()),
        ..Options::default()
    })
    .await;
    (srv, recorder)
}

#[actix_web::test]
async fn availability_changes_nothing_but_the_last_system_message() {
    let (srv, recorder) = recording_server().await;
    let mut body: Value =
        serde_json::from_slice(&read_trace_request("browser-carla-step0").unwrap()).unwrap();
    assert_eq!(srv.chat(&body, "controller").await.status, 200);
    // The chase dialog opens: only the volatile half changes.
    for state in body["catalog"]["frontendState"].as_array_mut().unwrap() {
        if state["wireName"] == "domain_update-collection-status" {
            *state = json!({"wireName": "domain_update-collection-status", "available": true, "note": "Invoice DUN-0037 is open"});
        }
    }
    // The next step of the turn (the same ids again would be the same step, answered from its
    // record).
    body["stepIndex"] = json!(1);
    assert_eq!(srv.chat(&body, "controller").await.status, 200);

    let seen = recorder.seen.lock().unwrap();
    assert_eq!(seen.len(), 2);
    let (a, b) = (&seen[0], &seen[1]);
    let tools = |r: &ModelRequest| {
        r.tools
            .iter()
            .map(|t| format!("{}|{}|{}", t.name, t.description, t.input_schema))
            .collect::<Vec<_>>()
    };
    assert_eq!(tools(a), tools(b), "the tool block is byte-identical");
    assert_eq!(a.system, b.system);
    assert_eq!(
        a.tools.len(),
        8 + 16,
        "8 domain tools then the 16 declared ones"
    );
    assert!(a.tools[..8].iter().all(|t| t.name.starts_with("domain_")));

    let last = |r: &ModelRequest| match (
        &r.messages.last().unwrap().role,
        &r.messages.last().unwrap().content,
    ) {
        (Role::System, MessageContent::Text(t)) => t.clone(),
        other => panic!("the last message is the state message, got {other:?}"),
    };
    assert_eq!(
        last(a),
        "Capability state (this step):\n- domain:update-collection-status — unavailable: Open an invoice's chase dialog first"
    );
    assert_eq!(last(b), "Capability state (this step):\n- domain:update-collection-status — available; Invoice DUN-0037 is open");
    assert_eq!(a.messages.len(), 2, "the history, then the state message");
}

#[actix_web::test]
async fn the_system_prompt_follows_the_catalog_mode() {
    let (srv, recorder) = recording_server().await;
    let mut body = json!({
        "protocolVersion": 2, "conversationId": "c", "turnId": "t", "stepIndex": 0,
        "pathname": "/receivables/pending", "messages": [{"role": "user", "content": "hi"}],
        "catalog": {"mode": "direct", "frontendTools": []}
    });
    srv.chat(&body, "controller").await;
    body["catalog"] =
        json!({"mode": "meta", "frontendTools": dpas_protocol::catalog::meta_descriptors()});
    body["turnId"] = json!("t2");
    srv.chat(&body, "controller").await;
    let seen = recorder.seen.lock().unwrap();
    // The golden model names tools that are not on this catalog, so each request runs
    // several model steps; the first is direct, the last meta.
    let (direct, meta) = (seen.first().unwrap(), seen.last().unwrap());
    assert!(!direct.system.contains("surface_discover"));
    assert!(meta
        .system
        .contains("Call `surface_discover` with no arguments first"));
    let names: Vec<&str> = meta.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        &names[names.len() - 3..],
        ["surface_discover", "surface_read", "surface_act"]
    );
    // No state message when nothing is unavailable or noted.
    assert_eq!(direct.messages.len(), 1);
}
