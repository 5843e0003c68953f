//! What a request under a caller's idempotency key gets when the journal
//! already holds the key: the answer of every door, decided once.
//!
//! # Why one function
//!
//! A keyed request reaches recourse through the executor, the gateway's
//! approval hold and the MCP proxy. Each must answer a resend the same way —
//! the first call's record (`replay`), a wait while it runs (`in
//! progress`), a refusal when the key names another request (`key
//! reused`), or — for a call that never sent anything and has no result of
//! its own — running it now under its id (`take over`). Written in each
//! door, those rules drift; so the answer is [`keyed_answer`], a function
//! of the entry's typed fields, the request's digest and caller, and the
//! time, and the doors only carry it out.
//!
//! A key is its caller's: a request from another caller than the one whose
//! call holds the key (compared by identity, not by the text of the key —
//! two gateways may scope keys differently over one journal) is answered as
//! a reused key, never with the other caller's record.

use std::time::SystemTime;

use super::{CallState, DEFAULT_CALLER, JournalEntry};
use crate::record::SettledBy;

/// What a keyed request gets from the entry that holds its key
/// ([`keyed_answer`]).
#[must_use = "the answer is what the door does next"]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyedAnswer {
    /// The key's call ended, or its process stopped and its lease ran out:
    /// its record ([`JournalEntry::record_json`]), standing in `state` — the
    /// journal's, with a call left in flight answered as `unknown` (it may
    /// have written). Nothing is dispatched.
    Replay {
        /// Where the call stands, as the request is answered.
        state: CallState,
    },
    /// The key's call is running in some process (its lease holds): ask
    /// again later.
    InProgress,
    /// The key belongs to a different request, or another caller's.
    KeyReused,
    /// The same request, whose call never sent anything and has no result
    /// of its own: take the call over (its lease) and run it under its id.
    /// Running it cannot write twice.
    TakeOver,
}

/// The answer to a request with digest `request_hash` from `caller` (as
/// calls record it: `None` without one, which is [`DEFAULT_CALLER`]'s, as
/// [`JournalEntry::caller`] reads it) under a key whose call is `entry`,
/// at `now` (the injected clock's [`wall`](crate::clock::Clock::wall)
/// time, against which the call's lease is read).
///
/// ```
/// use std::time::{Duration, SystemTime};
/// use recourse_core::journal::{CallState, JournalEntry, KeyedAnswer, keyed_answer, rfc3339};
///
/// let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
/// let mut entry = JournalEntry::new("c-1", CallState::InFlight);
/// entry.replay.request_hash = Some("digest".into());
/// entry.attempts = 1;
/// entry.lease.until = Some(rfc3339(now + Duration::from_secs(30)));
/// entry.caller = Some("agent".into());
/// let agent = Some("agent");
/// assert_eq!(keyed_answer(&entry, "digest", agent, now), KeyedAnswer::InProgress);
/// assert_eq!(keyed_answer(&entry, "another", agent, now), KeyedAnswer::KeyReused);
/// // The same key and request from another caller is not this call's.
/// assert_eq!(keyed_answer(&entry, "digest", Some("default"), now), KeyedAnswer::KeyReused);
/// // Its process died; the lease ran out: it may have written.
/// let later = now + Duration::from_secs(31);
/// assert_eq!(keyed_answer(&entry, "digest", agent, later), KeyedAnswer::Replay { state: CallState::Unknown });
/// // Had it sent nothing, it would run now.
/// entry.attempts = 0;
/// assert_eq!(keyed_answer(&entry, "digest", agent, later), KeyedAnswer::TakeOver);
/// ```
pub fn keyed_answer(
    entry: &JournalEntry,
    request_hash: &str,
    caller: Option<&str>,
    now: SystemTime,
) -> KeyedAnswer {
    if entry.replay.request_hash.as_deref() != Some(request_hash)
        || entry.caller() != caller.unwrap_or(DEFAULT_CALLER)
    {
        return KeyedAnswer::KeyReused;
    }
    if never_sent_nor_answered(entry, now) {
        return KeyedAnswer::TakeOver;
    }
    match entry.state {
        CallState::InFlight if entry.is_leased(now) => KeyedAnswer::InProgress,
        CallState::InFlight => KeyedAnswer::Replay {
            state: CallState::Unknown,
        },
        state => KeyedAnswer::Replay { state },
    }
}

/// Whether a key's call never sent anything and has no result of its own:
/// left in flight with no attempt recorded (an attempt is recorded before
/// it is sent) by a run that stopped, its lease run out; or settled
/// `failed` by the journal — by a sweeper that found no attempt, or by its
/// own run, which the journal stopped before it sent one. That run knows
/// what it sent better than its write-ahead count does: an attempt's record
/// whose answer the database lost (committed, the connection cut before
/// the reply) counts one that never went out.
fn never_sent_nor_answered(entry: &JournalEntry, now: SystemTime) -> bool {
    match entry.state {
        CallState::InFlight => entry.attempts == 0 && !entry.is_leased(now),
        CallState::Failed => entry.ended.settled_by == Some(SettledBy::Journal),
        // Never sent, but it waits for a person: their decision stands.
        CallState::Succeeded | CallState::Unknown | CallState::AwaitingApproval => false,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::journal::rfc3339;

    fn entry(
        state: CallState,
        attempts: u32,
        lease: Option<SystemTime>,
        settled_by: Option<SettledBy>,
    ) -> JournalEntry {
        let mut entry = JournalEntry::new("c-1", state);
        entry.replay.request_hash = Some("h".into());
        entry.attempts = attempts;
        entry.lease.until = lease.map(rfc3339);
        entry.ended.settled_by = settled_by;
        entry
    }

    /// Every state, with and without attempts, leased or not, and each way
    /// a failed call can have been settled: only a call that sent nothing
    /// and has no result of its own is taken over; a call whose lease holds
    /// is in progress; everything else is replayed, a call left in flight as
    /// unknown; another request's digest is a reused key, whatever the call.
    #[test]
    fn a_keyed_request_is_answered_from_the_entry_s_typed_fields() {
        use CallState::{AwaitingApproval, Failed, InFlight, Succeeded, Unknown};
        use KeyedAnswer::{InProgress, Replay, TakeOver};
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let (past, future) = (
            Some(now - Duration::from_secs(1)),
            Some(now + Duration::from_secs(1)),
        );
        let (journal, person, lookup) = (
            Some(SettledBy::Journal),
            Some(SettledBy::Person),
            Some(SettledBy::Lookup),
        );
        let replay = |state| Replay { state };
        let cases = [
            (entry(InFlight, 0, past, None), TakeOver),
            (entry(InFlight, 0, None, None), TakeOver),
            (entry(InFlight, 0, Some(now), None), TakeOver),
            (entry(InFlight, 0, future, None), InProgress),
            (entry(InFlight, 1, future, None), InProgress),
            (entry(InFlight, 1, past, None), replay(Unknown)),
            (entry(Failed, 0, None, journal), TakeOver),
            (entry(Failed, 0, None, person), replay(Failed)),
            (entry(Failed, 0, None, lookup), replay(Failed)),
            (entry(Failed, 0, None, None), replay(Failed)),
            // Its run, stopped by the journal before it sent attempt 1, whose
            // record the database committed but whose answer it lost.
            (entry(Failed, 1, None, journal), TakeOver),
            (entry(Unknown, 0, None, None), replay(Unknown)),
            (entry(Succeeded, 0, None, None), replay(Succeeded)),
            (entry(Succeeded, 1, None, None), replay(Succeeded)),
            (
                entry(AwaitingApproval, 0, None, None),
                replay(AwaitingApproval),
            ),
        ];
        for (entry, expected) in cases {
            assert_eq!(keyed_answer(&entry, "h", None, now), expected, "{entry:?}");
            assert_eq!(
                keyed_answer(&entry, "other", None, now),
                KeyedAnswer::KeyReused,
                "{entry:?}"
            );
            // Another caller's key, whatever its text and state.
            let mut agents = entry.clone();
            agents.caller = Some("agentA".into());
            assert_eq!(keyed_answer(&agents, "h", Some("agentA"), now), expected);
            for other in [None, Some("default"), Some("agentB")] {
                // (`None` is `default`: as the journal's views read it.)
                assert_eq!(
                    keyed_answer(&agents, "h", other, now),
                    KeyedAnswer::KeyReused,
                    "{other:?}: {entry:?}"
                );
            }
            assert_eq!(
                keyed_answer(&entry, "h", Some("agentA"), now),
                KeyedAnswer::KeyReused
            );
            assert_eq!(
                keyed_answer(&entry, "h", Some(DEFAULT_CALLER), now),
                expected
            );
        }
        let mut unhashed = entry(Succeeded, 1, None, None);
        unhashed.replay.request_hash = None;
        assert_eq!(
            keyed_answer(&unhashed, "h", None, now),
            KeyedAnswer::KeyReused
        );
    }
}
