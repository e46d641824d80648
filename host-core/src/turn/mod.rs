//! The browser step loop, `runTurn` (reference-behaviour J1–J9), over small traits: a
//! [`Transport`] that POSTs a step and streams the body, a clock and task yield for the
//! settle-wait and the deadline, an [`AbortSignal`], the app's [`TurnUi`] (pathname,
//! `until`, `confirm`) and a [`TurnObserver`] for frames and loop events.

mod catalog;
mod dispatch;
pub mod meta;
mod platform;

#[cfg(test)]
mod tests;

use catalog::{Call, StepCatalog};
use dispatch::invoke_confirmed;
pub use dispatch::{call_page_tool, Dispatched};
pub use platform::{
    AbortSignal, ConfirmRequest, StepResponse, Transport, TransportFailure, TurnUi,
};

use crate::capability::Effect;
use crate::envelope::SurfaceError;
use crate::guard::{unexecuted_results, LoopGuard};
use crate::projection::Projection;
use crate::registry::Surface;
use crate::settle::{ChangeFlag, Clock, SettleOutcome, SettlePolicy, SettleWait, TaskYield};
use crate::vec_map::VecMap;
use dpas_protocol::json::{Map, Value};
use dpas_protocol::limits::{precheck_request, MAX_STEPS_PER_TURN, TURN_DEADLINE_MS};
use dpas_protocol::tool::CatalogMode;
use dpas_protocol::PendingToolCall;
use dpas_protocol::{
    CatalogV2, ErrorBody, Frame, FrameDecoder, HostError, HostErrorCode, RouteFloors, StepFinish,
    StepRequestV2, ToolResultFrame, Usage, WireModelMessage,
};
use futures_util::StreamExt;

/// Loop events beside the raw frames.
#[derive(Debug, Clone, PartialEq)]
pub enum TurnEvent {
    /// A step is about to be posted.
    StepStarted { step_index: usize },
    /// The step's connection failed before its end; the same request is posted again after
    /// `delay_ms` (`attempt` counts from 1), and the server answers it from its step record.
    StepRetry {
        step_index: usize,
        attempt: usize,
        delay_ms: u32,
    },
    /// Tools withheld from this step's catalog (the local `catalog.undecodable` inspector).
    CatalogUndecodable { canonical_ids: Vec<String> },
    /// A browser call is about to run (executor browser).
    ToolCallStarted {
        tool_call_id: String,
        wire_name: String,
        canonical_id: String,
        input: Value,
    },
    ToolCallSettled {
        tool_call_id: String,
        wire_name: String,
        canonical_id: String,
        ok: bool,
        value: Value,
    },
    /// A settle-wait ended.
    Settled(SettleOutcome),
    /// A successful write, by the server (J3) or by a browser-executed domain reference: the
    /// app should invalidate its cached queries.
    Reconcile { wire_name: String },
    /// A step reported usage.
    Usage(Usage),
    /// The step's calls are answered and the next step starts a new assistant message.
    AssistantBoundary,
}

/// Receives every frame as decoded and every loop event.
pub trait TurnObserver {
    /// `raw` is the frame's line as the server sent it (trimmed); `None` for a malformed
    /// line, whose frame is the J4 error frame.
    fn on_frame(&self, _frame: &Frame, _raw: Option<&str>) {}
    fn on_event(&self, _event: &TurnEvent) {}
}

/// What a turn runs against.
pub struct TurnEnv<'a> {
    pub surface: &'a Surface,
    pub transport: &'a dyn Transport,
    pub clock: &'a dyn Clock,
    pub yielder: &'a dyn TaskYield,
    pub signal: &'a dyn AbortSignal,
    pub ui: &'a dyn TurnUi,
    pub observer: &'a dyn TurnObserver,
}

/// The turn's inputs (J1).
#[derive(Debug, Clone, PartialEq)]
pub struct TurnOptions {
    pub conversation_id: String,
    pub turn_id: String,
    /// The full history, including the new user message.
    pub messages: Vec<WireModelMessage>,
    pub pathname: String,
    /// The app's route → scope-floor table; `None` leaves every step unscoped.
    pub route_floors: Option<RouteFloors>,
    pub model_id: Option<String>,
    /// Direct (one descriptor per capability) or meta (the three `surface_*` tools).
    pub catalog_mode: CatalogMode,
    pub settle: SettlePolicy,
    /// Browser calls the history left unanswered, run (and confirmed, where required) before
    /// the first step is posted: a turn resumed after a reload. Usually empty.
    pub resume: Vec<PendingToolCall>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnStatus {
    Completed,
    Cancelled,
    Error,
}

/// How a turn ended. `messages` is the history to keep whatever the status: every call in
/// it is answered.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnOutcome {
    pub status: TurnStatus,
    pub messages: Vec<WireModelMessage>,
    pub usage: Option<Usage>,
    pub error: Option<ErrorBody>,
}

/// A host error as a turn's `error`.
pub(crate) fn body(error: HostError) -> ErrorBody {
    ErrorBody {
        code: error.code.as_str().to_owned(),
        message: error.message,
    }
}

fn transport_failed(message: impl Into<String>) -> ErrorBody {
    body(HostError::new(HostErrorCode::TransportFailed, message))
}

/// What one step's stream left behind.
#[derive(Default)]
struct StepFrames {
    /// Wire name → side effect of this step's domain tools (not kept across steps).
    domain_side_effects: VecMap<String, String>,
    /// Tool-call id → its input (the JSON map: its `insert` and `get` are the ones needed).
    call_inputs: Map<String, Value>,
    server_results: Vec<ToolResultFrame>,
    finish: Option<StepFinish>,
    error: Option<ErrorBody>,
}

/// J3: a write is anything but `read`/`none`, a missing or unknown effect included.
fn reconciles(frames: &StepFrames, result: &ToolResultFrame) -> bool {
    let write = frames
        .domain_side_effects
        .get(&result.wire_name)
        .map(|effect| !matches!(effect.as_str(), "read" | "none"));
    let approval = result.result.get("status").and_then(Value::as_str) == Some("approval-required");
    result.ok && write == Some(true) && !approval
}

impl StepFrames {
    fn handle(&mut self, frame: Frame, raw: Option<&str>, observer: &dyn TurnObserver) {
        observer.on_frame(&frame, raw);
        match frame {
            Frame::StepStart(start) => {
                self.domain_side_effects = VecMap::default();
                for tool in start.domain_tools {
                    self.domain_side_effects
                        .insert(tool.wire_name, tool.side_effect);
                }
            }
            Frame::ToolCall(call) => {
                self.call_inputs.insert(call.tool_call_id, call.input);
            }
            Frame::ToolResult(result) => {
                if reconciles(self, &result) {
                    observer.on_event(&TurnEvent::Reconcile {
                        wire_name: result.wire_name.clone(),
                    });
                }
                self.server_results.push(result);
            }
            Frame::StepFinish(finish) => {
                if let Some(usage) = finish.usage {
                    observer.on_event(&TurnEvent::Usage(usage));
                }
                self.finish = Some(finish);
            }
            Frame::Error { error } => {
                self.error.get_or_insert(error);
            }
            Frame::TextDelta { .. }
            | Frame::ReasoningDelta { .. }
            | Frame::Inspector(_)
            | Frame::Unknown(_) => {}
        }
    }
}

enum StepEnd {
    /// The step's `step-finish` and what its other frames left behind.
    Finished(StepFinish, Box<StepFrames>),
    Stop(TurnStatus, Option<ErrorBody>),
}

/// A non-2xx (or bodiless) answer: the JSON body's `error.code`/`error.message` when both
/// are strings, else `Chat endpoint returned <status>.`
fn http_error(status: u16, bytes: &[u8]) -> ErrorBody {
    let parsed = dpas_protocol::json::parse(bytes).ok();
    let error = parsed.as_ref().and_then(|v| v.get("error"));
    match (
        error.and_then(|e| e.get("code")).and_then(Value::as_str),
        error.and_then(|e| e.get("message")).and_then(Value::as_str),
    ) {
        (Some(code), Some(message)) => ErrorBody {
            code: code.to_owned(),
            message: message.to_owned(),
        },
        // As a u64, whose `Display` the browser build already has (a `u16`'s is another).
        _ => transport_failed(format!("Chat endpoint returned {}.", u64::from(status))),
    }
}

/// `Stop` for a failed request or stream: `cancelled` when the turn's signal has aborted (the
/// abort is the failure's cause), else the error.
fn failed(signal: &dyn AbortSignal, error: ErrorBody) -> StepEnd {
    if signal.aborted() {
        StepEnd::Stop(TurnStatus::Cancelled, None)
    } else {
        StepEnd::Stop(TurnStatus::Error, Some(error))
    }
}

/// How often a step whose connection failed is posted again, and the first pause (doubled
/// each time): 250, 500 and 1,000 ms.
const STEP_RETRIES: usize = 3;
const RETRY_FIRST_MS: u32 = 250;

/// A step's answer as its body is read (J2.6–7): a 2xx answer's chunks are decoded into
/// frames; any other's bytes are kept for its error, read to the end or to the first failed
/// chunk. Synchronous: the step loop awaits the chunks in its own body.
///
/// One `StepRead` lives across a step's attempts: the server answers a re-posted step with the
/// whole step from its first byte (its step record), so an attempt's answer skips the bytes
/// already decoded and the frames go on where the broken answer stopped, each seen once.
struct StepRead {
    status: u16,
    ok: bool,
    decoder: FrameDecoder,
    frames: StepFrames,
    bytes: Vec<u8>,
    failed: bool,
    /// Body bytes of 2xx answers decoded so far.
    fed: usize,
    /// Bytes of the current answer still to skip: what an earlier attempt decoded.
    skip: usize,
}

impl StepRead {
    fn new() -> Self {
        Self {
            status: 0,
            ok: false,
            decoder: FrameDecoder::new(),
            frames: StepFrames::default(),
            bytes: Vec::new(),
            failed: false,
            fed: 0,
            skip: 0,
        }
    }

    /// Starts reading an attempt's answer.
    fn answer(&mut self, response: &StepResponse) {
        self.status = response.status;
        self.ok = (200..300).contains(&response.status) && response.body.is_some();
        self.bytes.clear();
        self.failed = false;
        self.skip = self.fed;
    }

    /// One chunk of the body; `false` once a read failed (stop reading).
    fn chunk(
        &mut self,
        chunk: Result<Vec<u8>, TransportFailure>,
        observer: &dyn TurnObserver,
    ) -> bool {
        let Ok(chunk) = chunk else {
            self.failed = true;
            return false;
        };
        if self.ok {
            let skipped = self.skip.min(chunk.len());
            self.skip -= skipped;
            let fresh = &chunk[skipped..];
            self.fed += fresh.len();
            let frames = &mut self.frames;
            self.decoder
                .push_lines(fresh, |frame, raw| frames.handle(frame, raw, observer));
        } else {
            self.bytes.extend_from_slice(&chunk);
        }
        true
    }

    /// A 2xx answer that broke, or ended, before the step's end: posting the step again
    /// gets the rest.
    fn broken(&self) -> bool {
        self.ok && (self.failed || (self.frames.finish.is_none() && self.frames.error.is_none()))
    }

    /// How the step ended, once its body is read.
    fn end(mut self, signal: &dyn AbortSignal) -> StepEnd {
        if !self.ok {
            return StepEnd::Stop(
                TurnStatus::Error,
                Some(http_error(self.status, &self.bytes)),
            );
        }
        let interrupted = || transport_failed("The chat stream was interrupted.");
        if self.failed {
            return failed(signal, interrupted());
        }
        // A trailing fragment without a newline is never parsed (J4).
        if let Some(error) = self.frames.error.take() {
            return StepEnd::Stop(TurnStatus::Error, Some(error));
        }
        let Some(finish) = self.frames.finish.take() else {
            // Deliberate: a stream that ends without `step-finish` is a broken step, not a finish.
            return failed(signal, interrupted());
        };
        StepEnd::Finished(finish, Box::new(self.frames))
    }
}

struct Turn {
    options: TurnOptions,
    history: Vec<WireModelMessage>,
    usage: Option<Usage>,
    guard: LoopGuard,
    changes: ChangeFlag,
}

impl Turn {
    fn end(self, status: TurnStatus, error: Option<ErrorBody>) -> TurnOutcome {
        TurnOutcome {
            status,
            messages: self.history,
            usage: self.usage,
            error,
        }
    }

    fn scope(&self) -> Vec<String> {
        self.options
            .route_floors
            .as_ref()
            .map(|f| f.floor(&self.options.pathname))
            .unwrap_or_default()
    }

    fn request(&self, step_index: usize, projection: &Projection, scope: &[String]) -> Vec<u8> {
        StepRequestV2 {
            protocol_version: 2,
            conversation_id: &self.options.conversation_id,
            turn_id: &self.options.turn_id,
            step_index: step_index as u32,
            pathname: &self.options.pathname,
            model_id: self.options.model_id.as_deref(),
            messages: &self.history,
            catalog: CatalogV2 {
                mode: self.options.catalog_mode,
                // The floor is sent only when there is one, and then exactly (B11).
                scope: (!scope.is_empty()).then_some(scope),
                frontend_tools: &projection.descriptors,
                frontend_state: &projection.state,
                truncated: projection.truncated(),
            },
        }
        .to_json()
    }

    /// J2.9: server tool results feed the guard in order, with their call's input.
    fn guard_server_results(&mut self, frames: &StepFrames) -> Option<HostError> {
        let empty = Value::Object(Map::new());
        frames.server_results.iter().find_map(|result| {
            let input = frames
                .call_inputs
                .get(&result.tool_call_id)
                .unwrap_or(&empty);
            self.guard
                .observe(&result.canonical_id, Some(input), result.ok, &result.result)
        })
    }
}

/// Runs one turn to completion, cancellation or error. Never fails: every ending is a
/// [`TurnOutcome`] whose history answers every call it contains.
pub async fn run_turn(env: &TurnEnv<'_>, options: TurnOptions) -> TurnOutcome {
    let changes = ChangeFlag::new();
    let mark = changes.clone();
    let subscription = env.surface.subscribe(move |event| {
        if event.moves_surface() {
            mark.mark();
        }
    });
    let started = env.clock.now_ms();
    let mut turn = Turn {
        history: options.messages.clone(),
        options,
        usage: None,
        guard: LoopGuard::new(),
        changes,
    };
    let mut resume = core::mem::take(&mut turn.options.resume);
    // A resumed turn's first round answers its calls without posting.
    let rounds = MAX_STEPS_PER_TURN + usize::from(!resume.is_empty());
    let mut step_index = 0;
    let (status, error) = 'turn: {
        for _ in 0..rounds {
            if env.signal.aborted() {
                break 'turn (TurnStatus::Cancelled, None);
            }
            if env.clock.now_ms() - started > TURN_DEADLINE_MS as f64 {
                break 'turn (
                    TurnStatus::Error,
                    Some(body(HostError::run_limit(
                        "Turn deadline exceeded; the run was stopped.",
                    ))),
                );
            }
            let scope = turn.scope();
            let projection = StepCatalog(turn.options.catalog_mode).project(env.surface, &scope);
            if let Err(error) = precheck_request(projection.descriptors.len(), turn.history.len()) {
                break 'turn (TurnStatus::Error, Some(body(error)));
            }
            if !projection.undecodable.is_empty() {
                env.observer.on_event(&TurnEvent::CatalogUndecodable {
                    canonical_ids: projection.undecodable.clone(),
                });
            }
            let pending = if resume.is_empty() {
                env.observer
                    .on_event(&TurnEvent::StepStarted { step_index });
                let request = turn.request(step_index, &projection, &scope);
                // J2.6–7: POST the step and read its answer; after a failed connection or a
                // broken stream, post the same bytes again, up to `STEP_RETRIES` times with a
                // doubling pause (the server answers from its step record).
                let mut read = StepRead::new();
                let mut attempt = 0;
                let ended = loop {
                    let reached = match env.transport.post(request.clone()).await {
                        Err(TransportFailure) => false,
                        Ok(response) => {
                            read.answer(&response);
                            if let Some(mut stream) = response.body {
                                while let Some(chunk) = stream.next().await {
                                    if !read.chunk(chunk, env.observer) {
                                        break;
                                    }
                                }
                            }
                            true
                        }
                    };
                    if (reached && !read.broken())
                        || attempt == STEP_RETRIES
                        || env.signal.aborted()
                    {
                        break if reached {
                            read.end(env.signal)
                        } else {
                            failed(
                                env.signal,
                                transport_failed("Could not reach the chat endpoint."),
                            )
                        };
                    }
                    let delay_ms = RETRY_FIRST_MS << attempt;
                    attempt += 1;
                    env.observer.on_event(&TurnEvent::StepRetry {
                        step_index,
                        attempt,
                        delay_ms,
                    });
                    // The pause yields to the page like the settle-wait does; a cancel ends it.
                    let resume_at = env.clock.now_ms() + f64::from(delay_ms);
                    while env.clock.now_ms() < resume_at {
                        if env.signal.aborted() {
                            break 'turn (TurnStatus::Cancelled, None);
                        }
                        env.yielder.yield_task().await;
                    }
                };
                let (finish, frames) = match ended {
                    StepEnd::Finished(finish, frames) => (finish, frames),
                    StepEnd::Stop(status, error) => break 'turn (status, error),
                };
                turn.usage = Usage::sum_opt(turn.usage, finish.usage);
                turn.history.extend(finish.response_messages);
                let pending = finish.pending_tool_calls;
                if let Some(verdict) = turn.guard_server_results(&frames) {
                    turn.history.extend(unexecuted_results(&pending));
                    break 'turn (TurnStatus::Error, Some(body(verdict)));
                }
                step_index += 1;
                pending
            } else {
                core::mem::take(&mut resume)
            };
            if pending.is_empty() {
                break 'turn (TurnStatus::Completed, None);
            }
            // J2.11–12: the pending calls in order.
            let mut stop = None;
            let mut reached = 0;
            for call in &pending {
                if env.signal.aborted() {
                    stop = Some((TurnStatus::Cancelled, None));
                    break;
                }
                reached += 1;
                env.observer.on_event(&TurnEvent::ToolCallStarted {
                    tool_call_id: call.tool_call_id.clone(),
                    wire_name: call.wire_name.clone(),
                    canonical_id: call.canonical_id.clone(),
                    input: call.input.clone(),
                });
                let Call {
                    invoke,
                    moves_surface,
                    effect,
                } = StepCatalog(turn.options.catalog_mode).call(
                    env.surface,
                    &scope,
                    &projection,
                    call,
                    env.ui,
                );
                let Dispatched { ok, value } = match invoke {
                    Ok(request) => invoke_confirmed!(env.surface, request, call, env.ui),
                    Err(answered) => answered,
                };
                // Cancelled while the user was being asked: the call never ran and the user
                // never declined it, so it is answered as unexecuted (J7), not as a denial.
                if env.signal.aborted() && !ok && SurfaceError::is_confirmation_denial(&value) {
                    reached -= 1;
                    stop = Some((TurnStatus::Cancelled, None));
                    break;
                }
                env.observer.on_event(&TurnEvent::ToolCallSettled {
                    tool_call_id: call.tool_call_id.clone(),
                    wire_name: call.wire_name.clone(),
                    canonical_id: call.canonical_id.clone(),
                    ok,
                    value: value.clone(),
                });
                turn.history.push(WireModelMessage::tool_result(
                    &call.tool_call_id,
                    &call.wire_name,
                    value.clone(),
                ));
                if moves_surface {
                    // The settle-wait (J6), driven here rather than by `settle`'s own future.
                    let has_until = env.ui.has_until();
                    let mut wait =
                        SettleWait::start(turn.options.settle, env.clock, &turn.changes, has_until);
                    let outcome = loop {
                        env.yielder.yield_task().await;
                        if let Some(outcome) = wait.tick(!has_until || env.ui.until()) {
                            break outcome;
                        }
                    };
                    env.observer.on_event(&TurnEvent::Settled(outcome));
                }
                if ok && effect == Some(Effect::Navigation) {
                    turn.options.pathname = env.ui.current_pathname();
                }
                // A browser-executed reference that wrote to the server stales the app's
                // queries too.
                if ok && effect.is_some_and(|e| e.is_domain_effect() && e != Effect::ServerQuery) {
                    env.observer.on_event(&TurnEvent::Reconcile {
                        wire_name: call.wire_name.clone(),
                    });
                }
                if let Some(verdict) =
                    turn.guard
                        .observe(&call.canonical_id, Some(&call.input), ok, &value)
                {
                    stop = Some((TurnStatus::Error, Some(body(verdict))));
                    break;
                }
            }
            turn.history.extend(unexecuted_results(&pending[reached..]));
            if let Some(ending) = stop {
                break 'turn ending;
            }
            env.observer.on_event(&TurnEvent::AssistantBoundary);
        }
        (
            TurnStatus::Error,
            Some(body(HostError::run_limit(format!(
                "Stopped after {MAX_STEPS_PER_TURN} steps in one turn."
            )))),
        )
    };
    env.surface.unsubscribe(subscription);
    turn.end(status, error)
}
