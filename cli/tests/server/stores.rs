//! The stores on both backends (in-memory SQLite; a throwaway PostgreSQL cluster when
//! installed): one life cycle, and on PostgreSQL the races between two pools on one database,
//! which is what two replicas are to it.

use std::time::Duration;

use dpas_demo::Ledger;
use dpas_governance::{
    approval::input_hash, ApprovalDecision, ApprovalRecord, ApprovalStatus, ApprovalStore,
    CapabilityErrorCode, Risk, SideEffect,
};
use dpas_store::{self as db, Backend, Db, SqlApprovalStore};
use host_server::{Actor, CallSurface};
use serde_json::json;
use time::macros::date;
use time::OffsetDateTime;

fn carla() -> Actor {
    Actor::user("carla@example.com", "Carla Controller", "controller")
}

fn record(id: &str, now: OffsetDateTime) -> ApprovalRecord {
    let input = json!({"id": 5});
    ApprovalRecord {
        id: id.to_owned(),
        capability_id: "issue-invoice".into(),
        surface: CallSurface::Model,
        actor: carla(),
        conversation_id: None,
        input_hash: input_hash(&input),
        input,
        reasons: vec!["r".into()],
        types: vec!["human-confirmation".into()],
        risk: Risk::High,
        side_effect: SideEffect::Destructive,
        requested_at: now,
        expires_at: now + Duration::from_secs(60),
        status: ApprovalStatus::Pending,
        decision: None,
        consumed_by: None,
        consumed_at: None,
        target: None,
        target_hash: None,
        outcome: None,
    }
}

fn decision(approved: bool, at: OffsetDateTime) -> ApprovalDecision {
    ApprovalDecision {
        approved,
        approver: carla(),
        decided_at: at,
        thread_id: None,
    }
}

fn t0() -> OffsetDateTime {
    OffsetDateTime::from_unix_timestamp(1_800_000_000).expect("time")
}

#[actix_web::test]
async fn approvals_live_the_same_life_on_both_backends() {
    for url in crate::pg::backends().await {
        let store = SqlApprovalStore::new(db::connect(&url).await.expect("database"));
        let t0 = t0();
        store.insert(record("apr_a", t0)).await.expect("insert");
        store
            .insert(record("apr_b", t0 + Duration::from_secs(1)))
            .await
            .expect("insert");
        let code = |r: Result<ApprovalRecord, _>| {
            r.err().map(|e: dpas_governance::CapabilityError| e.code)
        };
        let claimed = store
            .decide_and_consume("apr_a", decision(true, t0), "exe_1", t0)
            .await
            .expect("decided and claimed");
        assert_eq!(
            (
                claimed.status,
                claimed.consumed_by.as_deref(),
                claimed.consumed_at
            ),
            (ApprovalStatus::Consumed, Some("exe_1"), Some(t0)),
            "{url}"
        );
        assert_eq!(
            code(store.decide("apr_a", decision(false, t0), t0).await),
            Some(CapabilityErrorCode::ApprovalConsumed)
        );
        store.finish("apr_a", "completed").await.expect("finish");
        let later = t0 + Duration::from_secs(61);
        assert_eq!(
            store.get("apr_b", later).await.unwrap().map(|r| r.status),
            Some(ApprovalStatus::Expired),
            "{url}"
        );
        let ids: Vec<String> = store
            .list("carla@example.com", later)
            .await
            .unwrap()
            .into_iter()
            .map(|r| r.id)
            .collect();
        assert_eq!(ids, ["apr_a", "apr_b"], "{url}");
        assert_eq!(
            store
                .get("apr_a", later)
                .await
                .unwrap()
                .and_then(|r| r.outcome),
            Some("completed".to_owned())
        );
        assert_eq!(
            store
                .purge(later + Duration::from_secs(1))
                .await
                .expect("purge"),
            2
        );
        assert_eq!(store.get("apr_a", later).await.unwrap(), None);
    }
}

/// Two pools on one PostgreSQL database: `n` racing decisions, half through each.
#[actix_web::test]
async fn racing_decisions_from_two_pools_claim_one_run() {
    let Some(url) = crate::pg::fresh_database().await else {
        return;
    };
    let (a, b) = (
        SqlApprovalStore::new(db::connect(&url).await.unwrap()),
        SqlApprovalStore::new(db::connect(&url).await.unwrap()),
    );
    for round in 0..5 {
        let id = format!("apr_{round}");
        a.insert(record(&id, t0())).await.unwrap();
        let attempts = (0..16).map(|i| {
            let (store, id) = (if i % 2 == 0 { &a } else { &b }, id.clone());
            async move {
                store
                    .decide_and_consume(&id, decision(true, t0()), &format!("exe_{i}"), t0())
                    .await
            }
        });
        let results = futures_util::future::join_all(attempts).await;
        let won: Vec<_> = results.iter().filter_map(|r| r.as_ref().ok()).collect();
        assert_eq!(won.len(), 1, "round {round}: {results:?}");
        assert!(results
            .iter()
            .filter_map(|r| r.as_ref().err())
            .all(|e| e.code == CapabilityErrorCode::ApprovalConsumed));
        let stored = b.get(&id, t0()).await.unwrap().expect("stored");
        assert_eq!(stored.consumed_by, won[0].consumed_by);
    }
}

/// Replicas that start together on an empty database: one seeds, the others find it seeded;
/// invoices created through both get distinct ids.
#[actix_web::test]
async fn the_ledger_is_seeded_once_and_counts_across_pools() {
    let Some(url) = crate::pg::fresh_database().await else {
        return;
    };
    let mut ledgers = Vec::new();
    for _ in 0..4 {
        let db: Db = db::connect(&url).await.unwrap();
        assert_eq!(db.backend(), Backend::Postgres);
        ledgers.push(Ledger::with_today(
            db,
            std::sync::Arc::new(|| date!(2026 - 11 - 29)),
        ));
    }
    let seeded = futures_util::future::join_all(
        ledgers
            .iter()
            .map(|l| l.seed_if_empty(date!(2026 - 11 - 29))),
    )
    .await;
    let seeded: Vec<bool> = seeded.into_iter().map(|r| r.expect("seeding")).collect();
    assert_eq!(seeded.iter().filter(|s| **s).count(), 1, "{seeded:?}");
    let before = ledgers[0].rows().await.unwrap().len();
    let created = futures_util::future::join_all(
        (0..12).map(|i| ledgers[i % 4].create_invoice(1, 1_000 + i as i64, None, None, None)),
    )
    .await;
    let mut ids: Vec<i64> = created
        .into_iter()
        .map(|r| r.expect("created").id)
        .collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 12);
    assert_eq!(ledgers[3].rows().await.unwrap().len(), before + 12);
}

#[actix_web::test]
async fn concurrent_usage_settles_from_two_pools_add_up_to_one_row_a_key() {
    use dpas_governance::usage::{Spent, UsageRow, UsageStore};
    use dpas_store::SqlUsageStore;
    for url in crate::pg::backends().await {
        let pools = if url.starts_with("postgres") { 2 } else { 1 };
        let mut stores = Vec::new();
        for _ in 0..pools {
            stores.push(SqlUsageStore::new(
                db::connect(&url).await.expect("database"),
            ));
        }
        let row = |tool: &str, input: u64| UsageRow {
            tenant: "default".into(),
            actor: "carla@example.com".into(),
            day: "2026-12-04".into(),
            model: "scripted".into(),
            tool: tool.into(),
            input_tokens: input,
            total_tokens: input,
            calls: 1,
            ..UsageRow::default()
        };
        let step = [row("", 3), row("domain:x", 0), row("", 4)];
        let step = &step;
        let settles = (0..40).map(|i| {
            let store = &stores[i % pools];
            async move { store.settle(&[], "", Spent::default(), step).await }
        });
        for settled in futures_util::future::join_all(settles).await {
            assert!(settled.expect("settled").is_empty(), "{url}");
        }
        let rows = stores[0]
            .rows(Some("carla@example.com"), None)
            .await
            .unwrap();
        let got: Vec<_> = rows
            .iter()
            .map(|r| (r.tool.as_str(), r.input_tokens, r.total_tokens, r.calls))
            .collect();
        assert_eq!(
            got,
            [("", 280, 280, 80), ("domain:x", 0, 0, 40)],
            "one row a key, every settle counted once, on {url}"
        );
    }
}
