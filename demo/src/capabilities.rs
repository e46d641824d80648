//! The ten demo capabilities: same ids, tags, side effects, exposure, inputs and outputs as
//! the reference ledger (descriptions in our own words).

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{json, Value};

use super::ledger::{
    format_eur, AgingBucket, ClientPosition, CollectionStatus, Invoice, InvoiceKind, Ledger, Patch,
    Summary,
};
use dpas_governance::{CallSurface, Capability, HandlerError, RegistryError, Risk, SideEffect};

/// Rows a model surface receives from `list-invoices` before the output is cut short.
pub const MODEL_ROW_CAP: usize = 50;

/// Reads a present key (even `null`) as `Some`, leaving absent keys to `#[serde(default)]`.
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

fn patch<T>(v: Option<Option<T>>) -> Patch<Option<T>> {
    v.map_or(Patch::Keep, Patch::Set)
}

#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ListKind {
    Pending,
    #[default]
    All,
    Draft,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListInvoicesInput {
    /// Which invoices: `pending` = issued and unpaid (the collections worklist), `draft` = not yet issued, `all` = the whole ledger.
    #[serde(default)]
    pub kind: ListKind,
    /// Only this client's invoices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 9007199254740991_i64))]
    #[schemars(with = "i64")]
    pub client_id: Option<i64>,
    /// Only invoices past their due date.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "bool")]
    pub overdue_only: Option<bool>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreateInvoiceInput {
    #[schemars(range(min = 1, max = 9007199254740991_i64))]
    pub client_id: i64,
    /// Amount in cents: 18,400 euros is 1840000.
    #[schemars(range(min = 1, max = 9007199254740991_i64))]
    pub amount: i64,
    /// YYYY-MM-DD; today when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^\d{4}-\d{2}-\d{2}$"))]
    #[schemars(with = "String")]
    pub issue_date: Option<String>,
    /// YYYY-MM-DD; the issue date plus the client's payment terms when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^\d{4}-\d{2}-\d{2}$"))]
    #[schemars(with = "String")]
    pub due_date: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 500))]
    #[schemars(with = "Option<String>")]
    pub notes: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UpdateInvoiceInput {
    #[schemars(range(min = 1, max = 9007199254740991_i64))]
    pub id: i64,
    /// New amount in cents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 9007199254740991_i64))]
    #[schemars(with = "i64")]
    pub amount: Option<i64>,
    /// New due date, YYYY-MM-DD.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^\d{4}-\d{2}-\d{2}$"))]
    #[schemars(with = "String")]
    pub due_date: Option<String>,
    /// New notes; null clears them.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(length(max = 500))]
    #[schemars(with = "Option<String>")]
    pub notes: Option<Option<String>>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct InvoiceIdInput {
    #[schemars(range(min = 1, max = 9007199254740991_i64))]
    pub id: i64,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MarkPaidInput {
    #[schemars(range(min = 1, max = 9007199254740991_i64))]
    pub id: i64,
    /// Payment date, YYYY-MM-DD; today when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^\d{4}-\d{2}-\d{2}$"))]
    #[schemars(with = "String")]
    pub paid_date: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[schemars(extend("properties" = {}))]
pub struct NoInput {}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UpdateCollectionStatusInput {
    #[schemars(range(min = 1, max = 9007199254740991_i64))]
    pub invoice_id: i64,
    /// When the last chase email went out, YYYY-MM-DD; null erases it.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(regex(pattern = r"^\d{4}-\d{2}-\d{2}$"))]
    #[schemars(with = "Option<String>")]
    pub last_reminder_date: Option<Option<String>>,
    /// How many reminders have been sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 99))]
    #[schemars(with = "i64")]
    pub reminders_sent: Option<i64>,
    /// The payment date the client promised, YYYY-MM-DD; null erases it.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(regex(pattern = r"^\d{4}-\d{2}-\d{2}$"))]
    #[schemars(with = "Option<String>")]
    pub expected_payment_date: Option<Option<String>>,
    /// Free-text chase note; null erases it.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(length(max = 500))]
    #[schemars(with = "Option<String>")]
    pub note: Option<Option<String>>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct IssuedInvoice {
    #[serde(flatten)]
    pub invoice: Invoice,
    pub summary: String,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct DeletedInvoice {
    pub ok: bool,
    pub reference: String,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PaidInvoice {
    #[serde(flatten)]
    pub invoice: Invoice,
    pub days_to_pay: i64,
}

/// Cuts a long invoice list to [`MODEL_ROW_CAP`] rows for model surfaces.
fn cap_rows_for_model(v: Value) -> Value {
    match v {
        Value::Array(rows) if rows.len() > MODEL_ROW_CAP => {
            let total = rows.len();
            let first: Vec<Value> = rows.into_iter().take(MODEL_ROW_CAP).collect();
            json!({"rows": first, "totalRows": total, "truncatedForModel": true})
        }
        other => other,
    }
}

const EVERYWHERE: &[CallSurface] = &[
    CallSurface::Model,
    CallSurface::Mcp,
    CallSurface::Direct,
    CallSurface::Test,
];

/// The ten capabilities in registry order.
/// Reads the invoice an `{"id": …}` input names, for approvals to bind.
fn invoice_target(
    ledger: &Ledger,
) -> impl Fn(Value) -> futures_util::future::BoxFuture<'static, Result<Value, HandlerError>>
       + Send
       + Sync
       + 'static {
    let ledger = ledger.clone();
    move |input: Value| {
        let ledger = ledger.clone();
        Box::pin(async move {
            match input.get("id").and_then(Value::as_i64) {
                Some(id) => ledger.invoice_snapshot(id).await,
                None => Ok(Value::Null),
            }
        })
    }
}

pub fn capabilities(ledger: &Ledger) -> Vec<Result<Capability, RegistryError>> {
    let l = ledger.clone();
    let list_invoices = Capability::builder("list-invoices")
        .description("Returns invoice rows with client name, amount in cents, status, due date and days overdue. kind=pending lists issued, unpaid invoices (what collections works on); kind=draft lists invoices not yet issued; kind=all lists everything. Reads only.")
        .side_effect(SideEffect::Read)
        .risk(Risk::Low)
        .tags(["invoices"])
        .expose(EVERYWHERE)
        .model_output(cap_rows_for_model)
        .handler(move |_ctx, i: ListInvoicesInput| {
            let l = l.clone();
            async move {
                let kind = match i.kind {
                    ListKind::Pending => InvoiceKind::Pending,
                    ListKind::All => InvoiceKind::All,
                    ListKind::Draft => InvoiceKind::Draft,
                };
                l.list_invoices(kind, i.client_id, i.overdue_only.unwrap_or(false)).await
            }
        });
    let l = ledger.clone();
    let create_invoice = Capability::builder("create-invoice")
        .description("Drafts a new invoice for a client. The amount is in cents. Without a due date it follows the client's payment terms. This only makes a draft; issuing is a separate step that needs confirmation.")
        .side_effect(SideEffect::Write)
        .risk(Risk::Medium)
        .tags(["invoices"])
        .expose(EVERYWHERE)
        .handler(move |_ctx, i: CreateInvoiceInput| {
            let l = l.clone();
            async move { l.create_invoice(i.client_id, i.amount, i.issue_date, i.due_date, i.notes).await }
        });
    let l = ledger.clone();
    let update_invoice = Capability::builder("update-invoice")
        .description("Edits a draft invoice's amount (cents), due date or notes. Issued invoices are not editable; a real ledger corrects them with a credit note.")
        .side_effect(SideEffect::Write)
        .risk(Risk::Medium)
        .tags(["invoices"])
        .expose(EVERYWHERE)
        .handler(move |_ctx, i: UpdateInvoiceInput| {
            let l = l.clone();
            async move { l.update_invoice(i.id, i.amount, i.due_date, patch(i.notes)).await }
        });
    let l = ledger.clone();
    let issue_invoice = Capability::builder("issue-invoice")
        .description("Issues a draft: it is sent to the client and joins the receivables. This cannot be undone, and when a model asks for it the user must approve first.")
        .side_effect(SideEffect::Destructive)
        .risk(Risk::High)
        .tags(["invoices"])
        .expose(EVERYWHERE)
        .target_state(invoice_target(ledger))
        .receipt_detail(receipt_parts)
        .handler(move |_ctx, i: InvoiceIdInput| {
            let l = l.clone();
            async move {
                let (invoice, summary) = l.issue_invoice(i.id).await?;
                Ok(IssuedInvoice { invoice, summary })
            }
        });
    let l = ledger.clone();
    let delete_invoice = Capability::builder("delete-invoice")
        .description("Deletes a draft invoice and its chase record for good. Issued invoices stay in the ledger. When a model asks for it the user must approve first.")
        .side_effect(SideEffect::Destructive)
        .risk(Risk::High)
        .tags(["invoices"])
        .expose(EVERYWHERE)
        .target_state(invoice_target(ledger))
        .receipt_detail(receipt_parts)
        .handler(move |_ctx, i: InvoiceIdInput| {
            let l = l.clone();
            async move {
                let reference = l.delete_invoice(i.id).await?;
                Ok(DeletedInvoice { ok: true, reference })
            }
        });
    let l = ledger.clone();
    let mark_paid = Capability::builder("mark-invoice-paid")
        .description("Records payment of an issued invoice, settling it, and reports how many days the client took to pay counting from the issue date.")
        .side_effect(SideEffect::Write)
        .risk(Risk::Medium)
        .tags(["invoices"])
        .expose(EVERYWHERE)
        .handler(move |_ctx, i: MarkPaidInput| {
            let l = l.clone();
            async move {
                let (invoice, days_to_pay) = l.mark_paid(i.id, i.paid_date).await?;
                Ok(PaidInvoice { invoice, days_to_pay })
            }
        });
    let l = ledger.clone();
    let list_clients = Capability::builder("list-clients")
        .description("Lists every client with segment, payment terms and billing email, plus how many invoices are open and the outstanding and overdue balances in cents.")
        .side_effect(SideEffect::Read)
        .risk(Risk::Low)
        .tags(["clients"])
        .expose(EVERYWHERE)
        .handler(move |_ctx, _i: NoInput| {
            let l = l.clone();
            async move { l.list_clients().await.map(|v: Vec<ClientPosition>| v) }
        });
    let l = ledger.clone();
    let summary = Capability::builder("receivables-summary")
        .description("The headline receivables figures in cents: outstanding, overdue, drafts and collected in the last 30 days, the invoice and overdue counts, and the average days to pay (null when nothing has been paid).")
        .side_effect(SideEffect::Read)
        .risk(Risk::Low)
        .tags(["invoices", "reporting"])
        .expose(EVERYWHERE)
        .handler(move |_ctx, _i: NoInput| {
            let l = l.clone();
            async move { l.summary().await.map(|s: Summary| s) }
        });
    let l = ledger.clone();
    let aging = Capability::builder("collections-aging")
        .description("The ageing ladder: open invoices grouped by lateness (not yet due, 1-30, 31-60, 61-90, over 90 days) with a count and a total in cents for each band. The best read for judging the collections position as a whole.")
        .side_effect(SideEffect::Read)
        .risk(Risk::Low)
        .tags(["invoices", "reporting"])
        .expose(EVERYWHERE)
        .handler(move |_ctx, _i: NoInput| {
            let l = l.clone();
            async move { l.aging().await.map(|v: Vec<AgingBucket>| v) }
        });
    let l = ledger.clone();
    let collection = Capability::builder("update-collection-status")
        .description("Creates or updates the chase record of the invoice open in the chase dialog. Fields left out stay as they are; null erases one.")
        .side_effect(SideEffect::Write)
        .risk(Risk::Low)
        .tags(["invoices", "collections"])
        .expose(&[CallSurface::Mcp, CallSurface::Direct, CallSurface::Test])
        .handler(move |_ctx, i: UpdateCollectionStatusInput| {
            let l = l.clone();
            async move {
                l.update_collection_status(
                    i.invoice_id,
                    patch(i.last_reminder_date),
                    i.reminders_sent,
                    patch(i.expected_payment_date),
                    patch(i.note),
                )
                .await
                .map(|c: CollectionStatus| c)
            }
        });
    vec![
        list_invoices,
        create_invoice,
        update_invoice,
        issue_invoice,
        delete_invoice,
        mark_paid,
        list_clients,
        summary,
        aging,
        collection,
    ]
}

/// The receipt's detail for one of the demo's gated writes (their
/// `CapabilityBuilder::receipt_detail`): `invoice <id>` and the euro amount, with only the
/// parts the input has.
pub(crate) fn receipt_parts(input: &Value) -> Vec<String> {
    let mut parts = Vec::new();
    if let Some(id) = input
        .get("id")
        .or_else(|| input.get("invoiceId"))
        .and_then(Value::as_i64)
    {
        parts.push(format!("invoice {id}"));
    }
    if let Some(amount) = input.get("amount").and_then(Value::as_i64) {
        parts.push(format_eur(amount));
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn registry() -> Vec<Capability> {
        let pool = dpas_store::connect("sqlite::memory:").await.expect("db");
        capabilities(&Ledger::new(pool))
            .into_iter()
            .map(|c| c.expect("valid capability"))
            .collect()
    }

    #[tokio::test]
    async fn schemas_match_the_reference_inputs() {
        let caps = registry().await;
        let schema = |id: &str| {
            caps.iter()
                .find(|c| c.meta.id == id)
                .map(|c| c.meta.input_schema.clone())
                .expect("capability")
        };
        let int_plus = json!({"type": "integer", "format": "int64", "minimum": 1, "maximum": 9007199254740991_i64});

        let list = schema("list-invoices");
        assert_eq!(
            list["properties"]["kind"]["enum"],
            json!(["pending", "all", "draft"])
        );
        assert_eq!(list["properties"]["kind"]["default"], "all");
        assert_eq!(list["properties"]["overdueOnly"]["type"], "boolean");
        assert!(list.get("required").is_none());
        let client_id = &list["properties"]["clientId"];
        assert_eq!(client_id["type"], "integer");
        assert_eq!(client_id["minimum"], 1);

        let create = schema("create-invoice");
        assert_eq!(create["required"], json!(["clientId", "amount"]));
        assert_eq!(create["properties"]["issueDate"]["type"], "string");
        assert_eq!(
            create["properties"]["issueDate"]["pattern"],
            r"^\d{4}-\d{2}-\d{2}$"
        );
        assert_eq!(
            create["properties"]["notes"]["type"],
            json!(["string", "null"])
        );
        assert_eq!(create["properties"]["notes"]["maxLength"], 500);
        assert_eq!(schema("issue-invoice")["properties"]["id"], int_plus);
        assert_eq!(
            schema("list-clients"),
            json!({"type": "object", "properties": {}, "$schema": "https://json-schema.org/draft/2020-12/schema"})
        );
        let chase = schema("update-collection-status");
        assert_eq!(chase["properties"]["remindersSent"]["maximum"], 99);
        assert_eq!(
            chase["properties"]["lastReminderDate"]["type"],
            json!(["string", "null"])
        );
        assert_eq!(chase["required"], json!(["invoiceId"]));

        let list_cap = caps
            .iter()
            .find(|c| c.meta.id == "list-invoices")
            .expect("list-invoices");
        assert!(
            list_cap.validate(&json!({"clientId": null})).is_err(),
            "optional is not nullable"
        );
        assert_eq!(
            list_cap.validate(&json!({"extra": 1})).ok(),
            Some(json!({"kind": "all"})),
            "unknown keys dropped, defaults filled"
        );
        let chase_cap = caps
            .iter()
            .find(|c| c.meta.id == "update-collection-status")
            .expect("chase");
        assert_eq!(
            chase_cap
                .validate(&json!({"invoiceId": 1, "note": null}))
                .ok(),
            Some(json!({"invoiceId": 1, "note": null})),
            "an explicit null survives normalisation; absent keys stay absent"
        );
    }

    #[test]
    fn model_surfaces_get_at_most_fifty_rows() {
        let rows: Vec<Value> = (0..51).map(|i| json!({"id": i})).collect();
        let capped = cap_rows_for_model(Value::Array(rows));
        assert_eq!(capped["totalRows"], 51);
        assert_eq!(capped["truncatedForModel"], true);
        assert_eq!(capped["rows"].as_array().map(Vec::len), Some(50));
        let few = json!([{"id": 1}]);
        assert_eq!(cap_rows_for_model(few.clone()), few);
    }

    #[test]
    fn gated_writes_name_the_invoice_and_its_euro_amount() {
        let parts = |input: Value| receipt_parts(&input);
        assert_eq!(
            parts(json!({"invoiceId": 5, "amount": 1_234_550})),
            ["invoice 5", "€12,346"]
        );
        assert_eq!(parts(json!({"id": 10})), ["invoice 10"]);
        assert!(parts(json!({"id": "x"})).is_empty());
    }
}
