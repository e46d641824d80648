//! Discovery per actor, surface and scope; concealment of unknown, unexposed and hidden ids.

use dpas_governance::CallSurface;
use host_server::Correlation;
use serde_json::json;

use crate::common::{ada, carla, start};

fn ids(list: &[dpas_governance::CapabilityInfo]) -> Vec<&str> {
    list.iter().map(|c| c.id.as_str()).collect()
}

fn tags(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

#[actix_web::test]
async fn discovery_depends_on_actor_surface_and_scope() {
    let s = start().await;
    let rt = &s.state.runtime;

    let controller_ai = rt.discover(&carla(), CallSurface::Model, None);
    assert_eq!(
        ids(&controller_ai),
        [
            "list-invoices",
            "create-invoice",
            "update-invoice",
            "issue-invoice",
            "delete-invoice",
            "mark-invoice-paid",
            "list-clients",
            "receivables-summary",
            "collections-aging"
        ]
    );
    let gated: Vec<&str> = controller_ai
        .iter()
        .filter(|c| c.requires_approval)
        .map(|c| c.id.as_str())
        .collect();
    assert_eq!(gated, ["issue-invoice", "delete-invoice"]);
    let issue = &controller_ai[3];
    assert_eq!(issue.input_schema["properties"]["id"]["type"], "integer");
    assert_eq!(issue.input_schema["required"], json!(["id"]));
    assert_eq!(
        issue.input_schema["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );

    // The pending screen's floor.
    let pending = tags(&["app", "invoices", "reporting", "collections"]);
    assert_eq!(
        rt.discover(&carla(), CallSurface::Model, Some(&pending))
            .len(),
        8
    );
    assert_eq!(
        ids(&rt.discover(&ada(), CallSurface::Model, Some(&pending))),
        ["list-invoices", "receivables-summary", "collections-aging"]
    );
    assert_eq!(
        ids(&rt.discover(&ada(), CallSurface::Model, None)),
        [
            "list-invoices",
            "list-clients",
            "receivables-summary",
            "collections-aging"
        ]
    );
    assert!(rt
        .discover(&carla(), CallSurface::Model, Some(&tags(&["app"])))
        .is_empty());
    assert!(
        rt.discover(&carla(), CallSurface::Model, Some(&[]))
            .is_empty(),
        "an empty scope matches nothing"
    );

    // The contextual capability is offered on direct and mcp only, and never to analysts.
    let chase = |surface| {
        rt.discover(&carla(), surface, None)
            .iter()
            .any(|c| c.id == "update-collection-status")
    };
    assert!(chase(CallSurface::Direct));
    assert!(chase(CallSurface::Mcp));
    assert!(!chase(CallSurface::Model));
    assert!(!rt
        .discover(&ada(), CallSurface::Direct, None)
        .iter()
        .any(|c| c.id == "update-collection-status"));
    // Direct calls are never gated.
    assert!(rt
        .discover(&carla(), CallSurface::Direct, None)
        .iter()
        .all(|c| !c.requires_approval));
}

#[actix_web::test]
async fn unknown_unexposed_and_hidden_answer_the_same_not_found() {
    let s = start().await;
    let rt = &s.state.runtime;
    let not_found = json!({"status": "error", "error": {"code": "CAPABILITY_NOT_FOUND", "message": "Capability not found.", "retryable": false}});

    let unknown = rt
        .invoke(
            &carla(),
            CallSurface::Model,
            "no-such-capability",
            json!({}),
            Correlation::default(),
        )
        .await;
    let unexposed = rt
        .invoke(
            &carla(),
            CallSurface::Model,
            "update-collection-status",
            json!({"invoiceId": 1}),
            Correlation::default(),
        )
        .await;
    let hidden = rt
        .invoke(
            &ada(),
            CallSurface::Model,
            "issue-invoice",
            json!({"id": 5}),
            Correlation::default(),
        )
        .await;
    // Exposure is checked before validation, so even invalid input cannot reveal existence.
    let unexposed_invalid = rt
        .invoke(
            &carla(),
            CallSurface::Model,
            "update-collection-status",
            json!({"invoiceId": "x"}),
            Correlation::default(),
        )
        .await;
    for envelope in [&unknown, &unexposed, &hidden, &unexposed_invalid] {
        assert_eq!(envelope, &not_found);
    }
    assert!(
        rt.approvals_of(&ada().id)
            .await
            .expect("approvals")
            .is_empty(),
        "hide beats approval: no record for the analyst"
    );

    // Over HTTP, the analyst's write and an unknown id are byte-identical 404s.
    let ada_cookie = s.sign_in("analyst").await;
    let hidden = s
        .post(
            "/rpc/create-invoice",
            Some(&ada_cookie),
            json!({"clientId": 1, "amount": 1}),
        )
        .await;
    let unknown = s
        .post(
            "/rpc/create-nothing",
            Some(&ada_cookie),
            json!({"clientId": 1, "amount": 1}),
        )
        .await;
    assert_eq!((hidden.status, &hidden.body), (404, &not_found));
    assert_eq!((unknown.status, &unknown.body), (404, &not_found));
    // Reads stay open to the analyst.
    let (status, _) = s.rpc(&ada_cookie, "receivables-summary", json!({})).await;
    assert_eq!(status, 200);
}

#[actix_web::test]
async fn input_is_validated_against_the_schema_with_issue_paths() {
    let s = start().await;
    let carla_cookie = s.sign_in("controller").await;

    let (status, env) = s
        .rpc(&carla_cookie, "issue-invoice", json!({"id": "five"}))
        .await;
    assert_eq!(status, 400);
    assert_eq!(env["status"], "error");
    assert_eq!(env["error"]["code"], "INPUT_INVALID");
    assert_eq!(env["error"]["message"], "Input validation failed.");
    assert_eq!(env["error"]["retryable"], false);
    let issues = env["error"]["details"]["issues"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(issues.len(), 1, "{issues:?}");
    assert_eq!(issues[0]["path"], "/id");
    assert!(
        !issues[0]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("five"),
        "issues never echo values"
    );

    let (status, env) = s
        .rpc(
            &carla_cookie,
            "create-invoice",
            json!({"clientId": 0, "amount": 10, "dueDate": "29/11/2026"}),
        )
        .await;
    assert_eq!(status, 400);
    let mut paths: Vec<String> = env["error"]["details"]["issues"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|i| i["path"].as_str().map(str::to_owned))
        .collect();
    paths.sort();
    assert_eq!(paths, ["/clientId", "/dueDate"]);

    let (status, env) = s
        .rpc(&carla_cookie, "create-invoice", json!({"amount": 10}))
        .await;
    assert_eq!(
        (status, env["error"]["details"]["issues"][0].clone()),
        (
            400,
            json!({"path": "/clientId", "message": "\"clientId\" is a required property"})
        ),
        "a missing property points at itself"
    );

    let (status, env) = s
        .rpc(&carla_cookie, "list-invoices", json!({"kind": "overdue"}))
        .await;
    assert_eq!(
        (status, env["error"]["details"]["issues"][0]["path"].clone()),
        (400, json!("/kind"))
    );

    // Unknown keys are dropped, not rejected; an invalid gated call on a model surface is
    // refused before any approval is recorded.
    let (status, _) = s
        .rpc(
            &carla_cookie,
            "list-invoices",
            json!({"kind": "draft", "colour": "red"}),
        )
        .await;
    assert_eq!(status, 200);
    let env = s
        .state
        .runtime
        .invoke(
            &carla(),
            CallSurface::Model,
            "issue-invoice",
            json!({"id": -1}),
            Correlation::default(),
        )
        .await;
    assert_eq!(env["error"]["code"], "INPUT_INVALID");
    assert!(s
        .state
        .runtime
        .approvals_of(&carla().id)
        .await
        .expect("approvals")
        .is_empty());
}

/// The chat's domain catalogs: composed once per actor, surface and scope and shared after,
/// holding what a fresh discovery says, and audited on every use as a discovery is.
#[actix_web::test]
async fn chat_catalogs_are_shared_per_actor_and_scope_and_audited_on_every_use() {
    use dpas_engine::compose::{DomainCatalogs, DomainHalf};
    use dpas_governance::Credential;
    use std::sync::Arc;

    let s = start().await;
    let rt = &s.state.runtime;
    let catalogs = DomainCatalogs::default();
    let pending = tags(&["app", "invoices", "reporting", "collections"]);
    let half_ids = |h: &DomainHalf| -> Vec<String> {
        h.tools.iter().map(|t| t.capability_id.clone()).collect()
    };
    let mut audit = rt.subscribe(None);

    let first = catalogs.get(rt, &carla(), CallSurface::Model, Some(&pending));
    let again = catalogs.get(rt, &carla(), CallSurface::Model, Some(&pending));
    assert!(
        Arc::ptr_eq(&first, &again),
        "the second step reuses the first's"
    );
    let fresh = rt.discover(&carla(), CallSurface::Model, Some(&pending));
    assert_eq!(half_ids(&first), ids(&fresh));
    assert_eq!(first.infos.len(), first.tools.len());
    assert_eq!(first.discovered, fresh.len());
    assert!(first.tools[3].info.requires_approval);
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(first.tools[3].input_schema.get()).unwrap(),
        fresh[3].input_schema
    );

    // Another actor, another scope, another role or credential: each its own entry.
    let analyst = catalogs.get(rt, &ada(), CallSurface::Model, Some(&pending));
    assert_eq!(
        half_ids(&analyst),
        ["list-invoices", "receivables-summary", "collections-aging"]
    );
    let unscoped = catalogs.get(rt, &carla(), CallSurface::Model, None);
    assert_eq!(unscoped.tools.len(), 9);
    let mut demoted = carla();
    demoted.role = ada().role;
    let demoted_half = catalogs.get(rt, &demoted, CallSurface::Model, Some(&pending));
    assert_eq!(half_ids(&demoted_half), half_ids(&analyst));
    let mut token = carla();
    token.authorization = Some(Credential::new("Bearer a"));
    let with_a = catalogs.get(rt, &token, CallSurface::Model, Some(&pending));
    assert!(!Arc::ptr_eq(&with_a, &first));
    assert!(Arc::ptr_eq(
        &with_a,
        &catalogs.get(rt, &token, CallSurface::Model, Some(&pending))
    ));
    token.authorization = Some(Credential::new("Bearer b"));
    let with_b = catalogs.get(rt, &token, CallSurface::Model, Some(&pending));
    assert!(!Arc::ptr_eq(&with_a, &with_b));

    let discovered = audit
        .drain()
        .iter()
        .filter(|e| e.kind == "capabilities.discovered")
        .count();
    assert_eq!(discovered, 9, "eight uses of the cache and one discovery");
}
