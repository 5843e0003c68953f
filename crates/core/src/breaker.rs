//! Per-endpoint circuit breakers, as a state machine fed what each endpoint
//! did at the instant it did it: fail fast while a tool is down.
//!
//! After `threshold` consecutive transient failures an endpoint's breaker
//! opens: calls fail at once, without a dispatch, for `open_for`. Then one
//! probe is let through (half-open); its success closes the breaker, its
//! failure opens it again. A probe that never reports (its call was cancelled)
//! is presumed lost after another `open_for`, and a new probe may go. An
//! endpoint no failure has touched for a minute and twice `open_for`
//! ([`forgotten_after`]) is forgotten — closed — as the fleet's breaker in
//! Redis expires then.
//!
//! The arithmetic is here once, with no clock of its own: the runtime's
//! `CircuitBreakers` feeds it its clock's instants, and the fleet's
//! breakers in Redis run the same steps in Lua on the server's clock (a
//! property test holds the two to the same decisions).
//!
//! # Keys and memory
//!
//! Breakers are keyed by [`Target::endpoint`](crate::target::Target::endpoint): scheme,
//! host, port and path, never userinfo or the query, so a key holds no
//! credential and `?page=2` shares its endpoint's breaker. Anyone who can name
//! targets (a gateway's callers) can name endless distinct endpoints, so the
//! table is bounded twice: a key longer than 256 characters is cut and
//! completed with a hash of the whole (keyed per table, so nobody can aim a
//! collision at another endpoint's breaker), and at most `max_endpoints`
//! entries are kept (1,024 by default).
//!
//! A closed breaker with no failures is no entry at all (the healthy answer
//! removes it), so the table holds only endpoints failing now or lately. When
//! it is full and a new endpoint fails, room is made in this order:
//!
//! 1. forgotten entries go, and closed ones: each forgets fewer than
//!    `threshold` failures, so at worst that endpoint opens later than it
//!    would have; its traffic was flowing anyway;
//! 2. then entries whose wait is over (open past `until`, or a half-open probe
//!    presumed lost): each would admit a probe now, and now admits its callers
//!    instead, which is no earlier;
//! 3. never an open breaker still waiting, nor a probe in flight: forgetting
//!    one would re-admit traffic to a tool that is down before its time. If
//!    only those are left, the new endpoint is not tracked and its calls flow
//!    as though it had no breaker. Failing fast is a courtesy to a tool; a
//!    full table must not become a way to deny calls to an endpoint that is
//!    healthy.

use std::borrow::Cow;
use std::collections::HashMap;
use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::time::{Duration, Instant};

use strum::{EnumDiscriminants, EnumIter, IntoStaticStr};

/// The most endpoints tracked by default (see [`BreakerTable::with_max_endpoints`]).
const DEFAULT_MAX_ENDPOINTS: usize = 1024;

/// The longest key kept whole; longer endpoints are cut and hashed.
const MAX_KEY_CHARS: usize = 256;

/// How long an endpoint's breaker outlives its last failure, beyond twice
/// the open time.
const FORGOTTEN_AFTER: Duration = Duration::from_secs(60);

/// How long after its last failure an endpoint's breaker is forgotten
/// (closed, its count gone): a minute and twice `open_for` — long past its
/// open time and a probe's.
pub fn forgotten_after(open_for: Duration) -> Duration {
    open_for.saturating_mul(2).saturating_add(FORGOTTEN_AFTER)
}

/// The state of one endpoint's breaker (declared from closed to open, the
/// order metrics list them in).
#[derive(Debug, Clone, Copy, PartialEq, Eq, EnumDiscriminants)]
#[strum_discriminants(
    name(BreakerPhase),
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
    pub fn phase(&self) -> BreakerPhase {
        self.into()
    }
}

/// One endpoint's breaker, and its last failure.
#[derive(Debug, Clone, Copy)]
struct Entry {
    state: BreakerState,
    failed_at: Instant,
}

/// The breakers of every endpoint, each fed at the instant it is told.
///
/// ```
/// use std::time::{Duration, Instant};
/// use recourse_core::breaker::BreakerTable;
///
/// let mut breakers = BreakerTable::new(2, Duration::from_secs(5));
/// let t0 = Instant::now();
/// breakers.record_transient_failure("http://tool/api", t0);
/// breakers.record_transient_failure("http://tool/api", t0);
/// assert!(!breakers.admit("http://tool/api", t0), "open: fail fast");
/// assert!(breakers.admit("http://tool/api", t0 + Duration::from_secs(5)), "the probe");
/// assert!(!breakers.admit("http://tool/api", t0 + Duration::from_secs(5)), "one at a time");
/// breakers.record_healthy("http://tool/api");
/// assert!(breakers.admit("http://tool/api", t0 + Duration::from_secs(5)));
/// ```
#[derive(Debug, Clone)]
pub struct BreakerTable {
    threshold: u32,
    open_for: Duration,
    max_endpoints: usize,
    hasher: RandomState,
    entries: HashMap<String, Entry>,
}

impl BreakerTable {
    /// Breakers that open after `threshold` (at least 1) consecutive
    /// transient failures, for `open_for`; at most 1,024 endpoints tracked.
    pub fn new(threshold: u32, open_for: Duration) -> Self {
        Self {
            threshold: threshold.max(1),
            open_for,
            max_endpoints: DEFAULT_MAX_ENDPOINTS,
            hasher: RandomState::new(),
            entries: HashMap::new(),
        }
    }

    /// Tracks at most `n` (at least 1) endpoints; see the module docs for what
    /// makes room when the table is full.
    #[must_use]
    pub fn with_max_endpoints(mut self, n: usize) -> Self {
        self.max_endpoints = n.max(1);
        self
    }

    /// May an attempt go to `endpoint` at `now`? `false` means fail fast:
    /// the breaker is open, or its one probe is out.
    pub fn admit(&mut self, endpoint: &str, now: Instant) -> bool {
        // The common case, a healthy endpoint, has no entry.
        if self.entries.is_empty() {
            return true;
        }
        let key = self.key(endpoint);
        let Some(entry) = self.entries.get(key.as_ref()).copied() else {
            return true;
        };
        if self.is_forgotten(&entry, now) {
            self.entries.remove(key.as_ref());
            return true;
        }
        match entry.state {
            BreakerState::Closed { .. } => true,
            _ if self.wait_is_over(&entry.state, now) => {
                if let Some(entry) = self.entries.get_mut(key.as_ref()) {
                    entry.state = BreakerState::HalfOpen { since: now };
                }
                true
            }
            _ => false,
        }
    }

    /// `endpoint` answered (a success, or a failure that is not transient):
    /// its breaker closes, and is no entry at all.
    pub fn record_healthy(&mut self, endpoint: &str) {
        // Most of the time there is no entry at all: skip hashing the key.
        if !self.entries.is_empty() {
            let key = self.key(endpoint);
            self.entries.remove(key.as_ref());
        }
    }

    /// `endpoint` failed transiently (connect failure, 408, 429, 5xx) at
    /// `now`: one more consecutive failure; at the threshold — or once the
    /// breaker has opened (a failed probe, a call that was already out) —
    /// it opens, or opens again, until `now + open_for`.
    pub fn record_transient_failure(&mut self, endpoint: &str, now: Instant) {
        let key = self.key(endpoint).into_owned();
        let known = self
            .entries
            .get(&key)
            .is_some_and(|entry| !self.is_forgotten(entry, now));
        if !known {
            self.entries.remove(&key);
            if !self.make_room(now) {
                return;
            }
        }
        let threshold = self.threshold;
        let open_for = self.open_for;
        let entry = self.entries.entry(key).or_insert(Entry {
            state: BreakerState::Closed { failures: 0 },
            failed_at: now,
        });
        entry.failed_at = now;
        entry.state = match entry.state {
            BreakerState::Closed { failures } if failures + 1 < threshold => BreakerState::Closed {
                failures: failures + 1,
            },
            _ => BreakerState::Open {
                until: now + open_for,
            },
        };
    }

    /// The state of `endpoint`'s breaker at `now`.
    pub fn state(&self, endpoint: &str, now: Instant) -> BreakerState {
        self.entries
            .get(self.key(endpoint).as_ref())
            .filter(|entry| !self.is_forgotten(entry, now))
            .map_or(BreakerState::Closed { failures: 0 }, |entry| entry.state)
    }

    /// Every endpoint tracked at `now`, with its state: endpoints failing
    /// now or lately (a healthy endpoint has no entry), at most
    /// `max_endpoints`.
    pub fn snapshot(&self, now: Instant) -> Vec<(String, BreakerState)> {
        self.entries
            .iter()
            .filter(|(_, entry)| !self.is_forgotten(entry, now))
            .map(|(key, entry)| (key.clone(), entry.state))
            .collect()
    }

    /// How many endpoints are tracked at `now`.
    pub fn len(&self, now: Instant) -> usize {
        self.entries
            .values()
            .filter(|entry| !self.is_forgotten(entry, now))
            .count()
    }

    /// Whether an open breaker may let a probe go, or a probe is presumed lost.
    fn wait_is_over(&self, state: &BreakerState, now: Instant) -> bool {
        match *state {
            BreakerState::Closed { .. } => true,
            BreakerState::Open { until } => now >= until,
            BreakerState::HalfOpen { since } => now >= since + self.open_for,
        }
    }

    /// Whether no failure has touched `entry` for [`forgotten_after`].
    fn is_forgotten(&self, entry: &Entry, now: Instant) -> bool {
        now.saturating_duration_since(entry.failed_at) >= forgotten_after(self.open_for)
    }

    /// Frees a slot in a full table, in the module docs' order; `false` when
    /// every entry is an open breaker still waiting or a probe in flight.
    fn make_room(&mut self, now: Instant) -> bool {
        if self.entries.len() < self.max_endpoints {
            return true;
        }
        let (open_for, forget) = (self.open_for, forgotten_after(self.open_for));
        self.entries.retain(|_, entry| {
            now.saturating_duration_since(entry.failed_at) < forget
                && !matches!(entry.state, BreakerState::Closed { .. })
        });
        if self.entries.len() < self.max_endpoints {
            return true;
        }
        self.entries.retain(|_, entry| match entry.state {
            BreakerState::Open { until } => now < until,
            BreakerState::HalfOpen { since } => now < since + open_for,
            BreakerState::Closed { .. } => false,
        });
        self.entries.len() < self.max_endpoints
    }

    /// `endpoint`, or for a long one its first `MAX_KEY_CHARS` characters
    /// and a hash of the whole.
    fn key<'a>(&self, endpoint: &'a str) -> Cow<'a, str> {
        // No more bytes than the limit in characters: short enough, uncounted.
        if endpoint.len() <= MAX_KEY_CHARS {
            return Cow::Borrowed(endpoint);
        }
        match endpoint.char_indices().nth(MAX_KEY_CHARS) {
            None => Cow::Borrowed(endpoint),
            Some((cut, _)) => Cow::Owned(format!(
                "{}…#{:016x}",
                &endpoint[..cut],
                self.hasher.hash_one(endpoint)
            )),
        }
    }
}

#[cfg(test)]
mod tests;
