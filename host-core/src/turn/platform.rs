//! What the step loop runs over, implemented by its host: the [`Transport`] that POSTs a step
//! and streams the body, the caller's [`AbortSignal`], and the app's [`TurnUi`] (pathname,
//! `until`, `confirm`). A leaf of `turn`: the loop's files import it, it imports none of them.

use dpas_protocol::json::Value;
use futures_util::future::LocalBoxFuture;
use futures_util::stream::LocalBoxStream;

/// A network failure; its cause is never relayed to the model or the user.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TransportFailure;

/// The answer to one step POST: the status and, when there is one, the body as chunks.
pub struct StepResponse {
    pub status: u16,
    pub body: Option<LocalBoxStream<'static, Result<Vec<u8>, TransportFailure>>>,
}

/// POSTs one step request body (JSON, credentials included) to the chat endpoint.
pub trait Transport {
    fn post(
        &self,
        body: Vec<u8>,
    ) -> LocalBoxFuture<'static, Result<StepResponse, TransportFailure>>;
}

/// The caller's cancellation (an `AbortSignal` in the browser).
pub trait AbortSignal {
    fn aborted(&self) -> bool;
}

/// What the loop asks of a capability that requires confirmation.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfirmRequest {
    pub tool_call_id: String,
    pub wire_name: String,
    pub capability_id: String,
    pub input: Value,
    pub summary: String,
    pub effect: String,
}

/// The app's side of a turn.
pub trait TurnUi {
    /// The window's current pathname, read after the agent's own navigation (J9).
    fn current_pathname(&self) -> String;
    /// Whether the app gave the settle-wait an `until` predicate.
    fn has_until(&self) -> bool;
    /// The `until` predicate, e.g. "the committed route equals the URL" (J6).
    fn until(&self) -> bool;
    /// Asks the user; resolves `false` on denial, dismissal or unmount.
    fn confirm(&self, request: &ConfirmRequest) -> LocalBoxFuture<'static, bool>;
    /// The turn's cancellation, handed to every handler the turn runs, so cancelling the
    /// turn also aborts a running handler.
    fn cancel_token(&self) -> Option<crate::capability::CancelToken> {
        None
    }
}
