//! The retry budget's arithmetic, as a state machine fed deposits and
//! withdrawals at the instant they happen.
//!
//! # Why a budget
//!
//! Per-call retry limits multiply load during an outage: with `max_retries = 3`
//! every failing call costs four dispatches, so a struggling tool sees four
//! times its normal traffic exactly when it can least take it. A budget shared
//! by every call caps the *fraction* of traffic that is resends instead: each
//! call deposits `ratio` of a token, each resend withdraws a whole one. With the
//! default ratio of 0.2, a total outage costs at most 1.2× the load plus a small
//! floor (`min_per_sec` tokens that refill each second, so a trickle of calls can
//! still retry). Earned tokens decay with time constant `ttl`, so a long quiet
//! spell does not bank an unbounded burst of resends, and a budget nobody used
//! for ten time constants starts again fresh.
//!
//! This follows the design of tower's `retry::budget`. The arithmetic is
//! here once, with no clock of its own: the runtime's `RetryBudget` feeds
//! it its clock's instants, and the fleet's budget in Redis runs the same
//! steps in Lua on the server's clock, in milliseconds — which is why the
//! time between two events counts here in milliseconds too (a property
//! test holds the two to the same decisions).

use std::time::{Duration, Instant};

/// One token, allowing for the rounding of repeated fractional deposits
/// (ten deposits of 0.2 sum to 1.999…).
const WHOLE: f64 = 1.0 - 1e-9;

/// How many decay constants an unused budget is kept before it starts again
/// fresh.
const KEPT_FOR_TTLS: u32 = 10;

/// The retry budget's tokens: what resends the calls so far have earned.
///
/// ```
/// use std::time::{Duration, Instant};
/// use recourse_core::budget::RetryTokens;
///
/// let mut tokens = RetryTokens::new(0.2, 0.0, Duration::from_secs(10));
/// let now = Instant::now();
/// for _ in 0..10 { tokens.deposit(now); }     // ten calls earn two resends
/// assert!(tokens.withdraw(now));
/// assert!(tokens.withdraw(now));
/// assert!(!tokens.withdraw(now));
/// assert_eq!(tokens.exhausted(), 1);
/// ```
#[derive(Debug, Clone)]
pub struct RetryTokens {
    ratio: f64,
    min_per_sec: f64,
    ttl: Duration,
    earned: f64,
    floor: f64,
    /// The last event; `None` before the first (a fresh budget).
    last: Option<Instant>,
    exhausted: u64,
}

impl RetryTokens {
    /// A budget earning `ratio` (clamped to `[0, 1000]`; 0.2 when not a
    /// number) of a resend per call, with a floor of `min_per_sec` (at least
    /// 0) resends a second, its earnings decaying with time constant `ttl`
    /// (in whole milliseconds, at least one).
    pub fn new(ratio: f64, min_per_sec: f64, ttl: Duration) -> Self {
        let ratio = if ratio.is_finite() {
            ratio.clamp(0.0, 1000.0)
        } else {
            0.2
        };
        let min_per_sec = if min_per_sec.is_finite() {
            min_per_sec.max(0.0)
        } else {
            0.0
        };
        let whole_ms = Duration::from_millis(u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX));
        Self {
            ratio,
            min_per_sec,
            ttl: whole_ms.max(Duration::from_millis(1)),
            earned: 0.0,
            floor: min_per_sec,
            last: None,
            exhausted: 0,
        }
    }

    /// Records a logical call at `now`: earns `ratio` of a resend.
    pub fn deposit(&mut self, now: Instant) {
        self.refresh(now);
        self.earned += self.ratio;
    }

    /// Takes one resend at `now` — from the floor first, then from what
    /// calls earned; `false` (and counted) when none is left.
    pub fn withdraw(&mut self, now: Instant) -> bool {
        self.refresh(now);
        if self.floor >= WHOLE {
            self.floor = (self.floor - 1.0).max(0.0);
        } else if self.earned >= WHOLE {
            self.earned = (self.earned - 1.0).max(0.0);
        } else {
            self.exhausted += 1;
            return false;
        }
        true
    }

    /// Counts a withdrawal another budget (the fleet's) refused, so
    /// [`exhausted`](Self::exhausted) tells every refusal seen.
    pub fn count_refusal(&mut self) {
        self.exhausted += 1;
    }

    /// Withdrawals refused so far.
    pub fn exhausted(&self) -> u64 {
        self.exhausted
    }

    /// Whole resends the budget would allow at `now`, spending none.
    pub fn resends_left(&mut self, now: Instant) -> u64 {
        self.refresh(now);
        let whole = |tokens: f64| {
            if tokens >= WHOLE {
                // Far below u64::MAX: a ratio of at most 1000 per call.
                (tokens + 1e-9).floor() as u64
            } else {
                0
            }
        };
        whole(self.floor) + whole(self.earned)
    }

    /// The share of a resend each call earns.
    pub fn ratio(&self) -> f64 {
        self.ratio
    }

    /// The resends allowed each second without any call earning them.
    pub fn min_per_sec(&self) -> f64 {
        self.min_per_sec
    }

    /// The decay's time constant, in whole milliseconds.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// How long a budget nobody uses is kept before it starts again fresh:
    /// ten decay constants (what is earned has decayed to e⁻¹⁰ of it by then).
    pub fn kept_for(&self) -> Duration {
        self.ttl.saturating_mul(KEPT_FOR_TTLS)
    }

    /// Brings the tokens to `now`: the floor refills at `min_per_sec` up to
    /// one second's worth, what was earned decays; a budget unused for
    /// [`kept_for`](Self::kept_for) starts again fresh (a full floor,
    /// nothing earned).
    fn refresh(&mut self, now: Instant) {
        let Some(last) = self.last else {
            self.last = Some(now);
            return;
        };
        let elapsed = now.saturating_duration_since(last);
        if elapsed.is_zero() {
            return;
        }
        if elapsed >= self.kept_for() {
            self.earned = 0.0;
            self.floor = self.min_per_sec;
        } else {
            // In milliseconds, the steps the fleet's script takes.
            let ms = elapsed.as_nanos() as f64 / 1e6;
            let ttl_ms = self.ttl.as_millis() as f64;
            self.floor = (self.floor + ms / 1000.0 * self.min_per_sec).min(self.min_per_sec);
            self.earned *= (-ms / ttl_ms).exp();
        }
        self.last = Some(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(t0: Instant, ms: u64) -> Instant {
        t0 + Duration::from_millis(ms)
    }

    /// (ratio, floor per second, what happens at which millisecond) →
    /// which withdrawals are granted.
    #[test]
    fn withdrawals_are_granted_by_the_floor_then_by_what_calls_earned() {
        #[derive(Clone, Copy)]
        enum E {
            D(u64),
            W(u64),
        }
        use E::{D, W};
        let cases: &[(f64, f64, &[E], &[bool])] = &[
            // Ten calls earn two resends.
            (
                0.2,
                0.0,
                &[
                    D(0),
                    D(0),
                    D(0),
                    D(0),
                    D(0),
                    D(0),
                    D(0),
                    D(0),
                    D(0),
                    D(0),
                    W(0),
                    W(0),
                    W(0),
                ],
                &[true, true, false],
            ),
            // A floor of two a second, refilled after half a second by one.
            (
                0.0,
                2.0,
                &[W(0), W(0), W(0), W(500), W(500)],
                &[true, true, false, true, false],
            ),
            // The floor never holds more than a second's worth.
            (
                0.0,
                3.0,
                &[W(100_000), W(100_000), W(100_000), W(100_000)],
                &[true, true, true, false],
            ),
            // What was earned decays: six time constants later, nothing.
            (
                1.0,
                0.0,
                &[D(0), D(0), D(0), D(0), D(0), W(60_000)],
                &[false],
            ),
            // One time constant later, e⁻¹ of 3 is left: one resend.
            (
                1.0,
                0.0,
                &[D(0), D(0), D(0), W(10_000), W(10_000)],
                &[true, false],
            ),
            // Ten time constants unused: fresh, its floor full.
            (
                5.0,
                1.0,
                &[D(0), W(0), W(0), W(100_000), W(100_000), W(100_000)],
                &[true, true, true, false, false],
            ),
        ];
        for (n, (ratio, floor, events, granted)) in cases.iter().enumerate() {
            let t0 = Instant::now();
            let mut tokens = RetryTokens::new(*ratio, *floor, Duration::from_secs(10));
            let mut got = Vec::new();
            for event in *events {
                match *event {
                    D(ms) => tokens.deposit(at(t0, ms)),
                    W(ms) => got.push(tokens.withdraw(at(t0, ms))),
                }
            }
            assert_eq!(&got, granted, "case {n}");
            let refused = granted.iter().filter(|g| !**g).count() as u64;
            assert_eq!(tokens.exhausted(), refused, "case {n}");
        }
    }

    #[test]
    fn resends_are_bounded_by_the_ratio_of_calls() {
        let now = Instant::now();
        let mut tokens = RetryTokens::new(0.2, 0.0, Duration::from_secs(10));
        let mut granted = 0;
        for _ in 0..1000 {
            tokens.deposit(now);
            granted += (0..3).filter(|_| tokens.withdraw(now)).count();
        }
        assert_eq!(granted, 200);
    }

    #[test]
    fn settings_are_clamped_and_reading_spends_nothing() {
        for (ratio, floor, ttl, expected) in [
            (
                f64::NAN,
                f64::NAN,
                Duration::ZERO,
                (0.2, 0.0, Duration::from_millis(1)),
            ),
            (
                5000.0,
                -1.0,
                Duration::from_micros(2500),
                (1000.0, 0.0, Duration::from_millis(2)),
            ),
            (
                0.5,
                2.0,
                Duration::from_secs(3),
                (0.5, 2.0, Duration::from_secs(3)),
            ),
        ] {
            let tokens = RetryTokens::new(ratio, floor, ttl);
            assert_eq!(
                (tokens.ratio(), tokens.min_per_sec(), tokens.ttl()),
                expected
            );
            assert_eq!(tokens.kept_for(), expected.2 * 10);
        }
        let now = Instant::now();
        let mut tokens = RetryTokens::new(0.5, 2.0, Duration::from_secs(10));
        tokens.deposit(now);
        tokens.deposit(now);
        assert_eq!(tokens.resends_left(now), 3);
        assert_eq!(tokens.resends_left(now), 3, "reading spends nothing");
    }
}
