//! Steps that survive: the same step posted again is answered from its run, never run twice
//! (`POST /agent/chat`, docs/protocol.md "Step records"). The model is a stand-in whose
//! second half waits until the test lets it go, so a step can be caught mid-run without any
//! timing.

use std::sync::Arc;

use dpas_governance::steps::{StepKey, StepStore};
use dpas_store::SqlStepStore;
use dpas_tests::gated::Gated;
use dpas_tests::read_trace_request;
use dpas_tests::server::{self, Model, Options};
use futures_util::StreamExt as _;
use serde_json::Value;
use sha2::{Digest, Sha256};
use time::OffsetDateTime;

async fn start(model: Arc<Gated>) -> dpas_tests::server::TestServer {
    server::start_with(Options {
        model: Model::Custom(model),
        ..Options::default()
    })
    .await
}

/// The reference browser's first step, as the tests post it (one conversation per test).
fn step_body(conversation: &str, text: &str) -> Vec<u8> {
    let mut body: Value =
        serde_json::from_slice(&read_trace_request("browser-carla-step0").unwrap()).unwrap();
    body["conversationId"] = conversation.into();
    let last = body["messages"].as_array_mut().unwrap().last_mut().unwrap();
    last["content"] = text.into();
    serde_json::to_vec(&body).unwrap()
}

/// A posted step's answer: status, whether it is a replay, and the body.
async fn post(
    srv: &dpas_tests::server::TestServer,
    body: &[u8],
    role: &str,
) -> (u16, bool, Vec<u8>) {
    let resp = send(srv, body, role).await;
    let status = resp.status().as_u16();
    let replay = resp.headers().get("dpas-step-replay").is_some();
    (status, replay, resp.bytes().await.unwrap().to_vec())
}

async fn send(srv: &dpas_tests::server::TestServer, body: &[u8], role: &str) -> reqwest::Response {
    srv.http
        .post(srv.url("/agent/chat"))
        .header("content-type", "application/json")
        .header("cookie", srv.cookie(role))
        .body(body.to_vec())
        .send()
        .await
        .unwrap()
}

fn lines(body: &[u8]) -> Vec<Value> {
    body.split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect()
}

fn code(body: &[u8]) -> String {
    let v: Value = serde_json::from_slice(body).unwrap();
    v["error"]["code"].as_str().unwrap_or_default().to_owned()
}

#[actix_web::test]
async fn the_same_step_posted_twice_runs_once_and_answers_identical_frames() {
    let model = Gated::new(true);
    let srv = start(model.clone()).await;
    let body = step_body("cnv_steps_twice", "Hello?");
    let (status, replay, first) = post(&srv, &body, "controller").await;
    assert_eq!(
        (status, replay),
        (200, false),
        "{}",
        String::from_utf8_lossy(&first)
    );
    let frames = lines(&first);
    assert_eq!(frames.first().unwrap()["type"], "step-start");
    assert_eq!(frames.last().unwrap()["type"], "step-finish");

    let (status, replay, second) = post(&srv, &body, "controller").await;
    assert_eq!((status, replay), (200, true));
    assert_eq!(second, first, "the record answers byte for byte");
    assert_eq!(model.calls(), 1, "the model ran once");
}

#[actix_web::test]
async fn the_same_ids_with_another_body_are_a_step_conflict() {
    let model = Gated::new(true);
    let srv = start(model.clone()).await;
    let (status, _, _) = post(&srv, &step_body("cnv_steps_conflict", "one"), "controller").await;
    assert_eq!(status, 200);
    let (status, replay, body) =
        post(&srv, &step_body("cnv_steps_conflict", "two"), "controller").await;
    assert_eq!((status, replay), (409, false));
    assert_eq!(code(&body), "STEP_CONFLICT");
    assert_eq!(model.calls(), 1);
}

#[actix_web::test]
async fn another_owner_with_the_same_ids_runs_a_step_of_their_own() {
    let model = Gated::new(true);
    let srv = start(model.clone()).await;
    let body = step_body("cnv_steps_owners", "Hello?");
    let (_, _, carla) = post(&srv, &body, "controller").await;
    let (status, replay, ada) = post(&srv, &body, "analyst").await;
    assert_eq!((status, replay), (200, false));
    assert_eq!(model.calls(), 2, "each owner's step ran");
    let step_id = |body: &[u8]| lines(body)[0]["stepId"].clone();
    assert_ne!(
        step_id(&ada),
        step_id(&carla),
        "not the first owner's frames"
    );
}

#[actix_web::test]
async fn a_dropped_stream_posted_again_gets_the_whole_step() {
    let model = Gated::new(false);
    let srv = start(model.clone()).await;
    let body = step_body("cnv_steps_dropped", "Hello?");

    // The first connection reads up to the first text and is dropped mid-step.
    let mut stream = send(&srv, &body, "controller").await.bytes_stream();
    let mut seen = Vec::new();
    while !String::from_utf8_lossy(&seen).contains("Hello ") {
        seen.extend_from_slice(&stream.next().await.expect("a chunk").unwrap());
    }
    drop(stream);

    // Posted again while the run still waits: the frames so far, then the rest, live.
    let again = send(&srv, &body, "controller").await;
    assert_eq!(again.status(), 200);
    assert!(again.headers().get("dpas-step-replay").is_some());
    let mut again = again.bytes_stream();
    let mut resumed = Vec::new();
    while resumed.len() < seen.len() {
        resumed.extend_from_slice(&again.next().await.expect("a chunk").unwrap());
    }
    assert!(
        resumed.starts_with(&seen),
        "what the dropped connection saw comes first"
    );
    model.release();
    while let Some(chunk) = again.next().await {
        resumed.extend_from_slice(&chunk.unwrap());
    }
    let frames = lines(&resumed);
    assert_eq!(frames.first().unwrap()["type"], "step-start");
    assert_eq!(frames.last().unwrap()["type"], "step-finish");
    let text: String = frames
        .iter()
        .filter(|f| f["type"] == "text-delta")
        .filter_map(|f| f["text"].as_str())
        .collect();
    assert_eq!(text, "Hello world");
    assert_eq!(model.calls(), 1, "the run was never started twice");

    // Finished: a third post is the record, the same bytes.
    let (status, replay, third) = post(&srv, &body, "controller").await;
    assert_eq!((status, replay, third), (200, true, resumed));
}

#[actix_web::test]
async fn a_step_whose_replica_stopped_mid_run_is_interrupted() {
    let model = Gated::new(true);
    let srv = start(model.clone()).await;
    let body = step_body("cnv_steps_stale", "Hello?");
    // A record some other replica claimed a minute ago and has not heartbeat since.
    let key = StepKey {
        owner: "carla@example.com".into(),
        conversation_id: "cnv_steps_stale".into(),
        turn_id: serde_json::from_slice::<Value>(&body).unwrap()["turnId"]
            .as_str()
            .unwrap()
            .into(),
        step_index: 0,
    };
    let digest = hex::encode(Sha256::digest(&body));
    let then = OffsetDateTime::now_utc() - std::time::Duration::from_secs(60);
    let store = SqlStepStore::new(srv.state.pool.clone());
    let claimed = store
        .claim(
            &key,
            &digest,
            "rpl_gone",
            then,
            then + std::time::Duration::from_secs(3600),
        )
        .await
        .unwrap();
    assert_eq!(claimed, dpas_governance::steps::Claim::Claimed);

    let (status, _, answer) = post(&srv, &body, "controller").await;
    assert_eq!(status, 503);
    assert_eq!(code(&answer), "STEP_INTERRUPTED");
    assert_eq!(model.calls(), 0, "nothing ran it again");
}
