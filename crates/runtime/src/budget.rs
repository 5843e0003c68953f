//! The shared retry budget: resends across all calls are bounded by the calls made.
//!
//! A [`RetryBudget`] is [`RetryTokens`] —
//! the arithmetic, and why a budget at all, are `recourse-core`'s — behind a
//! lock, fed the instants of an injectable [`Clock`], so one budget serves
//! every call of an executor and its arithmetic can be tested without
//! waiting.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::clock::SystemClock;
use recourse_core::budget::RetryTokens;
use recourse_core::clock::Clock;

/// A retry budget shared (through `Arc`) by every call of an executor.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use recourse::ManualClock;
/// use recourse::budget::RetryBudget;
///
/// let budget = RetryBudget::with_clock(0.2, 0.0, Duration::from_secs(10), Arc::new(ManualClock::new()));
/// for _ in 0..10 { budget.deposit(); }        // ten calls earn two resends
/// assert!(budget.withdraw());
/// assert!(budget.withdraw());
/// assert!(!budget.withdraw());
/// ```
#[derive(Debug)]
pub struct RetryBudget {
    clock: Arc<dyn Clock>,
    tokens: Mutex<RetryTokens>,
}

impl Default for RetryBudget {
    /// [`RetryBudget::standard`] on real time.
    fn default() -> Self {
        Self::standard(Arc::new(SystemClock))
    }
}

impl RetryBudget {
    /// The default budget on `clock`: resends up to 20 % of calls, plus a
    /// floor of 10 per second, remembered for 10 s.
    pub fn standard(clock: Arc<dyn Clock>) -> Self {
        Self::with_clock(0.2, 10.0, Duration::from_secs(10), clock)
    }

    /// A budget on real time. `ratio` is clamped to `[0, 1000]`,
    /// `min_per_sec` to `≥ 0`, `ttl` to whole milliseconds, at least one
    /// ([`RetryTokens::new`]).
    pub fn new(ratio: f64, min_per_sec: f64, ttl: Duration) -> Self {
        Self::with_clock(ratio, min_per_sec, ttl, Arc::new(SystemClock))
    }

    /// A budget on the given clock.
    pub fn with_clock(ratio: f64, min_per_sec: f64, ttl: Duration, clock: Arc<dyn Clock>) -> Self {
        Self {
            clock,
            tokens: Mutex::new(RetryTokens::new(ratio, min_per_sec, ttl)),
        }
    }

    /// Records a logical call: earns `ratio` of a resend.
    pub fn deposit(&self) {
        let now = self.clock.now();
        self.lock().deposit(now);
    }

    /// Takes one resend from the budget; `false` when none is left.
    pub fn withdraw(&self) -> bool {
        let now = self.clock.now();
        self.lock().withdraw(now)
    }

    /// Counts a withdrawal another budget (the fleet's) refused, so
    /// [`exhausted_count`](Self::exhausted_count) tells every refusal this
    /// process saw.
    pub(crate) fn count_refusal(&self) {
        self.lock().count_refusal();
    }

    /// How many withdrawals were refused so far.
    pub fn exhausted_count(&self) -> u64 {
        self.lock().exhausted()
    }

    /// What the budget holds now, read without spending: for a page or a
    /// report (the gateway's console shows it).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use recourse::ManualClock;
    /// use recourse::budget::RetryBudget;
    ///
    /// let budget = RetryBudget::with_clock(0.2, 0.0, Duration::from_secs(10), Arc::new(ManualClock::new()));
    /// for _ in 0..10 { budget.deposit(); }
    /// assert!(budget.withdraw());
    /// let now = budget.snapshot();
    /// assert_eq!(now.resends_left, 1);
    /// assert_eq!(now.ratio, 0.2);
    /// assert_eq!(budget.snapshot(), now, "reading spends nothing");
    /// ```
    pub fn snapshot(&self) -> BudgetSnapshot {
        let now = self.clock.now();
        let mut tokens = self.lock();
        BudgetSnapshot {
            ratio: tokens.ratio(),
            min_per_sec: tokens.min_per_sec(),
            ttl: tokens.ttl(),
            resends_left: tokens.resends_left(now),
            exhausted: tokens.exhausted(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, RetryTokens> {
        self.tokens.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A [`RetryBudget`] as it stands ([`RetryBudget::snapshot`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BudgetSnapshot {
    /// The share of a resend each call earns.
    pub ratio: f64,
    /// The resends allowed each second without any call earning them.
    pub min_per_sec: f64,
    /// How long earned resends are remembered (their decay's time constant).
    pub ttl: Duration,
    /// Whole resends the budget would allow now.
    pub resends_left: u64,
    /// Resends refused so far ([`RetryBudget::exhausted_count`]).
    pub exhausted: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use recourse_core::clock::ManualClock;

    fn budget(ratio: f64, floor: f64) -> (RetryBudget, ManualClock) {
        let clock = ManualClock::new();
        (
            RetryBudget::with_clock(
                ratio,
                floor,
                Duration::from_secs(10),
                Arc::new(clock.clone()),
            ),
            clock,
        )
    }

    #[test]
    fn floor_allows_a_trickle_without_deposits() {
        let (b, clock) = budget(0.2, 2.0);
        assert!(b.withdraw() && b.withdraw());
        assert!(!b.withdraw());
        clock.advance(Duration::from_millis(500));
        assert!(b.withdraw());
        assert!(!b.withdraw());
        assert_eq!(b.exhausted_count(), 2);
    }

    #[test]
    fn floor_does_not_accumulate_past_one_second() {
        let (b, clock) = budget(0.0, 3.0);
        clock.advance(Duration::from_secs(100));
        let granted = (0..10).filter(|_| b.withdraw()).count();
        assert_eq!(granted, 3);
    }

    #[test]
    fn earned_tokens_decay() {
        let (b, clock) = budget(1.0, 0.0);
        for _ in 0..10 {
            b.deposit();
        }
        clock.advance(Duration::from_secs(60));
        assert!(
            !b.withdraw(),
            "six time constants later almost nothing is left"
        );
    }

    #[test]
    fn resends_are_bounded_by_ratio_of_calls() {
        let (b, _) = budget(0.2, 0.0);
        let mut granted = 0;
        for _ in 0..1000 {
            b.deposit();
            granted += (0..3).filter(|_| b.withdraw()).count();
        }
        assert_eq!(granted, 200);
    }
}
