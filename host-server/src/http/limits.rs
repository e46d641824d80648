//! Admission limits: how many chat steps one actor may run at once, and how often one client
//! address may call the anonymous routes (the rate limit is `governor`'s keyed GCRA).

use std::net::IpAddr;
use std::num::NonZeroU32;
use std::time::Duration;

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};

use super::error::ApiError;

pub use dpas_engine::{StepGate, StepPermit};

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
