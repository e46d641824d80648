//! The runtime's metric (through the `metrics` facade; the server installs the recorder and
//! describes every name).

/// Approvals by decision: `requested`, `approved` or `rejected`.
pub const APPROVALS: &str = "dpas_approvals_total";

/// Counts one approval `requested`, `approved` or `rejected`.
pub fn approval(decision: &'static str) {
    metrics::counter!(APPROVALS, "decision" => decision).increment(1);
}
