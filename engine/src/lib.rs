#![warn(unreachable_pub)]

//! The step engine: one step request's run, from the decoded request to its last frame.
//! Every door into the engine (`/agent/chat`'s NDJSON, the AI SDK's and AG-UI's streams)
//! decodes its own body, then runs the same [`Engine::prepare`] → [`spawn_run`].
//!
//! # API
//! - [`ChatConfig`]: what a server's steps run with (its [`ModelSet`], route floors, prompt
//!   preamble and model timeout); [`ModelSpec`] and [`models_for`] build the models.
//! - [`Engine`]: the runtime, the threads, the domain-catalog cache, the drain and the step
//!   gate a run needs; [`Engine::prepare`] checks a step in the contract's order and gives
//!   its [`run::StepRun`], [`spawn_run`] runs it in its own task.
//! - [`compose`]: the step's catalog (domain half per actor and scope, cached; the browser's
//!   half from the request), [`run`]: the model loop and its frames, [`prompt`]: the system
//!   prompt.
//! - [`Drain`] (steps in flight, the shutdown cut), [`StepGate`] (steps per actor) and the
//!   step [`metrics`]; [`budget`]: usage accounting and budgets as run limits ([`Meter`]).
//!
//! # Invariants
//! - No HTTP and no SQL: this crate depends on neither actix-web nor sqlx (`scripts/test.sh`
//!   checks the dependency tree). Refusals are [`Refusal`]s; the HTTP layer gives them their
//!   status.
//! - A run outlives its response: a client that leaves never stops settlement or
//!   persistence, and a run's step permit is held until the run ends. Only an explicit cancel
//!   ([`StepLog::cancel`]) stops a run early, and it still settles and persists.

pub mod budget;
pub mod compose;
mod drain;
mod gate;
pub mod metrics;
mod models;
pub mod prompt;
mod refusal;
pub mod run;
pub mod steps;

use std::sync::Arc;
use std::time::Duration;

use dpas_governance::threads::ThreadStore;
use dpas_governance::{Actor, Runtime};
use dpas_protocol::frame::{host_inspector, step_correlation};
use dpas_protocol::{ChatStepRequest, HostError, HostErrorCode, RouteFloors};

pub use budget::{BudgetLimits, Meter, PriceTable};
pub use compose::DomainCatalogs;
pub use drain::{Drain, RunGuard};
pub use gate::{StepGate, StepPermit};
pub use models::{models_for, ModelSet, ModelSetupError, ModelSpec, ModelSpecError};
pub use refusal::Refusal;
pub use run::{FrameSink, StepRun};
pub use steps::StepLog;

/// Frames buffered between the run and a slow client; the run waits when it is full and
/// stops waiting (drops frames) once the client has gone.
pub const FRAME_BUFFER: usize = 64;

/// What a server's steps run with, beyond the engine's state.
#[derive(Debug, Clone)]
pub struct ChatConfig {
    pub models: ModelSet,
    pub floors: Arc<RouteFloors>,
    /// The application's own preamble of the system prompt.
    pub app_prompt: Arc<str>,
    pub model_timeout: Duration,
}

impl ChatConfig {
    /// The models of `specs` (the first the default), a route → scope table and the
    /// preamble the system prompt starts with (the host's tool rules follow it).
    pub fn new<'a>(
        specs: impl IntoIterator<Item = &'a ModelSpec>,
        floors: RouteFloors,
        app_prompt: &str,
        model_timeout: Duration,
    ) -> Result<Self, ModelSetupError> {
        Ok(Self {
            models: ModelSet::join(
                specs
                    .into_iter()
                    .map(models_for)
                    .collect::<Result<Vec<_>, _>>()?,
            ),
            floors: Arc::new(floors),
            app_prompt: Arc::from(app_prompt),
            model_timeout,
        })
    }
}

/// What every run needs from the server: cheap to clone (every part is shared).
#[derive(Clone)]
pub struct Engine {
    pub runtime: Arc<Runtime>,
    pub threads: Arc<dyn ThreadStore>,
    /// The steps' domain catalogs, composed once per actor and scope for `runtime`.
    pub catalogs: Arc<DomainCatalogs>,
    /// Steps in flight and the shutdown state.
    pub drain: Drain,
    /// Chat steps running per actor.
    pub steps: Arc<StepGate>,
    /// The step records that answer a step posted again (none: every post runs).
    pub step_log: Option<Arc<StepLog>>,
    /// Usage accounting and budgets (none: usage is not stored and nothing is limited).
    pub meter: Option<Arc<Meter>>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("runtime", &self.runtime)
            .field("drain", &self.drain)
            .finish_non_exhaustive()
    }
}

impl Engine {
    /// An engine on `runtime` and `threads`, with at most `max_steps` steps per actor.
    pub fn new(runtime: Arc<Runtime>, threads: Arc<dyn ThreadStore>, max_steps: usize) -> Self {
        Self {
            runtime,
            threads,
            catalogs: Arc::default(),
            drain: Drain::default(),
            steps: StepGate::new(max_steps),
            step_log: None,
            meter: None,
        }
    }

    /// The same engine, storing usage and keeping to budgets with `meter`.
    pub fn with_meter(mut self, meter: Meter) -> Self {
        self.meter = Some(Arc::new(meter));
        self
    }

    /// The same engine, answering a step posted again from `log`.
    pub fn with_step_log(mut self, log: StepLog) -> Self {
        self.step_log = Some(Arc::new(log));
        self
    }

    /// Everything a step request's run needs once the request is decoded, checked in the
    /// contract's order after decoding: shutting down (503), model (503), composition
    /// (409/413). `permit`, the actor's step slot the door took before reading the body, is
    /// held by the run until it ends.
    pub fn prepare(
        &self,
        chat: &ChatConfig,
        actor: Actor,
        mut request: ChatStepRequest,
        permit: Option<StepPermit>,
    ) -> Result<StepRun, Refusal> {
        if self.drain.is_draining() {
            return Err(Refusal::ShuttingDown);
        }
        let provider = chat
            .models
            .choose(request.model_id.as_deref())
            .ok_or_else(|| HostError::of(HostErrorCode::ModelNotConfigured))?;
        let mut composition = compose::compose(
            &self.runtime,
            &self.catalogs,
            &actor,
            &mut request,
            &chat.floors,
        )?;
        if let Some(requested) = request.model_id.as_deref() {
            if !chat.models.serves(requested) {
                let correlation = step_correlation(
                    &request.conversation_id,
                    &request.turn_id,
                    &composition.step_id,
                );
                let frame = host_inspector::model_fallback(requested, provider.id(), correlation);
                composition.host_frames.push(frame);
            }
        }
        let audit = self
            .runtime
            .subscribe(Some(&actor.id))
            .only(run::forwardable);
        let meter = self.meter.as_ref().map(|m| {
            m.for_run(
                &actor.id,
                &request.conversation_id,
                &request.turn_id,
                &composition.step_id,
                provider.id(),
            )
        });
        Ok(StepRun {
            runtime: Arc::clone(&self.runtime),
            threads: Arc::clone(&self.threads),
            model_name: provider
                .id()
                .split_once('/')
                .map_or("", |(_, m)| m)
                .to_owned(),
            provider,
            actor,
            system_prompt: prompt::system_prompt(&chat.app_prompt, composition.catalog_mode),
            composition,
            request,
            model_timeout: chat.model_timeout,
            audit,
            permit,
            drain: Some(self.drain.track()),
            recording: None,
            meter,
            cancel: None,
        })
    }
}

/// Runs a step in its own task on the current thread's task set (the HTTP worker's), holding
/// its step permit for the run's whole life, not the response's: a client that leaves early
/// does not free a slot while its step still works. `closing` (a clone of the sink's sender)
/// is dropped after the permit, so a client that saw the end of the stream can start its
/// next step at once.
///
/// A recorded run ([`StepRun::recording`]) sends every line to its followers as well, says in
/// its record that it is running, stores its whole response before the stream ends, and can
/// be cancelled ([`StepLog::cancel`]).
pub fn spawn_run<C: 'static>(mut run: StepRun, sink: FrameSink, closing: C) {
    let permit = run.permit.take();
    let recording = run.recording.take();
    let sink = match &recording {
        Some(recording) => {
            recording.spawn_heartbeat();
            run.cancel = Some(recording.cancel_signal());
            sink.recorded(recording.live())
        }
        None => sink,
    };
    tokio::task::spawn_local(async move {
        run.run(sink).await;
        if let Some(recording) = recording {
            Box::pin(recording.finish()).await;
        }
        drop(permit);
        drop(closing);
    });
}
