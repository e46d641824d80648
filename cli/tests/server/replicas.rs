//! Two replicas (each its own pool, runtime, session keys and HTTP server, as two processes
//! would have) with one secret on one PostgreSQL database act as one service.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use dpas_governance::threads::ThreadAppend;
use dpas_governance::{Capability, Risk, SideEffect};
use dpas_protocol::WireModelMessage;
use host_server::session::REVOCATION_REFRESH;
use host_server::CallSurface;
use serde_json::{json, Value};

use crate::common::{builder, start_with, TestServer};

/// A replica on `url` whose `count-run` capability (approval-gated) adds one to `runs`
/// each time it executes: the outside world both replicas act on.
async fn replica(url: &str, runs: Arc<AtomicUsize>) -> TestServer {
    let url = url.to_owned();
    let app = builder()
        .with_config(move |c| c.database_url = url)
        .register(move |rt, _db| {
            rt.capability(
                Capability::builder("count-run")
                    .description("Counts its runs.")
                    .side_effect(SideEffect::Destructive)
                    .risk(Risk::High)
                    .expose(&[CallSurface::Direct, CallSurface::Model])
                    .approval_required(true)
                    .handler(move |_ctx, _i: serde_json::Map<String, Value>| {
                        let runs = runs.clone();
                        async move { Ok(json!({"run": runs.fetch_add(1, Ordering::SeqCst) + 1})) }
                    }),
            )
        });
    start_with(app).await
}

#[actix_web::test]
async fn two_replicas_on_one_database_act_as_one_service() {
    let Some(url) = crate::pg::fresh_database().await else {
        return;
    };
    let runs = Arc::new(AtomicUsize::new(0));
    // Started together on an empty database: both seed-if-empty, one seeds.
    let (a, b) = tokio::join!(replica(&url, runs.clone()), replica(&url, runs.clone()));

    // A session from one is valid on the other.
    let carla = a.sign_in("controller").await;
    let me = b.get("/api/session", Some(&carla)).await;
    assert_eq!(me.status, 200, "{}", me.body);
    assert_eq!(me.body["user"]["email"], "carla@example.com");

    // The ledger was seeded once: the seed's invoices, each once, on both.
    let (_, through_a) = a.rpc(&carla, "list-invoices", json!({"kind": "all"})).await;
    let (_, through_b) = b.rpc(&carla, "list-invoices", json!({"kind": "all"})).await;
    assert_eq!(through_a["data"], through_b["data"]);
    let ids: Vec<i64> = through_a["data"]
        .as_array()
        .expect("rows")
        .iter()
        .filter_map(|r| r["id"].as_i64())
        .collect();
    let mut unique = ids.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!((ids.len(), unique.len()), (unique.len(), unique.len()));
    assert!(!ids.is_empty());

    // A thread written through one reads on the other.
    let message = WireModelMessage::user_text("Which invoices are overdue?");
    a.state
        .threads
        .append(
            "carla@example.com",
            "cnv_shared",
            ThreadAppend {
                messages: vec![&message],
                ..ThreadAppend::default()
            },
        )
        .await
        .expect("stored through A");
    let read = b
        .get("/api/threads/cnv_shared/model-messages", Some(&carla))
        .await;
    assert_eq!(read.status, 200);
    assert_eq!(
        read.body,
        json!([{"role": "user", "content": "Which invoices are overdue?"}])
    );

    // An approval requested through A, decided by many racing requests through both: it
    // executes exactly once and exactly one decision is told it ran.
    let approval = a
        .carla_awaits_approval(CallSurface::Model, "count-run", json!({}))
        .await;
    let path = format!("/api/approvals/{approval}");
    let decisions = (0..12).map(|i| {
        let (server, path, cookie) = (
            if i % 2 == 0 { &a } else { &b },
            path.clone(),
            carla.clone(),
        );
        async move {
            server
                .post(&path, Some(&cookie), json!({"approved": true}))
                .await
        }
    });
    let replies = futures_util::future::join_all(decisions).await;
    let statuses: Vec<u16> = replies.iter().map(|r| r.status).collect();
    assert_eq!(runs.load(Ordering::SeqCst), 1, "{statuses:?}");
    assert_eq!(
        statuses.iter().filter(|s| **s == 200).count(),
        1,
        "{statuses:?}"
    );
    assert!(
        statuses.iter().all(|s| *s == 200 || *s == 409),
        "{statuses:?}"
    );
    let won = replies.iter().find(|r| r.status == 200).expect("a winner");
    assert_eq!(
        won.body["resolution"]["status"], "completed",
        "{}",
        won.body
    );
    for server in [&a, &b] {
        let card = server.get(&path, Some(&carla)).await;
        assert_eq!(card.body["status"], "consumed");
    }

    // The audit entries of that run were stored by the replica that ran it and read on both.
    let audit_a = a.get("/api/audit?limit=500", Some(&carla)).await;
    let audit_b = b.get("/api/audit?limit=500", Some(&carla)).await;
    assert_eq!(audit_a.status, 200, "{}", audit_a.body);
    let approved = |body: &Value| {
        body["entries"]
            .as_array()
            .expect("entries")
            .iter()
            .filter(|e| e["type"] == "approval.approved" && e["data"]["approvalId"] == approval)
            .count()
    };
    assert_eq!(approved(&audit_b.body), 1, "{}", audit_b.body);
    assert_eq!(approved(&audit_a.body), 1);

    // Signing out through A is honoured by B within the documented bound.
    let out = a.send("DELETE", "/api/session", Some(&carla), None).await;
    assert_eq!(out.status, 200, "{}", out.body);
    assert_eq!(a.get("/api/session", Some(&carla)).await.status, 401);
    let deadline = Instant::now() + REVOCATION_REFRESH * 3;
    loop {
        let status = b.get("/api/session", Some(&carla)).await.status;
        if status == 401 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "B still accepts a session signed out through A"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A replica on `url` whose doors run `model`.
async fn step_replica(url: &str, model: Arc<dpas_tests::gated::Gated>) -> TestServer {
    let url = url.to_owned();
    let chat = dpas_engine::ChatConfig {
        models: dpas_engine::ModelSet::new(vec![model]),
        floors: Arc::new(dpas_demo::route_floors()),
        app_prompt: Arc::from(dpas_demo::APP_PROMPT),
        model_timeout: Duration::from_secs(45),
    };
    crate::common::start_with_routes(
        builder().with_config(move |c| c.database_url = url),
        host_server::doors::mount(chat),
    )
    .await
}

/// The same step posted to two replicas sharing PostgreSQL runs once: the second replica
/// waits for the first's record and answers it byte for byte.
#[actix_web::test]
async fn a_step_posted_to_two_replicas_runs_once() {
    let Some(url) = crate::pg::fresh_database().await else {
        return;
    };
    let model = dpas_tests::gated::Gated::new(false);
    let (a, b) = tokio::join!(
        step_replica(&url, model.clone()),
        step_replica(&url, model.clone())
    );
    let carla = a.sign_in("controller").await;
    let body = dpas_tests::read_trace_request("browser-carla-step0").unwrap();
    let post = |s: &TestServer| {
        s.http
            .post(s.url("/agent/chat"))
            .header("content-type", "application/json")
            .header("cookie", carla.clone())
            .body(body.clone())
            .send()
    };

    // A runs it and waits mid-step; B, asked the same, waits on A's record.
    let through_a = post(&a).await.unwrap();
    assert_eq!(through_a.status(), 200);
    assert!(through_a.headers().get("dpas-step-replay").is_none());
    let through_b = tokio::spawn(post(&b));
    // B's answer cannot come before A's step ends: A's run is held at the model until B is
    // waiting for A's record.
    let log = b
        .state
        .engine
        .step_log
        .clone()
        .expect("step records are kept");
    let deadline = Instant::now() + Duration::from_secs(10);
    while log.waiting_elsewhere() == 0 {
        assert!(Instant::now() < deadline, "B never waited for A's step");
        tokio::task::yield_now().await;
    }
    model.release();
    let a_body = through_a.bytes().await.unwrap();
    let through_b = through_b.await.unwrap().unwrap();
    assert_eq!(through_b.status(), 200);
    assert!(through_b.headers().get("dpas-step-replay").is_some());
    assert_eq!(
        through_b.bytes().await.unwrap(),
        a_body,
        "B answers A's record"
    );
    assert_eq!(model.calls(), 1, "the model ran once across the replicas");
}
