//! Shared resilience state: one retry budget and one set of circuit breakers
//! for a whole fleet of processes.
//!
//! # Why share them
//!
//! A [`RetryBudget`](crate::budget::RetryBudget) and
//! [`CircuitBreakers`](crate::breaker::CircuitBreakers) live in one process. Several
//! replicas of a gateway behind a load balancer each have their own: during
//! an outage each replica spends its own budget, and each opens its own
//! breaker only after failing `threshold` times itself, then sends its own
//! half-open probes — N replicas put about N times the probing load on a tool
//! that is already down. A [`SharedState`] holds the budget and the breakers
//! where every replica sees them: the fleet opens one breaker, sends one
//! probe per endpoint, and resends within one ratio of the calls it made.
//!
//! # What decides when
//!
//! The executor keeps its local budget and breakers and feeds them all along
//! (every deposit, every endpoint's health), so a process that loses the
//! shared state decides from what it has seen itself rather than from
//! nothing. Decisions — may this resend go, may this endpoint be called —
//! are the shared state's while it answers. When it does not (it is in
//! fallback, or an operation failed or ran past its short timeout), the
//! local state decides, at once: a call never waits on, or fails because of,
//! the shared state. While in fallback the local state is authoritative and
//! the shared one is not asked at all; when the shared state is reachable
//! again it takes over for the next decision. Nothing is merged back: what a
//! replica decided alone stays decided, and the fleet's counts pick up from
//! where the shared store had them.
//!
//! [`RedisSharedState`] (feature `redis`) is the implementation over Redis.

#[cfg(feature = "redis")]
mod redis_store;

use std::fmt;

#[cfg(feature = "redis")]
pub use redis_store::{RedisSharedState, RedisSharedStateBuilder, SharedStateError};

use crate::transport::BoxFuture;

/// Whether a [`SharedState`] is deciding now, or the process decides alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SharedMode {
    /// The shared store answers: its budget and breakers decide.
    Shared,
    /// The shared store is unreachable: this process's own budget and
    /// breakers decide until it returns.
    Fallback,
}

impl SharedMode {
    /// `shared` or `fallback`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Shared => "shared",
            Self::Fallback => "fallback",
        }
    }
}

impl fmt::Display for SharedMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How an endpoint answered an attempt, for its breaker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndpointHealth {
    /// It answered: a success, or a failure that is not transient.
    Healthy,
    /// A transient failure: connect failure, 408, 429 or 5xx.
    TransientFailure,
}

/// The shared state did not answer; decide locally.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SharedUnavailable;

impl fmt::Display for SharedUnavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the shared resilience state is unavailable")
    }
}

impl std::error::Error for SharedUnavailable {}

/// A retry budget and circuit breakers shared by several processes.
///
/// Each operation answers promptly — within a short bound — or fails with
/// [`SharedUnavailable`], and the executor decides on its local state. The
/// semantics match the local types': [`deposit`](Self::deposit) and
/// [`withdraw`](Self::withdraw) as [`RetryBudget`](crate::budget::RetryBudget)'s,
/// [`admit`](Self::admit) and [`record`](Self::record) as
/// [`CircuitBreakers`](crate::breaker::CircuitBreakers)', keyed by
/// [`Target::endpoint`](recourse_core::target::Target::endpoint).
pub trait SharedState: Send + Sync + fmt::Debug {
    /// Whether the shared store is deciding now.
    fn mode(&self) -> SharedMode;

    /// Records a logical call: earns the fleet `ratio` of a resend.
    fn deposit(&self) -> BoxFuture<'_, Result<(), SharedUnavailable>>;

    /// Takes one resend from the fleet's budget; `Ok(false)` when none is left.
    fn withdraw(&self) -> BoxFuture<'_, Result<bool, SharedUnavailable>>;

    /// Asks to dispatch to `endpoint`; `Ok(false)` means its breaker is open
    /// (or another process holds its one half-open probe).
    fn admit<'a>(&'a self, endpoint: &'a str) -> BoxFuture<'a, Result<bool, SharedUnavailable>>;

    /// Records how `endpoint` answered.
    fn record<'a>(
        &'a self,
        endpoint: &'a str,
        health: EndpointHealth,
    ) -> BoxFuture<'a, Result<(), SharedUnavailable>>;
}
