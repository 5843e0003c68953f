//! Per-endpoint circuit breakers: fail fast while a tool is down.
//!
//! [`CircuitBreakers`] is a [`BreakerTable`] — the breakers' rules, and how
//! their table stays bounded, are `recourse-core`'s
//! ([`recourse_core::breaker`]) — behind a lock, fed the instants of an
//! injectable [`Clock`], so one table serves every call of an executor.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::clock::SystemClock;
use recourse_core::breaker::BreakerTable;
pub use recourse_core::breaker::{BreakerPhase, BreakerState};
use recourse_core::clock::Clock;

/// The breakers of every endpoint an executor calls, shared through `Arc`.
#[derive(Debug)]
pub struct CircuitBreakers {
    clock: Arc<dyn Clock>,
    table: Mutex<BreakerTable>,
}

impl Default for CircuitBreakers {
    /// [`CircuitBreakers::standard`] on real time.
    fn default() -> Self {
        Self::standard(Arc::new(SystemClock))
    }
}

impl CircuitBreakers {
    /// The default breakers on `clock`: open after 5 consecutive transient
    /// failures, for 5 s, then let one probe through; at most 1,024
    /// endpoints tracked.
    pub fn standard(clock: Arc<dyn Clock>) -> Self {
        Self::new(5, Duration::from_secs(5), clock)
    }

    /// Breakers that open after `threshold` (at least 1) consecutive transient failures.
    pub fn new(threshold: u32, open_for: Duration, clock: Arc<dyn Clock>) -> Self {
        Self {
            clock,
            table: Mutex::new(BreakerTable::new(threshold, open_for)),
        }
    }

    /// Tracks at most `n` (at least 1) endpoints; see
    /// [`recourse_core::breaker`] for what makes room when the table is full.
    #[must_use]
    pub fn with_max_endpoints(self, n: usize) -> Self {
        let table = self
            .table
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner)
            .with_max_endpoints(n);
        Self {
            clock: self.clock,
            table: Mutex::new(table),
        }
    }

    /// Asks to dispatch to `endpoint`. `false` means fail fast: the breaker is open.
    pub fn admit(&self, endpoint: &str) -> bool {
        let now = self.clock.now();
        self.lock().admit(endpoint, now)
    }

    /// Records that the endpoint answered (success, or a non-transient failure).
    pub fn record_healthy(&self, endpoint: &str) {
        self.lock().record_healthy(endpoint);
    }

    /// Records a transient failure (connect failure, 408, 429, 5xx).
    pub fn record_transient_failure(&self, endpoint: &str) {
        let now = self.clock.now();
        self.lock().record_transient_failure(endpoint, now);
    }

    /// The current state of `endpoint`'s breaker.
    pub fn state(&self, endpoint: &str) -> BreakerState {
        let now = self.clock.now();
        self.lock().state(endpoint, now)
    }

    /// Every tracked endpoint's state, for metrics: endpoints failing now or
    /// lately (a healthy endpoint has no entry), at most `max_endpoints`.
    pub fn snapshot(&self) -> Vec<(String, BreakerState)> {
        let now = self.clock.now();
        self.lock().snapshot(now)
    }

    /// How many endpoints are tracked.
    pub fn len(&self) -> usize {
        let now = self.clock.now();
        self.lock().len(now)
    }

    /// Whether no endpoint is tracked (every one is healthy).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BreakerTable> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use recourse_core::clock::ManualClock;

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

    #[test]
    fn a_healthy_answer_leaves_no_entry() {
        let (b, _) = breakers();
        b.record_transient_failure("t");
        assert_eq!(b.len(), 1);
        b.record_healthy("t");
        assert!(b.is_empty());
        b.record_healthy("never-failed");
        assert!(b.is_empty(), "healthy answers never allocate");
    }
}
