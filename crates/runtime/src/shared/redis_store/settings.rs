//! What a [`RedisSharedState`](super::RedisSharedState) is built with: its
//! Redis, key prefix, timeouts, clock and the budget's and breakers'
//! parameters, each checked as it is set.

use std::sync::Arc;
use std::time::Duration;

use recourse_core::budget::RetryTokens;
use recourse_core::clock::Clock;

/// The longest key prefix accepted.
const MAX_PREFIX_CHARS: usize = 64;

/// A shared-state setting that cannot be used: a URL that is not `redis://`,
/// a bad prefix. The message never holds the URL (it may carry a password).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedStateError {
    problem: String,
}

impl SharedStateError {
    pub(super) fn new(problem: impl Into<String>) -> Self {
        Self {
            problem: problem.into(),
        }
    }
}

impl std::fmt::Display for SharedStateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.problem)
    }
}

impl std::error::Error for SharedStateError {}

/// Configures a [`RedisSharedState`](super::RedisSharedState).
#[derive(Clone)]
pub struct RedisSharedStateBuilder {
    pub(super) client: redis::Client,
    pub(super) prefix: String,
    pub(super) op_timeout: Duration,
    pub(super) check_every: Duration,
    pub(super) clock: Arc<dyn Clock>,
    /// The budget's settings (its tokens are Redis's).
    pub(super) budget: RetryTokens,
    pub(super) threshold: u32,
    pub(super) open_for: Duration,
}

impl std::fmt::Debug for RedisSharedStateBuilder {
    /// Everything but the client, whose connection details may hold a password.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisSharedStateBuilder")
            .field("prefix", &self.prefix)
            .field("op_timeout", &self.op_timeout)
            .field("check_every", &self.check_every)
            .field("ratio", &self.budget.ratio())
            .field("floor_per_sec", &self.budget.min_per_sec())
            .field("ttl", &self.budget.ttl())
            .field("threshold", &self.threshold)
            .field("open_for", &self.open_for)
            .finish_non_exhaustive()
    }
}

impl RedisSharedStateBuilder {
    /// Starts every key with `prefix` (1 to 64 printable ASCII characters, no
    /// spaces), so fleets or tests sharing a Redis keep apart.
    ///
    /// # Errors
    /// An empty, long or unprintable prefix.
    pub fn with_prefix(mut self, prefix: &str) -> Result<Self, SharedStateError> {
        if prefix.is_empty() || prefix.chars().count() > MAX_PREFIX_CHARS {
            return Err(SharedStateError::new(format!(
                "the shared-state key prefix must be 1 to {MAX_PREFIX_CHARS} characters"
            )));
        }
        if !prefix.chars().all(|c| c.is_ascii_graphic()) {
            return Err(SharedStateError::new(
                "the shared-state key prefix may hold only printable ASCII, without spaces",
            ));
        }
        self.prefix = prefix.to_owned();
        Ok(self)
    }

    /// Bounds each operation (default 50 ms, at least 1 ms); one that runs
    /// past it puts the state in fallback.
    #[must_use]
    pub fn with_op_timeout(mut self, timeout: Duration) -> Self {
        self.op_timeout = timeout.max(Duration::from_millis(1));
        self
    }

    /// How often the background check pings Redis, or tries to reach it
    /// again in fallback (default 1 s, at least 10 ms).
    #[must_use]
    pub fn with_check_every(mut self, every: Duration) -> Self {
        self.check_every = every.max(Duration::from_millis(10));
        self
    }

    /// Waits between background checks on `clock` (real time by default).
    #[must_use]
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// The budget's parameters, as [`RetryBudget::new`](crate::budget::RetryBudget::new)'s.
    #[must_use]
    pub fn with_budget(mut self, ratio: f64, min_per_sec: f64, ttl: Duration) -> Self {
        self.budget = RetryTokens::new(ratio, min_per_sec, ttl);
        self
    }

    /// The breakers' parameters, as [`CircuitBreakers::new`](crate::breaker::CircuitBreakers::new)'s.
    #[must_use]
    pub fn with_breakers(mut self, threshold: u32, open_for: Duration) -> Self {
        self.threshold = threshold.max(1);
        self.open_for = open_for.max(Duration::from_millis(1));
        self
    }
}
