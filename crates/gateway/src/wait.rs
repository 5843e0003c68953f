//! `Prefer: wait=N` on `GET /v1/calls/{call_id}`: answer once the call
//! leaves `awaiting_approval` or `in_flight`, or after N seconds.
//!
//! # Why wait, and why it is cheap
//!
//! An agent whose call waits for a person would otherwise ask again and
//! again. With `Prefer: wait=N` (RFC 7240), one request waits — at most 60
//! seconds — and is answered as soon as the call is decided or ends, with
//! `Preference-Applied: wait=N`. The wait holds no journal connection: it
//! reads the journal every [`POLL`] (a decision made on another replica
//! shows within it) and wakes at once when this gateway itself decides or
//! ends the call. At most [`MAX_WAITS`] requests wait at once; past that, a
//! request is answered at once, without `Preference-Applied`, and the
//! server's own limits (connections, requests in flight) bound the rest.

use std::time::Duration;

use axum::http::HeaderMap;
use axum::http::header::HeaderName;
use recourse::approval::refreshed;
use recourse::clock::Clock;
use recourse::journal::{CallState, Journal, JournalEntry, JournalError};
use tokio::sync::Notify;

/// The longest wait a request may ask for.
pub(crate) const MAX_WAIT: Duration = Duration::from_secs(60);
/// How many requests may wait at once.
pub(crate) const MAX_WAITS: usize = 128;
/// How often a waiting request reads the journal.
pub(crate) const POLL: Duration = Duration::from_millis(250);

/// The header a client states its preference in.
pub(crate) const PREFER: HeaderName = HeaderName::from_static("prefer");
/// The header the answer says which preference it applied in.
pub(crate) const PREFERENCE_APPLIED: HeaderName = HeaderName::from_static("preference-applied");

/// The wait `headers` prefer: the first `wait=N` of any `Prefer` header
/// (N whole seconds, quoted or not; its name in any case), at most
/// [`MAX_WAIT`]; `None` when there is none, it is zero, or it cannot be
/// read — a preference that cannot be honoured is ignored (RFC 7240).
pub(crate) fn preferred(headers: &HeaderMap) -> Option<Duration> {
    headers
        .get_all(PREFER)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .find_map(wait_of)
        .filter(|wait| !wait.is_zero())
}

/// `wait=N` of one preference (its parameters after `;` set aside).
fn wait_of(preference: &str) -> Option<Duration> {
    let head = preference.split(';').next()?.trim();
    let (name, value) = head.split_once('=')?;
    if !name.trim().eq_ignore_ascii_case("wait") {
        return None;
    }
    let value = value.trim().trim_matches('"');
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let secs = value.parse::<u64>().unwrap_or(u64::MAX);
    Some(Duration::from_secs(secs).min(MAX_WAIT))
}

/// `entry` as it stands now: an approval past its expiry expired.
pub(crate) async fn current(
    clock: &dyn Clock,
    journal: &dyn Journal,
    entry: JournalEntry,
) -> Result<JournalEntry, JournalError> {
    refreshed(journal, entry, clock.wall()).await
}

/// `entry`, read again until it leaves `awaiting_approval` or `in_flight`
/// or `wait` passes: whenever `changed` says this gateway changed a call,
/// and every [`POLL`] for what other replicas change; its expiry by `clock`. Once seen, the call
/// is answered whatever it becomes (an approver's view of another
/// caller's call among them).
pub(crate) async fn waited(
    clock: &dyn Clock,
    changed: &Notify,
    journal: &dyn Journal,
    mut entry: JournalEntry,
    wait: Duration,
) -> Result<JournalEntry, JournalError> {
    let until = tokio::time::Instant::now() + wait;
    loop {
        // Listening before reading: a change made after the read is heard.
        let heard = changed.notified();
        tokio::pin!(heard);
        heard.as_mut().enable();
        if let Some(again) = journal.get(&entry.call_id).await? {
            // An expiry that fell due meanwhile is applied as it is read.
            entry = current(clock, journal, again).await?;
        }
        let now = tokio::time::Instant::now();
        let moving = matches!(
            entry.state,
            CallState::AwaitingApproval | CallState::InFlight
        );
        if !moving || now >= until {
            return Ok(entry);
        }
        tokio::select! {
            () = &mut heard => {}
            () = tokio::time::sleep(POLL.min(until - now)) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    fn prefer(values: &[&'static str]) -> Option<u64> {
        let mut headers = HeaderMap::new();
        for v in values {
            headers.append(PREFER, HeaderValue::from_static(v));
        }
        preferred(&headers).map(|d| d.as_secs())
    }

    #[test]
    fn a_wait_is_read_from_any_preference_and_capped() {
        assert_eq!(prefer(&["wait=10"]), Some(10));
        assert_eq!(prefer(&["respond-async, Wait = \"5\"; x=y"]), Some(5));
        assert_eq!(prefer(&["return=minimal", "wait=7"]), Some(7));
        assert_eq!(prefer(&["wait=600"]), Some(60));
        assert_eq!(prefer(&["wait=99999999999999999999999"]), Some(60));
    }

    #[test]
    fn a_wait_that_cannot_be_read_is_ignored() {
        for bad in [
            "wait=0",
            "wait=-1",
            "wait=1.5",
            "wait=",
            "wait",
            "waiting=5",
            "wait=5s",
        ] {
            assert_eq!(prefer(&[bad]), None, "{bad}");
        }
        assert_eq!(prefer(&[]), None);
    }
}
