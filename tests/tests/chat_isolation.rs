//! Actor isolation of inspector frames, and runs that outlive their client.

use std::time::{Duration, Instant};

use dpas_protocol::Frame;
use dpas_tests::server::{self, ChatReply};
use futures_util::StreamExt;
use serde_json::{json, Value};

/// A step of a new turn each call: a client posts every user message as a turn of its own (the
/// same ids again would be the same step, answered from its record).
fn request(conversation: &str, text: &str) -> Value {
    static TURNS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let turn = TURNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    json!({
        "protocolVersion": 2,
        "conversationId": conversation,
        "turnId": format!("trn_{turn}"),
        "stepIndex": 0,
        "pathname": "/receivables/pending",
        "messages": [{"role": "user", "content": text}],
        "catalog": {"mode": "direct", "frontendTools": []}
    })
}

fn capability_frames(reply: &ChatReply) -> Vec<(String, String)> {
    reply
        .frames
        .iter()
        .filter_map(|f| match f {
            Frame::Inspector(i) if i.event_type.starts_with("capability.") => Some((
                i.correlation.as_ref().unwrap()["capabilityId"]
                    .as_str()
                    .unwrap()
                    .to_owned(),
                i.correlation.as_ref().unwrap()["conversationId"]
                    .as_str()
                    .unwrap()
                    .to_owned(),
            )),
            _ => None,
        })
        .collect()
}

#[actix_web::test]
async fn concurrent_users_never_see_each_others_inspector_entries() {
    // Both steps run their server call inside the same window; each must see only its own.
    let srv = server::start_script(
        r#"{"turns": [
            {"when": {"lastUserContains": "carla"}, "delayMs": 150, "toolCalls": [{"name": "domain_receivables-summary"}]},
            {"when": {"lastUserContains": "ada"}, "delayMs": 150, "toolCalls": [{"name": "domain_collections-aging"}]},
            {"when": {}, "text": ["done"]}
        ]}"#,
    )
    .await;
    for _ in 0..3 {
        let (carla_body, ada_body) = (
            request("cnv_carla", "carla asks"),
            request("cnv_ada", "ada asks"),
        );
        let (carla, ada) = tokio::join!(
            srv.chat(&carla_body, "controller"),
            srv.chat(&ada_body, "analyst")
        );
        let carla_seen = capability_frames(&carla);
        let ada_seen = capability_frames(&ada);
        assert!(!carla_seen.is_empty() && !ada_seen.is_empty());
        assert!(
            carla_seen
                .iter()
                .all(|(cap, conv)| cap == "receivables-summary" && conv == "cnv_carla"),
            "{carla_seen:?}"
        );
        assert!(
            ada_seen
                .iter()
                .all(|(cap, conv)| cap == "collections-aging" && conv == "cnv_ada"),
            "{ada_seen:?}"
        );
    }
}

#[actix_web::test]
async fn a_departed_client_never_stops_persistence() {
    let srv = server::start_script(
        r#"{"turns": [{"delayMs": 300, "text": ["Summary coming."], "toolCalls": [{"name": "domain_receivables-summary"}]}, {"text": ["Outstanding is €200,500."]}]}"#,
    )
    .await;
    let resp = srv
        .http
        .post(srv.url("/agent/chat"))
        .header("cookie", srv.cookie("controller"))
        .json(&request("cnv_gone", "what is outstanding?"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let mut body = resp.bytes_stream();
    let first = body.next().await.unwrap().unwrap();
    assert!(first.starts_with(b"{\"type\":\"step-start\""));
    drop(body); // the client goes away after the first frame

    let owner = "carla@example.com";
    let deadline = Instant::now() + Duration::from_secs(10);
    let stored = loop {
        let messages = srv.state.threads.messages(owner, "cnv_gone").await.unwrap();
        if let Some(m) = messages.filter(|m| m.len() >= 4) {
            break serde_json::to_value(m).unwrap();
        }
        assert!(Instant::now() < deadline, "the thread was not written");
        tokio::time::sleep(Duration::from_millis(25)).await;
    };
    let roles: Vec<&str> = stored
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "tool", "assistant"]);
    assert_eq!(stored[2]["content"][0]["output"]["value"]["status"], "ok");
    let meta = srv
        .state
        .threads
        .get(owner, "cnv_gone")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(meta.usage.unwrap().reported_steps, 2);
}

/// What a step's frames say, with the ids that differ between two steps left out.
fn shape(reply: &ChatReply) -> Vec<(String, String)> {
    reply
        .frames
        .iter()
        .map(|f| match f {
            Frame::Inspector(i) => ("inspector".to_owned(), i.event_type.clone()),
            Frame::TextDelta { text } => ("text-delta".to_owned(), text.clone()),
            other => (
                serde_json::to_value(other).unwrap()["type"]
                    .as_str()
                    .unwrap()
                    .to_owned(),
                String::new(),
            ),
        })
        .collect()
}

#[actix_web::test]
async fn any_user_may_use_any_conversation_id_and_learns_nothing_of_others() {
    let srv = server::start_script(r#"{"turns": [{"text": ["hello"]}]}"#).await;
    let first = srv
        .chat(&request("cnv_shared", "carla's question"), "controller")
        .await;
    assert_eq!(first.status, 200);
    // Ada posts Carla's id, and an id nobody has: the two answers must not differ.
    let taken = srv
        .chat(&request("cnv_shared", "ada's question"), "analyst")
        .await;
    let fresh = srv
        .chat(&request("cnv_nobody", "ada's question"), "analyst")
        .await;
    assert_eq!(taken.status, 200);
    assert_eq!(
        shape(&taken),
        shape(&fresh),
        "no answer tells that the id is taken"
    );
    assert!(
        taken
            .frames
            .iter()
            .all(|f| !matches!(f, Frame::Inspector(i) if i.event_type.starts_with("thread."))),
        "{:?}",
        taken.types()
    );

    let srv = &srv;
    let texts = |owner: &'static str| async move {
        let stored = srv
            .state
            .threads
            .messages(owner, "cnv_shared")
            .await
            .unwrap()
            .expect("each user has a thread of this id");
        stored
            .iter()
            .map(|m| serde_json::to_value(m).unwrap()["content"].clone())
            .collect::<Vec<_>>()
    };
    let carla = texts("carla@example.com").await;
    assert_eq!(carla.len(), 2);
    assert_eq!(carla[0], "carla's question");
    let ada = texts("ada@example.com").await;
    assert_eq!(ada.len(), 2);
    assert_eq!(
        ada[0], "ada's question",
        "Ada's step is saved in her own thread"
    );
}

#[actix_web::test]
async fn a_thread_at_its_cap_says_the_step_was_not_saved() {
    // The thread's byte cap is the body limit: a few steps of one conversation fill it.
    let srv = server::start_with(server::Options {
        model: server::Model::Script(
            r#"{"turns": [{"text": ["a reply of some length, repeated to fill the thread"]}]}"#,
        ),
        body_limit: Some(1_500),
        ..server::Options::default()
    })
    .await;
    let owner = "carla@example.com";
    let mut full = None;
    for i in 0..20 {
        let reply = srv
            .chat(&request("cnv_long", &format!("question {i}")), "controller")
            .await;
        assert_eq!(reply.status, 200);
        assert_eq!(reply.finish().finish_reason, "stop");
        let frame = reply.frames.iter().find_map(|f| match f {
            Frame::Inspector(i) if i.event_type == "thread.full" => Some(i.clone()),
            _ => None,
        });
        if let Some(frame) = frame {
            full = Some((i, frame));
            break;
        }
    }
    let (step, frame) = full.expect("the thread fills up and the step says so");
    assert!(step > 0);
    assert_eq!(frame.data.as_ref().unwrap()["maxBytes"], 1_500);
    let stored = srv
        .state
        .threads
        .messages(owner, "cnv_long")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        stored.len(),
        2 * step,
        "every step before the full one, and nothing of it"
    );
}

#[actix_web::test]
async fn audit_entries_a_reader_could_not_keep_are_reported_after_step_finish() {
    use dpas_governance::{
        AuditDraft, AuditHub, AuditSource, CallSurface, Capability, Risk, SideEffect,
    };
    use server::Options;

    // A capability whose run writes more audit entries for this actor than a reader keeps.
    let hub = AuditHub::new();
    let flood_hub = hub.clone();
    let register: server::Registration = Box::new(move |rt, _pool| {
        rt.capability(
            Capability::builder("flood")
                .description("Writes many audit entries.")
                .side_effect(SideEffect::Read)
                .risk(Risk::Low)
                .tags(["invoices"])
                .expose(&[CallSurface::Model])
                .handler(move |ctx, _i: serde_json::Map<String, Value>| {
                    let hub = flood_hub.clone();
                    async move {
                        for n in 0..300 {
                            hub.record(AuditDraft {
                                actor_id: Some(ctx.actor.id.clone()),
                                data: Some(json!({"n": n})),
                                ..AuditDraft::new(AuditSource::Domain, "flood.entry")
                            });
                        }
                        Ok(json!({"written": 300}))
                    }
                }),
        )
    });
    let srv = server::start_with(Options {
        model: server::Model::Script(
            r#"{"turns": [{"toolCalls": [{"name": "domain_flood"}]}, {"text": ["done"]}]}"#,
        ),
        register: Some(register),
        audit: Some(hub),
        ..Options::default()
    })
    .await;
    let reply = srv.chat(&request("cnv_flood", "flood"), "controller").await;
    let types = reply.types();
    let finish_at = types.iter().position(|t| t == "step-finish").unwrap();
    let Some(Frame::Inspector(dropped)) = reply.frames.get(finish_at + 1) else {
        panic!("inspector.dropped follows step-finish: {types:?}")
    };
    assert_eq!(dropped.event_type, "inspector.dropped");
    let n = dropped.data.as_ref().unwrap()["dropped"].as_u64().unwrap();
    // This actor's entries during the step: 300 floods plus requested/started/completed.
    let forwarded = reply
        .frames
        .iter()
        .filter(|f| {
            matches!(f, Frame::Inspector(i)
                if i.event_type == "flood.entry" || i.event_type.starts_with("capability."))
        })
        .count() as u64;
    assert!(n > 0);
    assert_eq!(
        forwarded + n,
        303,
        "every entry is either forwarded or counted as dropped"
    );
    assert_eq!(
        dropped.summary,
        format!("{n} audit entries dropped — reader fell behind")
    );
}
