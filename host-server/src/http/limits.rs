//! Admission limits: how many chat steps one actor may run at once, and how often one client
//! address may call the anonymous routes (the rate limit is `governor`'s keyed GCRA).

use std::collections::HashMap;
use std::net::IpAddr;
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};

use super::error::ApiError;

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

    /// A slot for `actor`, or 429 `RATE_LIMITED` when all of theirs are taken.
    pub fn admit(self: &Arc<Self>, actor: &str) -> Result<StepPermit, ApiError> {
        let mut running = self.lock();
        let count = running.entry(actor.to_owned()).or_insert(0);
        if *count >= self.max {
            return Err(ApiError::RateLimited {
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

/// Requests per client address per minute on the anonymous routes.
pub struct AddressLimiter {
    limiter: DefaultKeyedRateLimiter<IpAddr>,
    clock: DefaultClock,
}

impl std::fmt::Debug for AddressLimiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AddressLimiter").finish_non_exhaustive()
    }
}

impl AddressLimiter {
    /// `per_minute` requests a minute, all of which may come at once.
    pub fn per_minute(per_minute: u32) -> Self {
        let n = NonZeroU32::new(per_minute).unwrap_or(NonZeroU32::MIN);
        Self {
            limiter: RateLimiter::keyed(Quota::per_minute(n)),
            clock: DefaultClock::default(),
        }
    }

    /// Admits one request from `addr`, or 429 `RATE_LIMITED` with the wait in whole seconds.
    pub fn admit(&self, addr: Option<IpAddr>) -> Result<(), ApiError> {
        // Without a peer address (not over TCP) there is nobody to key on.
        let Some(addr) = addr else { return Ok(()) };
        // Keys of addresses that have been quiet for a full period carry no state worth keeping.
        if self.limiter.len() > 10_000 {
            self.limiter.retain_recent();
        }
        self.limiter.check_key(&addr).map_err(|not_until| {
            let wait: Duration = not_until.wait_time_from(self.clock.now());
            ApiError::RateLimited {
                retry_after_secs: wait.as_secs().max(1),
            }
        })
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
            Err(ApiError::RateLimited {
                retry_after_secs: 2
            })
        ));
        let _b = gate.admit("b").unwrap();
        drop(a1);
        assert_eq!(gate.running("a"), 1);
        let _a3 = gate.admit("a").unwrap();
        assert_eq!(gate.running("a"), 2);
    }

    #[test]
    fn addresses_are_limited_separately() {
        let limiter = AddressLimiter::per_minute(2);
        let one: IpAddr = [127, 0, 0, 1].into();
        let two: IpAddr = [127, 0, 0, 2].into();
        assert!(limiter.admit(Some(one)).is_ok());
        assert!(limiter.admit(Some(one)).is_ok());
        match limiter.admit(Some(one)) {
            Err(ApiError::RateLimited { retry_after_secs }) => {
                assert!((1..=30).contains(&retry_after_secs), "{retry_after_secs}")
            }
            other => panic!("expected 429, got {other:?}"),
        }
        assert!(limiter.admit(Some(two)).is_ok());
    }
}
