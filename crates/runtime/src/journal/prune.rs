//! Keeping a journal small: finished calls removed once they are old.

use std::time::{Duration, SystemTime};

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
    let cutoff = SystemTime::now()
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
