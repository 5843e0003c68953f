//! The journal: a write-ahead record of every logical call and attempt (protocol §5).
//!
//! # Why write ahead
//!
//! A process can die at any instruction — including between sending a payment
//! and reading its answer. If the record of the call is written only after the
//! answer, that call is simply lost: nobody knows a charge may have happened.
//! So the executor writes the call (with its idempotency key) and each attempt
//! *before* dispatch, and completes them after. After a crash, calls still
//! marked `in_flight` are exactly the ones whose outcome is unknown, and
//! `recourse journal reconcile` can settle them through their reconciler.
//!
//! The types and the [`Journal`] trait come from `recourse-core`, the stores
//! from `recourse-journal`: [`SqliteJournal`] (embedded, the default) and
//! [`PostgresJournal`] (for replicas sharing one record), behind the
//! `sqlite` and `postgres` features. Settling an open call — which needs the
//! transports to look it up or read it back — is here ([`settle_with`]), and so is the sweeper
//! that settles, while a server runs, the calls whose lease ran out ([`sweep`]) and
//! expires the approvals nobody decided in time ([`expire_due`]; asking and
//! deciding an approval are [`crate::approval`]'s), the loop that prunes old
//! calls ([`prune`]) and the one that holds a call's lease
//! ([`LeaseKeeper`]) — each waiting on an injected clock.

mod by_hand;
pub(crate) mod expiry;
mod lease;
mod prune;
mod settle;
mod sweep;

pub use by_hand::{HandSettleError, HandSettlement, MAX_NOTE, settle_by_hand, settleable};
pub use expiry::expire_due;
pub use lease::LeaseKeeper;
pub(crate) use lease::give_back;
pub use prune::{prune, prune_older_than, prune_older_than_at};
pub use recourse_core::journal::{
    ApprovalDecision, AttemptResult, AwaitingCall, CallState, Claimed, DEFAULT_CALLER, DecidedTo,
    Journal, JournalEntry, JournalError, JournalErrorKind, JournalResult, KeyClaim, ListQuery,
    MAX_LIST, NewCall, RecordJson, Seen, StateCounts, lease_until, rfc3339, rfc3339_now,
};
#[cfg(feature = "postgres")]
pub use recourse_journal::PostgresJournal;
#[cfg(feature = "sqlite")]
pub use recourse_journal::SqliteJournal;
pub use recourse_journal::open as open_journal;
pub use recourse_journal::open_existing as open_existing_journal;
pub use settle::{SettleOptions, SettledCall, settle, settle_with};
pub use sweep::{settle_expired, sweep, sweep_interval, sweep_once};

/// An id for this process, as the owner of the calls it runs (stable for the
/// process's life, distinct across restarts).
pub fn process_owner() -> &'static str {
    static OWNER: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    OWNER.get_or_init(|| format!("recourse-{}-{}", std::process::id(), uuid::Uuid::now_v7()))
}

/// `write`, given up (and so dropped: a journal cancels its statement) when
/// the call's time runs out first — a write before a dispatch decides
/// whether anything is sent, and a database that holds it (a locked table)
/// must fail the call within its deadline, not long after.
pub(crate) async fn within<T>(
    left: Option<std::time::Duration>,
    doing: &'static str,
    write: impl std::future::Future<Output = Result<T, JournalError>>,
) -> Result<T, JournalError> {
    match left {
        Some(left) => tokio::time::timeout(left, write).await.unwrap_or_else(|_| {
            Err(JournalError::new(
                JournalErrorKind::Operation,
                doing,
                "the call's deadline passed while the journal was writing",
            ))
        }),
        None => write.await,
    }
}
