//! Per-endpoint circuit breakers: fail fast while a tool is down.
//!
//! After `threshold` consecutive transient failures an endpoint's breaker
//! opens: calls fail at once, without a dispatch, for `open_for`. Then one
//! probe is let through (half-open); its success closes the breaker, its
//! failure opens it again. A probe that never reports (its call was cancelled)
//! is presumed lost after another `open_for`, and a new probe may go.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::{Clock, SystemClock};

/// The state of one endpoint's breaker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BreakerState {
    /// Calls flow; the count is consecutive transient failures.
    Closed {
        /// Consecutive transient failures so far.
        failures: u32,
    },
    /// Calls fail fast until the instant.
    Open {
        /// When a probe may go.
        until: Instant,
    },
    /// One probe is in flight since the instant.
    HalfOpen {
        /// When the probe started.
        since: Instant,
    },
}

impl BreakerState {
    /// `closed`, `open` or `half_open`.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Closed { .. } => "closed",
            Self::Open { .. } => "open",
            Self::HalfOpen { .. } => "half_open",
        }
    }
}

/// The breakers of every endpoint an executor calls, shared through `Arc`.
#[derive(Debug)]
pub struct CircuitBreakers {
    threshold: u32,
    open_for: Duration,
    clock: Arc<dyn Clock>,
    states: Mutex<HashMap<String, BreakerState>>,
}

impl Default for CircuitBreakers {
    /// [`CircuitBreakers::standard`] on real time.
    fn default() -> Self {
        Self::standard(Arc::new(SystemClock))
    }
}

impl CircuitBreakers {
    /// The default breakers on `clock`: open after 5 consecutive transient
    /// failures, for 5 s, then let one probe through.
    pub fn standard(clock: Arc<dyn Clock>) -> Self {
        Self::new(5, Duration::from_secs(5), clock)
    }

    /// Breakers that open after `threshold` (at least 1) consecutive transient failures.
    pub fn new(threshold: u32, open_for: Duration, clock: Arc<dyn Clock>) -> Self {
        Self {
            threshold: threshold.max(1),
            open_for,
            clock,
            states: Mutex::default(),
        }
    }

    /// Asks to dispatch to `endpoint`. `false` means fail fast: the breaker is open.
    pub fn admit(&self, endpoint: &str) -> bool {
        let now = self.clock.now();
        let mut states = self.lock();
        // The common case, a closed breaker, allocates nothing.
        let Some(state) = states.get_mut(endpoint) else {
            return true;
        };
        match *state {
            BreakerState::Closed { .. } => true,
            BreakerState::Open { until } | BreakerState::HalfOpen { since: until }
                if now >= until + self.probe_grace(state) =>
            {
                *state = BreakerState::HalfOpen { since: now };
                true
            }
            _ => false,
        }
    }

    fn probe_grace(&self, state: &BreakerState) -> Duration {
        match state {
            BreakerState::HalfOpen { .. } => self.open_for,
            _ => Duration::ZERO,
        }
    }

    /// Records that the endpoint answered (success, or a non-transient failure).
    pub fn record_healthy(&self, endpoint: &str) {
        // An endpoint with no entry is closed; only an existing entry needs resetting.
        if let Some(state) = self.lock().get_mut(endpoint) {
            *state = BreakerState::Closed { failures: 0 };
        }
    }

    /// Records a transient failure (connect failure, 408, 429, 5xx).
    pub fn record_transient_failure(&self, endpoint: &str) {
        let now = self.clock.now();
        let mut states = self.lock();
        let state = states
            .entry(endpoint.to_owned())
            .or_insert(BreakerState::Closed { failures: 0 });
        *state = match *state {
            BreakerState::Closed { failures } if failures + 1 < self.threshold => {
                BreakerState::Closed {
                    failures: failures + 1,
                }
            }
            _ => BreakerState::Open {
                until: now + self.open_for,
            },
        };
    }

    /// The current state of `endpoint`'s breaker.
    pub fn state(&self, endpoint: &str) -> BreakerState {
        self.lock()
            .get(endpoint)
            .copied()
            .unwrap_or(BreakerState::Closed { failures: 0 })
    }

    /// Every endpoint's state, for metrics.
    pub fn snapshot(&self) -> Vec<(String, BreakerState)> {
        self.lock().iter().map(|(k, v)| (k.clone(), *v)).collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, BreakerState>> {
        self.states.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ManualClock;

    fn breakers() -> (CircuitBreakers, ManualClock) {
        let clock = ManualClock::new();
        (
            CircuitBreakers::new(3, Duration::from_secs(5), Arc::new(clock.clone())),
            clock,
        )
    }

    #[test]
    fn opens_after_consecutive_transient_failures() {
        let (b, _) = breakers();
        for _ in 0..2 {
            assert!(b.admit("t"));
            b.record_transient_failure("t");
        }
        assert!(b.admit("t"));
        b.record_transient_failure("t");
        assert!(!b.admit("t"));
        assert_eq!(b.state("t").name(), "open");
        assert!(b.admit("other"), "breakers are per endpoint");
    }

    #[test]
    fn a_healthy_answer_resets_the_count() {
        let (b, _) = breakers();
        b.record_transient_failure("t");
        b.record_transient_failure("t");
        b.record_healthy("t");
        b.record_transient_failure("t");
        assert!(b.admit("t"));
    }

    #[test]
    fn half_open_lets_one_probe_through() {
        let (b, clock) = breakers();
        for _ in 0..3 {
            b.record_transient_failure("t");
        }
        clock.advance(Duration::from_secs(5));
        assert!(b.admit("t"), "the probe");
        assert!(!b.admit("t"), "only one probe at a time");
        b.record_transient_failure("t");
        assert!(!b.admit("t"), "a failed probe reopens");
        clock.advance(Duration::from_secs(5));
        assert!(b.admit("t"));
        b.record_healthy("t");
        assert!(b.admit("t") && b.admit("t"));
    }

    #[test]
    fn a_lost_probe_is_replaced_after_another_interval() {
        let (b, clock) = breakers();
        for _ in 0..3 {
            b.record_transient_failure("t");
        }
        clock.advance(Duration::from_secs(5));
        assert!(b.admit("t"));
        clock.advance(Duration::from_secs(4));
        assert!(!b.admit("t"));
        clock.advance(Duration::from_secs(1));
        assert!(b.admit("t"));
    }
}
