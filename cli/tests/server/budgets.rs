//! Budgets as run limits over HTTP: a model step that would start past a budget (per turn,
//! per actor per day, per tenant per day, in tokens or dollars) is not started, the step ends
//! with `BUDGET_EXHAUSTED` and a `budget` frame says what is left; `GET /api/usage` serves
//! what the model reported, by actor, model and tool. The scripted model reports 32 tokens
//! per model step (16 in, 8 of them cached, 16 out).

use std::sync::Arc;
use std::time::Duration;

use dpas_model::scripted::{Script, ScriptedProvider};
use dpas_tests::testing::{ChatReply, TestServer};
use host_server::config::ServerConfig;
use serde_json::{json, Value};

use crate::common::builder;
use crate::lifecycle::Process;

/// Tokens every scripted model step reports.
const STEP_TOKENS: u64 = 32;

const TEXT: &str = r#"{"turns": [{"text": ["Done."]}]}"#;
/// A server call, then text (which then repeats).
const CALL_THEN_TEXT: &str = r#"{"turns": [
    {"toolCalls": [{"name": "domain_receivables-summary", "input": {}}]},
    {"text": ["Done."]}
]}"#;

async fn server(
    url: &str,
    script: &str,
    configure: impl FnOnce(&mut ServerConfig) + Send + 'static,
) -> TestServer {
    let script = Script::from_json(script.as_bytes()).expect("a valid script");
    let chat = dpas_engine::ChatConfig {
        models: dpas_engine::ModelSet::new(vec![ScriptedProvider::from_script(script).into_arc()]),
        floors: Arc::new(dpas_demo::route_floors()),
        app_prompt: Arc::from(dpas_demo::APP_PROMPT),
        model_timeout: Duration::from_secs(45),
    };
    let url = url.to_owned();
    crate::common::start_with_routes(
        builder().with_config(move |c| {
            c.database_url = url;
            c.max_concurrent_steps = 64;
            configure(c);
        }),
        host_server::doors::mount(chat),
    )
    .await
}

fn step(conversation: &str, turn: &str) -> Value {
    step_at(conversation, turn, 0)
}

fn step_at(conversation: &str, turn: &str, index: u32) -> Value {
    json!({
        "protocolVersion": 2,
        "conversationId": conversation,
        "turnId": turn,
        "stepIndex": index,
        "pathname": "/receivables/pending",
        "messages": [{"role": "user", "content": "How are we doing?"}],
        "catalog": {"mode": "direct", "frontendTools": []}
    })
}

fn codes(reply: &ChatReply) -> Vec<String> {
    reply.errors().iter().map(|e| e.code.clone()).collect()
}

/// The step's `budget` inspector frames' data.
fn budget_frames(reply: &ChatReply) -> Vec<Value> {
    reply
        .frame_values()
        .into_iter()
        .filter(|f| f["type"] == "inspector" && f["eventType"] == "budget")
        .map(|f| f["data"].clone())
        .collect()
}

/// Tokens the step's model steps reported (its `model.usage` frame).
fn reported(reply: &ChatReply) -> u64 {
    reply
        .frame_values()
        .iter()
        .find(|f| f["eventType"] == "model.usage")
        .map_or(0, |f| f["data"]["totalTokens"].as_u64().expect("a count"))
}

async fn usage(server: &TestServer, role: &str) -> Value {
    let (status, body) = server.get_json("/api/usage", role).await;
    assert_eq!(status, 200, "{body}");
    body
}

#[actix_web::test]
async fn a_tiny_turn_budget_stops_the_turn_and_says_what_is_left() {
    let s = server("sqlite::memory:", CALL_THEN_TEXT, |c| {
        c.budgets.turn_tokens = Some(30);
    })
    .await;
    let first = s.chat(&step("cnv_a", "trn_1"), "controller").await;
    assert_eq!(first.status, 200);
    // The first model step ran (32 tokens, over the 30 it held); the second was not started.
    assert_eq!(codes(&first), ["BUDGET_EXHAUSTED"], "{:?}", first.types());
    assert_eq!(first.tool_results().len(), 1, "the server call ran");
    assert_eq!(reported(&first), STEP_TOKENS);
    let budgets = budget_frames(&first);
    assert_eq!(budgets.len(), 2, "{budgets:?}");
    assert_eq!(
        budgets[0]["budgets"],
        json!([{"scope": "turn", "tokensLimit": 30, "tokensLeft": 0, "spentTokens": 32, "spentUsd": 0.0}])
    );
    assert_eq!(budgets[1]["exhausted"], "turn");
    let types = first.types();
    let error_at = types.iter().position(|t| t == "error").unwrap();
    assert_eq!(
        types[error_at - 1],
        "inspector",
        "the budget frame comes first"
    );
    assert_eq!(types.last().map(String::as_str), Some("step-finish"));
    assert_eq!(first.finish().finish_reason, "error");

    // The same turn's next step starts nothing; a new turn has its own budget.
    let again = s.chat(&step_at("cnv_a", "trn_1", 1), "controller").await;
    assert_eq!(codes(&again), ["BUDGET_EXHAUSTED"]);
    assert_eq!(reported(&again), 0, "no model step ran");
    let next = s.chat(&step("cnv_a", "trn_2"), "controller").await;
    assert!(codes(&next).is_empty(), "{:?}", next.errors());
    assert_eq!(next.text(), "Done.");

    // The usage rows add up to what the model reported, by model and tool.
    let body = usage(&s, "controller").await;
    let rows = body["rows"].as_array().unwrap();
    let model_row = rows
        .iter()
        .find(|r| r["tool"] == "")
        .expect("the model's row");
    assert_eq!(model_row["model"], "scripted");
    assert_eq!(model_row["actor"], "carla@example.com");
    assert_eq!(model_row["calls"], 2, "two model steps ran");
    assert_eq!(
        (
            model_row["inputTokens"].as_u64(),
            model_row["cachedInputTokens"].as_u64()
        ),
        (Some(32), Some(16))
    );
    assert_eq!(
        model_row["totalTokens"].as_u64(),
        Some(reported(&first) + reported(&next))
    );
    let tool_row = rows
        .iter()
        .find(|r| r["tool"] != "")
        .expect("the tool's row");
    assert_eq!(tool_row["tool"], "domain:receivables-summary");
    assert_eq!(
        (tool_row["calls"].as_u64(), tool_row["totalTokens"].as_u64()),
        (Some(1), Some(0))
    );
    assert_eq!(
        body["totals"]["totalTokens"].as_u64(),
        Some(2 * STEP_TOKENS)
    );
}

#[actix_web::test]
async fn actor_and_tenant_day_budgets_hold_across_turns() {
    // 70 tokens an actor per day: 32 + 32 (holding 32 of the 38 left) + 32 (holding the 6
    // left), then nothing. Another actor has a day of its own.
    let s = server("sqlite::memory:", TEXT, |c| {
        c.budgets.actor_day_tokens = Some(70);
    })
    .await;
    for turn in ["trn_1", "trn_2", "trn_3"] {
        let reply = s.chat(&step("cnv_day", turn), "controller").await;
        assert!(codes(&reply).is_empty(), "{turn}: {:?}", reply.errors());
    }
    let (status, manifest) = s.get_json("/agent/manifest", "controller").await;
    assert_eq!(status, 200);
    assert_eq!(
        manifest["limits"]["budgets"],
        json!({"turnTokens": null, "turnUsd": null, "actorDayTokens": 70, "actorDayUsd": null,
            "tenantDayTokens": null, "tenantDayUsd": null})
    );
    let stopped = s.chat(&step("cnv_day", "trn_4"), "controller").await;
    assert_eq!(codes(&stopped), ["BUDGET_EXHAUSTED"]);
    let left = &budget_frames(&stopped)[0];
    assert_eq!(left["exhausted"], "actor-day");
    assert_eq!(left["budgets"][0]["tokensLeft"], 0);
    assert_eq!(left["budgets"][0]["spentTokens"], 3 * STEP_TOKENS);
    let ada = s.chat(&step("cnv_ada", "trn_1"), "analyst").await;
    assert!(codes(&ada).is_empty(), "{:?}", ada.errors());

    // 70 tokens for everyone together: Carla's two turns and Ada's one, then no one's.
    let t = server("sqlite::memory:", TEXT, |c| {
        c.budgets.tenant_day_tokens = Some(70);
    })
    .await;
    for (role, turn) in [
        ("controller", "trn_1"),
        ("analyst", "trn_2"),
        ("controller", "trn_3"),
    ] {
        let reply = t.chat(&step("cnv_t", turn), role).await;
        assert!(codes(&reply).is_empty(), "{turn}: {:?}", reply.errors());
    }
    for role in ["analyst", "controller"] {
        let reply = t.chat(&step("cnv_t", "trn_4"), role).await;
        assert_eq!(codes(&reply), ["BUDGET_EXHAUSTED"], "{role}");
        assert_eq!(budget_frames(&reply)[0]["exhausted"], "tenant-day");
    }
}

#[actix_web::test]
async fn a_dollar_budget_counts_by_the_price_table() {
    // $3 / $0.30 / $15 per million: 8 × 3 + 8 × 0.3 + 16 × 15 = 266.4 millionths a step.
    let s = server("sqlite::memory:", TEXT, |c| {
        c.prices = dpas_engine::PriceTable::parse(
            r#"{"scripted": {"input": 3, "cachedInput": 0.3, "output": 15}}"#,
        )
        .unwrap();
        c.budgets.actor_day_usd = Some(0.0005);
    })
    .await;
    for turn in ["trn_1", "trn_2"] {
        let reply = s.chat(&step("cnv_usd", turn), "controller").await;
        assert!(codes(&reply).is_empty(), "{turn}: {:?}", reply.errors());
    }
    let stopped = s.chat(&step("cnv_usd", "trn_3"), "controller").await;
    assert_eq!(codes(&stopped), ["BUDGET_EXHAUSTED"]);
    let left = &budget_frames(&stopped)[0]["budgets"][0];
    assert_eq!(left["scope"], "actor-day");
    assert_eq!(left["usdLimit"], 0.0005);
    assert_eq!(left["usdLeft"], 0.0);
    assert_eq!(left["spentUsd"], 0.0005328);
    let body = usage(&s, "controller").await;
    assert_eq!(body["totals"]["usd"], 0.0005328);
}

#[actix_web::test]
async fn usage_is_each_actors_own_and_the_operators_all() {
    let s = server("sqlite::memory:", TEXT, |_| {}).await;
    s.chat(&step("cnv_c", "trn_1"), "controller").await;
    s.chat(&step("cnv_c", "trn_2"), "controller").await;
    s.chat(&step("cnv_a", "trn_1"), "analyst").await;

    let ada = usage(&s, "analyst").await;
    let actors: Vec<&Value> = ada["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["actor"])
        .collect();
    assert_eq!(actors, [&json!("ada@example.com")]);
    assert_eq!(ada["totals"]["totalTokens"].as_u64(), Some(STEP_TOKENS));
    let day = ada["rows"][0]["day"].as_str().unwrap().to_owned();

    // The controller is the operator: every actor's rows.
    let all = usage(&s, "controller").await;
    assert_eq!(all["rows"].as_array().unwrap().len(), 2);
    assert_eq!(all["totals"]["totalTokens"].as_u64(), Some(3 * STEP_TOKENS));
    let (status, of_day) = s
        .get_json(&format!("/api/usage?day={day}"), "controller")
        .await;
    assert_eq!((status, of_day["rows"].as_array().unwrap().len()), (200, 2));
    let (status, none) = s.get_json("/api/usage?day=2000-01-01", "controller").await;
    assert_eq!((status, none["rows"].as_array().unwrap().len()), (200, 0));
    let (status, bad) = s.get_json("/api/usage?day=yesterday", "controller").await;
    assert_eq!(
        (status, bad["error"]["code"].as_str()),
        (400, Some("BAD_REQUEST"))
    );

    let anonymous = s.get("/api/usage", None).await;
    assert_eq!(anonymous.refusal(), (401, Some("UNAUTHENTICATED")));
}

/// `n` steps of one actor at once against `budget` tokens a day, spread over `replicas`
/// servers on one database, after one step alone (so a step's size is known): the day's
/// spending passes the budget by at most one step, and every step is counted once.
async fn race(url: &str, replicas: usize, n: usize, budget: u64) {
    const SLOW_TEXT: &str = r#"{"turns": [{"text": ["Done."], "delayMs": 150}]}"#;
    let mut servers = Vec::with_capacity(replicas);
    for _ in 0..replicas {
        servers.push(
            server(url, SLOW_TEXT, move |c| {
                c.budgets.actor_day_tokens = Some(budget);
            })
            .await,
        );
    }
    let s = &servers[0];
    let first = s.chat(&step("cnv_r", "trn_0"), "controller").await;
    assert!(codes(&first).is_empty(), "{:?}", first.errors());
    let bodies: Vec<Value> = (1..=n)
        .map(|i| step("cnv_r", &format!("trn_{i}")))
        .collect();
    let replies = futures_util::future::join_all(
        bodies
            .iter()
            .enumerate()
            .map(|(i, b)| servers[i % replicas].chat(b, "controller")),
    )
    .await;
    let ran = replies.iter().filter(|r| reported(r) > 0).count();
    let stopped = replies
        .iter()
        .filter(|r| codes(r) == ["BUDGET_EXHAUSTED"])
        .count();
    assert_eq!(
        ran + stopped,
        n,
        "every step ran or was stopped by the budget"
    );
    let spent = STEP_TOKENS * (1 + ran as u64);
    let body = usage(s, "controller").await;
    assert_eq!(
        body["totals"]["totalTokens"].as_u64(),
        Some(spent),
        "the usage rows count every step once"
    );
    let over = spent.saturating_sub(budget);
    println!(
        "{}, {replicas} replica(s): {n} concurrent steps against {budget} tokens: {ran} ran, \
         {stopped} stopped, {spent} spent, over by {over} (one step is {STEP_TOKENS})",
        url.split(':').next().unwrap_or(url)
    );
    assert!(
        over <= STEP_TOKENS,
        "overrun by {over} tokens, more than one step's worth"
    );
    assert!(ran >= 1, "the budget had room for a step");
}

#[actix_web::test]
async fn concurrent_steps_overrun_a_budget_by_at_most_one_step_on_sqlite() {
    race("sqlite::memory:", 1, 8, 100).await;
}

#[actix_web::test]
async fn concurrent_steps_on_two_replicas_overrun_a_budget_by_at_most_one_step_on_postgres() {
    let Some(url) = crate::pg::fresh_database().await else {
        return;
    };
    race(&url, 2, 8, 100).await;
}

#[actix_web::test]
async fn the_binary_stops_a_turn_at_a_tiny_dollar_budget_and_its_usage_adds_up() {
    let dir = tempfile::tempdir().expect("tempdir");
    let prices = dir.path().join("prices.json");
    std::fs::write(
        &prices,
        r#"{"scripted": {"input": 3, "cachedInput": 0.3, "output": 15}}"#,
    )
    .unwrap();
    let script = dir.path().join("script.json");
    std::fs::write(&script, TEXT).unwrap();
    let model = format!("scripted:{}", script.display());
    let server = Process::start(&[
        "--demo",
        "--database",
        "sqlite::memory:",
        "--model",
        &model,
        "--prices",
        prices.to_str().unwrap(),
        "--budget-actor-day-usd",
        "0.0002",
    ]);
    let cookie = server.sign_in("controller").await;
    let ran = server
        .step(&cookie, "cnv_1")
        .await
        .until("step-finish")
        .await;
    assert!(!ran.iter().any(|f| f["type"] == "error"), "{ran:?}");
    let stopped = server
        .step(&cookie, "cnv_2")
        .await
        .until("step-finish")
        .await;
    let error = stopped
        .iter()
        .find(|f| f["type"] == "error")
        .expect("an error frame");
    assert_eq!(error["error"]["code"], "BUDGET_EXHAUSTED");
    let (status, body) = server.get("/api/usage", &cookie).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["totals"]["totalTokens"], STEP_TOKENS);
    assert_eq!(body["totals"]["usd"], 0.0002664);

    // The same figures as Prometheus counters (a fresh process: they start at zero).
    let text = reqwest::get(server.url("/metrics"))
        .await
        .expect("scraped")
        .text()
        .await
        .expect("text");
    let value = |name: &str, labels: &[&str]| -> Option<f64> {
        text.lines()
            .filter(|l| l.starts_with(&format!("{name}{{")))
            .find(|l| labels.iter().all(|label| l.contains(label)))
            .and_then(|l| l.rsplit_once(' '))
            .and_then(|(_, v)| v.parse().ok())
    };
    let scripted = "model=\"scripted\"";
    assert_eq!(
        value("dpas_usage_tokens_total", &[scripted, "kind=\"input\""]),
        Some(16.0),
        "{text}"
    );
    assert_eq!(
        value(
            "dpas_usage_tokens_total",
            &[scripted, "kind=\"cached_input\""]
        ),
        Some(8.0)
    );
    assert_eq!(
        value("dpas_usage_tokens_total", &[scripted, "kind=\"output\""]),
        Some(16.0)
    );
    assert_eq!(
        value("dpas_usage_cost_nano_usd_total", &[scripted]),
        Some(266_400.0)
    );
    assert_eq!(
        value("dpas_budget_exhausted_total", &["scope=\"actor-day\""]),
        Some(1.0)
    );
}

#[test]
fn a_bad_prices_file_or_a_dollar_budget_without_prices_fails_the_start() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bad = dir.path().join("prices.json");
    std::fs::write(&bad, r#"{"scripted": {"input": -1, "output": 1}}"#).unwrap();
    let other = dir.path().join("other.json");
    std::fs::write(&other, r#"{"openai/gpt-4o": {"input": 1, "output": 1}}"#).unwrap();
    let missing = dir.path().join("missing.json");
    let cases: [(Vec<&str>, &str); 4] = [
        (vec!["--prices", bad.to_str().unwrap()], "at least 0"),
        (vec!["--prices", missing.to_str().unwrap()], "--prices"),
        (vec!["--budget-turn-usd", "1"], "needs --prices"),
        (
            vec![
                "--prices",
                other.to_str().unwrap(),
                "--budget-actor-day-usd",
                "1",
            ],
            "no price for the model scripted",
        ),
    ];
    for (args, says) in cases {
        let out = crate::cli::clean_command()
            .args([
                "--demo",
                "--database",
                "sqlite::memory:",
                "--listen",
                "127.0.0.1:0",
            ])
            .args(&args)
            .output()
            .expect("runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
}
