//! The model step loop of one step-request: up to five model steps, server tools executed
//! inside the loop, browser calls suspending the run, frames in the F2 order, history
//! reconstruction (F5), orphan settlement (F7), usage (H) and thread persistence (L).
//!
//! The run owns everything it needs and only writes frames into a sink: a departed client
//! never stops settlement, usage accounting or persistence. Only a cancel does
//! ([`StepRun::cancel`]): the model call in flight is dropped (its vendor connection closes),
//! server calls already running complete and keep their results, nothing further starts,
//! every call left open is answered [`cancelled_result`], and the step is persisted and ends
//! with `finishReason` `cancelled`.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use dpas_model::{ModelEvent, ModelProvider, ModelRequest, ToolCall, ToolSpec};
use dpas_protocol::catalog::call_canonical_id;
use dpas_protocol::frame::{host_inspector, step_correlation};
use dpas_protocol::limits::MAX_MODEL_STEPS_PER_REQUEST;
use dpas_protocol::tool_results;
use dpas_protocol::{
    encode_frame_into, CatalogMode, ChatStepRequest, ContentPart, Executor, Frame, HostError,
    HostErrorCode, InspectorFrame, Lane, MessageContent, PendingToolCall, Role, StepFinish,
    StepStart, ToolCallFrame, ToolResultFrame, Usage, UsageAccumulator, WireModelMessage,
};
use futures_util::stream::{FuturesOrdered, StreamExt};
use futures_util::FutureExt;
use serde_json::{json, Map, Value};
use tokio::sync::{mpsc, watch};
use tracing::Instrument;

use crate::compose::Composition;
use crate::drain::RunGuard;
use crate::metrics::{self as telemetry, CallOutcome, Plane, StepMetrics};
use crate::steps::{LiveStep, Recording};
use dpas_governance::approval::input_hash;
use dpas_governance::audit::{
    AuditDraft, AuditEntry, AuditReader, AuditSource, BROWSER_RESULT, OPERATION_OUTCOME,
};
use dpas_governance::threads::{ThreadAppend, ThreadError, ThreadStore};
use dpas_governance::{
    Actor, CallContext, CallSurface, CapabilityError, CapabilityErrorCode, Correlation, Envelope,
    Runtime,
};

/// Longest provider or tool failure message relayed (F4).
const MAX_ERROR_MESSAGE_CHARS: usize = 300;

/// Where frames go: the HTTP response's channel, as NDJSON lines (`/agent/chat`) or as
/// frames for another door to encode. Sending never fails the run.
#[derive(Clone)]
pub struct FrameSink {
    out: SinkOut,
    /// The recorded step every NDJSON line also goes to ([`crate::steps`]).
    tee: Option<Arc<LiveStep>>,
}

#[derive(Clone)]
enum SinkOut {
    Ndjson(mpsc::Sender<Bytes>),
    Frames(mpsc::Sender<Frame>),
}

impl FrameSink {
    /// NDJSON lines, ready to stream.
    pub fn new(tx: mpsc::Sender<Bytes>) -> Self {
        Self {
            out: SinkOut::Ndjson(tx),
            tee: None,
        }
    }

    /// The same sink, every line also recorded into `step`.
    pub(crate) fn recorded(self, step: Arc<LiveStep>) -> Self {
        Self {
            tee: Some(step),
            ..self
        }
    }

    async fn line(&self, tx: &mpsc::Sender<Bytes>, line: Vec<u8>) {
        let line = Bytes::from(line);
        if let Some(step) = &self.tee {
            step.push(&line);
        }
        let _ = tx.send(line).await;
    }

    /// The frames themselves, for a door that encodes them its own way.
    pub fn frames(tx: mpsc::Sender<Frame>) -> Self {
        Self {
            out: SinkOut::Frames(tx),
            tee: None,
        }
    }

    async fn send(&self, frame: &Frame) {
        if let Frame::Error { error } = frame {
            telemetry::error(&error.code);
        }
        // A closed channel means the client left; the run goes on regardless.
        match &self.out {
            SinkOut::Ndjson(tx) => {
                let mut line = Vec::with_capacity(256);
                encode_frame_into(frame, &mut line);
                self.line(tx, line).await;
            }
            SinkOut::Frames(tx) => {
                let _ = tx.send(frame.clone()).await;
            }
        }
    }
}

impl FrameSink {
    /// The run's `step-start`. As NDJSON it is written around the domain half's tools
    /// serialised once for every step that shares the half ([`encode_step_start`]).
    async fn send_step_start(&self, request: &ChatStepRequest, composition: &Composition) {
        match &self.out {
            SinkOut::Ndjson(tx) => {
                let mut line = Vec::with_capacity(256 + composition.domain.infos_json.len());
                encode_step_start(request, composition, &mut line);
                self.line(tx, line).await;
            }
            SinkOut::Frames(_) => {
                let start = Frame::StepStart(StepStart {
                    step_id: composition.step_id.clone(),
                    turn_id: request.turn_id.clone(),
                    conversation_id: request.conversation_id.clone(),
                    domain_tools: composition.domain.infos.clone(),
                    scope: composition.scope.clone(),
                    catalog_mode: Some(composition.catalog_mode),
                });
                self.send(&start).await;
            }
        }
    }
}

/// The `step-start` line, byte for byte what [`encode_frame_into`] writes for the same
/// [`StepStart`] (fields in its order, `catalogMode` always present), with `domainTools`
/// copied from [`DomainHalf::infos_json`](super::compose::DomainHalf::infos_json) instead of
/// serialised again: describing the same tools on every step was ~8% of a step's
/// instructions.
fn encode_step_start(request: &ChatStepRequest, composition: &Composition, out: &mut Vec<u8>) {
    StartLine {
        step_id: &composition.step_id,
        turn_id: &request.turn_id,
        conversation_id: &request.conversation_id,
        domain_tools_json: &composition.domain.infos_json,
        scope: &composition.scope,
        catalog_mode: composition.catalog_mode,
    }
    .encode(out);
}

/// What a `step-start` line is written from.
struct StartLine<'a> {
    step_id: &'a str,
    turn_id: &'a str,
    conversation_id: &'a str,
    /// The domain tools, already a JSON array.
    domain_tools_json: &'a [u8],
    scope: &'a [String],
    catalog_mode: CatalogMode,
}

impl StartLine<'_> {
    fn encode(&self, out: &mut Vec<u8>) {
        fn field<T: serde::Serialize + ?Sized>(out: &mut Vec<u8>, key: &[u8], value: &T) {
            out.extend_from_slice(key);
            // Strings, a list of strings and a unit enum always serialise.
            serde_json::to_writer(&mut *out, value).expect("plain values always serialise");
        }
        field(out, br#"{"type":"step-start","stepId":"#, self.step_id);
        field(out, br#","turnId":"#, self.turn_id);
        field(out, br#","conversationId":"#, self.conversation_id);
        out.extend_from_slice(br#","domainTools":"#);
        out.extend_from_slice(self.domain_tools_json);
        field(out, br#","scope":"#, self.scope);
        field(out, br#","catalogMode":"#, &self.catalog_mode);
        out.extend_from_slice(b"}\n");
    }
}

/// Everything one step-request's run needs.
pub struct StepRun {
    pub runtime: Arc<Runtime>,
    pub threads: Arc<dyn ThreadStore>,
    pub provider: Arc<dyn ModelProvider>,
    /// The vendor's model id for [`ModelRequest::model`].
    pub model_name: String,
    pub actor: Actor,
    pub request: ChatStepRequest,
    pub composition: Composition,
    pub system_prompt: String,
    pub model_timeout: Duration,
    /// Subscribed after composition, so composition's own audit records are not forwarded,
    /// and admitting only what the step forwards ([`forwardable`]).
    pub audit: AuditReader,
    /// The actor's concurrent-step slot, held until the run ends (see `endpoint::spawn_run`).
    pub permit: Option<crate::gate::StepPermit>,
    /// This run's place among the steps a shutdown waits for, and its cut signal.
    pub drain: Option<RunGuard>,
    /// The step's record, when the step was claimed (`/agent/chat`): its lines go to the
    /// requests following it and, once it ends, to the store.
    pub recording: Option<Recording>,
    /// Where each model step's usage goes and the budgets it is admitted against.
    pub meter: Option<crate::budget::RunMeter>,
    /// Set once the step is cancelled (`POST /agent/chat/cancel`); a recorded run's, from
    /// its record ([`crate::spawn_run`]).
    pub cancel: Option<watch::Receiver<bool>>,
}

/// Why a run stopped waiting on its model.
enum Halt {
    /// The drain deadline cut it.
    Cut,
    /// Its step was cancelled.
    Cancelled,
}

/// `fut`'s output, or why the run stopped waiting for it: the drain deadline, or a cancel.
async fn unless_halted<F: std::future::Future>(
    drain: &mut Option<RunGuard>,
    cancel: &mut Option<watch::Receiver<bool>>,
    fut: F,
) -> Result<F::Output, Halt> {
    let cut = async {
        match drain {
            Some(guard) => guard.cut().await,
            None => std::future::pending().await,
        }
    };
    let cancelled = async {
        match cancel {
            Some(signal) => {
                if signal.wait_for(|c| *c).await.is_err() {
                    std::future::pending::<()>().await;
                }
            }
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        biased;
        () = cut => Err(Halt::Cut),
        () = cancelled => Err(Halt::Cancelled),
        out = fut => Ok(out),
    }
}

/// The answer to a call a cancel left open: it did not run, and the user stopped it.
pub fn cancelled_result() -> Value {
    json!({"error": {
        "code": "TOOL_NOT_EXECUTED",
        "message": CANCELLED_MESSAGE,
        "retry": "no",
    }})
}

/// The message of [`cancelled_result`].
pub const CANCELLED_MESSAGE: &str =
    "The user stopped this step before this tool ran; it did not run.";

/// One recorded tool call of this run.
#[derive(Debug, Clone)]
struct CallRecord {
    id: String,
    wire_name: String,
    canonical_id: String,
    /// `None` when the name is in neither plane.
    executor: Option<Executor>,
    input: Value,
    answered: bool,
}

/// `responseMessages` under construction (F5).
#[derive(Debug, Default)]
struct History {
    messages: Vec<WireModelMessage>,
    reasoning: Vec<ContentPart>,
    text: String,
    calls: Vec<ContentPart>,
    records: Vec<CallRecord>,
}

impl History {
    /// Closes the current assistant message, if it has text or calls.
    fn flush(&mut self) {
        if self.text.is_empty() && self.calls.is_empty() {
            self.reasoning.clear();
            return;
        }
        let mut content = std::mem::take(&mut self.reasoning);
        if !self.text.is_empty() {
            content.push(ContentPart::text(std::mem::take(&mut self.text)));
        }
        content.append(&mut self.calls);
        self.messages.push(WireModelMessage::new(
            Role::Assistant,
            MessageContent::Parts(content),
        ));
    }

    fn record_call(&mut self, record: CallRecord) {
        self.calls.push(ContentPart::tool_call(
            &record.id,
            &record.wire_name,
            record.input.clone(),
        ));
        self.records.push(record);
    }

    /// Records an answer; `None` when the call is unknown to the run or already answered.
    fn answer(&mut self, id: &str, value: Value) -> Option<CallRecord> {
        let record = self
            .records
            .iter_mut()
            .find(|r| r.id == id && !r.answered)?;
        record.answered = true;
        let record = record.clone();
        self.flush();
        self.messages.push(WireModelMessage::tool_result(
            &record.id,
            &record.wire_name,
            value,
        ));
        Some(record)
    }

    fn is_recorded(&self, id: &str) -> bool {
        self.records.iter().any(|r| r.id == id)
    }
}

/// The result of a server call whose invocation panicked (F6): the envelope every other
/// failure answers, `EXECUTION_FAILED` with its default message.
fn panicked_result() -> Value {
    Envelope::Error(CapabilityError::of(CapabilityErrorCode::ExecutionFailed)).to_value()
}

/// Cuts a failure message to the relayed length (F4); the vendor layer already sanitised it.
fn truncate_message(message: &str) -> String {
    let trimmed = message.trim();
    if trimmed.is_empty() {
        return HostErrorCode::ModelError.default_message().to_owned();
    }
    trimmed.chars().take(MAX_ERROR_MESSAGE_CHARS).collect()
}

/// How a model step ended.
enum StepEnd {
    Finished,
    Failed,
    Cancelled,
}

impl StepRun {
    fn correlation(&self) -> Map<String, Value> {
        step_correlation(
            &self.request.conversation_id,
            &self.request.turn_id,
            &self.composition.step_id,
        )
    }

    fn executor_of(&self, wire_name: &str) -> Option<Executor> {
        if self
            .composition
            .frontend
            .iter()
            .any(|d| d.wire_name == wire_name)
        {
            Some(Executor::Browser)
        } else if self
            .composition
            .domain
            .tools
            .iter()
            .any(|t| t.info.wire_name == wire_name)
        {
            Some(Executor::Server)
        } else {
            None
        }
    }

    /// An audit entry as an inspector frame, when it is attributable to this step (G2/G3).
    fn audit_frame(&self, entry: &AuditEntry) -> Option<Frame> {
        // The reader already admits only this actor's entries; narrow further to this
        // step (or entries that name no step, such as the app's own /rpc calls).
        if entry
            .correlation
            .step_id
            .as_deref()
            .is_some_and(|s| s != self.composition.step_id)
        {
            return None;
        }
        if !forwardable(entry) {
            return None;
        }
        let lane = if entry.source == AuditSource::Domain {
            Lane::Domain
        } else {
            Lane::Runtime
        };
        let summary = match &entry.capability_id {
            Some(id) => format!("{} · {id}", entry.kind),
            None => entry.kind.clone(),
        };
        let mut correlation = self.correlation();
        if let Some(inv) = &entry.correlation.invocation_id {
            correlation.insert("invocationId".into(), Value::from(inv.as_str()));
        }
        if let Some(id) = &entry.capability_id {
            correlation.insert("capabilityId".into(), Value::from(id.as_str()));
        }
        Some(Frame::Inspector(InspectorFrame {
            lane,
            event_type: entry.kind.clone(),
            summary,
            correlation: Some(correlation),
            data: entry.data.clone(),
        }))
    }

    /// Forwards every audit entry already available.
    async fn forward_audit(&mut self, sink: &FrameSink) {
        for entry in self.audit.drain() {
            if let Some(frame) = self.audit_frame(&entry) {
                sink.send(&frame).await;
            }
        }
    }

    async fn emit(&mut self, sink: &FrameSink, frame: Frame) {
        self.forward_audit(sink).await;
        sink.send(&frame).await;
    }

    async fn emit_result(
        &mut self,
        sink: &FrameSink,
        record: &CallRecord,
        ok: bool,
        result: Value,
    ) {
        let frame = Frame::ToolResult(ToolResultFrame {
            tool_call_id: record.id.clone(),
            wire_name: record.wire_name.clone(),
            canonical_id: record.canonical_id.clone(),
            ok,
            result,
        });
        self.emit(sink, frame).await;
    }

    /// Runs the step-request to its end; every path sends `step-finish`. Traced as
    /// `agent.step`, with an `agent.model_call` per model step and the capability calls
    /// (`agent.capability_call`, see the runtime) inside it.
    pub async fn run(self, sink: FrameSink) {
        let span = tracing::info_span!(
            "agent.step",
            dpas.conversation_id = %self.request.conversation_id,
            dpas.turn_id = %self.request.turn_id,
            dpas.step_id = %self.composition.step_id,
            gen_ai.request.model = %self.model_name,
        );
        self.run_traced(sink).instrument(span).await;
    }

    /// The phases around the model's stream (budgets, server calls, tool calls, the end) are
    /// boxed: a spawned run's task is as large as its largest state, and it lives for the
    /// whole stream, so what only runs between streams is allocated only while it runs.
    async fn run_traced(mut self, sink: FrameSink) {
        let metrics = StepMetrics::start();
        sink.send_step_start(&self.request, &self.composition).await;
        for frame in std::mem::take(&mut self.composition.host_frames) {
            sink.send(&frame).await;
        }

        let tools = Arc::clone(&self.composition.tools);
        let mut history = History::default();
        let mut usage = UsageAccumulator::new();
        let mut finish_reason = "unknown".to_owned();
        let mut meter = self.meter.take();
        for model_step in 0..MAX_MODEL_STEPS_PER_REQUEST {
            if self.is_cut() {
                break;
            }
            if self.is_cancelled() {
                finish_reason = "cancelled".into();
                break;
            }
            if let Some(Err(frames)) = match meter.as_mut() {
                Some(m) => Some(Box::pin(m.admit(model_step, self.correlation())).await),
                None => None,
            } {
                for frame in frames {
                    self.emit(&sink, frame).await;
                }
                finish_reason = "error".into();
                break;
            }
            let (first_new_call, before) = (history.records.len(), usage.finish());
            let span = tracing::info_span!(
                "agent.model_call",
                dpas.model_step = model_step,
                gen_ai.request.model = %self.model_name,
            );
            let ended = self
                .model_step(&sink, &tools, &mut history, &mut usage, &mut finish_reason)
                .instrument(span)
                .await;
            if let Some(m) = meter.as_mut() {
                let used = crate::budget::step_usage(before, usage.finish());
                let calls = history.records[first_new_call..].iter();
                let tools = calls
                    .filter(|r| r.executor.is_some())
                    .map(|r| r.canonical_id.as_str());
                let settled = Box::pin(m.settle(used, tools, self.correlation())).await;
                if let Some(frame) = settled {
                    self.emit(&sink, frame).await;
                }
            }
            match ended {
                StepEnd::Failed | StepEnd::Cancelled => break,
                StepEnd::Finished => {}
            }
            if self.is_cancelled() {
                finish_reason = "cancelled".into();
                break;
            }
            Box::pin(self.execute_server_calls(&sink, &mut history, first_new_call)).await;
            let new_calls = &history.records[first_new_call..];
            if new_calls.is_empty()
                || new_calls
                    .iter()
                    .any(|r| r.executor == Some(Executor::Browser))
            {
                break;
            }
            if model_step + 1 == MAX_MODEL_STEPS_PER_REQUEST {
                let err = HostError::run_limit(format!(
                    "Stopped after {MAX_MODEL_STEPS_PER_REQUEST} model steps in one request (the per-request model step limit)."
                ));
                self.emit(&sink, Frame::error(&err)).await;
            }
        }
        history.flush();
        Box::pin(self.end(&sink, history, usage, finish_reason, metrics)).await;
    }

    /// The run's end once the model is done: open calls settled, usage, the thread written,
    /// `step-finish`.
    async fn end(
        &mut self,
        sink: &FrameSink,
        mut history: History,
        usage: UsageAccumulator,
        finish_reason: String,
        metrics: StepMetrics,
    ) {
        if finish_reason == "cancelled" {
            self.settle_cancelled(sink, &mut history).await;
        }
        self.settle_orphans(sink, &mut history).await;

        let usage = usage.finish();
        if let Some(u) = usage {
            let frame = Frame::Inspector(InspectorFrame {
                lane: Lane::Runtime,
                event_type: "model.usage".into(),
                summary: u.summary(),
                correlation: Some(self.correlation()),
                data: Some(serde_json::to_value(u).unwrap_or(Value::Null)),
            });
            self.emit(sink, frame).await;
        }
        if let Some(frame) = self.persist(&history, usage.as_ref()).await {
            self.emit(sink, frame).await;
        }
        let pending = history
            .records
            .iter()
            .filter(|r| r.executor == Some(Executor::Browser) && !r.answered)
            .map(|r| PendingToolCall {
                tool_call_id: r.id.clone(),
                wire_name: r.wire_name.clone(),
                canonical_id: r.canonical_id.clone(),
                input: r.input.clone(),
            })
            .collect();
        metrics.finish(&finish_reason, usage.as_ref());
        let finish = Frame::StepFinish(StepFinish {
            step_id: self.composition.step_id.clone(),
            finish_reason,
            response_messages: history.messages,
            pending_tool_calls: pending,
            usage,
        });
        self.emit(sink, finish).await;
        let dropped = self.audit.dropped();
        if dropped > 0 {
            sink.send(&host_inspector::dropped(dropped, self.correlation()))
                .await;
        }
    }

    /// Streams one model step, mapping its events to frames and history (F4).
    async fn model_step(
        &mut self,
        sink: &FrameSink,
        tools: &Arc<[ToolSpec]>,
        history: &mut History,
        usage: &mut UsageAccumulator,
        finish_reason: &mut String,
    ) -> StepEnd {
        let mut messages =
            Vec::with_capacity(self.request.messages.len() + history.messages.len() + 1);
        messages.extend(self.request.messages.iter().cloned());
        messages.extend(history.messages.iter().cloned());
        if let Some(state) = &self.composition.state_message {
            messages.push(WireModelMessage::system_text(state.clone()));
        }
        let request = ModelRequest {
            model: self.model_name.clone(),
            system: self.system_prompt.clone(),
            messages,
            tools: Arc::clone(tools),
        };
        let timeout = self.model_timeout;
        let opened = unless_halted(
            &mut self.drain,
            &mut self.cancel,
            tokio::time::timeout(timeout, self.provider.stream(request)),
        )
        .await;
        let mut stream = match opened {
            Err(halt) => return self.halted(sink, finish_reason, halt).await,
            Ok(Ok(Ok(stream))) => stream,
            Ok(Ok(Err(e))) => return self.fail_model(sink, finish_reason, &e).await,
            Ok(Err(_)) => return self.fail_timeout(sink, finish_reason).await,
        };
        loop {
            let next = unless_halted(
                &mut self.drain,
                &mut self.cancel,
                tokio::time::timeout(timeout, stream.next()),
            );
            let next = match next.await {
                Ok(next) => next,
                // Returning drops the vendor's stream, and with it its connection.
                Err(halt) => return self.halted(sink, finish_reason, halt).await,
            };
            let event = match next {
                Err(_) => return self.fail_timeout(sink, finish_reason).await,
                Ok(None) => {
                    // A stream that ends without its finish still ends the model step.
                    history.flush();
                    return StepEnd::Finished;
                }
                Ok(Some(Err(e))) => return self.fail_model(sink, finish_reason, &e).await,
                Ok(Some(Ok(event))) => event,
            };
            match event {
                ModelEvent::TextDelta(text) => {
                    if !text.is_empty() {
                        history.text.push_str(&text);
                        self.emit(sink, Frame::TextDelta { text }).await;
                    }
                }
                ModelEvent::ReasoningDelta(text) => {
                    if !text.is_empty() {
                        self.emit(sink, Frame::ReasoningDelta { text }).await;
                    }
                }
                ModelEvent::ReasoningBlock {
                    text,
                    provider_options,
                } => {
                    let mut extra = Map::new();
                    extra.insert("providerOptions".into(), Value::Object(provider_options));
                    history
                        .reasoning
                        .push(ContentPart::Reasoning { text, extra });
                }
                ModelEvent::ToolCall(call) => {
                    Box::pin(self.on_tool_call(sink, history, call)).await
                }
                ModelEvent::Finish {
                    reason,
                    usage: report,
                } => {
                    *finish_reason = reason.0;
                    usage.add_step(&report);
                    history.flush();
                    return StepEnd::Finished;
                }
            }
        }
    }

    async fn fail(
        &mut self,
        sink: &FrameSink,
        finish_reason: &mut String,
        err: HostError,
    ) -> StepEnd {
        *finish_reason = "error".into();
        self.emit(sink, Frame::error(&err)).await;
        StepEnd::Failed
    }

    /// A provider failure: `MODEL_ERROR` with the sanitised message (F4).
    async fn fail_model(
        &mut self,
        sink: &FrameSink,
        finish_reason: &mut String,
        error: &dpas_model::ModelError,
    ) -> StepEnd {
        let err = HostError::new(HostErrorCode::ModelError, truncate_message(&error.message));
        self.fail(sink, finish_reason, err).await
    }

    async fn fail_timeout(&mut self, sink: &FrameSink, finish_reason: &mut String) -> StepEnd {
        *finish_reason = "timeout".into();
        let err = HostError::model_timeout(self.model_timeout.as_secs());
        self.emit(sink, Frame::error(&err)).await;
        StepEnd::Failed
    }

    /// The drain deadline cut the run, or its step was cancelled (no error: the user asked).
    async fn halted(
        &mut self,
        sink: &FrameSink,
        finish_reason: &mut String,
        halt: Halt,
    ) -> StepEnd {
        match halt {
            Halt::Cut => self.fail_cut(sink, finish_reason).await,
            Halt::Cancelled => {
                *finish_reason = "cancelled".into();
                StepEnd::Cancelled
            }
        }
    }

    /// Whether the step has been cancelled.
    fn is_cancelled(&self) -> bool {
        self.cancel.as_ref().is_some_and(|c| *c.borrow())
    }

    /// Whether the drain deadline has cut this run.
    fn is_cut(&self) -> bool {
        self.drain.as_ref().is_some_and(RunGuard::is_cut)
    }

    /// The server is shutting down and the drain deadline passed: the model is no longer
    /// waited for; the run settles what is open and persists as after any other failure.
    async fn fail_cut(&mut self, sink: &FrameSink, finish_reason: &mut String) -> StepEnd {
        let err = HostError::new(
            HostErrorCode::RunLimitExceeded,
            "The server is shutting down: this step was stopped at its drain deadline and saved. Send your message again.",
        );
        self.fail(sink, finish_reason, err).await
    }

    async fn on_tool_call(&mut self, sink: &FrameSink, history: &mut History, call: ToolCall) {
        if call.id.is_empty() || history.is_recorded(&call.id) {
            tracing::warn!(tool_call_id = %call.id, "model repeated or omitted a tool-call id; ignored");
            return;
        }
        let input = if call.input.is_null() {
            json!({})
        } else {
            call.input
        };
        let executor = self.executor_of(&call.name);
        let canonical_id =
            call_canonical_id(&call.name, &input, |w| self.composition.canonical_of(w));
        history.record_call(CallRecord {
            id: call.id.clone(),
            wire_name: call.name.clone(),
            canonical_id: canonical_id.clone(),
            executor,
            input: input.clone(),
            answered: false,
        });
        let Some(executor) = executor else {
            // In neither plane: no tool-call frame; answered in the history at once.
            history.answer(&call.id, tool_results::no_such_tool(&call.name));
            telemetry::tool_call(Plane::Unknown, CallOutcome::NoSuchTool);
            let frame = host_inspector::tool_unknown(&call.name, self.correlation());
            self.emit(sink, frame).await;
            return;
        };
        let frame = Frame::ToolCall(ToolCallFrame {
            tool_call_id: call.id.clone(),
            wire_name: call.name,
            canonical_id,
            executor,
            input,
        });
        self.emit(sink, frame).await;
        let plane = match executor {
            Executor::Server => Plane::Server,
            Executor::Browser => Plane::Browser,
        };
        if call.invalid_input.is_some() {
            telemetry::tool_call(plane, CallOutcome::InvalidInput);
        } else if executor == Executor::Browser {
            telemetry::tool_call(plane, CallOutcome::Delegated);
        }
        if let Some(problem) = call.invalid_input {
            // The arguments did not parse: a tool error for a known tool (F4).
            let result = tool_results::tool_failed(&truncate_message(&problem));
            if let Some(record) = history.answer(&call.id, result.clone()) {
                self.emit_result(sink, &record, false, result).await;
            }
        }
    }

    /// Whether the prompt that proposed the calls from `from` on holds a result of an
    /// untrusted tool from this turn (U2): in the posted messages from the turn's last user
    /// message on, or among this request's answers to earlier model steps.
    fn untrusted_in_prompt(&self, history: &History, from: usize) -> bool {
        let posted = &self.request.messages;
        let turn = posted
            .iter()
            .rposition(|m| m.role == Role::User)
            .unwrap_or(0);
        let proposed = &history.records[from..];
        posted[turn..]
            .iter()
            .chain(&history.messages)
            .filter(|m| m.role == Role::Tool)
            .flat_map(|m| m.parts())
            .any(|p| match p {
                ContentPart::ToolResult {
                    tool_call_id,
                    tool_name,
                    ..
                } => {
                    self.composition.is_untrusted(tool_name)
                        && !proposed.iter().any(|r| &r.id == tool_call_id)
                }
                _ => false,
            })
    }

    /// Executes this model step's unanswered server calls, concurrently, answering them in
    /// call order as each completes; audit entries are forwarded while they run.
    async fn execute_server_calls(&mut self, sink: &FrameSink, history: &mut History, from: usize) {
        let calls: Vec<CallRecord> = history.records[from..]
            .iter()
            .filter(|r| r.executor == Some(Executor::Server) && !r.answered)
            .cloned()
            .collect();
        // A cut run starts nothing new: its open calls are settled as not executed.
        if calls.is_empty() || self.is_cut() {
            return;
        }
        let context = CallContext {
            untrusted_content: self.untrusted_in_prompt(history, from),
        };
        let mut running = FuturesOrdered::new();
        for record in calls {
            let capability_id = self
                .composition
                .domain
                .tools
                .iter()
                .find(|t| t.info.wire_name == record.wire_name)
                .map(|t| t.capability_id.clone())
                .unwrap_or_default();
            let runtime = Arc::clone(&self.runtime);
            let actor = self.actor.clone();
            let correlation = Correlation {
                conversation_id: Some(self.request.conversation_id.clone()),
                turn_id: Some(self.request.turn_id.clone()),
                step_id: Some(self.composition.step_id.clone()),
                invocation_id: Some(record.id.clone()),
            };
            let input = record.input.clone();
            running.push_back(async move {
                let invocation = runtime.invoke_envelope_with(
                    &actor,
                    CallSurface::Model,
                    &capability_id,
                    input,
                    correlation,
                    context,
                );
                // F6: a handler that panics is an execution failure, never a dead run.
                let result = std::panic::AssertUnwindSafe(invocation)
                    .catch_unwind()
                    .await
                    .map_or_else(|_| panicked_result(), |envelope| envelope.to_value());
                (record, result)
            });
        }
        loop {
            tokio::select! {
                biased;
                done = running.next() => {
                    let Some((record, result)) = done else { break };
                    let ok = !tool_results::is_error_shaped(&result);
                    if history.answer(&record.id, result.clone()).is_some() {
                        let outcome = if ok { CallOutcome::Ok } else { CallOutcome::Error };
                        telemetry::tool_call(Plane::Server, outcome);
                        self.emit_result(sink, &record, ok, result).await;
                    }
                }
                Some(entry) = self.audit.next() => {
                    if let Some(frame) = self.audit_frame(&entry) {
                        sink.send(&frame).await;
                    }
                }
            }
        }
    }

    /// A cancelled step answers every call left open, server or browser, [`cancelled_result`]
    /// (none of them ran: server calls already running were waited for), so the stored
    /// thread holds no call without a result; a `step.cancelled` inspector frame says which.
    async fn settle_cancelled(&mut self, sink: &FrameSink, history: &mut History) {
        let open: Vec<String> = history
            .records
            .iter()
            .filter(|r| r.executor.is_some() && !r.answered)
            .map(|r| r.id.clone())
            .collect();
        for id in &open {
            let result = cancelled_result();
            if let Some(record) = history.answer(id, result.clone()) {
                let plane = match record.executor {
                    Some(Executor::Browser) => Plane::Browser,
                    _ => Plane::Server,
                };
                telemetry::tool_call(plane, CallOutcome::NotExecuted);
                self.emit_result(sink, &record, false, result).await;
            }
        }
        let summary = match open.len() {
            0 => "The user stopped this step.".to_owned(),
            n => format!("The user stopped this step; {n} tool call(s) did not run."),
        };
        let frame = Frame::Inspector(InspectorFrame {
            lane: Lane::Runtime,
            event_type: "step.cancelled".into(),
            summary,
            correlation: Some(self.correlation()),
            data: Some(json!({ "notRun": open })),
        });
        self.emit(sink, frame).await;
    }

    /// Answers every server call left open (F7): nothing was captured for it, so it did not
    /// run, and the model is told so plainly.
    async fn settle_orphans(&mut self, sink: &FrameSink, history: &mut History) {
        let open: Vec<String> = history
            .records
            .iter()
            .filter(|r| r.executor == Some(Executor::Server) && !r.answered)
            .map(|r| r.id.clone())
            .collect();
        for id in open {
            let result = tool_results::tool_not_executed();
            if let Some(record) = history.answer(&id, result.clone()) {
                telemetry::tool_call(Plane::Server, CallOutcome::NotExecuted);
                self.emit_result(sink, &record, false, result).await;
            }
        }
    }

    /// Writes the step to the actor's thread (L3, decision 3): browser results posted since
    /// the last step, the new user message at step 0, then this step's messages. A thread
    /// at its cap is left as it was and the step says so with a host inspector frame.
    async fn persist(&self, history: &History, usage: Option<&Usage>) -> Option<Frame> {
        let owner = self.actor.id.as_str();
        let conversation = self.request.conversation_id.as_str();
        let mut append = ThreadAppend {
            answers: self
                .request
                .messages
                .iter()
                .filter(|m| m.role == Role::Tool)
                .collect(),
            messages: Vec::with_capacity(history.messages.len() + 1),
            usage: usage.copied(),
        };
        if self.request.step_index == 0 {
            if let Some(user) = self
                .request
                .messages
                .iter()
                .rev()
                .find(|m| m.role == Role::User)
            {
                append.messages.push(user);
            }
        }
        append.messages.extend(history.messages.iter());
        match self.threads.append(owner, conversation, append).await {
            Ok(appended) => {
                self.audit_browser_results(&appended.answered);
                None
            }
            Err(ThreadError::Full(caps)) => Some(host_inspector::thread_full(
                conversation,
                caps.messages,
                caps.bytes,
                self.correlation(),
            )),
            Err(e) => {
                tracing::error!(error = %e, "persisting the thread failed");
                None
            }
        }
    }
}

impl StepRun {
    /// Records [`BROWSER_RESULT`] for each posted result the thread has just stored (its
    /// first and only time: a result posted again with a later step answers nothing new):
    /// the call's id, its tool, whether it is an error and the digest of its output.
    fn audit_browser_results(&self, answered: &[String]) {
        let posted = || {
            self.request
                .messages
                .iter()
                .filter(|m| m.role == Role::Tool)
                .flat_map(|m| m.parts())
        };
        for id in answered {
            let Some((tool_name, output)) = posted().find_map(|p| match p {
                ContentPart::ToolResult {
                    tool_call_id,
                    tool_name,
                    output,
                    ..
                } if tool_call_id == id => Some((tool_name, output)),
                _ => None,
            }) else {
                continue;
            };
            let mut data = Map::with_capacity(4);
            data.insert("toolName".into(), tool_name.as_str().into());
            if let Some(canonical) = self.composition.canonical_of(tool_name) {
                data.insert("canonicalId".into(), canonical.into());
            }
            data.insert("ok".into(), result_is_ok(output).into());
            data.insert("outputDigest".into(), input_hash(output).into());
            self.runtime.audit().record(AuditDraft {
                actor_id: Some(self.actor.id.clone()),
                correlation: Correlation {
                    conversation_id: Some(self.request.conversation_id.clone()),
                    turn_id: Some(self.request.turn_id.clone()),
                    step_id: Some(self.composition.step_id.clone()),
                    invocation_id: Some(id.clone()),
                },
                data: Some(Value::Object(data)),
                ..AuditDraft::new(AuditSource::Host, BROWSER_RESULT)
            });
        }
    }
}

/// Whether a step forwards `entry` as an inspector frame (G2/G3): the runtime's and the
/// app's entries, but not the host's own, the discoveries, or the outcomes kept for the
/// audit trail only ([`OPERATION_OUTCOME`]).
pub fn forwardable(entry: &AuditEntry) -> bool {
    entry.source != AuditSource::Host
        && entry.kind != "capabilities.discovered"
        && entry.kind != OPERATION_OUTCOME
}

/// Whether a posted tool result's `output` is a success: not an `error-*` output, and not an
/// error-shaped value (F4).
fn result_is_ok(output: &Value) -> bool {
    let kind = output.get("type").and_then(Value::as_str).unwrap_or("");
    !kind.starts_with("error")
        && !output
            .get("value")
            .is_some_and(tool_results::is_error_shaped)
}

#[cfg(test)]
mod tests {
    use super::*;
    use dpas_protocol::DomainToolInfo;

    fn record(id: &str, executor: Option<Executor>) -> CallRecord {
        CallRecord {
            id: id.into(),
            wire_name: format!("w_{id}"),
            canonical_id: format!("c:{id}"),
            executor,
            input: json!({}),
            answered: false,
        }
    }

    #[test]
    fn f5_history_reconstruction() {
        // (a) text + server call + browser call, then the server answer.
        let mut h = History::default();
        h.text.push_str("Checking.");
        h.record_call(record("a", Some(Executor::Server)));
        h.record_call(record("b", Some(Executor::Browser)));
        h.flush();
        h.answer("a", json!({"status": "ok"}));
        let v = serde_json::to_value(&h.messages).unwrap();
        assert_eq!(v.as_array().unwrap().len(), 2);
        assert_eq!(
            v[0]["content"][0],
            json!({"type": "text", "text": "Checking."})
        );
        assert_eq!(v[0]["content"][2]["toolCallId"], "b");
        assert_eq!(v[1]["role"], "tool");

        // (b) an unknown tool answered at once splits the assistant message.
        let mut h = History::default();
        h.text.push('x');
        h.record_call(record("u", None));
        h.answer("u", json!({"error": {}}));
        h.record_call(record("b", Some(Executor::Browser)));
        h.flush();
        let roles: Vec<_> = h.messages.iter().map(|m| m.role).collect();
        assert_eq!(roles, vec![Role::Assistant, Role::Tool, Role::Assistant]);

        // A second answer to the same call is ignored.
        assert!(h.answer("u", json!(1)).is_none());
        assert!(h.answer("nope", json!(1)).is_none());
    }

    #[test]
    fn flush_without_text_or_calls_writes_nothing() {
        let mut h = History::default();
        h.reasoning.push(ContentPart::Reasoning {
            text: "t".into(),
            extra: Map::new(),
        });
        h.flush();
        assert!(h.messages.is_empty());
        assert!(h.reasoning.is_empty());
    }

    #[test]
    fn a_panicked_call_answers_the_envelope_every_failure_answers() {
        let result = panicked_result();
        assert!(tool_results::is_error_shaped(&result));
        assert_eq!(
            result,
            json!({"status": "error", "error": {"code": "EXECUTION_FAILED", "message": "The operation failed.", "retryable": false}})
        );
    }

    #[test]
    fn a_spliced_step_start_is_the_frame_encoders_line() {
        let tools = vec![
            DomainToolInfo {
                wire_name: "domain_collections-aging".into(),
                canonical_id: "domain:collections-aging".into(),
                description: "Open invoices by \"lateness\" \u{2013} five bands.\n".into(),
                requires_approval: false,
                side_effect: "read".into(),
            },
            DomainToolInfo {
                wire_name: "domain_issue-invoice".into(),
                canonical_id: "domain:issue-invoice".into(),
                description: String::new(),
                requires_approval: true,
                side_effect: "write".into(),
            },
        ];
        let cases = [
            (
                tools.clone(),
                vec!["invoices".to_owned(), "a\"b".to_owned()],
                CatalogMode::Direct,
            ),
            (Vec::new(), Vec::new(), CatalogMode::Meta),
            (tools, vec![String::new()], CatalogMode::Meta),
        ];
        for (domain_tools, scope, mode) in cases {
            let frame = Frame::StepStart(StepStart {
                step_id: "stp_abc123def456".into(),
                turn_id: "trn_\u{1f600}\\".into(),
                conversation_id: "cnv_1".into(),
                domain_tools: domain_tools.clone(),
                scope: scope.clone(),
                catalog_mode: Some(mode),
            });
            let mut line = Vec::new();
            StartLine {
                step_id: "stp_abc123def456",
                turn_id: "trn_\u{1f600}\\",
                conversation_id: "cnv_1",
                domain_tools_json: &serde_json::to_vec(&domain_tools).unwrap(),
                scope: &scope,
                catalog_mode: mode,
            }
            .encode(&mut line);
            assert_eq!(
                String::from_utf8(line).unwrap(),
                String::from_utf8(dpas_protocol::encode_frame(&frame)).unwrap()
            );
        }
    }

    #[test]
    fn truncate_message_cuts_and_defaults() {
        assert_eq!(truncate_message(&"x".repeat(400)).chars().count(), 300);
        assert_eq!(truncate_message("  "), "The model call failed.");
    }
}
