//! Per-endpoint circuit breakers: fail fast while a tool is down.
//!
//! After `threshold` consecutive transient failures an endpoint's breaker
//! opens: calls fail at once, without a dispatch, for `open_for`. Then one
//! probe is let through (half-open); its success closes the breaker, its
//! failure opens it again. A probe that never reports (its call was cancelled)
//! is presumed lost after another `open_for`, and a new probe may go.
//!
//! # Keys and memory
//!
//! Breakers are keyed by [`Target::endpoint`](recourse_core::target::Target::endpoint): scheme,
//! host, port and path, never userinfo or the query, so a key holds no
//! credential and `?page=2` shares its endpoint's breaker. Anyone who can name
//! targets (a gateway's callers) can name endless distinct endpoints, so the
//! table is bounded twice: a key longer than 256 characters is cut and
//! completed with a hash of the whole (keyed per process, so nobody can aim a
//! collision at another endpoint's breaker), and at most `max_endpoints`
//! entries are kept (1,024 by default).
//!
//! A closed breaker with no failures is no entry at all (the healthy answer
//! removes it), so the table holds only endpoints failing now or lately. When
//! it is full and a new endpoint fails, room is made in this order:
//!
//! 1. closed entries go: each forgets fewer than `threshold` failures, so at
//!    worst that endpoint opens later than it would have; its traffic was
//!    flowing anyway;
//! 2. then entries whose wait is over (open past `until`, or a half-open probe
//!    presumed lost): each would admit a probe now, and now admits its callers
//!    instead, which is no earlier;
//! 3. never an open breaker still waiting, nor a probe in flight: forgetting
//!    one would re-admit traffic to a tool that is down before its time. If
//!    only those are left, the new endpoint is not tracked and its calls flow
//!    as though it had no breaker. Failing fast is a courtesy to a tool; a
//!    full table must not become a way to deny calls to an endpoint that is
//!    healthy.

use std::collections::HashMap;
use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use strum::{EnumDiscriminants, EnumIter, IntoStaticStr};

use crate::clock::SystemClock;
use recourse_core::clock::Clock;

/// The most endpoints tracked by default (see [`CircuitBreakers::with_max_endpoints`]).
const DEFAULT_MAX_ENDPOINTS: usize = 1024;

/// The longest key kept whole; longer endpoints are cut and hashed.
const MAX_KEY_CHARS: usize = 256;

/// The state of one endpoint's breaker (declared from closed to open, the
/// order metrics list them in).
#[derive(Debug, Clone, Copy, PartialEq, Eq, EnumDiscriminants)]
#[strum_discriminants(
    name(BreakerPhase),
    vis(pub(crate)),
    doc = "A breaker's state without its count or instant.",
    derive(IntoStaticStr, EnumIter),
    strum(serialize_all = "snake_case")
)]
pub enum BreakerState {
    /// Calls flow; the count is consecutive transient failures.
    Closed {
        /// Consecutive transient failures so far.
        failures: u32,
    },
    /// One probe is in flight since the instant.
    HalfOpen {
        /// When the probe started.
        since: Instant,
    },
    /// Calls fail fast until the instant.
    Open {
        /// When a probe may go.
        until: Instant,
    },
}

impl BreakerState {
    /// `closed`, `open` or `half_open`.
    pub fn name(&self) -> &'static str {
        self.phase().into()
    }

    /// The state without its count or instant.
    pub(crate) fn phase(&self) -> BreakerPhase {
        self.into()
    }
}

/// The breakers of every endpoint an executor calls, shared through `Arc`.
#[derive(Debug)]
pub struct CircuitBreakers {
    threshold: u32,
    open_for: Duration,
    max_endpoints: usize,
    clock: Arc<dyn Clock>,
    hasher: RandomState,
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
    /// failures, for 5 s, then let one probe through; at most 1,024
    /// endpoints tracked.
    pub fn standard(clock: Arc<dyn Clock>) -> Self {
        Self::new(5, Duration::from_secs(5), clock)
    }

    /// Breakers that open after `threshold` (at least 1) consecutive transient failures.
    pub fn new(threshold: u32, open_for: Duration, clock: Arc<dyn Clock>) -> Self {
        Self {
            threshold: threshold.max(1),
            open_for,
            max_endpoints: DEFAULT_MAX_ENDPOINTS,
            clock,
            hasher: RandomState::new(),
            states: Mutex::default(),
        }
    }

    /// Tracks at most `n` (at least 1) endpoints; see the module docs for what
    /// makes room when the table is full.
    #[must_use]
    pub fn with_max_endpoints(mut self, n: usize) -> Self {
        self.max_endpoints = n.max(1);
        self
    }

    /// Asks to dispatch to `endpoint`. `false` means fail fast: the breaker is open.
    pub fn admit(&self, endpoint: &str) -> bool {
        let key = self.key(endpoint);
        let mut states = self.lock();
        // The common case, a healthy endpoint, has no entry.
        let Some(state) = states.get_mut(key.as_ref()) else {
            return true;
        };
        let now = self.clock.now();
        match *state {
            BreakerState::Closed { .. } => true,
            _ if self.wait_is_over(state, now) => {
                *state = BreakerState::HalfOpen { since: now };
                true
            }
            _ => false,
        }
    }

    /// Whether an open breaker may let a probe go, or a probe is presumed lost.
    fn wait_is_over(&self, state: &BreakerState, now: Instant) -> bool {
        match *state {
            BreakerState::Closed { .. } => true,
            BreakerState::Open { until } => now >= until,
            BreakerState::HalfOpen { since } => now >= since + self.open_for,
        }
    }

    /// Records that the endpoint answered (success, or a non-transient failure).
    pub fn record_healthy(&self, endpoint: &str) {
        // A closed breaker with no failures is the absence of an entry.
        let mut states = self.lock();
        // Most of the time there is no entry at all: skip hashing the key.
        if !states.is_empty() {
            states.remove(self.key(endpoint).as_ref());
        }
    }

    /// Records a transient failure (connect failure, 408, 429, 5xx).
    pub fn record_transient_failure(&self, endpoint: &str) {
        let now = self.clock.now();
        let key = self.key(endpoint);
        let mut states = self.lock();
        if !states.contains_key(key.as_ref()) && !self.make_room(&mut states, now) {
            return;
        }
        let state = states
            .entry(key.into_owned())
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

    /// Frees a slot in a full table, in the module docs' order; `false` when
    /// every entry is an open breaker still waiting or a probe in flight.
    fn make_room(&self, states: &mut HashMap<String, BreakerState>, now: Instant) -> bool {
        if states.len() < self.max_endpoints {
            return true;
        }
        states.retain(|_, s| !matches!(s, BreakerState::Closed { .. }));
        if states.len() < self.max_endpoints {
            return true;
        }
        states.retain(|_, s| !self.wait_is_over(s, now));
        states.len() < self.max_endpoints
    }

    /// The current state of `endpoint`'s breaker.
    pub fn state(&self, endpoint: &str) -> BreakerState {
        let key = self.key(endpoint);
        self.lock()
            .get(key.as_ref())
            .copied()
            .unwrap_or(BreakerState::Closed { failures: 0 })
    }

    /// Every tracked endpoint's state, for metrics: endpoints failing now or
    /// lately (a healthy endpoint has no entry), at most `max_endpoints`.
    pub fn snapshot(&self) -> Vec<(String, BreakerState)> {
        self.lock().iter().map(|(k, v)| (k.clone(), *v)).collect()
    }

    /// How many endpoints are tracked.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether no endpoint is tracked (every one is healthy).
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    /// `endpoint`, or for a long one its first `MAX_KEY_CHARS` characters
    /// and a hash of the whole.
    fn key<'a>(&self, endpoint: &'a str) -> std::borrow::Cow<'a, str> {
        // No more bytes than the limit in characters: short enough, uncounted.
        if endpoint.len() <= MAX_KEY_CHARS {
            return std::borrow::Cow::Borrowed(endpoint);
        }
        match endpoint.char_indices().nth(MAX_KEY_CHARS) {
            None => std::borrow::Cow::Borrowed(endpoint),
            Some((cut, _)) => std::borrow::Cow::Owned(format!(
                "{}…#{:016x}",
                &endpoint[..cut],
                self.hasher.hash_one(endpoint)
            )),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, BreakerState>> {
        self.states.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use recourse_core::clock::ManualClock;
    use strum::IntoEnumIterator;

    fn breakers() -> (CircuitBreakers, ManualClock) {
        let clock = ManualClock::new();
        (
            CircuitBreakers::new(3, Duration::from_secs(5), Arc::new(clock.clone())),
            clock,
        )
    }

    #[test]
    fn states_are_named_from_closed_to_open() {
        let now = Instant::now();
        let states = [
            BreakerState::Closed { failures: 2 },
            BreakerState::HalfOpen { since: now },
            BreakerState::Open { until: now },
        ];
        let names: Vec<&str> = states.iter().map(BreakerState::name).collect();
        assert_eq!(names, ["closed", "half_open", "open"]);
        let phases: Vec<BreakerPhase> = states.iter().map(BreakerState::phase).collect();
        assert_eq!(phases, BreakerPhase::iter().collect::<Vec<_>>());
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

    #[test]
    fn a_full_table_forgets_closed_breakers_first() {
        let (b, _) = breakers();
        let b = b.with_max_endpoints(3);
        for _ in 0..3 {
            b.record_transient_failure("down");
        }
        b.record_transient_failure("flaky-1");
        b.record_transient_failure("flaky-2");
        b.record_transient_failure("new");
        assert!(!b.admit("down"), "the open breaker is kept");
        assert_eq!(b.state("new"), BreakerState::Closed { failures: 1 });
        assert_eq!(b.state("flaky-1"), BreakerState::Closed { failures: 0 });
        assert!(b.len() <= 3);
    }

    #[test]
    fn a_full_table_never_forgets_an_open_breaker_before_its_time() {
        let (b, clock) = breakers();
        let b = b.with_max_endpoints(2);
        for endpoint in ["a", "b"] {
            for _ in 0..3 {
                b.record_transient_failure(endpoint);
            }
        }
        for i in 0..100 {
            b.record_transient_failure(&format!("attacker-{i}"));
        }
        assert!(!b.admit("a") && !b.admit("b"), "still failing fast");
        assert_eq!(b.len(), 2);
        assert!(b.admit("attacker-0"), "untracked endpoints flow");
        clock.advance(Duration::from_secs(5));
        b.record_transient_failure("c");
        assert_eq!(b.len(), 1, "both waits were over: both made room");
        assert!(b.admit("a"), "no earlier than its probe would have gone");
    }

    #[test]
    fn a_probe_in_flight_is_never_forgotten() {
        let (b, clock) = breakers();
        let b = b.with_max_endpoints(1);
        for _ in 0..3 {
            b.record_transient_failure("a");
        }
        clock.advance(Duration::from_secs(5));
        assert!(b.admit("a"), "the probe");
        b.record_transient_failure("b");
        assert!(!b.admit("a"), "one probe at a time, even under pressure");
    }

    #[test]
    fn long_endpoints_are_cut_and_hashed() {
        let (b, _) = breakers();
        let long = |tail: &str| format!("http://127.0.0.1/{}{tail}", "x".repeat(10_000));
        b.record_transient_failure(&long("a"));
        b.record_transient_failure(&long("b"));
        let keys: Vec<String> = b.snapshot().into_iter().map(|(k, _)| k).collect();
        assert_eq!(keys.len(), 2, "distinct endpoints keep distinct breakers");
        assert!(
            keys.iter().all(|k| k.chars().count() < MAX_KEY_CHARS + 20),
            "{keys:?}"
        );
        assert_eq!(b.state(&long("a")), BreakerState::Closed { failures: 1 });
    }
}
