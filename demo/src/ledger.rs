//! The receivables ledger on SQLite: clients, invoices and chase records, with the read models
//! and rules of the demo (see fixtures/demo/README.md §a).

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sqlx::any::AnyRow;
use sqlx::Row;
use time::macros::format_description;
use time::{Date, Duration, OffsetDateTime};

use dpas_governance::HandlerError;
use dpas_protocol::wire_enum;
use dpas_store::{get, undecodable, Cell, Cells, Db, LockKey};

/// Seed data (the facts of fixtures/demo/ledger.json, offsets relative to the seed day).
const SEED: &str = include_str!("seed.json");
const DATE_FORMAT: &[time::format_description::BorrowedFormatItem<'static>] =
    format_description!("[year]-[month]-[day]");

// Calendar dates on the wire as `YYYY-MM-DD` (`ymd::option` for the optional ones); `time`'s
// own serde form for `Date` is a (year, ordinal) pair.
time::serde::format_description!(ymd, Date, "[year]-[month]-[day]");

wire_enum! {
    /// Where an invoice is in its life: the `status` column's values (its `CHECK`).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(rename_all = "lowercase")]
    pub enum InvoiceStatus {
        Draft = "draft",
        Sent = "sent",
        Paid = "paid",
    }
}

impl Cell for InvoiceStatus {
    fn read(row: &dyn Cells, column: &str) -> Result<Self, sqlx::Error> {
        let text: String = get(row, column)?;
        Self::parse(&text).ok_or_else(|| undecodable(column, &text, "an invoice status"))
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Client {
    pub id: i64,
    pub name: String,
    pub segment: String,
    pub payment_terms_days: i64,
    pub email: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Invoice {
    pub id: i64,
    pub reference: String,
    pub client_id: i64,
    /// Cents.
    pub amount: i64,
    #[schemars(with = "String")]
    pub status: InvoiceStatus,
    #[serde(with = "ymd")]
    #[schemars(with = "String")]
    pub issue_date: Date,
    #[serde(with = "ymd")]
    #[schemars(with = "String")]
    pub due_date: Date,
    #[serde(with = "ymd::option")]
    #[schemars(with = "Option<String>")]
    pub paid_date: Option<Date>,
    pub notes: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CollectionStatus {
    pub invoice_id: i64,
    pub reminders_sent: i64,
    #[serde(with = "ymd::option")]
    #[schemars(with = "Option<String>")]
    pub last_reminder_date: Option<Date>,
    #[serde(with = "ymd::option")]
    #[schemars(with = "Option<String>")]
    pub expected_payment_date: Option<Date>,
    pub note: Option<String>,
}

/// What invoice reads return: the invoice, then its client, lateness and chase record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct InvoiceRow {
    #[serde(flatten)]
    pub invoice: Invoice,
    pub client_name: String,
    pub segment: String,
    pub days_overdue: i64,
    pub collection: Option<CollectionStatus>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ClientPosition {
    #[serde(flatten)]
    pub client: Client,
    pub open_invoices: i64,
    pub outstanding: i64,
    pub overdue: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    pub outstanding: i64,
    pub overdue: i64,
    pub draft: i64,
    pub collected30d: i64,
    pub invoice_count: i64,
    pub overdue_count: i64,
    pub average_days_to_pay: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AgingBucket {
    pub id: String,
    pub label: String,
    pub count: i64,
    pub amount: i64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InvoiceKind {
    Pending,
    All,
    Draft,
}

/// A field patch: absent leaves the value alone, `Set(None)` clears it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Patch<T> {
    #[default]
    Keep,
    Set(T),
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SeedFile {
    clients: Vec<Client>,
    invoices: Vec<SeedInvoice>,
    collection_statuses: Vec<SeedCollection>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SeedInvoice {
    id: i64,
    reference: String,
    client_id: i64,
    amount: i64,
    status: String,
    issued_days_ago: i64,
    due_in_days: i64,
    paid_days_ago: Option<i64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SeedCollection {
    invoice_id: i64,
    reminders_sent: i64,
    last_reminder_days_ago: i64,
    note: Option<String>,
}

/// Formats a date as `YYYY-MM-DD`.
pub fn fmt_date(d: Date) -> String {
    d.format(DATE_FORMAT).unwrap_or_default()
}

/// Parses a `YYYY-MM-DD` calendar date.
pub fn parse_date(s: &str) -> Option<Date> {
    dpas_store::parse_date(s)
}

fn require_date(s: &str) -> Result<Date, HandlerError> {
    parse_date(s).ok_or_else(|| HandlerError::Rejected(format!("{s} is not a calendar date.")))
}

/// A date patch with its text read as a calendar date.
fn checked_dates(patch: Patch<Option<String>>) -> Result<Patch<Option<Date>>, HandlerError> {
    Ok(match patch {
        Patch::Keep => Patch::Keep,
        Patch::Set(None) => Patch::Set(None),
        Patch::Set(Some(d)) => Patch::Set(Some(require_date(&d)?)),
    })
}

/// `date` plus `days`, refused when it leaves the calendar range.
fn add_days(date: Date, days: i64) -> Result<Date, HandlerError> {
    date.checked_add(Duration::days(days)).ok_or_else(|| {
        HandlerError::Rejected(format!(
            "{} plus {days} days is past the end of the calendar.",
            fmt_date(date)
        ))
    })
}

/// Calendar days from `a` to `b`.
fn days_between(a: Date, b: Date) -> i64 {
    (b - a).whole_days()
}

/// Days a sent invoice due on `due` is overdue on `today` (0 until it is due): one rule for
/// the rows and the aging report.
fn days_overdue(due: Date, today: Date) -> i64 {
    days_between(due, today).max(0)
}

/// `1840000` cents → `€18,400` (whole euros, rounded half away from zero, en-IE grouping).
pub fn format_eur(cents: i64) -> String {
    let euros = (cents.unsigned_abs() + 50) / 100;
    let digits = euros.to_string();
    let mut grouped = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(ch);
    }
    if cents < 0 && euros > 0 {
        format!("-€{grouped}")
    } else {
        format!("€{grouped}")
    }
}

/// The current calendar date, as the ledger reads it.
pub type Today = Arc<dyn Fn() -> Date + Send + Sync>;

/// The demo ledger. Cheap to clone.
#[derive(Clone)]
pub struct Ledger {
    db: Db,
    today: Today,
}

impl std::fmt::Debug for Ledger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ledger").finish_non_exhaustive()
    }
}

fn sql_err(e: sqlx::Error) -> HandlerError {
    HandlerError::internal(e)
}

/// `sqlx::FromRow` for a row struct whose fields are its columns, by name. Written here rather
/// than derived: sqlx's `derive` feature turns on its proc-macro crate, which the `sqlite` and
/// `postgres` features then build with both drivers (and SQLite's C sources) a second time,
/// for the host. Dates are `YYYY-MM-DD` text in the columns (sqlx's `Any` driver decodes only
/// null, bool, integers, floats, text and blobs, `AnyTypeInfoKind`: no date or time type), read
/// into `time::Date` by its [`Cell`]; statuses are [`InvoiceStatus`] the same way.
macro_rules! from_any_row {
    ($ty:ident { $($field:ident),+ $(,)? }) => {
        impl $ty {
            /// The row's columns of the same names, on either backend's rows.
            fn from_cells(row: &dyn Cells) -> Result<Self, sqlx::Error> {
                Ok(Self { $($field: get(row, stringify!($field))?),+ })
            }
        }
        impl<'r> sqlx::FromRow<'r, AnyRow> for $ty {
            fn from_row(row: &'r AnyRow) -> Result<Self, sqlx::Error> {
                Self::from_cells(row)
            }
        }
    };
}

from_any_row!(Invoice {
    id,
    reference,
    client_id,
    amount,
    status,
    issue_date,
    due_date,
    paid_date,
    notes
});
from_any_row!(Client {
    id,
    name,
    segment,
    payment_terms_days,
    email
});
from_any_row!(CollectionStatus {
    invoice_id,
    reminders_sent,
    last_reminder_date,
    expected_payment_date,
    note
});

const INVOICE_COLUMNS: &str =
    "id, reference, client_id, amount, status, issue_date, due_date, paid_date, notes";

/// Every invoice with its client's name and segment and its chase record (`invoice_id` is
/// null when it has none), due date descending, ties in id order.
const ROW_QUERY: &str = "SELECT i.id, i.reference, i.client_id, i.amount, i.status, \
     i.issue_date, i.due_date, i.paid_date, i.notes, \
     c.name AS client_name, c.segment AS client_segment, \
     s.invoice_id, s.reminders_sent, s.last_reminder_date, s.expected_payment_date, s.note \
     FROM invoices i \
     LEFT JOIN clients c ON c.id = i.client_id \
     LEFT JOIN collection_statuses s ON s.invoice_id = i.id \
     ORDER BY i.due_date DESC, i.id ASC";

/// The sent (open) invoices' amounts and due dates: all the aging report reads.
const OPEN_QUERY: &str = "SELECT amount, due_date FROM invoices WHERE status = 'sent'";

impl Ledger {
    /// A ledger whose "today" is the UTC calendar date (the demo hosts run on UTC).
    pub fn new(db: Db) -> Self {
        Self::with_today(db, Arc::new(|| OffsetDateTime::now_utc().date()))
    }

    pub fn with_today(db: Db, today: Today) -> Self {
        Self { db, today }
    }

    pub fn today(&self) -> Date {
        (self.today)()
    }

    pub async fn is_empty(&self) -> Result<bool, sqlx::Error> {
        let n: i64 = sqlx::query("SELECT COUNT(*) AS n FROM clients")
            .fetch_one(&*self.db)
            .await?
            .try_get("n")?;
        Ok(n == 0)
    }

    /// Seeds the ledger, dated relative to `seed_day`, unless it holds clients already;
    /// `true` when it seeded. Check and seed are one transaction under the ledger's lock, so
    /// replicas starting together seed once.
    pub async fn seed_if_empty(&self, seed_day: Date) -> Result<bool, sqlx::Error> {
        let mut tx = self.db.begin().await?;
        self.db.lock(&mut tx, LockKey::Ledger).await?;
        let n: i64 = sqlx::query("SELECT COUNT(*) AS n FROM clients")
            .fetch_one(&mut *tx)
            .await?
            .try_get("n")?;
        if n > 0 {
            return Ok(false);
        }
        Self::write_seed(&mut tx, seed_day).await?;
        tx.commit().await?;
        Ok(true)
    }

    /// Replaces the whole ledger with the seed, dated relative to `seed_day`.
    pub async fn seed(&self, seed_day: Date) -> Result<(), sqlx::Error> {
        let mut tx = self.db.begin().await?;
        self.db.lock(&mut tx, LockKey::Ledger).await?;
        Self::write_seed(&mut tx, seed_day).await?;
        tx.commit().await
    }

    async fn write_seed(tx: &mut sqlx::AnyConnection, seed_day: Date) -> Result<(), sqlx::Error> {
        let seed: SeedFile =
            serde_json::from_str(SEED).map_err(|e| sqlx::Error::Decode(Box::new(e)))?;
        let date = |offset: i64| {
            fmt_date(
                seed_day
                    .checked_add(Duration::days(offset))
                    .unwrap_or(seed_day),
            )
        };
        for statement in [
            "DELETE FROM collection_statuses",
            "DELETE FROM invoices",
            "DELETE FROM clients",
            "DELETE FROM ledger_meta",
        ] {
            sqlx::query(statement).execute(&mut *tx).await?;
        }
        for c in &seed.clients {
            sqlx::query("INSERT INTO clients (id, name, segment, payment_terms_days, email) VALUES ($1, $2, $3, $4, $5)")
                .bind(c.id)
                .bind(&c.name)
                .bind(&c.segment)
                .bind(c.payment_terms_days)
                .bind(&c.email)
                .execute(&mut *tx)
                .await?;
        }
        for i in &seed.invoices {
            sqlx::query(&format!(
                "INSERT INTO invoices ({INVOICE_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, NULL)"
            ))
            .bind(i.id)
            .bind(&i.reference)
            .bind(i.client_id)
            .bind(i.amount)
            .bind(&i.status)
            .bind(date(-i.issued_days_ago))
            .bind(date(i.due_in_days))
            .bind(i.paid_days_ago.map(|d| date(-d)))
            .execute(&mut *tx)
            .await?;
        }
        for s in &seed.collection_statuses {
            sqlx::query(
                "INSERT INTO collection_statuses (invoice_id, reminders_sent, last_reminder_date, expected_payment_date, note) VALUES ($1, $2, $3, NULL, $4)",
            )
            .bind(s.invoice_id)
            .bind(s.reminders_sent)
            .bind(date(-s.last_reminder_days_ago))
            .bind(&s.note)
            .execute(&mut *tx)
            .await?;
        }
        let next = seed.invoices.iter().map(|i| i.id).max().unwrap_or(0) + 1;
        sqlx::query("INSERT INTO ledger_meta (key, value) VALUES ('next_invoice_id', $1)")
            .bind(next)
            .execute(&mut *tx)
            .await?;
        Ok(())
    }

    async fn clients(&self) -> Result<Vec<Client>, HandlerError> {
        sqlx::query_as(
            "SELECT id, name, segment, payment_terms_days, email FROM clients ORDER BY id",
        )
        .fetch_all(&*self.db)
        .await
        .map_err(sql_err)
    }

    async fn client(&self, id: i64) -> Result<Option<Client>, HandlerError> {
        sqlx::query_as(
            "SELECT id, name, segment, payment_terms_days, email FROM clients WHERE id = $1",
        )
        .bind(id)
        .fetch_optional(&*self.db)
        .await
        .map_err(sql_err)
    }

    async fn invoice(&self, id: i64) -> Result<Invoice, HandlerError> {
        let row = sqlx::query_as(&format!(
            "SELECT {INVOICE_COLUMNS} FROM invoices WHERE id = $1"
        ))
        .bind(id)
        .fetch_optional(&*self.db)
        .await
        .map_err(sql_err)?;
        match row {
            Some(invoice) => Ok(invoice),
            None => Err(HandlerError::Rejected(format!("No invoice with id {id}."))),
        }
    }

    /// What an approval of an action on invoice `id` binds and shows: reference, client,
    /// amount, status and due date; `null` when there is no such invoice.
    pub async fn invoice_snapshot(&self, id: i64) -> Result<serde_json::Value, HandlerError> {
        let invoice = match self.invoice(id).await {
            Ok(i) => i,
            Err(HandlerError::Rejected(_)) => return Ok(serde_json::Value::Null),
            Err(e) => return Err(e),
        };
        let client = self
            .client(invoice.client_id)
            .await?
            .map_or_else(|| "Unknown client".to_owned(), |c| c.name);
        Ok(serde_json::json!({
            "reference": invoice.reference,
            "client": client,
            "amount": invoice.amount,
            "status": invoice.status.as_str(),
            "dueDate": fmt_date(invoice.due_date),
        }))
    }

    /// Every invoice as a row, due date descending, ties in storage (id) order. One
    /// statement on a [`Db::session`] (a step runs it: on SQLite it runs inline).
    pub async fn rows(&self) -> Result<Vec<InvoiceRow>, HandlerError> {
        let today = self.today();
        let mut session = self.db.conn().await.map_err(sql_err)?;
        session
            .fetch(ROW_QUERY, &[], |r| {
                let invoice = Invoice::from_cells(r)?;
                let days_overdue = if invoice.status == InvoiceStatus::Sent {
                    days_overdue(invoice.due_date, today)
                } else {
                    0
                };
                let chased: Option<i64> = get(r, "invoice_id")?;
                Ok(InvoiceRow {
                    client_name: get::<Option<String>>(r, "client_name")?
                        .unwrap_or_else(|| "Unknown client".to_owned()),
                    segment: get::<Option<String>>(r, "client_segment")?
                        .unwrap_or_else(|| "Mid-market".to_owned()),
                    days_overdue,
                    collection: chased
                        .map(|_| CollectionStatus::from_cells(r))
                        .transpose()?,
                    invoice,
                })
            })
            .await
            .map_err(sql_err)
    }

    pub async fn list_invoices(
        &self,
        kind: InvoiceKind,
        client_id: Option<i64>,
        overdue_only: bool,
    ) -> Result<Vec<InvoiceRow>, HandlerError> {
        Ok(self
            .rows()
            .await?
            .into_iter()
            .filter(|r| match kind {
                InvoiceKind::All => true,
                InvoiceKind::Pending => r.invoice.status == InvoiceStatus::Sent,
                InvoiceKind::Draft => r.invoice.status == InvoiceStatus::Draft,
            })
            .filter(|r| client_id.is_none_or(|c| r.invoice.client_id == c))
            .filter(|r| !overdue_only || r.days_overdue > 0)
            .collect())
    }

    pub async fn create_invoice(
        &self,
        client_id: i64,
        amount: i64,
        issue_date: Option<String>,
        due_date: Option<String>,
        notes: Option<String>,
    ) -> Result<Invoice, HandlerError> {
        let client = self
            .client(client_id)
            .await?
            .ok_or_else(|| HandlerError::Rejected(format!("No client with id {client_id}.")))?;
        let issue = match issue_date {
            Some(d) => require_date(&d)?,
            None => self.today(),
        };
        let due = match due_date {
            Some(d) => require_date(&d)?,
            None => add_days(issue, client.payment_terms_days)?,
        };
        let mut tx = self.db.begin().await.map_err(sql_err)?;
        // Takes the next id and moves the counter in one statement, which also holds the
        // counter's row until commit: concurrent creations on any replica get distinct ids.
        let id: i64 = sqlx::query(
            "INSERT INTO ledger_meta (key, value) VALUES ('next_invoice_id', 2) \
             ON CONFLICT (key) DO UPDATE SET value = ledger_meta.value + 1 \
             RETURNING value - 1 AS id",
        )
        .fetch_one(&mut *tx)
        .await
        .map_err(sql_err)?
        .try_get("id")
        .map_err(sql_err)?;
        let prefix: String = client
            .name
            .chars()
            .take(3)
            .collect::<String>()
            .to_uppercase();
        let counter = (1000 + id).to_string();
        let reference = format!("{prefix}-{}", counter.get(1..).unwrap_or_default());
        let invoice = Invoice {
            id,
            reference,
            client_id,
            amount,
            status: InvoiceStatus::Draft,
            issue_date: issue,
            due_date: due,
            paid_date: None,
            notes,
        };
        sqlx::query(&format!(
            "INSERT INTO invoices ({INVOICE_COLUMNS}) VALUES ($1, $2, $3, $4, 'draft', $5, $6, NULL, $7)"
        ))
        .bind(invoice.id)
        .bind(&invoice.reference)
        .bind(invoice.client_id)
        .bind(invoice.amount)
        .bind(fmt_date(invoice.issue_date))
        .bind(fmt_date(invoice.due_date))
        .bind(&invoice.notes)
        .execute(&mut *tx)
        .await
        .map_err(sql_err)?;
        tx.commit().await.map_err(sql_err)?;
        Ok(invoice)
    }

    pub async fn update_invoice(
        &self,
        id: i64,
        amount: Option<i64>,
        due_date: Option<String>,
        notes: Patch<Option<String>>,
    ) -> Result<Invoice, HandlerError> {
        let mut invoice = self.invoice(id).await?;
        if invoice.status != InvoiceStatus::Draft {
            return Err(HandlerError::Rejected(format!(
                "{} is {}; only a draft can be edited.",
                invoice.reference, invoice.status
            )));
        }
        if let Some(a) = amount {
            invoice.amount = a;
        }
        if let Some(d) = due_date {
            invoice.due_date = require_date(&d)?;
        }
        if let Patch::Set(n) = notes {
            invoice.notes = n;
        }
        let done = sqlx::query("UPDATE invoices SET amount = $1, due_date = $2, notes = $3 WHERE id = $4 AND status = 'draft'")
            .bind(invoice.amount)
            .bind(fmt_date(invoice.due_date))
            .bind(&invoice.notes)
            .bind(id)
            .execute(&*self.db)
            .await
            .map_err(sql_err)?;
        if done.rows_affected() == 0 {
            return Err(HandlerError::Rejected(
                "The invoice changed while it was being edited.".to_owned(),
            ));
        }
        Ok(invoice)
    }

    /// Issues a draft: sent today, due after the client's terms (30 days without a client).
    pub async fn issue_invoice(&self, id: i64) -> Result<(Invoice, String), HandlerError> {
        let mut invoice = self.invoice(id).await?;
        if invoice.status != InvoiceStatus::Draft {
            return Err(HandlerError::Rejected(format!(
                "Invoice {} is already {}; only a draft can be issued.",
                invoice.reference, invoice.status
            )));
        }
        let terms = self
            .client(invoice.client_id)
            .await?
            .map_or(30, |c| c.payment_terms_days);
        let today = self.today();
        invoice.status = InvoiceStatus::Sent;
        invoice.issue_date = today;
        invoice.due_date = add_days(today, terms)?;
        let done = sqlx::query("UPDATE invoices SET status = 'sent', issue_date = $1, due_date = $2 WHERE id = $3 AND status = 'draft'")
            .bind(fmt_date(invoice.issue_date))
            .bind(fmt_date(invoice.due_date))
            .bind(id)
            .execute(&*self.db)
            .await
            .map_err(sql_err)?;
        // The status check above and this update are not one transaction; the WHERE guards it.
        if done.rows_affected() == 0 {
            return Err(HandlerError::Rejected(
                "The invoice changed while it was being issued.".to_owned(),
            ));
        }
        let summary = format!(
            "{} \u{b7} {} \u{b7} due {}",
            invoice.reference,
            format_eur(invoice.amount),
            fmt_date(invoice.due_date)
        );
        Ok((invoice, summary))
    }

    /// Deletes a draft and its chase record; returns the reference.
    pub async fn delete_invoice(&self, id: i64) -> Result<String, HandlerError> {
        let invoice = self.invoice(id).await?;
        if invoice.status != InvoiceStatus::Draft {
            return Err(HandlerError::Rejected(format!(
                "{} has been {}; issued invoices stay in the ledger.",
                invoice.reference, invoice.status
            )));
        }
        let mut tx = self.db.begin().await.map_err(sql_err)?;
        let done = sqlx::query("DELETE FROM invoices WHERE id = $1 AND status = 'draft'")
            .bind(id)
            .execute(&mut *tx)
            .await
            .map_err(sql_err)?;
        if done.rows_affected() == 0 {
            return Err(HandlerError::Rejected(
                "The invoice changed while it was being deleted.".to_owned(),
            ));
        }
        sqlx::query("DELETE FROM collection_statuses WHERE invoice_id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await
            .map_err(sql_err)?;
        tx.commit().await.map_err(sql_err)?;
        Ok(invoice.reference)
    }

    /// Settles a sent invoice; returns it with the days from issue to payment.
    pub async fn mark_paid(
        &self,
        id: i64,
        paid_date: Option<String>,
    ) -> Result<(Invoice, i64), HandlerError> {
        let mut invoice = self.invoice(id).await?;
        if invoice.status != InvoiceStatus::Sent {
            return Err(HandlerError::Rejected(format!(
                "{} is {}; only an issued invoice can be settled.",
                invoice.reference, invoice.status
            )));
        }
        let paid = match paid_date {
            Some(d) => require_date(&d)?,
            None => self.today(),
        };
        invoice.status = InvoiceStatus::Paid;
        invoice.paid_date = Some(paid);
        let done = sqlx::query(
            "UPDATE invoices SET status = 'paid', paid_date = $1 WHERE id = $2 AND status = 'sent'",
        )
        .bind(fmt_date(paid))
        .bind(id)
        .execute(&*self.db)
        .await
        .map_err(sql_err)?;
        if done.rows_affected() == 0 {
            return Err(HandlerError::Rejected(
                "The invoice changed while it was being settled.".to_owned(),
            ));
        }
        let days = days_between(invoice.issue_date, paid);
        Ok((invoice, days))
    }

    /// Every client with open count and outstanding/overdue cents, by name.
    pub async fn list_clients(&self) -> Result<Vec<ClientPosition>, HandlerError> {
        let rows = self.rows().await?;
        let mut out: Vec<ClientPosition> = self
            .clients()
            .await?
            .into_iter()
            .map(|client| {
                let open = rows.iter().filter(|r| {
                    r.invoice.client_id == client.id && r.invoice.status == InvoiceStatus::Sent
                });
                let (mut n, mut outstanding, mut overdue) = (0_i64, 0_i64, 0_i64);
                for r in open {
                    n += 1;
                    outstanding = outstanding.saturating_add(r.invoice.amount);
                    if r.days_overdue > 0 {
                        overdue = overdue.saturating_add(r.invoice.amount);
                    }
                }
                ClientPosition {
                    client,
                    open_invoices: n,
                    outstanding,
                    overdue,
                }
            })
            .collect();
        out.sort_by(|a, b| {
            a.client
                .name
                .to_lowercase()
                .cmp(&b.client.name.to_lowercase())
                .then_with(|| a.client.name.cmp(&b.client.name))
        });
        Ok(out)
    }

    pub async fn summary(&self) -> Result<Summary, HandlerError> {
        let today = self.today();
        let rows = self.rows().await?;
        let mut s = Summary {
            outstanding: 0,
            overdue: 0,
            draft: 0,
            collected30d: 0,
            invoice_count: i64::try_from(rows.len()).unwrap_or(i64::MAX),
            overdue_count: 0,
            average_days_to_pay: None,
        };
        let (mut pay_days, mut paid_n) = (0i64, 0i64);
        for r in &rows {
            let i = &r.invoice;
            match i.status {
                InvoiceStatus::Sent => {
                    s.outstanding = s.outstanding.saturating_add(i.amount);
                    if r.days_overdue > 0 {
                        s.overdue = s.overdue.saturating_add(i.amount);
                        s.overdue_count += 1;
                    }
                }
                InvoiceStatus::Draft => s.draft = s.draft.saturating_add(i.amount),
                InvoiceStatus::Paid => {
                    if let Some(paid) = i.paid_date {
                        if days_between(paid, today) <= 30 {
                            s.collected30d = s.collected30d.saturating_add(i.amount);
                        }
                        pay_days = pay_days.saturating_add(days_between(i.issue_date, paid));
                        paid_n += 1;
                    }
                }
            }
        }
        if paid_n > 0 {
            // Round half up of the mean: floor((2·sum + n) / 2n).
            let mean =
                (2 * i128::from(pay_days) + i128::from(paid_n)).div_euclid(2 * i128::from(paid_n));
            s.average_days_to_pay = Some(i64::try_from(mean).unwrap_or(i64::MAX));
        }
        Ok(s)
    }

    /// Every sent invoice's amount and days overdue (0 when not yet due), as [`Self::rows`]
    /// reckons them, read from the two columns they need: the aging report runs on every
    /// step of the demo's scenario, and reading whole rows (joins, order, every column
    /// decoded) was about a quarter of a step's instructions.
    async fn open_lateness(&self) -> Result<Vec<(i64, i64)>, HandlerError> {
        let today = self.today();
        let mut session = self.db.conn().await.map_err(sql_err)?;
        session
            .fetch(OPEN_QUERY, &[], |r| {
                let due: Date = get(r, "due_date")?;
                Ok((get(r, "amount")?, days_overdue(due, today)))
            })
            .await
            .map_err(sql_err)
    }

    /// Open invoices in five lateness bands.
    pub async fn aging(&self) -> Result<Vec<AgingBucket>, HandlerError> {
        let bands: [(&str, &str, i64, i64); 5] = [
            ("current", "Not yet due", i64::MIN, 0),
            ("1-30", "1\u{2013}30 days", 1, 30),
            ("31-60", "31\u{2013}60 days", 31, 60),
            ("61-90", "61\u{2013}90 days", 61, 90),
            ("90+", "Over 90 days", 91, i64::MAX),
        ];
        let open = self.open_lateness().await?;
        Ok(bands
            .iter()
            .map(|(id, label, lo, hi)| {
                let hits = open
                    .iter()
                    .filter(|(_, days_overdue)| (*lo..=*hi).contains(days_overdue));
                let (count, amount) = hits.fold((0_i64, 0_i64), |(c, a), (cents, _)| {
                    (c + 1, a.saturating_add(*cents))
                });
                AgingBucket {
                    id: (*id).to_owned(),
                    label: (*label).to_owned(),
                    count,
                    amount,
                }
            })
            .collect())
    }

    /// Creates or patches the chase record of an invoice (any status).
    pub async fn update_collection_status(
        &self,
        invoice_id: i64,
        last_reminder_date: Patch<Option<String>>,
        reminders_sent: Option<i64>,
        expected_payment_date: Patch<Option<String>>,
        note: Patch<Option<String>>,
    ) -> Result<CollectionStatus, HandlerError> {
        // Dates are checked before the write lock is taken.
        let last_reminder_date = checked_dates(last_reminder_date)?;
        let expected_payment_date = checked_dates(expected_payment_date)?;
        self.invoice(invoice_id).await?;
        // Read and write in one write transaction, so concurrent patches never lose a field.
        let mut tx = self.db.begin().await.map_err(sql_err)?;
        // The invoice's row is the lock (the chase record may not exist yet).
        sqlx::query(&format!(
            "SELECT id FROM invoices WHERE id = $1{}",
            self.db.for_update()
        ))
        .bind(invoice_id)
        .fetch_all(&mut *tx)
        .await
        .map_err(sql_err)?;
        let existing = sqlx::query_as(
            "SELECT invoice_id, reminders_sent, last_reminder_date, expected_payment_date, note FROM collection_statuses WHERE invoice_id = $1",
        )
        .bind(invoice_id)
        .fetch_optional(&mut *tx)
        .await
        .map_err(sql_err)?;
        let mut c = match existing {
            Some(c) => c,
            None => CollectionStatus {
                invoice_id,
                reminders_sent: 0,
                last_reminder_date: None,
                expected_payment_date: None,
                note: None,
            },
        };
        if let Patch::Set(d) = last_reminder_date {
            c.last_reminder_date = d;
        }
        if let Some(n) = reminders_sent {
            c.reminders_sent = n;
        }
        if let Patch::Set(d) = expected_payment_date {
            c.expected_payment_date = d;
        }
        if let Patch::Set(n) = note {
            c.note = n;
        }
        sqlx::query(
            "INSERT INTO collection_statuses (invoice_id, reminders_sent, last_reminder_date, expected_payment_date, note) VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT(invoice_id) DO UPDATE SET reminders_sent = excluded.reminders_sent, last_reminder_date = excluded.last_reminder_date,
             expected_payment_date = excluded.expected_payment_date, note = excluded.note",
        )
        .bind(c.invoice_id)
        .bind(c.reminders_sent)
        .bind(c.last_reminder_date.map(fmt_date))
        .bind(c.expected_payment_date.map(fmt_date))
        .bind(&c.note)
        .execute(&mut *tx)
        .await
        .map_err(sql_err)?;
        tx.commit().await.map_err(sql_err)?;
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One text column, as a stored row would give it.
    struct Column(Option<&'static str>);

    impl Cells for Column {
        fn int(&self, _: &str) -> Result<Option<i64>, sqlx::Error> {
            Ok(None)
        }
        fn text(&self, _: &str) -> Result<Option<String>, sqlx::Error> {
            Ok(self.0.map(str::to_owned))
        }
    }

    #[test]
    fn dates_and_statuses_are_read_from_their_column_text_and_refused_when_not_one() {
        let date = time::macros::date!(2026 - 02 - 28);
        assert_eq!(
            get::<Date>(&Column(Some("2026-02-28")), "due_date").unwrap(),
            date
        );
        assert_eq!(
            get::<Option<Date>>(&Column(None), "paid_date").unwrap(),
            None
        );
        for text in ["2026-02-30", "28/02/2026", ""] {
            let refused = get::<Date>(&Column(Some(text)), "due_date").unwrap_err();
            assert!(
                refused.to_string().contains("YYYY-MM-DD"),
                "{text}: {refused}"
            );
            assert!(get::<Option<Date>>(&Column(Some(text)), "paid_date").is_err());
        }
        assert!(get::<Date>(&Column(None), "due_date").is_err());
        for status in InvoiceStatus::ALL {
            let text = status.as_str();
            assert_eq!(serde_json::to_value(status).unwrap(), text);
            let column = Column(Some(["draft", "sent", "paid"][status as usize]));
            assert_eq!(get::<InvoiceStatus>(&column, "status").unwrap(), status);
        }
        assert!(get::<InvoiceStatus>(&Column(Some("void")), "status").is_err());
    }

    #[test]
    fn invoices_keep_their_wire_form_with_typed_dates() {
        let invoice = Invoice {
            id: 7,
            reference: "ACM-007".into(),
            client_id: 1,
            amount: 1_840_000,
            status: InvoiceStatus::Paid,
            issue_date: time::macros::date!(2026 - 01 - 05),
            due_date: time::macros::date!(2026 - 02 - 04),
            paid_date: Some(time::macros::date!(2026 - 02 - 10)),
            notes: None,
        };
        let wire = serde_json::json!({
            "id": 7, "reference": "ACM-007", "client_id": 1, "amount": 1_840_000,
            "status": "paid", "issue_date": "2026-01-05", "due_date": "2026-02-04",
            "paid_date": "2026-02-10", "notes": null
        });
        assert_eq!(serde_json::to_value(&invoice).unwrap(), wire);
        assert_eq!(serde_json::from_value::<Invoice>(wire).unwrap(), invoice);
        let schema = serde_json::to_value(schemars::schema_for!(Invoice)).unwrap();
        for field in ["status", "issue_date", "due_date"] {
            assert_eq!(schema["properties"][field]["type"], "string", "{field}");
        }
        assert_eq!(
            schema["properties"]["paid_date"]["type"],
            serde_json::json!(["string", "null"])
        );
    }

    #[test]
    fn euros_format_like_en_ie() {
        assert_eq!(format_eur(1_840_000), "€18,400");
        assert_eq!(format_eur(10_260_000), "€102,600");
        assert_eq!(format_eur(100_000), "€1,000");
        assert_eq!(format_eur(325_000), "€3,250");
        assert_eq!(format_eur(49), "€0");
        assert_eq!(format_eur(150), "€2");
        assert_eq!(format_eur(12_345_678_900), "€123,456,789");
    }
}
