//! A model stand-in whose steps answer "Hello " at once and "world" only when the test says
//! so: a step caught mid-run without any timing.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use dpas_model::{EventStream, FinishReason, ModelError, ModelEvent, ModelProvider, ModelRequest};
use dpas_protocol::UsageReport;
use futures_util::future::BoxFuture;
use futures_util::StreamExt as _;
use tokio::sync::Semaphore;

/// Answers "Hello " at once and "world" once the test adds a permit to `gate`; counts its
/// model calls.
pub struct Gated {
    calls: AtomicUsize,
    gate: Arc<Semaphore>,
}

impl Gated {
    /// `open`: "world" follows at once; closed, it waits for [`Gated::release`].
    pub fn new(open: bool) -> Arc<Self> {
        Arc::new(Self {
            calls: AtomicUsize::new(0),
            gate: Arc::new(Semaphore::new(if open {
                Semaphore::MAX_PERMITS
            } else {
                0
            })),
        })
    }

    /// Model calls so far.
    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

impl Gated {
    /// Lets one waiting step finish.
    pub fn release(&self) {
        self.gate.add_permits(1);
    }
}

impl ModelProvider for Gated {
    fn id(&self) -> &str {
        "test/gated"
    }

    fn stream(&self, _request: ModelRequest) -> BoxFuture<'_, Result<EventStream, ModelError>> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let gate = Arc::clone(&self.gate);
        Box::pin(async move {
            let first = futures_util::stream::iter([Ok(ModelEvent::TextDelta("Hello ".into()))]);
            let rest = futures_util::stream::once(async move {
                // A closed gate is never closed here: `acquire` waits for the test's permit.
                let _permit = gate.acquire().await;
                futures_util::stream::iter([
                    Ok(ModelEvent::TextDelta("world".into())),
                    Ok(ModelEvent::Finish {
                        reason: FinishReason::stop(),
                        usage: UsageReport::default(),
                    }),
                ])
            })
            .flatten();
            let events: EventStream = Box::pin(first.chain(rest));
            Ok(events)
        })
    }
}
