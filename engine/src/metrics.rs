//! The step engine's metrics (through the `metrics` facade; the server installs the
//! recorder and describes every name). Label values come from fixed sets, so cardinality is
//! bounded whatever a model or a client sends.

use std::time::Instant;

use dpas_protocol::Usage;
use metrics::{counter, gauge, histogram};

/// Chat steps run, by outcome.
pub const STEPS: &str = "dpas_steps_total";
/// Chat step durations.
pub const STEP_DURATION: &str = "dpas_step_duration_seconds";
/// Chat steps running now.
pub const ACTIVE_STEPS: &str = "dpas_active_steps";
/// Tool calls the model made, by plane and outcome.
pub const TOOL_CALLS: &str = "dpas_tool_calls_total";
/// Model tokens, by kind.
pub const TOKENS: &str = "dpas_model_tokens_total";
/// Errors answered or streamed, by code.
pub const ERRORS: &str = "dpas_errors_total";
/// Tokens of model steps, by model and kind (`input`, `cached_input`, `output`).
pub const USAGE_TOKENS: &str = "dpas_usage_tokens_total";
/// What model steps cost by the price table, in billionths of a US dollar, by model.
pub const USAGE_COST: &str = "dpas_usage_cost_nano_usd_total";
/// Model steps not started because a budget was used up, by budget scope.
pub const BUDGET_EXHAUSTED: &str = "dpas_budget_exhausted_total";

/// One chat step: counted as active until dropped, and by outcome once finished.
#[derive(Debug)]
pub struct StepMetrics {
    begun: Instant,
}

impl StepMetrics {
    pub fn start() -> Self {
        gauge!(ACTIVE_STEPS).increment(1.0);
        Self {
            begun: Instant::now(),
        }
    }

    /// Records the step's outcome (its `finishReason`), duration and usage.
    pub fn finish(&self, finish_reason: &str, usage: Option<&Usage>) {
        counter!(STEPS, "outcome" => outcome(finish_reason)).increment(1);
        histogram!(STEP_DURATION).record(self.begun.elapsed().as_secs_f64());
        if let Some(u) = usage {
            let kinds = [
                ("input", Some(u.input_tokens)),
                ("output", Some(u.output_tokens)),
                ("cached", u.cached_input_tokens),
                ("reasoning", u.reasoning_tokens),
                ("cache_write", u.cache_write_input_tokens),
            ];
            for (kind, count) in kinds {
                if let Some(n) = count {
                    counter!(TOKENS, "kind" => kind).increment(n);
                }
            }
        }
    }
}

impl Drop for StepMetrics {
    fn drop(&mut self) {
        gauge!(ACTIVE_STEPS).decrement(1.0);
    }
}

/// A finish reason from the fixed set, whatever a vendor reported.
fn outcome(finish_reason: &str) -> &'static str {
    match finish_reason {
        "stop" => "stop",
        "tool-calls" => "tool-calls",
        "length" => "length",
        "content-filter" => "content-filter",
        "error" => "error",
        "timeout" => "timeout",
        _ => "other",
    }
}

/// Where a tool call runs.
#[derive(Debug, Clone, Copy)]
pub enum Plane {
    Server,
    Browser,
    /// A name in neither plane.
    Unknown,
}

/// How a tool call ended, as far as this server knows.
#[derive(Debug, Clone, Copy)]
pub enum CallOutcome {
    Ok,
    Error,
    /// Handed to the browser, which answers in the next step.
    Delegated,
    /// Arguments that did not parse.
    InvalidInput,
    /// Settled without running (orphan settlement).
    NotExecuted,
    NoSuchTool,
}

pub fn tool_call(plane: Plane, outcome: CallOutcome) {
    let plane = match plane {
        Plane::Server => "server",
        Plane::Browser => "browser",
        Plane::Unknown => "unknown",
    };
    let outcome = match outcome {
        CallOutcome::Ok => "ok",
        CallOutcome::Error => "error",
        CallOutcome::Delegated => "delegated",
        CallOutcome::InvalidInput => "invalid-input",
        CallOutcome::NotExecuted => "not-executed",
        CallOutcome::NoSuchTool => "no-such-tool",
    };
    counter!(TOOL_CALLS, "plane" => plane, "outcome" => outcome).increment(1);
}

/// An error answered (HTTP) or streamed (`error` frame). Codes come from our own tables.
pub fn error(code: &str) {
    counter!(ERRORS, "code" => code.to_owned()).increment(1);
}

/// One model step's usage on `model` (a configured model id: a bounded set).
pub fn usage(model: &str, usage: &Usage, nano_usd: u64) {
    let cached = usage.cached_input_tokens.unwrap_or(0);
    for (kind, n) in [
        ("input", usage.input_tokens),
        ("cached_input", cached),
        ("output", usage.output_tokens),
    ] {
        if n > 0 {
            counter!(USAGE_TOKENS, "model" => model.to_owned(), "kind" => kind).increment(n);
        }
    }
    if nano_usd > 0 {
        counter!(USAGE_COST, "model" => model.to_owned()).increment(nano_usd);
    }
}

/// A model step not started: the budget of `scope` (`turn`, `actor-day`, `tenant-day`) is
/// used up.
pub fn budget_exhausted(scope: &'static str) {
    counter!(BUDGET_EXHAUSTED, "scope" => scope).increment(1);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vendor_finish_reasons_fall_into_a_fixed_set() {
        assert_eq!(outcome("stop"), "stop");
        assert_eq!(outcome("tool-calls"), "tool-calls");
        assert_eq!(outcome("end_turn_of_some_vendor"), "other");
    }
}
