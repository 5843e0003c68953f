//! Backoff as an iterator of durations.
//!
//! # Why full jitter
//!
//! When a tool falls over, every agent calling it fails at once. If they all
//! wait the same exponential schedule, they come back at once too, and knock it
//! over again. "Full jitter" draws each wait uniformly from zero to the
//! exponential ceiling, which spreads the herd out while keeping the expected
//! load low. The ceiling doubles per attempt from `base` up to `max`.
//!
//! The jitter comes from a small seeded generator, so a test (or an evaluation
//! run) that fixes the seed gets the same waits every time.

use std::time::Duration;

/// Full-jitter exponential backoff: attempt `n` waits a uniform draw from
/// `[0, min(max, base · 2ⁿ)]`.
///
/// ```
/// use std::time::Duration;
/// use recourse_core::backoff::Backoff;
///
/// let waits: Vec<_> = Backoff::full_jitter(Duration::from_millis(100), Duration::from_secs(1))
///     .with_seed(7)
///     .take(6)
///     .collect();
/// assert!(waits.iter().all(|w| *w <= Duration::from_secs(1)));
/// assert!(waits[0] <= Duration::from_millis(100));
/// ```
#[derive(Debug, Clone)]
pub struct Backoff {
    base: Duration,
    max: Duration,
    attempt: u32,
    rng: SplitMix64,
}

impl Backoff {
    /// Full jitter from `base`, capped at `max`, seeded from the system clock.
    pub fn full_jitter(base: Duration, max: Duration) -> Self {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0x5eed, |d| d.as_nanos() as u64);
        Self {
            base,
            max,
            attempt: 0,
            rng: SplitMix64(seed),
        }
    }

    /// Full jitter from `base`, capped at `max`, its jitter drawn from `seed`
    /// (the clock is not read).
    pub fn seeded(base: Duration, max: Duration, seed: u64) -> Self {
        Self {
            base,
            max,
            attempt: 0,
            rng: SplitMix64(seed),
        }
    }

    /// Fixes the jitter's seed, for reproducible schedules.
    #[must_use]
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.rng = SplitMix64(seed);
        self
    }

    /// The ceiling for attempt `n`: `min(max, base · 2ⁿ)`.
    pub fn ceiling(&self, attempt: u32) -> Duration {
        let factor = 1u32.checked_shl(attempt.min(31)).unwrap_or(u32::MAX);
        self.base.saturating_mul(factor).min(self.max)
    }
}

impl Iterator for Backoff {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        let ceiling = self.ceiling(self.attempt);
        self.attempt = self.attempt.saturating_add(1);
        let nanos = ceiling.as_nanos().min(u128::from(u64::MAX)) as u64;
        let draw = if nanos == 0 {
            0
        } else {
            self.rng.next() % (nanos + 1)
        };
        Some(Duration::from_nanos(draw))
    }
}

/// SplitMix64: tiny, fast, good enough for jitter; not for anything secret.
#[derive(Debug, Clone)]
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ceilings_double_then_cap() {
        let b = Backoff::full_jitter(Duration::from_millis(100), Duration::from_millis(700));
        let ceilings: Vec<_> = (0..5).map(|n| b.ceiling(n).as_millis()).collect();
        assert_eq!(ceilings, vec![100, 200, 400, 700, 700]);
        assert_eq!(b.ceiling(200), Duration::from_millis(700));
    }

    #[test]
    fn draws_stay_under_their_ceiling() {
        let b =
            Backoff::full_jitter(Duration::from_millis(50), Duration::from_secs(2)).with_seed(1);
        for (n, wait) in b.clone().take(40).enumerate() {
            assert!(wait <= b.ceiling(n as u32), "attempt {n}: {wait:?}");
        }
    }

    #[test]
    fn the_same_seed_gives_the_same_schedule() {
        let a: Vec<_> = Backoff::full_jitter(Duration::from_secs(1), Duration::from_secs(30))
            .with_seed(9)
            .take(8)
            .collect();
        let b: Vec<_> = Backoff::full_jitter(Duration::from_secs(1), Duration::from_secs(30))
            .with_seed(9)
            .take(8)
            .collect();
        let c: Vec<_> = Backoff::full_jitter(Duration::from_secs(1), Duration::from_secs(30))
            .with_seed(10)
            .take(8)
            .collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn zero_base_never_waits() {
        assert!(
            Backoff::full_jitter(Duration::ZERO, Duration::from_secs(1))
                .take(5)
                .all(|w| w.is_zero())
        );
    }
}
