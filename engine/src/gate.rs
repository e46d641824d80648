//! How many chat steps one actor may run at once (`--max-concurrent-steps`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::refusal::Refusal;

/// Seconds a refused chat step is told to wait: steps are short, the wait only spaces retries.
const STEP_RETRY_AFTER_SECS: u64 = 2;

/// Counts the chat steps each actor has running; a permit is held for a step's whole run.
#[derive(Debug)]
pub struct StepGate {
    max: usize,
    running: Mutex<HashMap<String, usize>>,
}

/// One running step; dropping it frees the slot.
#[derive(Debug)]
pub struct StepPermit {
    gate: Arc<StepGate>,
    actor: String,
}

impl StepGate {
    pub fn new(max: usize) -> Arc<Self> {
        Arc::new(Self {
            max: max.max(1),
            running: Mutex::new(HashMap::new()),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, usize>> {
        // Plain counters: a panic elsewhere cannot leave them half-written.
        self.running
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A slot for `actor`, or [`Refusal::Busy`] (429 `RATE_LIMITED`) when all of theirs
    /// are taken.
    pub fn admit(self: &Arc<Self>, actor: &str) -> Result<StepPermit, Refusal> {
        let mut running = self.lock();
        let count = running.entry(actor.to_owned()).or_insert(0);
        if *count >= self.max {
            return Err(Refusal::Busy {
                retry_after_secs: STEP_RETRY_AFTER_SECS,
            });
        }
        *count += 1;
        Ok(StepPermit {
            gate: Arc::clone(self),
            actor: actor.to_owned(),
        })
    }

    /// Steps `actor` has running now.
    pub fn running(&self, actor: &str) -> usize {
        self.lock().get(actor).copied().unwrap_or(0)
    }
}

impl Drop for StepPermit {
    fn drop(&mut self) {
        let mut running = self.gate.lock();
        if let Some(count) = running.get_mut(&self.actor) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                running.remove(&self.actor);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permits_count_per_actor_and_free_on_drop() {
        let gate = StepGate::new(2);
        let a1 = gate.admit("a").unwrap();
        let _a2 = gate.admit("a").unwrap();
        assert!(matches!(
            gate.admit("a"),
            Err(Refusal::Busy {
                retry_after_secs: 2
            })
        ));
        let _b = gate.admit("b").unwrap();
        drop(a1);
        assert_eq!(gate.running("a"), 1);
        let _a3 = gate.admit("a").unwrap();
        assert_eq!(gate.running("a"), 2);
    }
}
