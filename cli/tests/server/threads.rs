//! Threads belong to their owner: another user can neither read, append to nor delete them,
//! and may use the same id for a thread of their own.

use dpas_governance::threads::{ThreadAppend, ThreadCaps, ThreadError, ThreadStore};
use dpas_protocol::{Usage, WireModelMessage};
use dpas_store::SqlThreadStore;
use serde_json::{json, Value};

use crate::common::{ada, carla, start};

fn typed(values: &[Value]) -> Vec<WireModelMessage> {
    values
        .iter()
        .map(|v| serde_json::from_value(v.clone()).expect("a model message"))
        .collect()
}

fn appending(m: &[WireModelMessage]) -> ThreadAppend<'_> {
    ThreadAppend {
        messages: m.iter().collect(),
        ..ThreadAppend::default()
    }
}

#[actix_web::test]
async fn threads_are_scoped_to_their_owner() {
    let s = start().await;
    let carla_cookie = s.sign_in("controller").await;
    let ada_cookie = s.sign_in("analyst").await;
    let store = &s.state.threads;

    let first = vec![
        json!({"role": "user", "content": "Which invoices are overdue, and by how much?"}),
        json!({"role": "assistant", "content": [{"type": "tool-call", "toolCallId": "stc_3", "toolName": "domain_collections-aging", "input": {}}]}),
    ];
    let usage: Usage = serde_json::from_value(json!({"inputTokens": 16, "outputTokens": 16, "totalTokens": 32, "cachedInputTokens": 8, "reasoningTokens": 4, "reportedSteps": 1})).unwrap();
    let first_typed = typed(&first);
    store
        .append(
            &carla().id,
            "cnv_carla",
            ThreadAppend {
                usage: Some(usage),
                ..appending(&first_typed)
            },
        )
        .await
        .expect("append");
    let second = vec![
        json!({"role": "tool", "content": [{"type": "tool-result", "toolCallId": "stc_3", "toolName": "domain_collections-aging", "output": {"type": "json", "value": {"status": "ok", "data": []}}}]}),
    ];
    let second_typed = typed(&second);
    store
        .append(
            &carla().id,
            "cnv_carla",
            ThreadAppend {
                usage: Some(usage),
                ..appending(&second_typed)
            },
        )
        .await
        .expect("append");
    let other = typed(&[json!({"role": "user", "content": "Second"})]);
    store
        .append(&carla().id, "cnv_carla_2", appending(&other))
        .await
        .expect("append");

    let list = s.get("/api/threads", Some(&carla_cookie)).await;
    assert_eq!(list.status, 200);
    let ids: Vec<&str> = list
        .body
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["id"].as_str())
        .collect();
    assert_eq!(
        ids,
        ["cnv_carla_2", "cnv_carla"],
        "most recently updated first"
    );

    let meta = s.get("/api/threads/cnv_carla", Some(&carla_cookie)).await;
    assert_eq!(meta.status, 200);
    assert_eq!(
        meta.body["title"],
        "Which invoices are overdue, and by how much?"
    );
    assert_eq!(meta.body["resourceId"], "carla@example.com");
    assert_eq!(
        meta.body["usage"],
        json!({"inputTokens": 32, "outputTokens": 32, "totalTokens": 64, "cachedInputTokens": 16, "reasoningTokens": 8, "reportedSteps": 2})
    );
    assert!(meta.body.get("messages").is_none());
    let messages = s
        .get("/api/threads/cnv_carla/model-messages", Some(&carla_cookie))
        .await;
    let expected: Vec<_> = first.into_iter().chain(second).collect();
    assert_eq!(
        messages.body,
        json!(expected),
        "messages come back exactly as stored"
    );

    // Ada sees none of it, and cannot reach it by id.
    assert_eq!(
        s.get("/api/threads", Some(&ada_cookie)).await.body,
        json!([])
    );
    for path in [
        "/api/threads/cnv_carla",
        "/api/threads/cnv_carla/model-messages",
    ] {
        let r = s.get(path, Some(&ada_cookie)).await;
        assert_eq!(
            (r.status, r.body),
            (
                404,
                json!({"error": {"code": "NOT_FOUND", "message": "Not found."}})
            ),
            "{path}"
        );
    }
    assert_eq!(
        s.send("DELETE", "/api/threads/cnv_carla", Some(&ada_cookie), None)
            .await
            .status,
        404
    );
    // The same id is Ada's own thread: it never touches Carla's.
    let adas = typed(&[json!({"role": "user", "content": "mine now"})]);
    store
        .append(&ada().id, "cnv_carla", appending(&adas))
        .await
        .expect("Ada may use any id");
    let ada_messages = s
        .get("/api/threads/cnv_carla/model-messages", Some(&ada_cookie))
        .await;
    assert_eq!(
        ada_messages.body,
        json!([{"role": "user", "content": "mine now"}])
    );
    assert_eq!(
        s.get("/api/threads/cnv_carla/model-messages", Some(&carla_cookie))
            .await
            .body
            .as_array()
            .map(Vec::len),
        Some(3)
    );

    let deleted = s
        .send(
            "DELETE",
            "/api/threads/cnv_carla",
            Some(&carla_cookie),
            None,
        )
        .await;
    assert_eq!((deleted.status, deleted.body), (200, json!({"ok": true})));
    assert_eq!(
        s.get("/api/threads/cnv_carla", Some(&carla_cookie))
            .await
            .status,
        404
    );
    assert_eq!(
        s.get("/api/threads/cnv_carla", Some(&ada_cookie))
            .await
            .status,
        200,
        "Carla's delete leaves Ada's thread of the same id alone"
    );
}

/// The store on each backend (in-memory SQLite; PostgreSQL when installed).
async fn stores(caps: ThreadCaps) -> Vec<SqlThreadStore> {
    let mut out = Vec::new();
    for url in crate::pg::backends().await {
        let db = dpas_store::connect(&url).await.expect("database");
        out.push(SqlThreadStore::new(db, caps));
    }
    out
}

fn user(text: &str) -> WireModelMessage {
    WireModelMessage::user_text(text)
}

fn as_json(m: &[WireModelMessage]) -> Vec<Value> {
    m.iter().map(|m| serde_json::to_value(m).unwrap()).collect()
}

#[actix_web::test]
async fn a_full_thread_refuses_the_whole_append_and_keeps_what_it_had() {
    for store in stores(ThreadCaps {
        messages: 3,
        bytes: 1_000,
    })
    .await
    {
        let usage = Usage {
            input_tokens: 5,
            output_tokens: 2,
            total_tokens: 7,
            reported_steps: 1,
            ..Usage::default()
        };
        let two = [user("one"), user("two")];
        store
            .append(
                "o",
                "t",
                ThreadAppend {
                    usage: Some(usage),
                    ..appending(&two)
                },
            )
            .await
            .expect("within the cap");
        let more = [user("three"), user("four")];
        let refused = store
            .append(
                "o",
                "t",
                ThreadAppend {
                    usage: Some(usage),
                    ..appending(&more)
                },
            )
            .await;
        assert!(
            matches!(
                refused,
                Err(ThreadError::Full(ThreadCaps { messages: 3, .. }))
            ),
            "{refused:?}"
        );
        assert_eq!(store.messages("o", "t").await.unwrap().unwrap(), two);
        assert_eq!(
            store.get("o", "t").await.unwrap().unwrap().usage,
            Some(usage),
            "a refused step adds no usage either"
        );
        let one = [user("three")];
        store
            .append("o", "t", appending(&one))
            .await
            .expect("exactly at the cap");

        // Bytes count too: one message larger than the cap is refused on a fresh thread.
        let big = [user(&"x".repeat(1_000))];
        assert!(matches!(
            store.append("o", "big", appending(&big)).await,
            Err(ThreadError::Full(_))
        ));
        assert!(
            store.get("o", "big").await.unwrap().is_none(),
            "nothing created"
        );
    }
}

#[actix_web::test]
async fn concurrent_appends_to_one_thread_are_stored_whole_and_in_commit_order() {
    for store in stores(ThreadCaps::from_limits(1 << 20)).await {
        let steps: Vec<[WireModelMessage; 2]> = (0..24)
            .map(|i| [user(&format!("q{i}")), user(&format!("a{i}"))])
            .collect();
        let appends = steps
            .iter()
            .map(|step| store.append("o", "t", appending(step)));
        for done in futures_util::future::join_all(appends).await {
            done.expect("append");
        }
        let stored = as_json(&store.messages("o", "t").await.unwrap().unwrap());
        assert_eq!(stored.len(), 48);
        for pair in stored.chunks(2) {
            let q = pair[0]["content"].as_str().unwrap();
            let a = pair[1]["content"].as_str().unwrap();
            assert_eq!(
                &q[1..],
                &a[1..],
                "a step's messages are never interleaved: {stored:?}"
            );
        }
    }
}

#[actix_web::test]
async fn posted_results_are_stored_once_and_only_for_the_threads_open_calls() {
    for store in stores(ThreadCaps::from_limits(1 << 20)).await {
        let step0: Vec<WireModelMessage> = typed(&[
            json!({"role": "user", "content": "go"}),
            json!({"role": "assistant", "content": [
                {"type": "tool-call", "toolCallId": "srv", "toolName": "domain_x", "input": {}},
                {"type": "tool-call", "toolCallId": "brw", "toolName": "view_y", "input": {}}
            ]}),
            json!({"role": "tool", "content": [{"type": "tool-result", "toolCallId": "srv", "toolName": "domain_x", "output": {"type": "json", "value": 1}}]}),
        ]);
        store.append("o", "t", appending(&step0)).await.unwrap();
        // Step 1 posts the whole history back: the server result again, the browser's result,
        // and a result for a call this thread never held.
        let posted = typed(&[json!({"role": "tool", "content": [
            {"type": "tool-result", "toolCallId": "srv", "toolName": "domain_x", "output": {"type": "json", "value": 1}},
            {"type": "tool-result", "toolCallId": "brw", "toolName": "view_y", "output": {"type": "json", "value": 2}},
            {"type": "tool-result", "toolCallId": "elsewhere", "toolName": "view_z", "output": {"type": "json", "value": 3}}
        ]})]);
        let reply = typed(&[json!({"role": "assistant", "content": "done"})]);
        for _ in 0..2 {
            store
                .append(
                    "o",
                    "t",
                    ThreadAppend {
                        answers: posted.iter().collect(),
                        ..appending(&reply)
                    },
                )
                .await
                .unwrap();
        }
        let stored = as_json(&store.messages("o", "t").await.unwrap().unwrap());
        assert_eq!(
            stored[3],
            json!({"role": "tool", "content": [{"type": "tool-result", "toolCallId": "brw", "toolName": "view_y", "output": {"type": "json", "value": 2}}]})
        );
        assert_eq!(stored[4], json!({"role": "assistant", "content": "done"}));
        assert_eq!(
            stored[5],
            json!({"role": "assistant", "content": "done"}),
            "the second post stores no result again"
        );
        assert_eq!(stored.len(), 6);
    }
}

#[actix_web::test]
async fn an_owner_keeps_the_fifty_most_recently_updated_threads() {
    for store in stores(ThreadCaps::from_limits(1 << 20)).await {
        let one = [user("hi")];
        store.append("p", "t0", appending(&one)).await.unwrap();
        for i in 0..50 {
            store
                .append("o", &format!("t{i}"), appending(&one))
                .await
                .unwrap();
        }
        // t0 is the least recently created, but updating it makes t1 the least recently updated.
        store.append("o", "t0", appending(&one)).await.unwrap();
        store.append("o", "t50", appending(&one)).await.unwrap();
        let ids: Vec<String> = store
            .list("o")
            .await
            .unwrap()
            .into_iter()
            .map(|m| m.id)
            .collect();
        assert_eq!(ids.len(), 50);
        assert_eq!(ids[0], "t50");
        assert_eq!(ids[1], "t0");
        assert!(!ids.contains(&"t1".to_owned()), "{ids:?}");
        assert!(store.messages("o", "t1").await.unwrap().is_none());
        assert_eq!(store.messages("o", "t0").await.unwrap().unwrap().len(), 2);
        assert_eq!(
            store.list("p").await.unwrap().len(),
            1,
            "another owner's threads are not counted"
        );
    }
}
