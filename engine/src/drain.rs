//! In-flight step runs and the shutdown state: a step's run is its own task and outlives
//! its response, so a stopping server waits on [`Drain`], not on its connections.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::sync::{watch, Notify};

/// In-flight step runs and the shutdown state. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Drain {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    draining: AtomicBool,
    active: AtomicUsize,
    idle: Notify,
    cut: watch::Sender<bool>,
}

impl Default for Drain {
    fn default() -> Self {
        Self {
            inner: Arc::new(Inner {
                draining: AtomicBool::new(false),
                active: AtomicUsize::new(0),
                idle: Notify::new(),
                cut: watch::channel(false).0,
            }),
        }
    }
}

impl Drain {
    /// Whether the server is shutting down (no new steps; `/api/ready` answers 503).
    pub fn is_draining(&self) -> bool {
        self.inner.draining.load(Ordering::Acquire)
    }

    /// Refuses new steps from now on.
    pub fn begin(&self) {
        self.inner.draining.store(true, Ordering::Release);
    }

    /// Steps running now.
    pub fn active(&self) -> usize {
        self.inner.active.load(Ordering::Acquire)
    }

    /// Counts a run until the returned guard is dropped.
    pub fn track(&self) -> RunGuard {
        self.inner.active.fetch_add(1, Ordering::AcqRel);
        RunGuard {
            inner: Arc::clone(&self.inner),
            cut: self.inner.cut.subscribe(),
        }
    }

    /// Resolves when no run is in flight.
    pub async fn idle(&self) {
        loop {
            let notified = self.inner.idle.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.active() == 0 {
                return;
            }
            notified.await;
        }
    }

    /// Tells every run in flight to stop waiting on its model and wrap up.
    pub fn cut(&self) {
        self.inner.cut.send_replace(true);
    }
}

/// One run's place in the count, and its cut signal.
#[derive(Debug)]
pub struct RunGuard {
    inner: Arc<Inner>,
    cut: watch::Receiver<bool>,
}

impl RunGuard {
    /// Resolves once the drain deadline has cut this run (never, otherwise).
    pub async fn cut(&mut self) {
        if self.cut.wait_for(|cut| *cut).await.is_err() {
            std::future::pending::<()>().await;
        }
    }

    /// Whether the run has been cut.
    pub fn is_cut(&self) -> bool {
        *self.cut.borrow()
    }
}

impl Drop for RunGuard {
    fn drop(&mut self) {
        if self.inner.active.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.inner.idle.notify_waiters();
        }
    }
}
