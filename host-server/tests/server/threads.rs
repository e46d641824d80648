//! Threads belong to their owner: another user can neither read, append to nor delete them.

use host_server::threads::ThreadError;
use serde_json::json;

use crate::common::{ada, carla, start};

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
    let usage = json!({"inputTokens": 16, "outputTokens": 16, "totalTokens": 32, "cachedInputTokens": 8, "reasoningTokens": 4, "reportedSteps": 1});
    store
        .append(&carla().id, "cnv_carla", first.clone(), Some(usage.clone()))
        .await
        .expect("append");
    let second = vec![
        json!({"role": "tool", "content": [{"type": "tool-result", "toolCallId": "stc_3", "toolName": "domain_collections-aging", "output": {"type": "json", "value": {"status": "ok", "data": []}}}]}),
    ];
    store
        .append(
            &carla().id,
            "cnv_carla",
            second.clone(),
            Some(usage.clone()),
        )
        .await
        .expect("append");
    store
        .append(
            &carla().id,
            "cnv_carla_2",
            vec![json!({"role": "user", "content": "Second"})],
            None,
        )
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
    let hijack = store
        .append(
            &ada().id,
            "cnv_carla",
            vec![json!({"role": "user", "content": "mine now"})],
            None,
        )
        .await;
    assert!(
        matches!(hijack, Err(ThreadError::NotOwner(_))),
        "{hijack:?}"
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
}
