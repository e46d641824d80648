//! The audit stream: entries per pipeline stage, the actor filter and the bounded reader.

use dpas_governance::audit::SUBSCRIBER_CAPACITY;
use dpas_governance::{AuditDraft, AuditSource, CallSurface};
use host_server::Correlation;
use serde_json::json;

use crate::common::{ada, carla, start};

#[actix_web::test]
async fn invocations_are_audited_per_actor_with_correlation() {
    let s = start().await;
    let rt = &s.state.runtime;
    let mut carla_reader = rt.subscribe(Some(&carla().id));
    let mut everyone = rt.subscribe(None);

    let correlation = Correlation {
        conversation_id: Some("cnv_a".into()),
        turn_id: Some("trn_a".into()),
        step_id: Some("stp_a".into()),
        invocation_id: Some("stc_3".into()),
    };
    let env = rt
        .invoke(
            &carla(),
            CallSurface::Model,
            "collections-aging",
            json!({}),
            correlation.clone(),
        )
        .await;
    assert_eq!(env["status"], "ok");
    rt.invoke(
        &ada(),
        CallSurface::Model,
        "delete-invoice",
        json!({"id": 10}),
        Correlation::default(),
    )
    .await;
    s.state
        .runtime
        .audit()
        .record(AuditDraft::new(AuditSource::Host, "catalog.undecodable"));

    let mine = carla_reader.drain();
    let kinds: Vec<&str> = mine.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "capability.requested",
            "capability.started",
            "capability.completed"
        ]
    );
    for e in &mine {
        assert_eq!(e.actor_id.as_deref(), Some("carla@example.com"));
        assert_eq!(e.capability_id.as_deref(), Some("collections-aging"));
        assert_eq!(e.correlation, correlation);
        assert!(e
            .execution_id
            .as_deref()
            .is_some_and(|x| x.starts_with("exe_")));
    }
    assert_eq!(
        mine[0].data,
        Some(json!({"sideEffect": "read", "risk": "low"}))
    );
    assert_eq!(mine[1].data, Some(json!({"attempt": 1})));
    let completed = mine[2].data.clone().unwrap_or_default();
    assert!(completed["durationMs"].is_u64());
    assert_eq!(completed["attempts"], 1);
    let wire = serde_json::to_value(&*mine[0]).expect("serialises");
    assert_eq!(wire["type"], "capability.requested");
    assert_eq!(wire["actorId"], "carla@example.com");
    assert_eq!(wire["correlation"]["stepId"], "stp_a");
    assert_eq!(wire["correlation"]["invocationId"], "stc_3");
    assert_eq!(carla_reader.dropped(), 0);

    let all = everyone.drain();
    assert_eq!(
        all.len(),
        3 + 2 + 1,
        "carla's three, ada's requested + denied, and the host entry"
    );
    let denied = all
        .iter()
        .find(|e| e.kind == "capability.denied")
        .expect("denied entry");
    assert_eq!(denied.actor_id.as_deref(), Some("ada@example.com"));
    assert_eq!(
        denied.data,
        Some(json!({"reason": "hidden", "publicCode": "CAPABILITY_NOT_FOUND"}))
    );
    assert!(all
        .iter()
        .any(|e| e.kind == "catalog.undecodable" && e.actor_id.is_none()));
}

#[actix_web::test]
async fn a_slow_reader_keeps_its_bound_and_counts_what_it_dropped() {
    let s = start().await;
    let hub = s.state.runtime.audit();
    let mut reader = hub.subscribe(Some("carla@example.com"));
    let extra = 57;
    for n in 0..(SUBSCRIBER_CAPACITY + extra) {
        hub.record(AuditDraft {
            actor_id: Some("carla@example.com".into()),
            data: Some(json!({"n": n})),
            ..AuditDraft::new(AuditSource::Host, "test.entry")
        });
        // Other actors' and actor-less entries neither reach this reader nor count as its drops.
        hub.record(AuditDraft {
            actor_id: Some("ada@example.com".into()),
            ..AuditDraft::new(AuditSource::Host, "test.other")
        });
        hub.record(AuditDraft::new(AuditSource::Host, "test.anonymous"));
    }
    let first = reader.try_next().expect("an entry is waiting");
    assert_eq!(first.data, Some(json!({"n": 0})));
    assert_eq!(reader.dropped(), extra as u64);
    let rest = reader.drain();
    assert_eq!(rest.len(), SUBSCRIBER_CAPACITY - 1);
    assert!(rest.iter().all(|e| e.kind == "test.entry"));
    assert_eq!(
        rest.last().and_then(|e| e.data.clone()),
        Some(json!({"n": SUBSCRIBER_CAPACITY - 1})),
        "the oldest are kept"
    );

    // Once drained, the reader has room again.
    hub.record(AuditDraft {
        actor_id: Some("carla@example.com".into()),
        ..AuditDraft::new(AuditSource::Host, "test.after")
    });
    assert_eq!(
        reader.next().await.map(|e| e.kind.clone()),
        Some("test.after".to_owned())
    );
    assert_eq!(reader.dropped(), extra as u64);
}

/// The audit table through `GET /api/audit`, on both backends: every entry the stream carries
/// is stored; a controller reads all, an analyst only their own; the cursor pages without
/// repeats; bad parameters are 400.
#[actix_web::test]
async fn stored_entries_are_read_by_cursor_under_the_owner_rules() {
    for url in crate::pg::backends().await {
        let s = crate::common::start_with(
            crate::common::builder().with_config(|c| c.database_url = url.clone()),
        )
        .await;
        let (carla_cookie, ada_cookie) =
            (s.sign_in("controller").await, s.sign_in("analyst").await);
        let mut everyone = s.state.runtime.subscribe(None);
        let (status, _) = s.rpc(&carla_cookie, "collections-aging", json!({})).await;
        assert_eq!(status, 200);
        let (status, _) = s.rpc(&ada_cookie, "collections-aging", json!({})).await;
        assert_eq!(status, 200);
        let streamed: Vec<String> = everyone.drain().iter().map(|e| e.id.clone()).collect();
        assert!(streamed.len() >= 2, "{streamed:?}");

        let all = s.get("/api/audit?limit=500", Some(&carla_cookie)).await;
        assert_eq!(all.status, 200, "{url}: {}", all.body);
        let entries = all.body["entries"].as_array().expect("entries").clone();
        let ids: Vec<String> = entries
            .iter()
            .map(|e| e["id"].as_str().expect("id").to_owned())
            .collect();
        assert_eq!(
            ids, streamed,
            "{url}: the table holds what the stream carried"
        );
        let actors: Vec<&str> = entries
            .iter()
            .filter_map(|e| e["actorId"].as_str())
            .collect();
        assert!(actors.contains(&"ada@example.com") && actors.contains(&"carla@example.com"));

        let own = s.get("/api/audit?limit=500", Some(&ada_cookie)).await;
        let own = own.body["entries"].as_array().expect("entries").clone();
        assert!(!own.is_empty());
        assert!(
            own.iter().all(|e| e["actorId"] == "ada@example.com"),
            "{own:?}"
        );

        // Paging by cursor: one at a time, each once, in order, then nothing.
        let mut since = 0;
        let mut paged = Vec::new();
        loop {
            let page = s
                .get(
                    &format!("/api/audit?since={since}&limit=1"),
                    Some(&carla_cookie),
                )
                .await
                .body;
            let batch = page["entries"].as_array().expect("entries").clone();
            if batch.is_empty() {
                assert_eq!(page["next"], since);
                break;
            }
            assert_eq!(batch.len(), 1);
            since = page["next"].as_i64().expect("next");
            assert_eq!(batch[0]["seq"], since);
            paged.push(batch[0]["id"].as_str().expect("id").to_owned());
        }
        assert_eq!(paged, ids);

        for bad in [
            "limit=0",
            "limit=501",
            "since=-1",
            "since=x",
            "since=1&since=2",
            "page=2",
        ] {
            let reply = s
                .get(&format!("/api/audit?{bad}"), Some(&carla_cookie))
                .await;
            assert_eq!(
                (reply.status, reply.body["error"]["code"].clone()),
                (400, json!("BAD_REQUEST")),
                "{bad}"
            );
        }
        assert_eq!(s.get("/api/audit", None).await.status, 401);
    }
}

/// `--audit-retention`: with a row limit the table keeps the newest entries only, on both
/// backends; the old ones are gone, and `GET /api/audit` pages through what is kept as before.
#[actix_web::test]
async fn a_row_limit_keeps_the_newest_entries_and_the_api_reads_them() {
    use dpas_store::AuditRetention;
    const KEEP: u64 = 5;
    for url in crate::pg::backends().await {
        let s = crate::common::start_with(crate::common::builder().with_config(|c| {
            c.database_url = url.clone();
            c.audit_retention = AuditRetention::Rows(KEEP.try_into().expect("non-zero"));
        }))
        .await;
        let (carla_cookie, ada_cookie) =
            (s.sign_in("controller").await, s.sign_in("analyst").await);
        let hub = s.state.runtime.audit();
        let mut recorded = Vec::new();
        for n in 0..12 {
            let actor = if n % 2 == 0 { carla() } else { ada() };
            let entry = hub.record(AuditDraft {
                actor_id: Some(actor.id),
                ..AuditDraft::new(AuditSource::Host, format!("test.{n}"))
            });
            recorded.push(entry.id.clone());
            // Several batches, not one: a pause lets the writer store what it has.
            if n % 4 == 3 {
                s.state
                    .audit_log
                    .flush(std::time::Duration::from_secs(5))
                    .await;
            }
        }

        let all = s.get("/api/audit?limit=500", Some(&carla_cookie)).await;
        assert_eq!(all.status, 200, "{url}: {}", all.body);
        let entries = all.body["entries"].as_array().expect("entries").clone();
        let ids: Vec<&str> = entries
            .iter()
            .map(|e| e["id"].as_str().expect("id"))
            .collect();
        assert_eq!(
            ids,
            recorded[recorded.len() - 5..],
            "{url}: the newest {KEEP} stay"
        );
        let seqs: Vec<i64> = entries
            .iter()
            .map(|e| e["seq"].as_i64().expect("seq"))
            .collect();

        // From the start, the cursor reads on from the oldest entry kept, a page at a time.
        let page = s
            .get("/api/audit?since=0&limit=2", Some(&carla_cookie))
            .await
            .body;
        let first: Vec<i64> = page["entries"]
            .as_array()
            .expect("entries")
            .iter()
            .map(|e| e["seq"].as_i64().expect("seq"))
            .collect();
        assert_eq!(first, seqs[..2], "{url}");
        let rest = s
            .get(
                &format!("/api/audit?since={}&limit=500", page["next"]),
                Some(&carla_cookie),
            )
            .await
            .body;
        assert_eq!(
            rest["entries"].as_array().expect("entries").len(),
            3,
            "{url}"
        );

        // An analyst still reads only their own, among those kept.
        let own = s.get("/api/audit?limit=500", Some(&ada_cookie)).await.body;
        let own: Vec<&str> = own["entries"]
            .as_array()
            .expect("entries")
            .iter()
            .map(|e| e["id"].as_str().expect("id"))
            .collect();
        let expected: Vec<&str> = entries
            .iter()
            .filter(|e| e["actorId"] == "ada@example.com")
            .map(|e| e["id"].as_str().expect("id"))
            .collect();
        assert!(!expected.is_empty());
        assert_eq!(own, expected, "{url}");
    }
}
