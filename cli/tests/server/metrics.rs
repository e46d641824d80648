//! `GET /metrics` of the real binary after a real scripted step: the counters moved as the
//! step's frames say. A fresh process, so every figure starts at zero.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use crate::lifecycle::Process;

/// `name{k="v",…}` → value, labels sorted so lookups do not depend on the exporter's order.
fn parse(text: &str) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let (key, value) = line.rsplit_once(' ').expect("`key value`");
        let (name, labels) = match key.split_once('{') {
            Some((name, rest)) => {
                let mut labels: Vec<&str> = rest.trim_end_matches('}').split("\",").collect();
                for l in &mut labels {
                    *l = l.trim_end_matches('"');
                }
                labels.sort_unstable();
                (name, labels.join(","))
            }
            None => (key, String::new()),
        };
        out.insert(
            format!("{name}{{{labels}}}"),
            value.parse().expect("a number"),
        );
    }
    out
}

fn key(name: &str, labels: &[(&str, &str)]) -> String {
    let mut parts: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{v}")).collect();
    parts.sort_unstable();
    format!("{name}{{{}}}", parts.join(","))
}

async fn scrape(url: &str) -> (u16, BTreeMap<String, f64>) {
    let resp = reqwest::get(url).await.expect("scraped");
    let status = resp.status().as_u16();
    let text = resp.text().await.expect("text");
    (
        status,
        if status == 200 {
            parse(&text)
        } else {
            BTreeMap::new()
        },
    )
}

fn count(frames: &[Value], f: impl Fn(&Value) -> bool) -> f64 {
    frames.iter().filter(|fr| f(fr)).count() as f64
}

#[actix_web::test]
async fn counters_move_as_the_steps_frames_say() {
    let dir = tempfile::tempdir().expect("tempdir");
    let script = dir.path().join("script.json");
    std::fs::write(
        &script,
        json!({"turns": [
            {"toolCalls": [
                {"name": "domain_receivables-summary", "input": {}},
                {"name": "domain_no-such-thing", "input": {}}
            ]},
            {"text": ["Done."]}
        ]})
        .to_string(),
    )
    .expect("script");
    let model = format!("scripted:{}", script.display());
    let server = Process::start(&["--demo", "--database", "sqlite::memory:", "--model", &model]);
    let cookie = server.sign_in("controller").await;
    let mut step = server.step(&cookie, "cnv_metrics").await;
    let frames = step.until("step-finish").await;
    // The stream's end: the run is over, its gauge back down.
    assert!(step.next().await.is_none());
    let (missing, body) = server.get("/api/threads/cnv_nope", &cookie).await;

    let (status, m) = scrape(&server.url("/metrics")).await;
    assert_eq!(status, 200, "no session needed");
    let at =
        |name: &str, labels: &[(&str, &str)]| m.get(&key(name, labels)).copied().unwrap_or(0.0);
    let finish = frames.last().expect("step-finish");
    let reason = finish["finishReason"].as_str().expect("reason");
    assert_eq!(at("dpas_steps_total", &[("outcome", reason)]), 1.0, "{m:?}");
    assert_eq!(at("dpas_step_duration_seconds_count", &[]), 1.0);
    assert_eq!(at("dpas_active_steps", &[]), 0.0);

    let server_ok = count(&frames, |f| f["type"] == "tool-result" && f["ok"] == true);
    assert!(server_ok >= 1.0);
    assert_eq!(
        at(
            "dpas_tool_calls_total",
            &[("plane", "server"), ("outcome", "ok")]
        ),
        server_ok
    );
    let unknown = count(&frames, |f| f["eventType"] == "tool.unknown");
    assert_eq!(unknown, 1.0);
    assert_eq!(
        at(
            "dpas_tool_calls_total",
            &[("plane", "unknown"), ("outcome", "no-such-tool")]
        ),
        unknown
    );

    let usage = &finish["usage"];
    for (kind, field) in [
        ("input", "inputTokens"),
        ("output", "outputTokens"),
        ("cached", "cachedInputTokens"),
        ("reasoning", "reasoningTokens"),
    ] {
        let reported = usage[field]
            .as_f64()
            .unwrap_or_else(|| panic!("{field}: {usage}"));
        assert_eq!(
            at("dpas_model_tokens_total", &[("kind", kind)]),
            reported,
            "{kind}"
        );
    }

    assert_eq!(missing, 404);
    let code = body["error"]["code"].as_str().expect("code");
    assert_eq!(at("dpas_errors_total", &[("code", code)]), 1.0);
    assert_eq!(
        at(
            "dpas_http_requests_total",
            &[
                ("method", "POST"),
                ("route", "/agent/chat"),
                ("status", "200")
            ]
        ),
        1.0
    );
    // The route's pattern, never the raw path.
    assert_eq!(
        at(
            "dpas_http_requests_total",
            &[
                ("method", "GET"),
                ("route", "/api/threads/{id}"),
                ("status", "404")
            ]
        ),
        1.0
    );
    assert!(!m.keys().any(|k| k.contains("cnv_nope")));
}

#[actix_web::test]
async fn metrics_listen_moves_the_scrape_to_its_own_address() {
    let server = Process::start(&[
        "--demo",
        "--database",
        "sqlite::memory:",
        "--metrics-listen",
        "127.0.0.1:0",
    ]);
    let url = server
        .startup
        .split(' ')
        .find_map(|part| part.strip_prefix("metrics="))
        .unwrap_or_else(|| panic!("the startup line names it: {}", server.startup))
        .to_owned();
    let (status, _) = scrape(&url).await;
    assert_eq!(status, 200);
    let (status, _) = scrape(&server.url("/metrics")).await;
    assert_eq!(status, 404, "not on the main address then");
}
