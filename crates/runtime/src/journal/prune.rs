//! Keeping a journal small: finished calls removed once they are old.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use recourse_core::clock::Clock;
use recourse_core::timing::prune_every;

use super::{Journal, JournalResult, rfc3339};

/// How many calls one prune statement removes (a bound on how long it holds
/// the journal's writer).
const BATCH: u32 = 1000;

/// Removes every finished call (`succeeded` or `failed`) last changed more
/// than `older_than` ago, in batches; how many went. A call `in_flight` or
/// `unknown` is never removed. Its key is then free: a request with it
/// starts a new call.
///
/// # Errors
/// When the journal cannot be written (what was removed before stays removed).
pub async fn prune_older_than(journal: &dyn Journal, older_than: Duration) -> JournalResult<u64> {
    prune_older_than_at(journal, older_than, SystemTime::now()).await
}

/// [`prune_older_than`], "ago" counted from `now` (wall-clock time: a
/// clock's [`wall`](Clock::wall)).
///
/// # Errors
/// When the journal cannot be written (what was removed before stays removed).
pub async fn prune_older_than_at(
    journal: &dyn Journal,
    older_than: Duration,
    now: SystemTime,
) -> JournalResult<u64> {
    let cutoff = now
        .checked_sub(older_than)
        .unwrap_or(SystemTime::UNIX_EPOCH);
    let before = rfc3339(cutoff);
    let mut removed = 0;
    loop {
        let n = journal.prune(&before, BATCH).await?;
        removed += n;
        if n < u64::from(BATCH) {
            return Ok(removed);
        }
    }
}

/// Removes, for as long as it runs, the finished calls last changed more
/// than `retain` ago by `clock`'s wall time ([`prune_older_than_at`]): at
/// once, then every [`prune_every`] of `retain`, waiting on `clock`. It
/// never returns; spawn it. What it removed, or could not, is reported to
/// `report`, one line each.
pub async fn prune(
    journal: Arc<dyn Journal>,
    retain: Duration,
    clock: Arc<dyn Clock>,
    report: impl Fn(String) + Send + Sync + 'static,
) {
    let every = prune_every(retain);
    loop {
        match prune_older_than_at(journal.as_ref(), retain, clock.wall()).await {
            Ok(0) => {}
            Ok(n) => report(format!("pruned {n} finished call(s) older than {retain:?}")),
            Err(e) => report(format!("recourse: could not prune the journal: {e}")),
        }
        clock.sleep_in_background(every).await;
    }
}
