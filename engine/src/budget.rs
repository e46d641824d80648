//! Budgets as run limits, and usage accounting. Every model step's usage is added to the
//! store's usage rows (per tenant, actor, UTC day, model and tool); with budgets configured
//! (per turn, per actor per day, per tenant per day, in tokens and in US dollars by a
//! [`PriceTable`]) a model step is started only when the store admits it against each of
//! them ([`UsageStore::admit`]). A step that would start past a budget is not started: the
//! run streams a `budget` inspector frame with what is left and an `error` frame
//! [`BUDGET_EXHAUSTED`], and ends as after any other run limit. After each model step a
//! `budget` frame says what is left. Without budgets no `budget` frame is sent.

use std::collections::HashMap;
use std::sync::Arc;

use dpas_governance::usage::{Admission, BudgetScope, Left, Spent, UsageRow, UsageStore};
use dpas_protocol::frame::ErrorBody;
use dpas_protocol::{Frame, InspectorFrame, Lane, Usage};
use serde_json::{json, Map, Value};
use time::OffsetDateTime;

/// The `error` frame's code when a budget stops a run. A frame-only code of the server's:
/// the browser shows it as any `error` frame, by its message, so it is not a row of the
/// browser's `HostErrorCode` table.
pub const BUDGET_EXHAUSTED: &str = "BUDGET_EXHAUSTED";

/// The tenant every actor of a server counts under: the deployment (the servers on one
/// database).
pub const DEFAULT_TENANT: &str = "default";

/// How long a step's hold on a budget lasts at most (a replica that stops mid-step frees it
/// then).
const HOLD_SECS: i64 = 15 * 60;
const DAY_SECS: i64 = 24 * 3600;

/// Prices of one model, in US dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Price {
    /// Input tokens not read from the cache.
    pub input: f64,
    /// Input tokens read from the cache; the input price when absent.
    #[serde(default)]
    pub cached_input: Option<f64>,
    pub output: f64,
}

/// Prices per model id (`scripted`, `openai/<model>`, as `GET /api/session` lists them).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PriceTable(HashMap<String, Price>);

impl PriceTable {
    /// A `--prices` file: a JSON object of model id → `{input, cachedInput?, output}`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let table: HashMap<String, Price> =
            serde_json::from_str(text).map_err(|e| e.to_string())?;
        for (model, price) in &table {
            let all = [price.input, price.cached_input.unwrap_or(0.0), price.output];
            if all.iter().any(|p| !p.is_finite() || *p < 0.0) {
                return Err(format!(
                    "{model}: a price is a number of US dollars per million tokens, at least 0"
                ));
            }
        }
        Ok(Self(table))
    }

    pub fn has(&self, model: &str) -> bool {
        self.0.contains_key(model)
    }

    /// What `usage` on `model` costs, in billionths of a dollar (0 for a model not priced).
    pub fn nano_usd(&self, model: &str, usage: &Usage) -> u64 {
        let Some(p) = self.0.get(model) else { return 0 };
        let cached = usage
            .cached_input_tokens
            .unwrap_or(0)
            .min(usage.input_tokens);
        let fresh = usage.input_tokens - cached;
        // Per million tokens in dollars is per token in thousandths of a nano-dollar.
        let nano = (fresh as f64 * p.input
            + cached as f64 * p.cached_input.unwrap_or(p.input)
            + usage.output_tokens as f64 * p.output)
            * 1_000.0;
        nano.round().clamp(0.0, u64::MAX as f64) as u64
    }
}

/// Dollars as billionths of a dollar.
pub fn nano_usd(usd: f64) -> u64 {
    (usd * 1e9).round().clamp(0.0, u64::MAX as f64) as u64
}

/// The configured budgets (each `None` when not limited).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct BudgetLimits {
    pub turn_tokens: Option<u64>,
    pub turn_usd: Option<f64>,
    pub actor_day_tokens: Option<u64>,
    pub actor_day_usd: Option<f64>,
    pub tenant_day_tokens: Option<u64>,
    pub tenant_day_usd: Option<f64>,
}

impl BudgetLimits {
    pub fn any(&self) -> bool {
        self.turn_tokens.is_some()
            || self.actor_day_tokens.is_some()
            || self.any_usd()
            || self.tenant_day_tokens.is_some()
    }

    /// Whether a budget is in dollars (every served model then needs a price).
    pub fn any_usd(&self) -> bool {
        self.turn_usd.is_some() || self.actor_day_usd.is_some() || self.tenant_day_usd.is_some()
    }
}

/// The kinds of budget scope, in the order a step is admitted against them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScopeKind {
    Turn,
    ActorDay,
    TenantDay,
}

impl ScopeKind {
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Turn => "turn",
            Self::ActorDay => "actor-day",
            Self::TenantDay => "tenant-day",
        }
    }

    fn exhausted_message(self) -> &'static str {
        match self {
            Self::Turn => {
                "This turn's budget is used up; the run was stopped. Send a new message to go on."
            }
            Self::ActorDay => "Your budget for today is used up; the run was stopped.",
            Self::TenantDay => "This service's budget for today is used up; the run was stopped.",
        }
    }
}

/// Usage accounting and budgets for every run of a server.
#[derive(Debug)]
pub struct Meter {
    pub store: Arc<dyn UsageStore>,
    pub limits: BudgetLimits,
    pub prices: PriceTable,
    /// The tenant every actor of this server counts under.
    pub tenant: String,
}

/// The UTC day of `t`, `YYYY-MM-DD`.
pub fn day_of(t: OffsetDateTime) -> String {
    let d = t.date();
    format!("{:04}-{:02}-{:02}", d.year(), u8::from(d.month()), d.day())
}

fn key_part(s: &str) -> String {
    // `|` separates the parts of a scope key; ids keep every other character.
    s.replace('%', "%25").replace('|', "%7C")
}

impl Meter {
    /// One run's meter: the scopes its steps are admitted against.
    pub fn for_run(
        self: &Arc<Self>,
        actor: &str,
        conversation: &str,
        turn: &str,
        step_id: &str,
        model: &str,
    ) -> RunMeter {
        let now = OffsetDateTime::now_utc();
        let day = day_of(now);
        let end_of_day = now.replace_time(time::Time::MIDNIGHT).unix_timestamp() + DAY_SECS;
        let l = &self.limits;
        let mut scopes = Vec::new();
        let mut add =
            |kind: ScopeKind, key: String, tokens: Option<u64>, usd: Option<f64>, expires_at| {
                if tokens.is_some() || usd.is_some() {
                    scopes.push((
                        kind,
                        BudgetScope {
                            key,
                            tokens,
                            nano_usd: usd.map(nano_usd),
                            expires_at,
                        },
                    ));
                }
            };
        let (tenant, actor_k) = (key_part(&self.tenant), key_part(actor));
        add(
            ScopeKind::Turn,
            format!(
                "turn|{actor_k}|{}|{}",
                key_part(conversation),
                key_part(turn)
            ),
            l.turn_tokens,
            l.turn_usd,
            now.unix_timestamp() + 2 * DAY_SECS,
        );
        add(
            ScopeKind::ActorDay,
            format!("actor-day|{tenant}|{actor_k}|{day}"),
            l.actor_day_tokens,
            l.actor_day_usd,
            end_of_day + DAY_SECS,
        );
        add(
            ScopeKind::TenantDay,
            format!("tenant-day|{tenant}|{day}"),
            l.tenant_day_tokens,
            l.tenant_day_usd,
            end_of_day + DAY_SECS,
        );
        RunMeter {
            meter: Arc::clone(self),
            scopes,
            actor: actor.to_owned(),
            day,
            model: model.to_owned(),
            step_id: step_id.to_owned(),
            hold: None,
        }
    }
}

/// One run's budgets and accounting.
#[derive(Debug)]
pub struct RunMeter {
    meter: Arc<Meter>,
    scopes: Vec<(ScopeKind, BudgetScope)>,
    actor: String,
    day: String,
    model: String,
    step_id: String,
    /// The hold of the model step admitted and not yet settled.
    hold: Option<String>,
}

impl RunMeter {
    fn budget_scopes(&self) -> Vec<BudgetScope> {
        self.scopes.iter().map(|(_, s)| s.clone()).collect()
    }

    /// Admits model step `n`: `Err` with the frames that end the run when a budget has
    /// nothing left. A store that cannot be read admits the step (said in the log).
    pub async fn admit(
        &mut self,
        n: usize,
        correlation: Map<String, Value>,
    ) -> Result<(), Vec<Frame>> {
        if self.scopes.is_empty() {
            return Ok(());
        }
        let hold = format!("{}.{n}", self.step_id);
        let now = OffsetDateTime::now_utc().unix_timestamp();
        let scopes = self.budget_scopes();
        match self
            .meter
            .store
            .admit(&scopes, &hold, now, now + HOLD_SECS)
            .await
        {
            Ok(Admission::Admitted(_)) => {
                self.hold = Some(hold);
                Ok(())
            }
            Ok(Admission::Exhausted { index, left }) => {
                let kind = self.scopes[index].0;
                crate::metrics::budget_exhausted(kind.as_str());
                Err(vec![
                    self.frame(&left, Some(kind), correlation),
                    Frame::Error {
                        error: ErrorBody {
                            code: BUDGET_EXHAUSTED.to_owned(),
                            message: kind.exhausted_message().to_owned(),
                        },
                    },
                ])
            }
            Err(e) => {
                tracing::error!(error = %e, "the budget store could not be read; the step runs");
                Ok(())
            }
        }
    }

    /// Settles the model step just run with what it used (`None`: it reported nothing) and
    /// the canonical ids of the tools it called; the `budget` frame with what is left, when
    /// budgets are configured.
    pub async fn settle<'a>(
        &mut self,
        used: Option<Usage>,
        tools: impl Iterator<Item = &'a str>,
        correlation: Map<String, Value>,
    ) -> Option<Frame> {
        let used = used.unwrap_or_default();
        let nano_usd = self.meter.prices.nano_usd(&self.model, &used);
        let row = |tool: &str| UsageRow {
            tenant: self.meter.tenant.clone(),
            actor: self.actor.clone(),
            day: self.day.clone(),
            model: self.model.clone(),
            tool: tool.to_owned(),
            ..UsageRow::default()
        };
        let mut rows = vec![UsageRow {
            input_tokens: used.input_tokens,
            cached_input_tokens: used.cached_input_tokens.unwrap_or(0),
            output_tokens: used.output_tokens,
            total_tokens: used.total_tokens,
            nano_usd,
            calls: 1,
            ..row("")
        }];
        for tool in tools {
            match rows.iter_mut().find(|r| r.tool == tool) {
                Some(r) => r.calls += 1,
                None => rows.push(UsageRow {
                    calls: 1,
                    ..row(tool)
                }),
            }
        }
        crate::metrics::usage(&self.model, &used, nano_usd);
        let hold = self.hold.take().unwrap_or_default();
        let spent = Spent {
            tokens: used.total_tokens,
            nano_usd,
        };
        let scopes = self.budget_scopes();
        match self.meter.store.settle(&scopes, &hold, spent, &rows).await {
            Ok(left) if !self.scopes.is_empty() => Some(self.frame(&left, None, correlation)),
            Ok(_) => None,
            Err(e) => {
                tracing::error!(error = %e, "a model step's usage was not stored");
                None
            }
        }
    }

    /// The `budget` inspector frame: what is left of each configured budget.
    fn frame(
        &self,
        left: &[Left],
        exhausted: Option<ScopeKind>,
        correlation: Map<String, Value>,
    ) -> Frame {
        let mut budgets = Vec::with_capacity(left.len());
        let mut summary = Vec::with_capacity(left.len());
        for ((kind, scope), left) in self.scopes.iter().zip(left) {
            let mut b = Map::new();
            b.insert("scope".into(), kind.as_str().into());
            if let (Some(limit), Some(l)) = (scope.tokens, left.tokens) {
                b.insert("tokensLimit".into(), limit.into());
                b.insert("tokensLeft".into(), l.into());
                summary.push(format!("{} {l} tokens", kind.as_str()));
            }
            if let (Some(limit), Some(l)) = (scope.nano_usd, left.nano_usd) {
                b.insert("usdLimit".into(), json!(limit as f64 / 1e9));
                b.insert("usdLeft".into(), json!(l as f64 / 1e9));
                summary.push(format!("{} ${:.4}", kind.as_str(), l as f64 / 1e9));
            }
            b.insert("spentTokens".into(), left.spent_tokens.into());
            b.insert("spentUsd".into(), json!(left.spent_nano_usd as f64 / 1e9));
            budgets.push(Value::Object(b));
        }
        let mut data = Map::new();
        data.insert("budgets".into(), Value::Array(budgets));
        let summary = match exhausted {
            Some(kind) => {
                data.insert("exhausted".into(), kind.as_str().into());
                format!("{} budget exhausted", kind.as_str())
            }
            None => format!("left: {}", summary.join(", ")),
        };
        Frame::Inspector(InspectorFrame {
            lane: Lane::Host,
            event_type: "budget".into(),
            summary,
            correlation: Some(correlation),
            data: Some(Value::Object(data)),
        })
    }
}

/// What model step's usage `after` adds to `before` (the run's accumulated usage around it).
pub fn step_usage(before: Option<Usage>, after: Option<Usage>) -> Option<Usage> {
    let after = after?;
    let before = before.unwrap_or_default();
    let sub = |a: Option<u64>, b: Option<u64>| a.map(|a| a.saturating_sub(b.unwrap_or(0)));
    Some(Usage {
        input_tokens: after.input_tokens.saturating_sub(before.input_tokens),
        output_tokens: after.output_tokens.saturating_sub(before.output_tokens),
        total_tokens: after.total_tokens.saturating_sub(before.total_tokens),
        cached_input_tokens: sub(after.cached_input_tokens, before.cached_input_tokens),
        reasoning_tokens: sub(after.reasoning_tokens, before.reasoning_tokens),
        cache_write_input_tokens: sub(
            after.cache_write_input_tokens,
            before.cache_write_input_tokens,
        ),
        reported_steps: after.reported_steps.saturating_sub(before.reported_steps),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prices_are_per_million_tokens_with_cached_input_apart() {
        let table = PriceTable::parse(
            r#"{"scripted": {"input": 3, "cachedInput": 0.3, "output": 15}, "b": {"input": 1, "output": 2}}"#,
        )
        .unwrap();
        let usage = Usage {
            input_tokens: 16,
            cached_input_tokens: Some(8),
            output_tokens: 16,
            total_tokens: 32,
            ..Usage::default()
        };
        // 8 × $3/M + 8 × $0.30/M + 16 × $15/M = $0.0002664
        assert_eq!(table.nano_usd("scripted", &usage), 266_400);
        // No cached price: cached input costs the input price.
        assert_eq!(table.nano_usd("b", &usage), 16_000 + 32_000);
        assert_eq!(table.nano_usd("unpriced", &usage), 0);
        for bad in [
            "[]",
            r#"{"m": {"input": -1, "output": 1}}"#,
            r#"{"m": {"input": 1}}"#,
            r#"{"m": {"input": 1, "output": 1, "cached": 1}}"#,
            r#"{"m": {"input": "1", "output": 1}}"#,
        ] {
            assert!(PriceTable::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_step_adds_the_difference() {
        let before = Usage {
            input_tokens: 10,
            total_tokens: 10,
            reported_steps: 1,
            ..Usage::default()
        };
        let after = Usage {
            input_tokens: 26,
            output_tokens: 16,
            total_tokens: 42,
            cached_input_tokens: Some(8),
            reported_steps: 2,
            ..Usage::default()
        };
        let step = step_usage(Some(before), Some(after)).unwrap();
        assert_eq!(
            (
                step.input_tokens,
                step.total_tokens,
                step.cached_input_tokens
            ),
            (16, 32, Some(8))
        );
        assert_eq!(step_usage(Some(before), None), None);
        assert_eq!(
            day_of(OffsetDateTime::from_unix_timestamp(1_800_000_000).unwrap()),
            "2027-01-15"
        );
    }
}
