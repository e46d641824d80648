//! Why a step was not started.

use dpas_protocol::HostError;

/// Why a step was not started. Each is decided before the first byte of a stream.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Refusal {
    /// A refusal from the shared table (`MODEL_NOT_CONFIGURED`, the catalog's 409/413, …).
    #[error(transparent)]
    Host(#[from] HostError),
    /// The actor already runs as many steps as it may (429 `RATE_LIMITED`).
    #[error("busy: retry in {retry_after_secs}s")]
    Busy { retry_after_secs: u64 },
    /// The server is draining and starts no new steps (503 `SHUTTING_DOWN`).
    #[error("shutting down")]
    ShuttingDown,
    /// The step's ids were posted before with another body (409 `STEP_CONFLICT`).
    #[error("the step was posted before with another body")]
    StepConflict,
    /// The replica running the step stopped before it finished, so what it did is not known
    /// (503 `STEP_INTERRUPTED`).
    #[error("the step's run was interrupted")]
    StepInterrupted,
}
