//! Several models (reference K6, issue #14): `GET /api/session` lists exactly the models the
//! chat endpoint serves, default first; a request's `modelId` picks one; an unknown id runs the
//! default and a host inspector frame says so.

use std::sync::Arc;

use dpas_model::scripted::{Script, ScriptedProvider};
use dpas_model::{EventStream, ModelError, ModelProvider, ModelRequest};
use dpas_protocol::Frame;
use dpas_tests::read_trace_request;
use dpas_tests::server::{self, Model, Options};
use futures_util::future::BoxFuture;
use serde_json::{json, Value};

/// A scripted model that answers one text, listed under its own id.
struct Named {
    id: &'static str,
    inner: ScriptedProvider,
}

impl ModelProvider for Named {
    fn id(&self) -> &str {
        self.id
    }

    fn stream(&self, request: ModelRequest) -> BoxFuture<'_, Result<EventStream, ModelError>> {
        self.inner.stream(request)
    }
}

fn named(id: &'static str, text: &str) -> Arc<dyn ModelProvider> {
    let script = json!({ "turns": [{ "text": [text] }] }).to_string();
    let inner = ScriptedProvider::from_script(Script::from_json(script.as_bytes()).unwrap());
    Arc::new(Named { id, inner })
}

fn fallbacks(frames: &[Frame]) -> Vec<Value> {
    frames
        .iter()
        .filter_map(|f| match f {
            Frame::Inspector(i) if i.event_type == "model.fallback" => i.data.clone(),
            _ => None,
        })
        .collect()
}

#[actix_web::test]
async fn a_request_picks_one_of_several_models_and_an_unknown_id_falls_back_visibly() {
    let srv = server::start_with(Options {
        model: Model::Several(vec![named("test/a", "from A"), named("test/b", "from B")]),
        ..Options::default()
    })
    .await;
    let (status, session) = srv.get_json("/api/session", "controller").await;
    assert_eq!(status, 200);
    assert_eq!(session["models"], json!(["test/a", "test/b"]));
    assert_eq!(session["defaultModel"], json!("test/a"));

    let mut body: Value =
        serde_json::from_slice(&read_trace_request("browser-carla-step0").unwrap()).unwrap();
    body["modelId"] = json!("test/b");
    let picked = srv.chat(&body, "controller").await;
    assert_eq!((picked.status, picked.text()), (200, "from B".to_owned()));
    assert!(fallbacks(&picked.frames).is_empty());

    // A new turn: the same ids again would be the same step, answered from its record.
    body["turnId"] = json!("trn_unknown_model");
    body["modelId"] = json!("test/nope");
    let unknown = srv.chat(&body, "controller").await;
    assert_eq!((unknown.status, unknown.text()), (200, "from A".to_owned()));
    assert_eq!(
        fallbacks(&unknown.frames),
        [json!({ "requested": "test/nope", "used": "test/a" })]
    );

    body.as_object_mut().unwrap().remove("modelId");
    body["turnId"] = json!("trn_default_model");
    let default = srv.chat(&body, "controller").await;
    assert_eq!(default.text(), "from A");
    assert!(fallbacks(&default.frames).is_empty());
}
