//! Spans captured in process: named like the reference's (`agent.capability_call`,
//! `agent.policy_evaluation`, `agent.approval_request`, `agent.procedure_execution`) and
//! nested under the step that caused them.

use std::sync::{Arc, Mutex};

use dpas_engine::{ChatConfig, FrameSink, ModelSet};
use dpas_model::scripted::{Script, ScriptedProvider};
use serde_json::json;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

use crate::common::{builder, carla};

#[derive(Debug, Clone)]
struct Captured {
    name: String,
    parent: Option<String>,
    capability: Option<String>,
}

/// Records every span as it opens: its name, its parent's name, its capability id.
struct Recorder(Arc<Mutex<Vec<Captured>>>);

struct CapabilityField(Option<String>);

impl Visit for CapabilityField {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "orpc_agent.capability_id" {
            self.0 = Some(format!("{value:?}"));
        }
    }
}

impl<S: tracing::Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Recorder {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut field = CapabilityField(None);
        attrs.record(&mut field);
        let parent = ctx
            .span(id)
            .and_then(|s| s.parent())
            .map(|p| p.name().to_owned());
        self.0.lock().expect("lock").push(Captured {
            name: attrs.metadata().name().to_owned(),
            parent,
            capability: field.0,
        });
    }
}

#[actix_web::test]
async fn spans_are_named_like_the_references_and_nest_under_the_step() {
    let spans = Arc::new(Mutex::new(Vec::new()));
    let subscriber = tracing_subscriber::registry().with(Recorder(Arc::clone(&spans)));
    let _default = tracing::subscriber::set_default(subscriber);

    let state = builder().build().await.expect("state");
    let script = Script::from_json(
        json!({"turns": [
            {"toolCalls": [
                {"name": "domain_receivables-summary", "input": {}},
                {"name": "domain_issue-invoice", "input": {"id": 5}}
            ]},
            {"text": ["Asked for your approval."]}
        ]})
        .to_string()
        .as_bytes(),
    )
    .expect("script");
    let chat = ChatConfig {
        models: ModelSet::new(vec![ScriptedProvider::from_script(script).into_arc()]),
        floors: Arc::new(dpas_demo::route_floors()),
        app_prompt: Arc::from(dpas_demo::APP_PROMPT),
        model_timeout: std::time::Duration::from_secs(45),
    };
    let body = json!({
        "protocolVersion": 2, "conversationId": "cnv_traces", "turnId": "trn_1", "stepIndex": 0,
        "pathname": "/receivables/pending",
        "messages": [{"role": "user", "content": "Summarise, then issue invoice 5."}],
        "catalog": {"mode": "direct", "frontendTools": []}
    });
    let request = dpas_protocol::decode_request(body.to_string().as_bytes()).expect("request");
    let run = state
        .engine
        .prepare(&chat, carla(), request, None)
        .expect("prepared");
    let (tx, mut rx) = tokio::sync::mpsc::channel(1024);
    run.run(FrameSink::frames(tx)).await;
    let mut results = Vec::new();
    while let Ok(frame) = rx.try_recv() {
        if let dpas_protocol::Frame::ToolResult(r) = frame {
            results.push(r.result);
        }
    }
    assert_eq!(results.len(), 2, "{results:?}");
    assert_eq!(results[1]["status"], "approval-required", "{results:?}");

    let spans = spans.lock().expect("lock").clone();
    let named =
        |name: &str| -> Vec<&Captured> { spans.iter().filter(|s| s.name == name).collect() };
    let step = named("agent.step");
    assert_eq!(step.len(), 1, "{spans:?}");
    assert_eq!(step[0].parent, None);
    let model_calls = named("agent.model_call");
    assert_eq!(model_calls.len(), 2, "two model steps: {spans:?}");
    assert!(model_calls
        .iter()
        .all(|s| s.parent.as_deref() == Some("agent.step")));

    let calls = named("agent.capability_call");
    let mut ids: Vec<&str> = calls
        .iter()
        .map(|s| {
            assert_eq!(s.parent.as_deref(), Some("agent.step"), "{s:?}");
            s.capability.as_deref().unwrap_or_default()
        })
        .collect();
    ids.sort_unstable();
    assert_eq!(ids, ["issue-invoice", "receivables-summary"]);

    let under_call = |name: &str| -> Vec<String> {
        named(name)
            .into_iter()
            .filter(|s| s.parent.as_deref() == Some("agent.capability_call"))
            .filter_map(|s| s.capability.clone())
            .collect()
    };
    let evaluated = under_call("agent.policy_evaluation");
    assert!(evaluated.iter().any(|c| c == "issue-invoice"), "{spans:?}");
    assert!(
        evaluated.iter().any(|c| c == "receivables-summary"),
        "{spans:?}"
    );
    assert_eq!(under_call("agent.approval_request"), ["issue-invoice"]);
    assert_eq!(
        under_call("agent.procedure_execution"),
        ["receivables-summary"]
    );
}
