//! What model steps cost and the budgets they run within. A [`UsageStore`] keeps the usage
//! rows (one per tenant, actor, day, model and tool, added to atomically) and, per budget
//! scope (a turn, an actor's day, a tenant's day), what was spent and what steps in flight
//! hold. A step is admitted against every configured scope at once ([`UsageStore::admit`]):
//! it holds its share of each (the largest step that scope has seen, or the whole remainder
//! before one is seen) until it is settled with what it really cost
//! ([`UsageStore::settle`]). So concurrent steps never overrun a budget by more than one
//! step's worth, whichever replica runs them.

use futures_util::future::BoxFuture;

/// One usage row: what one actor's model steps on one model, or calls of one tool, came to
/// on one day (UTC). Model rows have an empty `tool`; tool rows count calls only.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct UsageRow {
    pub tenant: String,
    pub actor: String,
    /// `YYYY-MM-DD`, UTC.
    pub day: String,
    /// The model's id (`scripted`, `openai/<model>`).
    pub model: String,
    /// The canonical id of the tool the model called; empty for the model's own tokens.
    pub tool: String,
    /// Input tokens, cached ones included.
    pub input_tokens: u64,
    /// Of `input_tokens`, those read from the vendor's cache.
    pub cached_input_tokens: u64,
    pub output_tokens: u64,
    /// The vendor's total (what token budgets count).
    pub total_tokens: u64,
    /// Cost in billionths of a US dollar, by the price table.
    pub nano_usd: u64,
    /// Model steps (a model row) or calls (a tool row).
    pub calls: u64,
}

/// One budget scope a step runs within, and its limits (at least one is set).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BudgetScope {
    /// What the scope is (`turn:…`, `actor-day:…`, `tenant-day:…`), unique across kinds.
    pub key: String,
    pub tokens: Option<u64>,
    pub nano_usd: Option<u64>,
    /// Unix seconds after which the scope's record may be deleted.
    pub expires_at: i64,
}

/// What is left of one scope: its limit less what was spent, never below zero (`None` for
/// a dimension the scope does not limit).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Left {
    pub tokens: Option<u64>,
    pub nano_usd: Option<u64>,
    /// Spent so far in this scope (whether limited or not).
    pub spent_tokens: u64,
    pub spent_nano_usd: u64,
}

/// The answer to [`UsageStore::admit`]: per scope, in the order given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admission {
    /// The step may start; it holds its share of every scope until settled.
    Admitted(Vec<Left>),
    /// Nothing is held: the scope at `index` has nothing left that is not spent or held by
    /// steps running now.
    Exhausted { index: usize, left: Vec<Left> },
}

/// What a settled step really cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Spent {
    pub tokens: u64,
    pub nano_usd: u64,
}

#[derive(Debug, Clone, thiserror::Error)]
#[error("usage store: {0}")]
pub struct UsageStoreError(pub String);

pub type UsageFuture<'a, T> = BoxFuture<'a, Result<T, UsageStoreError>>;

/// Where usage and budgets are kept (the server's database: shared by its replicas).
pub trait UsageStore: Send + Sync + std::fmt::Debug {
    /// Admits a step against `scopes` (in a fixed order, so concurrent admissions lock them
    /// alike) under the hold `hold`, held until `hold_until` (Unix seconds) at the latest.
    fn admit<'a>(
        &'a self,
        scopes: &'a [BudgetScope],
        hold: &'a str,
        now: i64,
        hold_until: i64,
    ) -> UsageFuture<'a, Admission>;
    /// Ends the hold `hold` (if any), adds `spent` to every scope and `rows` to the usage
    /// rows, in one transaction; what is left of each scope after it.
    fn settle<'a>(
        &'a self,
        scopes: &'a [BudgetScope],
        hold: &'a str,
        spent: Spent,
        rows: &'a [UsageRow],
    ) -> UsageFuture<'a, Vec<Left>>;
    /// The usage rows, of one actor or (`None`) every actor, of one day or (`None`) all,
    /// ordered by day, actor, model and tool.
    fn rows<'a>(
        &'a self,
        actor: Option<&'a str>,
        day: Option<&'a str>,
    ) -> UsageFuture<'a, Vec<UsageRow>>;
}
