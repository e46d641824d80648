//! Usage accounting (reference-behaviour H1–H5). Subsets (`cachedInputTokens`,
//! `cacheWriteInputTokens` of input; `reasoningTokens` of output) are never added to their
//! parents, and each is absent when unreported, which is not the same as zero.

use crate::json::Value;
use serde::{Deserialize, Serialize};

use crate::json::{ObjectWriter, WriteJson};

/// What one step-request cost, as sent on `step-finish.usage`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub total_tokens: u64,
    /// Subset of input: cache reads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_input_tokens: Option<u64>,
    /// Subset of output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens: Option<u64>,
    /// Subset of input: cache writes (our addition; absent when unreported).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_input_tokens: Option<u64>,
    pub reported_steps: u64,
}

impl WriteJson for Usage {
    fn write_json(&self, out: &mut String) {
        ObjectWriter::new(out)
            .field("inputTokens", &self.input_tokens)
            .field("outputTokens", &self.output_tokens)
            .field("totalTokens", &self.total_tokens)
            .opt_field(
                "cachedInputTokens",
                self.cached_input_tokens.as_ref().map(|v| v as _),
            )
            .opt_field(
                "reasoningTokens",
                self.reasoning_tokens.as_ref().map(|v| v as _),
            )
            .opt_field(
                "cacheWriteInputTokens",
                self.cache_write_input_tokens.as_ref().map(|v| v as _),
            )
            .field("reportedSteps", &self.reported_steps)
            .end();
    }
}

/// One usage report from a provider (a model step, or a run total). Every count is
/// optional: a provider that says nothing about a count leaves it `None`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct UsageReport {
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub total_tokens: Option<u64>,
    pub cached_input_tokens: Option<u64>,
    pub reasoning_tokens: Option<u64>,
    pub cache_write_input_tokens: Option<u64>,
}

/// A report after H2 normalisation: `None` when input, output and total are all missing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Counts {
    input: u64,
    output: u64,
    total: u64,
    cached: Option<u64>,
    reasoning: Option<u64>,
    cache_write: Option<u64>,
}

/// A count is a finite number ≥ 0 (H2); anything else is missing. Fractions are floored.
fn count(value: Option<&Value>) -> Option<u64> {
    let v = value?.as_f64()?;
    (v.is_finite() && v >= 0.0).then(|| v.floor().min(u64::MAX as f64) as u64)
}

/// H3: absent + absent = absent; absent + x = x; x + y = x + y.
fn add_opt(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (None, None) => None,
        (Some(x), None) | (None, Some(x)) => Some(x),
        (Some(x), Some(y)) => Some(x.saturating_add(y)),
    }
}

impl UsageReport {
    /// Reads a usage object with the AI SDK's keys (`inputTokens`, `outputTokens`,
    /// `totalTokens`, `cachedInputTokens`, `reasoningTokens`, `cacheWriteInputTokens`).
    pub fn from_json(usage: &Value) -> Self {
        Self {
            input_tokens: count(usage.get("inputTokens")),
            output_tokens: count(usage.get("outputTokens")),
            total_tokens: count(usage.get("totalTokens")),
            cached_input_tokens: count(usage.get("cachedInputTokens")),
            reasoning_tokens: count(usage.get("reasoningTokens")),
            cache_write_input_tokens: count(usage.get("cacheWriteInputTokens")),
        }
    }

    /// Reads a runtime chunk payload (H2): `output.usage`, else `totalUsage`, else `usage`.
    pub fn from_chunk_payload(payload: &Value) -> Self {
        let usage = payload
            .get("output")
            .and_then(|o| o.get("usage"))
            .or_else(|| payload.get("totalUsage"))
            .or_else(|| payload.get("usage"));
        usage.map(Self::from_json).unwrap_or_default()
    }

    fn counts(&self) -> Option<Counts> {
        if self.input_tokens.is_none()
            && self.output_tokens.is_none()
            && self.total_tokens.is_none()
        {
            return None;
        }
        let input = self.input_tokens.unwrap_or(0);
        let output = self.output_tokens.unwrap_or(0);
        Some(Counts {
            input,
            output,
            // A provided total is carried even when larger than the sum.
            total: self.total_tokens.unwrap_or(input.saturating_add(output)),
            cached: self.cached_input_tokens,
            reasoning: self.reasoning_tokens,
            cache_write: self.cache_write_input_tokens,
        })
    }
}

impl Counts {
    fn add(self, other: Counts) -> Counts {
        Counts {
            input: self.input.saturating_add(other.input),
            output: self.output.saturating_add(other.output),
            total: self.total.saturating_add(other.total),
            cached: add_opt(self.cached, other.cached),
            reasoning: add_opt(self.reasoning, other.reasoning),
            cache_write: add_opt(self.cache_write, other.cache_write),
        }
    }

    fn into_usage(self, reported_steps: u64) -> Usage {
        Usage {
            input_tokens: self.input,
            output_tokens: self.output,
            total_tokens: self.total,
            cached_input_tokens: self.cached,
            reasoning_tokens: self.reasoning,
            cache_write_input_tokens: self.cache_write,
            reported_steps,
        }
    }
}

/// The per-request accumulator (H1, H4): a running sum of step reports that a run total,
/// when one arrives, replaces rather than adds to.
#[derive(Debug, Clone, Default)]
pub struct UsageAccumulator {
    sum: Option<Counts>,
    step_reports: u64,
    run_total: Option<Counts>,
}

impl UsageAccumulator {
    pub fn new() -> Self {
        Self::default()
    }

    /// One model step's usage. A report with nothing in it is not counted.
    pub fn add_step(&mut self, report: &UsageReport) {
        if let Some(c) = report.counts() {
            self.sum = Some(match self.sum {
                Some(s) => s.add(c),
                None => c,
            });
            self.step_reports += 1;
        }
    }

    /// The run total from the closing chunk; it replaces the running sum.
    pub fn set_run_total(&mut self, report: &UsageReport) {
        if let Some(c) = report.counts() {
            self.run_total = Some(c);
        }
    }

    /// The usage to report: `None` when nothing was reported at all.
    pub fn finish(&self) -> Option<Usage> {
        match (self.run_total, self.sum) {
            (Some(total), _) => Some(total.into_usage(self.step_reports.max(1))),
            (None, Some(sum)) => Some(sum.into_usage(self.step_reports)),
            (None, None) => None,
        }
    }
}

impl Usage {
    /// Adds another step's usage with the subset rule (H3, H5), for turn and conversation
    /// counters. `reportedSteps` adds up too.
    pub fn accumulate(&mut self, other: &Usage) {
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.total_tokens = self.total_tokens.saturating_add(other.total_tokens);
        self.cached_input_tokens = add_opt(self.cached_input_tokens, other.cached_input_tokens);
        self.reasoning_tokens = add_opt(self.reasoning_tokens, other.reasoning_tokens);
        self.cache_write_input_tokens = add_opt(
            self.cache_write_input_tokens,
            other.cache_write_input_tokens,
        );
        self.reported_steps = self.reported_steps.saturating_add(other.reported_steps);
    }

    /// Sums optional usages: absent + absent stays absent.
    pub fn sum_opt(a: Option<Usage>, b: Option<Usage>) -> Option<Usage> {
        match (a, b) {
            (None, None) => None,
            (Some(x), None) | (None, Some(x)) => Some(x),
            (Some(mut x), Some(y)) => {
                x.accumulate(&y);
                Some(x)
            }
        }
    }

    /// The `model.usage` summary (G5): `16 in · 16 out (4 reasoning) · 1 model step`.
    pub fn summary(&self) -> String {
        let reasoning = match self.reasoning_tokens {
            Some(r) => format!(" ({r} reasoning)"),
            None => String::new(),
        };
        let steps = if self.reported_steps == 1 {
            "step"
        } else {
            "steps"
        };
        format!(
            "{} in · {} out{reasoning} · {} model {steps}",
            self.input_tokens, self.output_tokens, self.reported_steps
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_json as json;

    fn report(v: Value) -> UsageReport {
        UsageReport::from_json(&v)
    }

    #[test]
    fn nothing_reported_means_no_usage() {
        let mut acc = UsageAccumulator::new();
        assert_eq!(acc.finish(), None);
        acc.add_step(&report(json!({})));
        acc.add_step(&report(json!({"cachedInputTokens": 5})));
        acc.set_run_total(&report(json!({"reasoningTokens": 5})));
        assert_eq!(acc.finish(), None);
    }

    #[test]
    fn one_step_matches_the_trace() {
        let mut acc = UsageAccumulator::new();
        acc.add_step(&report(json!({"inputTokens": 16, "outputTokens": 16, "totalTokens": 32, "cachedInputTokens": 8, "reasoningTokens": 4})));
        let u = acc.finish().unwrap();
        assert_eq!(
            crate::test_support::to_value(u).unwrap(),
            json!({"inputTokens":16,"outputTokens":16,"totalTokens":32,"cachedInputTokens":8,"reasoningTokens":4,"reportedSteps":1})
        );
        assert_eq!(u.summary(), "16 in · 16 out (4 reasoning) · 1 model step");
    }

    #[test]
    fn two_steps_sum_and_subsets_sum() {
        let mut acc = UsageAccumulator::new();
        let r = report(
            json!({"inputTokens": 16, "outputTokens": 16, "totalTokens": 32, "cachedInputTokens": 8, "reasoningTokens": 4}),
        );
        acc.add_step(&r);
        acc.add_step(&r);
        let u = acc.finish().unwrap();
        assert_eq!(
            (u.input_tokens, u.output_tokens, u.total_tokens),
            (32, 32, 64)
        );
        assert_eq!(
            (u.cached_input_tokens, u.reasoning_tokens),
            (Some(16), Some(8))
        );
        assert_eq!(u.reported_steps, 2);
        assert_eq!(u.summary(), "32 in · 32 out (8 reasoning) · 2 model steps");
    }

    #[test]
    fn run_total_replaces_the_sum_and_is_not_added() {
        let mut acc = UsageAccumulator::new();
        acc.add_step(&report(json!({"inputTokens": 10, "outputTokens": 1})));
        acc.add_step(&report(json!({"inputTokens": 12, "outputTokens": 2})));
        acc.set_run_total(&report(
            json!({"inputTokens": 100, "outputTokens": 9, "totalTokens": 109}),
        ));
        let u = acc.finish().unwrap();
        assert_eq!(
            (
                u.input_tokens,
                u.output_tokens,
                u.total_tokens,
                u.reported_steps
            ),
            (100, 9, 109, 2)
        );
    }

    #[test]
    fn run_total_without_step_reports_counts_one_step() {
        let mut acc = UsageAccumulator::new();
        acc.set_run_total(&report(json!({"inputTokens": 5, "outputTokens": 5})));
        assert_eq!(acc.finish().unwrap().reported_steps, 1);
    }

    #[test]
    fn without_a_total_the_running_sum_is_kept() {
        // Timeout or error before any total: the running sum is reported.
        let mut acc = UsageAccumulator::new();
        acc.add_step(&report(json!({"inputTokens": 7, "outputTokens": 3})));
        let u = acc.finish().unwrap();
        assert_eq!(
            (
                u.input_tokens,
                u.output_tokens,
                u.total_tokens,
                u.reported_steps
            ),
            (7, 3, 10, 1)
        );
    }

    #[test]
    fn missing_parts_default_and_total_defaults_to_sum() {
        let mut acc = UsageAccumulator::new();
        acc.add_step(&report(json!({"outputTokens": 4})));
        let u = acc.finish().unwrap();
        assert_eq!((u.input_tokens, u.output_tokens, u.total_tokens), (0, 4, 4));
        // A provided total larger than the sum is carried as given.
        let mut acc = UsageAccumulator::new();
        acc.add_step(&report(
            json!({"inputTokens": 1, "outputTokens": 1, "totalTokens": 50}),
        ));
        assert_eq!(acc.finish().unwrap().total_tokens, 50);
    }

    #[test]
    fn invalid_counts_are_missing() {
        let r = report(
            json!({"inputTokens": -1, "outputTokens": "3", "totalTokens": null, "cachedInputTokens": 2}),
        );
        assert_eq!(r.input_tokens, None);
        assert_eq!(r.output_tokens, None);
        assert_eq!(r.total_tokens, None);
        let mut acc = UsageAccumulator::new();
        acc.add_step(&r);
        assert_eq!(
            acc.finish(),
            None,
            "input, output and total all missing is nothing"
        );
    }

    #[test]
    fn absent_subsets_stay_absent_and_mixed_subsets_take_the_present_one() {
        let mut acc = UsageAccumulator::new();
        acc.add_step(&report(json!({"inputTokens": 1, "outputTokens": 1})));
        acc.add_step(&report(
            json!({"inputTokens": 1, "outputTokens": 1, "reasoningTokens": 1}),
        ));
        let u = acc.finish().unwrap();
        assert_eq!(u.cached_input_tokens, None);
        assert_eq!(u.cache_write_input_tokens, None);
        assert_eq!(u.reasoning_tokens, Some(1));
        let v = crate::test_support::to_value(u).unwrap();
        assert!(
            v.get("cachedInputTokens").is_none(),
            "never written as null"
        );
    }

    #[test]
    fn chunk_payload_precedence() {
        let p = json!({"output": {"usage": {"inputTokens": 1}}, "totalUsage": {"inputTokens": 2}, "usage": {"inputTokens": 3}});
        assert_eq!(UsageReport::from_chunk_payload(&p).input_tokens, Some(1));
        let p = json!({"totalUsage": {"inputTokens": 2}, "usage": {"inputTokens": 3}});
        assert_eq!(UsageReport::from_chunk_payload(&p).input_tokens, Some(2));
        let p = json!({"usage": {"inputTokens": 3}});
        assert_eq!(UsageReport::from_chunk_payload(&p).input_tokens, Some(3));
        assert_eq!(
            UsageReport::from_chunk_payload(&json!({})),
            UsageReport::default()
        );
    }

    #[test]
    fn turn_counters_use_the_subset_rule() {
        let a = Usage {
            input_tokens: 10,
            output_tokens: 2,
            total_tokens: 12,
            cached_input_tokens: Some(4),
            reported_steps: 1,
            ..Default::default()
        };
        let b = Usage {
            input_tokens: 5,
            output_tokens: 1,
            total_tokens: 6,
            cache_write_input_tokens: Some(3),
            reported_steps: 2,
            ..Default::default()
        };
        let s = Usage::sum_opt(Some(a), Some(b)).unwrap();
        assert_eq!(
            (
                s.input_tokens,
                s.cached_input_tokens,
                s.cache_write_input_tokens,
                s.reasoning_tokens
            ),
            (15, Some(4), Some(3), None)
        );
        assert_eq!(s.reported_steps, 3);
        assert_eq!(Usage::sum_opt(None, None), None);
    }
}
