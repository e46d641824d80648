//! J5: one browser tool call, resolved against the live surface at call time, with the
//! confirmation round trip for capabilities that require it.

use super::platform::{ConfirmRequest, TurnUi};
use crate::envelope::{ErrorCode, InvocationResult, SurfaceError};
use crate::projection::project;
use crate::registry::{InvokeRequest, Surface};
use dpas_protocol::error::tool_results::capability_not_found;
use dpas_protocol::json::object;
use dpas_protocol::json::{Map, Value};
use dpas_protocol::PendingToolCall;

/// What a dispatched call settled to: the value the model sees, and whether it succeeded.
#[derive(Debug, Clone, PartialEq)]
pub struct Dispatched {
    pub ok: bool,
    pub value: Value,
}

/// One pending call up to its invocation, synchronous: the request, or the call's answer
/// when its wire name reaches nothing live. The wire name is reversed through a projection
/// taken now, with the step's scope (never a handler cached at step start); the tool-call id
/// becomes the invocation id, so a retried call cannot run twice.
pub(crate) fn prepare(
    surface: &Surface,
    scope: &[String],
    call: &PendingToolCall,
    ui: &dyn TurnUi,
) -> Result<InvokeRequest, Dispatched> {
    let live = project(surface, scope);
    let Some(binding) = live.binding(&call.wire_name) else {
        return Err(Dispatched {
            ok: false,
            value: capability_not_found(&call.wire_name),
        });
    };
    let input = match &call.input {
        Value::Null => Value::Object(Map::new()),
        input => input.clone(),
    };
    Ok(InvokeRequest {
        invocation_id: Some(call.tool_call_id.clone()),
        capability_id: binding.canonical_id.clone(),
        instance_id: Some(binding.instance_id.clone()),
        registration_id: Some(binding.registration_id.clone()),
        surface_version: Some(live.surface_version),
        input: Some(input),
        confirmed: false,
        cancel: ui.cancel_token(),
    })
}

/// Invokes `$request` for `$call`; a `CONFIRMATION_REQUIRED` answer asks the user through
/// `$ui` and, once approved, re-invokes with the same invocation id. A dismissed or unmounted
/// dialog resolves false, and the denial is a typed result. Evaluates to the call's
/// [`Dispatched`], awaiting in the async body it is written in: a macro, not an `async fn`, so
/// the step loop runs the round trip in its own state machine (the size rule) and
/// `meta::dispatch_meta` runs the same text.
macro_rules! invoke_confirmed {
    ($surface:expr, $request:expr, $call:expr, $ui:expr) => {{
        let mut confirming = $crate::turn::dispatch::Confirming($request);
        loop {
            let result = $surface.invoke(confirming.0.clone()).await;
            match confirming.answered(result, $call) {
                $crate::turn::dispatch::Answered::Done(done) => break done,
                $crate::turn::dispatch::Answered::Ask(ask) => {
                    if let Some(denied) = confirming.asked($ui.confirm(&ask).await) {
                        break denied;
                    }
                }
            }
        }
    }};
}
pub(crate) use invoke_confirmed;

/// An invocation's answer, as [`Confirming::answered`] reads it.
pub(crate) enum Answered {
    /// The call's result.
    Done(Dispatched),
    /// `CONFIRMATION_REQUIRED` to an unconfirmed invocation: what to ask the user.
    Ask(ConfirmRequest),
}

/// [`invoke_confirmed`]'s steps between its awaits, synchronous.
pub(crate) struct Confirming(pub(crate) InvokeRequest);

impl Confirming {
    /// An invocation's answer: the call's result, or what to ask the user.
    pub(crate) fn answered(&self, result: InvocationResult, call: &PendingToolCall) -> Answered {
        let request = &self.0;
        let Some(asked) = result
            .error()
            .filter(|e| e.code == ErrorCode::ConfirmationRequired && !request.confirmed)
        else {
            return Answered::Done(Dispatched {
                ok: result.is_ok(),
                value: result.tool_value(),
            });
        };
        let details = asked.details.clone().unwrap_or_default();
        Answered::Ask(ConfirmRequest {
            tool_call_id: call.tool_call_id.clone(),
            wire_name: call.wire_name.clone(),
            capability_id: request.capability_id.clone(),
            input: request.input.clone().unwrap_or_default(),
            summary: details["summary"].as_str().unwrap_or_default().to_owned(),
            effect: details["effect"].as_str().unwrap_or_default().to_owned(),
        })
    }

    /// The user's answer: `None` to invoke again, confirmed; the denial otherwise.
    pub(crate) fn asked(&mut self, approved: bool) -> Option<Dispatched> {
        if approved {
            self.0.confirmed = true;
            return None;
        }
        let error = SurfaceError::confirmation_denied(&self.0.capability_id);
        Some(Dispatched {
            ok: false,
            value: object([("error", error.to_value())]),
        })
    }
}

/// One call of a page tool from outside the step loop (the WebMCP door): resolved like a step's
/// call against a projection taken now with `scope` (an unavailable or unmounted capability
/// is the registry's typed answer), with the same confirmation round trip through `ui`.
/// `call.tool_call_id` is the invocation id.
pub async fn call_page_tool(
    surface: &Surface,
    scope: &[String],
    call: &PendingToolCall,
    ui: &dyn TurnUi,
) -> Dispatched {
    match prepare(surface, scope, call, ui) {
        Ok(request) => invoke_confirmed!(surface, request, call, ui),
        Err(answered) => answered,
    }
}
