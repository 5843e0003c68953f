//! Every lease and `Retry-After` timing, in one place.
//!
//! # Why one module
//!
//! A lease is renewed every third of it, the sweeper looks every half of
//! it, a client told that a key's call is still running is asked to come
//! back in a third of it. Spelled where each is used — the executor, the
//! sweeper, the gateway's answer, the MCP proxy's — the same fraction was
//! written four times, and one of the four had already drifted (whole
//! seconds in one door, a fraction of a second in the other). So each
//! timing is a function of the setting it derives from, here, and every
//! loop and every door reads it from here. None reads a clock: the loops
//! wait on their injected [`Clock`](crate::clock::Clock) for what these
//! return.
//!
//! ```
//! use std::time::Duration;
//! use recourse_core::timing;
//!
//! let lease = Duration::from_secs(30);
//! assert_eq!(timing::renew_every(lease), Duration::from_secs(10));
//! assert_eq!(timing::sweep_every(lease), Duration::from_secs(15));
//! assert_eq!(timing::in_progress_retry_after(lease), Duration::from_secs(10));
//! assert_eq!(timing::JOURNAL_RETRY_AFTER, Duration::from_secs(1));
//! ```

use std::time::Duration;

/// The shortest wait between two renewals of a lease.
const MIN_RENEWAL: Duration = Duration::from_millis(10);

/// The shortest and longest wait between two prunes of a journal.
const PRUNE_BOUNDS: (Duration, Duration) = (Duration::from_secs(1), Duration::from_secs(3600));

/// How much longer than its timeout an attempt is given on a transport that
/// may not enforce the timeout itself.
const ATTEMPT_GUARD_SLACK: Duration = Duration::from_secs(1);

/// How long a client waits before sending again while the journal is away
/// (`Retry-After` of a `JOURNAL_UNAVAILABLE` refusal).
pub const JOURNAL_RETRY_AFTER: Duration = Duration::from_secs(1);

/// How long a tool's capability manifest that could not be read is taken
/// as unreadable before it is asked again — and so the `Retry-After` of a
/// `MANIFEST_UNAVAILABLE` refusal: a flood of calls asks once a second, and
/// one lost answer holds writes back for no longer.
pub const MANIFEST_RETRY_AFTER: Duration = Duration::from_secs(1);

/// How long an MCP client that takes tasks waits for a write before it is
/// answered with a task to poll instead: the write goes on, journaled.
pub const WRITE_TASK_AFTER: Duration = Duration::from_secs(1);

/// How often a client polls a task (`pollIntervalMs`): a third of the
/// lease, as often as the lease of a call running is renewed — nothing
/// about it changes faster — and at least every 100 ms apart.
pub fn task_poll_every(lease: Duration) -> Duration {
    (lease / 3).max(Duration::from_millis(100))
}

/// How often a held lease is renewed: every third of it (at least every
/// 10 ms), so two renewals can fail before it runs out.
pub fn renew_every(lease: Duration) -> Duration {
    (lease / 3).max(MIN_RENEWAL)
}

/// How often a sweeper looks for calls whose lease ran out: every half
/// lease, at least a second apart — an orphan is settled within its lease
/// and one interval.
pub fn sweep_every(lease: Duration) -> Duration {
    (lease / 2).max(Duration::from_secs(1))
}

/// How often finished calls older than `retain` are pruned: every tenth of
/// `retain`, at least a second and at most an hour apart.
pub fn prune_every(retain: Duration) -> Duration {
    (retain / 10).clamp(PRUNE_BOUNDS.0, PRUNE_BOUNDS.1)
}

/// The `Retry-After` of a key whose call is still running: a third of the
/// lease (the longest a renewal can be away), in whole seconds, at least one.
pub fn in_progress_retry_after(lease: Duration) -> Duration {
    Duration::from_secs((lease / 3).as_secs().max(1))
}

/// How long a call may spend asking its tool's manifest before it starts:
/// a quarter of the time `remaining` before its deadline, never more than
/// one attempt's timeout (`per_attempt`, also the budget of a call with no
/// deadline) — what is left is the call's own.
pub fn manifest_budget(remaining: Option<Duration>, per_attempt: Duration) -> Duration {
    remaining.map_or(per_attempt, |left| (left / 4).min(per_attempt))
}

/// How long an attempt allowed `timeout` is waited for on a transport that
/// may not enforce the timeout itself (an in-process tool that hangs): a
/// second more, so a transport that does enforce it always answers first.
pub fn attempt_guard(timeout: Duration) -> Duration {
    timeout.saturating_add(ATTEMPT_GUARD_SLACK)
}

/// The waits between the tries to give a key's claim back after its call
/// could not be journaled: six tries — one at once, then one after each
/// wait, from 100 ms doubling (3.1 s in all) — as the journal that has just
/// failed comes back. An iterator of durations, as
/// [`Backoff`](crate::backoff::Backoff) is.
///
/// ```
/// use std::time::Duration;
/// use recourse_core::timing::claim_give_back;
///
/// let waits: Vec<u64> = claim_give_back().map(|w| w.as_millis() as u64).collect();
/// assert_eq!(waits, [100, 200, 400, 800, 1600]);
/// ```
pub fn claim_give_back() -> ClaimGiveBack {
    ClaimGiveBack {
        next: Duration::from_millis(100),
        left: 5,
    }
}

/// The schedule of [`claim_give_back`].
#[derive(Debug, Clone)]
pub struct ClaimGiveBack {
    next: Duration,
    left: u32,
}

impl Iterator for ClaimGiveBack {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let wait = self.next;
        self.next = self.next.saturating_mul(2);
        Some(wait)
    }
}

/// The waits between the tries to write how a call ended to a journal
/// that did not take it, while its client waits: three more tries, after
/// 50, 100 and 200 ms (350 ms in all). A call whose outcome is still not
/// written then is answered, and its write goes on past the request
/// ([`outcome_write_later`]): the journal must come to hold what the client
/// was told, or a sweeper would settle as `unknown` a call that answered.
///
/// ```
/// use recourse_core::timing::outcome_write_now;
///
/// let waits: Vec<u64> = outcome_write_now().map(|w| w.as_millis() as u64).collect();
/// assert_eq!(waits, [50, 100, 200]);
/// ```
pub fn outcome_write_now() -> Doubling {
    Doubling {
        next: Duration::from_millis(50),
        cap: Duration::from_millis(200),
        left: Some(3),
    }
}

/// The waits between the tries of an outcome write that goes on past its
/// request ([`outcome_write_now`]): from 500 ms doubling to 10 s, then every
/// 10 s, without end — until the journal holds it.
///
/// ```
/// use recourse_core::timing::outcome_write_later;
///
/// let waits: Vec<u64> = outcome_write_later().take(7).map(|w| w.as_millis() as u64).collect();
/// assert_eq!(waits, [500, 1000, 2000, 4000, 8000, 10000, 10000]);
/// ```
pub fn outcome_write_later() -> Doubling {
    Doubling {
        next: Duration::from_millis(500),
        cap: Duration::from_secs(10),
        left: None,
    }
}

/// Waits that double up to a cap, a number of them or without end: the
/// schedule of [`outcome_write_now`] and [`outcome_write_later`].
#[derive(Debug, Clone)]
pub struct Doubling {
    next: Duration,
    cap: Duration,
    /// How many waits are left; `None` for no end.
    left: Option<u32>,
}

impl Iterator for Doubling {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        if let Some(left) = &mut self.left {
            *left = left.checked_sub(1)?;
        }
        let wait = self.next;
        self.next = self.next.saturating_mul(2).min(self.cap);
        Some(wait)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    const fn s(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    #[test]
    fn a_lease_is_renewed_every_third_of_it_at_most_every_ten_ms() {
        for (lease, every) in [
            (s(30), s(10)),
            (s(10), Duration::from_nanos(3_333_333_333)),
            (ms(30), ms(10)),
            (ms(9), ms(10)),
            (Duration::ZERO, ms(10)),
        ] {
            assert_eq!(renew_every(lease), every, "{lease:?}");
        }
    }

    #[test]
    fn a_task_is_polled_every_third_of_the_lease_at_most_every_100_ms() {
        for (lease, every) in [
            (s(30), s(10)),
            (s(3), s(1)),
            (ms(299), ms(100)),
            (Duration::ZERO, ms(100)),
        ] {
            assert_eq!(task_poll_every(lease), every, "{lease:?}");
        }
    }

    #[test]
    fn the_sweeper_looks_every_half_lease_at_least_a_second_apart() {
        for (lease, every) in [
            (s(30), s(15)),
            (s(3), ms(1500)),
            (ms(1999), s(1)),
            (ms(500), s(1)),
            (Duration::ZERO, s(1)),
        ] {
            assert_eq!(sweep_every(lease), every, "{lease:?}");
        }
    }

    #[test]
    fn a_journal_is_pruned_every_tenth_of_its_retention_within_a_second_and_an_hour() {
        for (retain, every) in [
            (s(100), s(10)),
            (s(5), s(1)),
            (s(7 * 24 * 3600), s(3600)),
            (s(36_000), s(3600)),
            (Duration::ZERO, s(1)),
        ] {
            assert_eq!(prune_every(retain), every, "{retain:?}");
        }
    }

    #[test]
    fn a_call_in_progress_is_asked_again_in_a_third_of_a_lease_in_whole_seconds() {
        for (lease, after) in [
            (s(30), s(10)),
            (s(10), s(3)),
            (ms(11_900), s(3)),
            (s(2), s(1)),
            (ms(100), s(1)),
            (Duration::ZERO, s(1)),
        ] {
            assert_eq!(in_progress_retry_after(lease), after, "{lease:?}");
        }
        assert_eq!(JOURNAL_RETRY_AFTER, s(1));
        assert_eq!(MANIFEST_RETRY_AFTER, s(1));
    }

    #[test]
    fn the_manifest_gets_a_quarter_of_the_time_left_never_more_than_an_attempt() {
        for (remaining, per_attempt, budget) in [
            (None, s(10), s(10)),
            (Some(s(60)), s(10), s(10)),
            (Some(s(20)), s(10), s(5)),
            (Some(ms(100)), s(10), ms(25)),
            (Some(Duration::ZERO), s(10), Duration::ZERO),
        ] {
            assert_eq!(
                manifest_budget(remaining, per_attempt),
                budget,
                "{remaining:?}, {per_attempt:?}"
            );
        }
    }

    #[test]
    fn an_unenforced_attempt_timeout_is_guarded_a_second_later() {
        for (timeout, guard) in [
            (s(10), s(11)),
            (ms(250), ms(1250)),
            (Duration::ZERO, s(1)),
            (Duration::MAX, Duration::MAX),
        ] {
            assert_eq!(attempt_guard(timeout), guard, "{timeout:?}");
        }
    }

    #[test]
    fn a_claim_is_given_back_in_six_tries_doubling_from_100_ms() {
        let waits: Vec<Duration> = claim_give_back().collect();
        assert_eq!(waits, [ms(100), ms(200), ms(400), ms(800), ms(1600)]);
        assert_eq!(waits.len() + 1, 6, "one try at once, one after each wait");
        assert_eq!(claim_give_back().sum::<Duration>(), ms(3100));
    }
}
