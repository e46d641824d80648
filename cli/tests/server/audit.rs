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
            "capability.completed",
            "operation.outcome"
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
    // The input's digest: `jcs:` and the SHA-256 of its RFC 8785 text, `{}`.
    assert_eq!(
        mine[3].data,
        Some(json!({"surface": "aiSdk", "outcome": "ok",
            "inputDigest": "jcs:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"}))
    );
    let wire = serde_json::to_value(&*mine[0]).expect("serialises");
    assert_eq!(wire["type"], "capability.requested");
    assert_eq!(wire["actorId"], "carla@example.com");
    assert_eq!(wire["correlation"]["stepId"], "stp_a");
    assert_eq!(wire["correlation"]["invocationId"], "stc_3");
    assert_eq!(carla_reader.dropped(), 0);

    let all = everyone.drain();
    assert_eq!(
        all.len(),
        4 + 3 + 1,
        "carla's four, ada's requested, denied and outcome, and the host entry"
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
    let refused = all
        .iter()
        .rfind(|e| e.kind == "operation.outcome")
        .expect("ada's outcome");
    assert_eq!(refused.execution_id, denied.execution_id);
    assert_eq!(
        refused.data.as_ref().map(|d| (&d["outcome"], &d["code"])),
        Some((&json!("error"), &json!("CAPABILITY_NOT_FOUND")))
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
        let s = crate::common::start_on(&url).await;
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

/// `host-server audit verify` over `lines` (through a file, or standard input): the exit
/// code, stdout and stderr.
pub(crate) fn verify(lines: &[String], stdin: bool) -> (i32, String, String) {
    use std::io::Write as _;
    let text = lines.iter().map(|l| format!("{l}\n")).collect::<String>();
    let mut cmd = crate::cli::clean_command();
    cmd.stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let file = tempfile::NamedTempFile::new().expect("temp file");
    let output = if stdin {
        let mut child = cmd
            .args(["audit", "verify", "-"])
            .stdin(std::process::Stdio::piped())
            .spawn()
            .expect("spawn host-server audit verify");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(text.as_bytes())
            .expect("write stdin");
        child.wait_with_output().expect("verify ends")
    } else {
        std::fs::write(file.path(), &text).expect("write export");
        cmd.arg("audit")
            .arg("verify")
            .arg(file.path())
            .output()
            .expect("run host-server audit verify")
    };
    (
        output.status.code().expect("exit code"),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// `GET /api/audit/export` as `cookie`: the status, content type and lines.
pub(crate) async fn export(
    s: &dpas_tests::testing::TestServer,
    query: &str,
    cookie: &str,
) -> (u16, String, Vec<String>) {
    let resp = s
        .http
        .get(s.url(&format!("/api/audit/export{query}")))
        .header("cookie", cookie)
        .send()
        .await
        .expect("export answers");
    let status = resp.status().as_u16();
    let content_type = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let text = resp.text().await.expect("body");
    (
        status,
        content_type,
        text.lines().map(str::to_owned).collect(),
    )
}

fn line_seq(line: &str) -> i64 {
    let v: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
    v["seq"].as_i64().expect("seq")
}

/// The export of every entry verifies with the binary's `audit verify`, from the genesis; an
/// edited field, two lines swapped and a deleted line are each found, naming the seq; a
/// sub-range verifies on its own, headed by the checkpoint of the record before it.
#[actix_web::test]
async fn the_exported_chain_verifies_and_verify_names_the_record_after_an_edit() {
    for url in crate::pg::backends().await {
        let s = crate::common::start_on(&url).await;
        let (carla_cookie, ada_cookie) =
            (s.sign_in("controller").await, s.sign_in("analyst").await);
        for _ in 0..3 {
            assert_eq!(
                s.rpc(&carla_cookie, "collections-aging", json!({})).await.0,
                200
            );
            assert_eq!(
                s.rpc(&ada_cookie, "collections-aging", json!({})).await.0,
                200
            );
        }
        let (status, content_type, lines) = export(&s, "", &carla_cookie).await;
        assert_eq!(status, 200, "{url}: {lines:?}");
        assert_eq!(content_type, "application/x-ndjson; charset=utf-8");
        assert!(
            lines.len() > 12,
            "{url}: the checkpoint and 12 records at least: {lines:?}"
        );
        let head: serde_json::Value = serde_json::from_str(&lines[0]).expect("checkpoint");
        assert_eq!(head["kind"], "checkpoint");
        assert_eq!(head["seq"], 0);
        assert_eq!(head["digest"], dpas_governance::audit_chain::GENESIS);
        let seqs: Vec<i64> = lines[1..].iter().map(|l| line_seq(l)).collect();
        assert_eq!(seqs, (1..=seqs.len() as i64).collect::<Vec<_>>(), "{url}");

        let (code, out, err) = verify(&lines, false);
        assert_eq!(code, 0, "{url}: {err}");
        assert_eq!(
            out.trim(),
            format!(
                "ok: {} records of tenant default, seq 1..{}, from genesis",
                seqs.len(),
                seqs.len()
            )
        );
        assert_eq!(verify(&lines, true).0, 0, "{url}: from standard input");

        // An edited field of record 3 (its actor) names record 3.
        let mut edited = lines.clone();
        assert!(
            edited[3].contains("\"actorId\":\"ada@example.com\"")
                || edited[3].contains("\"actorId\":\"carla@example.com\"")
        );
        edited[3] = edited[3]
            .replace("ada@example.com", "eve@example.com")
            .replace("carla@example.com", "eve@example.com");
        let (code, _, err) = verify(&edited, false);
        assert_eq!(code, 1, "{url}");
        assert!(err.contains("broken at seq 3:"), "{url}: {err}");
        assert!(err.contains("edited"), "{err}");

        // Lines 4 and 5 swapped: record 4 is missing where it should be.
        let mut reordered = lines.clone();
        reordered.swap(4, 5);
        let (code, _, err) = verify(&reordered, true);
        assert_eq!(code, 1);
        assert!(err.contains("broken at seq 4:"), "{url}: {err}");

        // Record 6 deleted: the gap names it.
        let mut deleted = lines.clone();
        deleted.remove(6);
        let (code, _, err) = verify(&deleted, false);
        assert_eq!(code, 1);
        assert!(err.contains("broken at seq 6:"), "{url}: {err}");
        assert!(err.contains("deleted"), "{err}");

        // A sub-range: from the time of record 5 on (a second range ends before record 8's
        // time). Records of one instant are all in, or all out.
        let times: Vec<String> = lines[1..]
            .iter()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).expect("a record");
                v["at"].as_str().expect("at").to_owned()
            })
            .collect();
        let (at5, at8) = (&times[4], &times[7]);
        let lo = 1 + times.iter().position(|t| t >= at5).expect("record 5") as i64;
        let hi = times
            .iter()
            .rposition(|t| t < at8)
            .expect("before record 8") as i64
            + 1;
        let (status, _, part) = export(&s, &format!("?from={at5}"), &carla_cookie).await;
        assert_eq!(status, 200);
        let head: serde_json::Value = serde_json::from_str(&part[0]).expect("checkpoint");
        assert_eq!(
            (head["kind"].as_str(), head["seq"].as_i64()),
            (Some("checkpoint"), Some(lo - 1))
        );
        assert_eq!(line_seq(&part[1]), lo, "{url}");
        let (code, out, err) = verify(&part, false);
        assert_eq!(code, 0, "{url}: {err}");
        assert!(
            out.contains(&format!("after checkpoint seq {}", lo - 1)),
            "{out}"
        );
        // Its first record deleted: the checkpoint names it missing.
        let headless: Vec<String> = part[..1].iter().chain(&part[2..]).cloned().collect();
        let (code, _, err) = verify(&headless, false);
        assert_eq!(code, 1);
        assert!(err.contains(&format!("broken at seq {lo}:")), "{err}");
        let (status, _, window) = export(&s, &format!("?from={at5}&to={at8}"), &carla_cookie).await;
        assert_eq!(status, 200);
        assert_eq!(
            window[1..].iter().map(|l| line_seq(l)).collect::<Vec<_>>(),
            (lo..=hi).collect::<Vec<_>>(),
            "{url}: from inclusive, to exclusive"
        );
        assert_eq!(verify(&window, false).0, 0);
        let (status, _, empty) = export(&s, "?from=2999-01-01T00:00:00Z", &carla_cookie).await;
        assert_eq!(
            (status, empty.len()),
            (200, 0),
            "{url}: nothing in the range"
        );
    }
}

/// The export is the operator's: another role is 403 `FORBIDDEN`, no session 401, and a
/// query that is not two RFC 3339 times in order is 400 `BAD_REQUEST`.
#[actix_web::test]
async fn the_export_is_for_the_operator_and_refuses_a_bad_range() {
    let s = crate::common::start().await;
    let (carla_cookie, ada_cookie) = (s.sign_in("controller").await, s.sign_in("analyst").await);
    let reply = s.get("/api/audit/export", Some(&ada_cookie)).await;
    assert_eq!(reply.refusal(), (403, Some("FORBIDDEN")), "{}", reply.body);
    assert_eq!(s.get("/api/audit/export", None).await.status, 401);
    for bad in [
        "from=yesterday",
        "to=2026-13-01T00:00:00Z",
        "from=2026-01-02",
        "from=2026-01-02T00:00:00Z&from=2026-01-03T00:00:00Z",
        "from=2026-01-03T00:00:00Z&to=2026-01-02T00:00:00Z",
        "since=3",
    ] {
        let reply = s
            .get(&format!("/api/audit/export?{bad}"), Some(&carla_cookie))
            .await;
        assert_eq!(
            reply.refusal(),
            (400, Some("BAD_REQUEST")),
            "{bad}: {}",
            reply.body
        );
    }
}

/// Retention prunes the oldest records and moves the checkpoint to the last one pruned: the
/// export of what is kept begins with that checkpoint and verifies; a kept record whose
/// `prev` was rewritten in the table no longer follows the checkpoint.
#[actix_web::test]
async fn a_pruned_chain_exports_from_its_checkpoint_and_verifies() {
    use dpas_store::AuditRetention;
    for url in crate::pg::backends().await {
        let s = crate::common::start_with(crate::common::builder().with_config(|c| {
            c.database_url = url.clone();
            c.audit_retention = AuditRetention::Rows(5.try_into().expect("non-zero"));
        }))
        .await;
        let carla_cookie = s.sign_in("controller").await;
        let hub = s.state.runtime.audit();
        for n in 0..12 {
            hub.record(AuditDraft::new(AuditSource::Host, format!("test.{n}")));
            // Several batches, each of which prunes.
            if n % 4 == 3 {
                s.state
                    .audit_log
                    .flush(std::time::Duration::from_secs(5))
                    .await;
            }
        }
        let (status, _, lines) = export(&s, "", &carla_cookie).await;
        assert_eq!(status, 200);
        let head: serde_json::Value = serde_json::from_str(&lines[0]).expect("checkpoint");
        assert_eq!(head["kind"], "checkpoint", "{url}: {lines:?}");
        let first = line_seq(&lines[1]);
        assert!(first > 1, "{url}: older records were pruned: {lines:?}");
        assert_eq!(head["seq"].as_i64(), Some(first - 1));
        let (code, out, err) = verify(&lines, false);
        assert_eq!(code, 0, "{url}: {err}");
        assert!(
            out.contains(&format!("after checkpoint seq {}", first - 1)),
            "{out}"
        );

        // The oldest kept record re-linked in the table: the checkpoint no longer matches.
        sqlx::query("UPDATE audit SET prev = $1 WHERE chain_seq = $2")
            .bind(dpas_governance::audit_chain::GENESIS)
            .bind(first)
            .execute(&*s.state.pool)
            .await
            .expect("update");
        let (_, _, lines) = export(&s, "", &carla_cookie).await;
        let (code, _, err) = verify(&lines, false);
        assert_eq!(code, 1);
        assert!(
            err.contains(&format!("broken at seq {first}:")),
            "{url}: {err}"
        );
    }
}
