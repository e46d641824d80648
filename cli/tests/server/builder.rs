//! The builder API: an embedder registers its own capability and policies next to the demo.

use std::time::Duration;

use dpas_governance::{
    policy_fn, CallSurface, Capability, Decision, HandlerError, PolicyError, PolicyPhase, Risk,
    SideEffect,
};
use host_server::Correlation;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::common::{builder, carla, start_with, start_with_routes};

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
struct EchoInput {
    text: String,
}

#[derive(Debug, Serialize, JsonSchema)]
struct EchoOutput {
    echoed: String,
    by: String,
}

#[actix_web::test]
async fn custom_capabilities_and_policies_are_governed_like_the_demo() {
    let app = builder().register(|rt, _pool| {
        rt.capability(
            Capability::builder("echo")
                .description("Repeats the text back.")
                .side_effect(SideEffect::Read)
                .risk(Risk::Low)
                .tags(["tools"])
                .expose(&[CallSurface::Direct, CallSurface::Model])
                .handler(|ctx, i: EchoInput| async move {
                    if i.text == "boom" {
                        return Err(HandlerError::Internal("the echo chamber collapsed".into()));
                    }
                    Ok(EchoOutput {
                        echoed: i.text,
                        by: ctx.actor.id,
                    })
                }),
        )
        .capability(
            Capability::builder("slow")
                .description("Takes longer than it may.")
                .side_effect(SideEffect::Read)
                .expose(&[CallSurface::Direct])
                .timeout(Duration::from_millis(50))
                .handler(
                    |_ctx, _i: serde_json::Map<String, serde_json::Value>| async move {
                        tokio::time::sleep(Duration::from_secs(5)).await;
                        Ok(json!(null))
                    },
                ),
        )
        .capability(
            Capability::builder("fragile")
                .description("Guarded by a broken policy.")
                .side_effect(SideEffect::Read)
                .expose(&[CallSurface::Direct])
                .policy(policy_fn("broken", &[PolicyPhase::Invocation], |_| {
                    Err(PolicyError("no answer".into()))
                }))
                .handler(
                    |_ctx, _i: serde_json::Map<String, serde_json::Value>| async move {
                        Ok(json!("ran"))
                    },
                ),
        )
        .policy(policy_fn(
            "analysts-may-not-echo",
            &[PolicyPhase::Invocation],
            |req| {
                Ok(
                    if req.capability.id == "echo" && req.actor.role == "analyst" {
                        Decision::Deny(Some("Analysts may not echo.".into()))
                    } else {
                        Decision::Allow
                    },
                )
            },
        ))
    });
    let s = start_with(app).await;
    let carla_cookie = s.sign_in("controller").await;
    let ada_cookie = s.sign_in("analyst").await;

    let (status, env) = s.rpc(&carla_cookie, "echo", json!({"text": "hello"})).await;
    assert_eq!(
        (status, env),
        (
            200,
            json!({"status": "ok", "data": {"echoed": "hello", "by": "carla@example.com"}})
        )
    );
    let (status, env) = s.rpc(&ada_cookie, "echo", json!({"text": "hello"})).await;
    assert_eq!(
        (status, env),
        (
            403,
            json!({"status": "error", "error": {"code": "POLICY_DENIED", "message": "Analysts may not echo.", "retryable": false}})
        )
    );
    // Internal causes never reach the caller.
    let (status, env) = s.rpc(&carla_cookie, "echo", json!({"text": "boom"})).await;
    assert_eq!(status, 500);
    assert_eq!(
        env["error"],
        json!({"code": "INTERNAL_ERROR", "message": "The operation failed.", "retryable": false})
    );
    // A failing policy denies, and says nothing about why.
    let (status, env) = s.rpc(&carla_cookie, "fragile", json!({})).await;
    assert_eq!(
        (status, env["error"]["code"].clone()),
        (500, json!("INTERNAL_ERROR"))
    );
    let (status, env) = s.rpc(&carla_cookie, "slow", json!({})).await;
    assert_eq!(
        (
            status,
            env["error"]["code"].clone(),
            env["error"]["retryable"].clone()
        ),
        (504, json!("TIMEOUT"), json!(true))
    );

    let ai = s
        .state
        .runtime
        .discover(&carla(), CallSurface::Model, Some(&["tools".to_owned()]));
    assert_eq!(
        ai.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(),
        ["echo"]
    );
    assert_eq!(ai[0].input_schema["required"], json!(["text"]));
    let env = s
        .state
        .runtime
        .invoke(
            &carla(),
            CallSurface::Model,
            "slow",
            json!({}),
            Correlation::default(),
        )
        .await;
    assert_eq!(env["error"]["code"], "CAPABILITY_NOT_FOUND");
}

#[actix_web::test]
async fn registration_errors_are_reported_together() {
    let app = builder().register(|rt, _pool| {
        rt
            .capability(
                Capability::builder("list-invoices")
                    .description("Again.")
                    .side_effect(SideEffect::Read)
                    .handler(
                        |_ctx, _i: serde_json::Map<String, serde_json::Value>| async move {
                            Ok(json!([]))
                        },
                    ),
            )
            .capability(
                Capability::builder("nameless")
                    .side_effect(SideEffect::Read)
                    .handler(
                        |_ctx, _i: serde_json::Map<String, serde_json::Value>| async move {
                            Ok(json!([]))
                        },
                    ),
            )
    });
    let err = app.build().await.expect_err("invalid registry");
    let text = err.to_string();
    assert!(
        text.contains("nameless: a description is required"),
        "{text}"
    );
    assert!(
        text.contains("duplicate capability id list-invoices"),
        "{text}"
    );
}

/// An embedder's route, as the chat endpoint will mount it: the `Actor` extractor answers 401.
async fn whoami(
    state: actix_web::web::Data<host_server::AppState>,
    host_server::http::Caller(actor): host_server::http::Caller,
) -> actix_web::HttpResponse {
    let tools = state
        .runtime
        .discover(&actor, CallSurface::Model, None)
        .len();
    actix_web::HttpResponse::Ok()
        .json(json!({"actor": actor, "tools": tools, "model": state.config.model.to_string()}))
}

#[actix_web::test]
async fn extra_routes_resolve_the_actor_from_the_session() {
    let s = start_with_routes(builder(), |cfg| {
        cfg.route("/agent/whoami", actix_web::web::post().to(whoami));
    })
    .await;
    let anonymous = s.post("/agent/whoami", None, json!({})).await;
    assert_eq!(
        (anonymous.status, anonymous.body["error"]["code"].clone()),
        (401, json!("UNAUTHENTICATED"))
    );
    let ada = s.sign_in("analyst").await;
    let me = s.post("/agent/whoami", Some(&ada), json!({})).await;
    assert_eq!(me.status, 200);
    assert_eq!(
        me.body,
        json!({"actor": {"id": "ada@example.com", "kind": "user", "displayName": "Ada Analyst", "role": "analyst"}, "tools": 4, "model": "scripted"})
    );
    // Built-in routes still answer next to the extra one.
    assert_eq!(s.get("/api/health", None).await.status, 200);
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
struct TicketInput {
    id: i64,
}

/// A receipt names an embedder's call by the capability's own `receipt_detail`, else by
/// `id <id>`; the demo's invoice wording is its capabilities' own, not the id's.
#[actix_web::test]
async fn approval_receipts_use_the_capabilitys_own_wording() {
    let gated = |id: &str| {
        Capability::builder(id)
            .description("Closes a ticket once the user agrees.")
            .side_effect(SideEffect::Write)
            .expose(&[CallSurface::Model])
            .approval_required(true)
    };
    let app = builder().register(move |rt, _pool| {
        let handler = |_ctx, i: TicketInput| async move { Ok(json!({"closed": i.id})) };
        rt.capability(gated("close-ticket").handler(handler))
            .capability(
                gated("reopen-ticket")
                    .receipt_detail(|input| vec![format!("ticket #{}", input["id"])])
                    .handler(handler),
            )
    });
    let s = start_with(app).await;
    let carla = s.sign_in("controller").await;
    for (capability, text) in [
        (
            "close-ticket",
            "You approved close-ticket (id 7), and it completed.",
        ),
        (
            "reopen-ticket",
            "You approved reopen-ticket (ticket #7), and it completed.",
        ),
    ] {
        let approval = s
            .carla_awaits_approval(CallSurface::Model, capability, json!({"id": 7}))
            .await;
        let decided = s
            .post(
                &format!("/api/approvals/{approval}"),
                Some(&carla),
                json!({"approved": true}),
            )
            .await;
        assert_eq!(
            decided.body["receipt"],
            json!({"text": text, "ok": true}),
            "{capability}"
        );
    }
}
