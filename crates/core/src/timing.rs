//! Every timing a door or a loop keeps around a journaled call, in one place:
//! how long a client waits before asking again, how often a lease is renewed.

use std::time::Duration;

/// How long a client waits before sending again while the journal is away.
pub const JOURNAL_RETRY_AFTER: Duration = Duration::from_secs(1);

/// How long a client waits before asking again for a keyed call still
/// running: a third of its lease, at least a second, in whole seconds.
pub fn in_progress_retry_after(lease: Duration) -> Duration {
    Duration::from_secs((lease.as_secs() / 3).max(1))
}

/// How long a call may spend asking its tool's capability manifest: a
/// quarter of the time left (`remaining`, when the call has a deadline),
/// never more than one attempt may take.
pub fn manifest_budget(remaining: Option<Duration>, per_attempt: Duration) -> Duration {
    remaining.map_or(per_attempt, |left| (left / 4).min(per_attempt))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_manifest_gets_a_quarter_of_what_is_left_at_most_an_attempt() {
        let s = Duration::from_secs;
        for (remaining, per_attempt, budget) in [
            (None, s(30), s(30)),
            (Some(s(120)), s(30), s(30)),
            (Some(s(40)), s(30), s(10)),
            (Some(s(0)), s(30), s(0)),
        ] {
            assert_eq!(manifest_budget(remaining, per_attempt), budget);
        }
    }

    #[test]
    fn a_running_calls_wait_is_a_third_of_its_lease_in_whole_seconds() {
        for (lease, wait) in [(30, 10), (31, 10), (2, 1), (0, 1), (300, 100)] {
            assert_eq!(
                in_progress_retry_after(Duration::from_secs(lease)),
                Duration::from_secs(wait),
                "lease {lease}"
            );
        }
    }
}
