//! The seeded ledger through `/rpc` (surface `direct`), figures as in fixtures/demo/README.md.

use serde_json::{json, Value};

use crate::common::start;

fn ids(rows: &Value, key: &str) -> Vec<String> {
    rows.as_array()
        .expect("array")
        .iter()
        .map(|r| r[key].to_string().trim_matches('"').to_owned())
        .collect()
}

#[actix_web::test]
async fn seeded_figures_reproduce() {
    let s = start().await;
    let carla = s.sign_in("controller").await;

    let (status, env) = s.rpc(&carla, "receivables-summary", json!({})).await;
    assert_eq!(status, 200);
    assert_eq!(
        env,
        json!({"status": "ok", "data": {"outstanding": 20050000, "overdue": 10260000, "draft": 6490000,
            "collected30d": 325000, "invoiceCount": 24, "overdueCount": 7, "averageDaysToPay": 31}})
    );

    let (_, env) = s.rpc(&carla, "collections-aging", json!({})).await;
    assert_eq!(
        env["data"],
        json!([
            {"id": "current", "label": "Not yet due", "count": 6, "amount": 9790000},
            {"id": "1-30", "label": "1–30 days", "count": 5, "amount": 6805000},
            {"id": "31-60", "label": "31–60 days", "count": 2, "amount": 3455000},
            {"id": "61-90", "label": "61–90 days", "count": 0, "amount": 0},
            {"id": "90+", "label": "Over 90 days", "count": 0, "amount": 0}
        ])
    );

    let (_, pending) = s
        .rpc(&carla, "list-invoices", json!({"kind": "pending"}))
        .await;
    assert_eq!(pending["data"].as_array().map(Vec::len), Some(13));
    let (_, overdue) = s
        .rpc(
            &carla,
            "list-invoices",
            json!({"kind": "pending", "overdueOnly": true}),
        )
        .await;
    let overdue = &overdue["data"];
    assert_eq!(overdue.as_array().map(Vec::len), Some(7));
    let total: i64 = overdue
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["amount"].as_i64())
        .sum();
    assert_eq!(total, 10_260_000);

    // Omitted body means `{}`; `kind` defaults to all.
    let all = s
        .post("/rpc/list-invoices", Some(&carla), Value::Null)
        .await;
    assert_eq!(all.status, 400, "null is not an input object");
    let all = s
        .send("POST", "/rpc/list-invoices", Some(&carla), None)
        .await;
    assert_eq!(all.status, 200);
    assert_eq!(
        ids(&all.body["data"], "reference"),
        [
            "DUN-0044", "EVL-0091", "DUN-0041", "AUR-0141", "CBL-0215", "CBL-0213", "BWF-0072",
            "CBL-0212", "AUR-0138", "BWF-0069", "EVL-0088", "CBL-0207", "AUR-0137", "BWF-0064",
            "AUR-0136", "AUR-0134", "BWF-0061", "EVL-0079", "AUR-0131", "EVL-0084", "BWF-0058",
            "CBL-0203", "DUN-0037", "AUR-0129"
        ]
    );
    // Row shape and key order: invoice fields, then client, lateness and chase record.
    let first_overdue = all.body["data"]
        .as_array()
        .and_then(|rows| rows.iter().find(|r| r["reference"] == "DUN-0037"))
        .cloned();
    let row = first_overdue.expect("DUN-0037 present");
    let keys: Vec<&String> = row.as_object().expect("object").keys().collect();
    assert_eq!(
        keys,
        [
            "id",
            "reference",
            "client_id",
            "amount",
            "status",
            "issue_date",
            "due_date",
            "paid_date",
            "notes",
            "client_name",
            "segment",
            "days_overdue",
            "collection"
        ]
    );
    assert_eq!(row["days_overdue"], 58);
    assert_eq!(row["issue_date"], "2026-08-03");
    assert_eq!(row["due_date"], "2026-10-02");
    assert_eq!(
        row["collection"],
        json!({"invoice_id": 18, "reminders_sent": 1, "last_reminder_date": "2026-11-17", "expected_payment_date": null,
               "note": "Waiting on a purchase-order number before they can pay."})
    );

    let (_, clients) = s.rpc(&carla, "list-clients", json!({})).await;
    assert_eq!(clients["data"].as_array().map(Vec::len), Some(5));
    let positions: Vec<(String, i64, i64, i64)> = clients["data"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            let n = |k: &str| c[k].as_i64().unwrap_or(-1);
            (
                c["name"].as_str().unwrap_or_default().to_owned(),
                n("open_invoices"),
                n("outstanding"),
                n("overdue"),
            )
        })
        .collect();
    assert_eq!(
        positions,
        [
            ("Aurora Labs".to_owned(), 4, 7_350_000, 4_950_000),
            ("Bellweather Foods".to_owned(), 2, 1_355_000, 615_000),
            ("Cobalt Logistics".to_owned(), 3, 3_745_000, 1_240_000),
            ("Dunmore Civic Trust".to_owned(), 2, 5_825_000, 2_675_000),
            ("Everline Health".to_owned(), 2, 1_775_000, 780_000),
        ]
    );
}

#[actix_web::test]
async fn writes_follow_the_ledger_rules_and_reset_restores_the_seed() {
    let s = start().await;
    let carla = s.sign_in("controller").await;

    let (status, created) = s
        .rpc(
            &carla,
            "create-invoice",
            json!({"clientId": 1, "amount": 100000}),
        )
        .await;
    assert_eq!(status, 200, "{created}");
    assert_eq!(
        created["data"],
        json!({"id": 25, "reference": "AUR-025", "client_id": 1, "amount": 100000, "status": "draft",
               "issue_date": "2026-11-29", "due_date": "2026-12-29", "paid_date": null, "notes": null})
    );
    let (status, issued) = s.rpc(&carla, "issue-invoice", json!({"id": 25})).await;
    assert_eq!(status, 200, "direct calls are never gated: {issued}");
    assert_eq!(
        issued["data"]["summary"],
        "AUR-025 · €1,000 · due 2026-12-29"
    );

    let (status, again) = s.rpc(&carla, "issue-invoice", json!({"id": 25})).await;
    assert_eq!(status, 409);
    assert_eq!(
        again["error"],
        json!({"code": "EXECUTION_FAILED", "message": "Invoice AUR-025 is already sent; only a draft can be issued.", "retryable": false})
    );
    let (status, missing) = s.rpc(&carla, "delete-invoice", json!({"id": 999})).await;
    assert_eq!(
        (status, missing["error"]["message"].clone()),
        (409, json!("No invoice with id 999."))
    );

    let (_, paid) = s
        .rpc(
            &carla,
            "mark-invoice-paid",
            json!({"id": 18, "paidDate": "2026-11-29"}),
        )
        .await;
    assert_eq!(paid["data"]["daysToPay"], 118);
    assert_eq!(paid["data"]["status"], "paid");

    let (_, chase) = s
        .rpc(
            &carla,
            "update-collection-status",
            json!({"invoiceId": 13, "note": "Promised payment on Friday."}),
        )
        .await;
    assert_eq!(
        chase["data"],
        json!({"invoice_id": 13, "reminders_sent": 0, "last_reminder_date": null, "expected_payment_date": null, "note": "Promised payment on Friday."})
    );
    let (_, cleared) = s
        .rpc(
            &carla,
            "update-collection-status",
            json!({"invoiceId": 13, "note": null, "remindersSent": 2}),
        )
        .await;
    assert_eq!(cleared["data"]["note"], Value::Null);
    assert_eq!(cleared["data"]["reminders_sent"], 2);

    let (_, summary) = s.rpc(&carla, "receivables-summary", json!({})).await;
    assert_ne!(summary["data"]["invoiceCount"], 24);
    let reset = s.post("/api/demo/reset", Some(&carla), json!({})).await;
    assert_eq!((reset.status, reset.body), (200, json!({"ok": true})));
    let (_, summary) = s.rpc(&carla, "receivables-summary", json!({})).await;
    assert_eq!(summary["data"]["invoiceCount"], 24);
    assert_eq!(summary["data"]["outstanding"], 20_050_000);
    let (_, created) = s
        .rpc(
            &carla,
            "create-invoice",
            json!({"clientId": 2, "amount": 5}),
        )
        .await;
    assert_eq!(
        created["data"]["id"], 25,
        "the id counter restarts after a reset"
    );
}
