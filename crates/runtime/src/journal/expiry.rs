//! Expiry, applied lazily — as a call is read ([`refreshed`], [`find`]) —
//! and by the sweeper ([`expire_due`]): an approval nobody decided in time
//! ends its call `failed`, reason `approval_expired`, nothing sent.

use std::time::SystemTime;

use recourse_core::journal::{
    ApprovalDecision, CallState, DecidedTo, Journal, JournalEntry, JournalResult, ListQuery,
    MAX_LIST, RecordJson, rfc3339,
};
use recourse_core::policy::StopReason;
use recourse_core::record::{CallReport, Outcome};
use recourse_protocol::ToolError;

/// Which call's approval to find.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApprovalOf<'a> {
    /// The call with this id.
    Call(&'a str),
    /// The call under this caller key, as claimed (`NAME:KEY` for a
    /// gateway's named callers).
    Key(&'a str),
    /// The call held back by this approval.
    Approval(&'a str),
}

/// The call `of` names, its approval as it stands at `now` — an expiry due
/// applied first: its `approval` says whether it is pending, approved,
/// rejected or expired (`None` when it needed none), its state where the
/// call is. `None` when no such call is journaled.
///
/// # Errors
/// When the journal cannot be read or written.
pub async fn find(
    journal: &dyn Journal,
    of: ApprovalOf<'_>,
    now: SystemTime,
) -> JournalResult<Option<JournalEntry>> {
    let entry = match of {
        ApprovalOf::Call(id) => journal.get(id).await?,
        ApprovalOf::Key(key) => journal.get_by_key(key).await?,
        ApprovalOf::Approval(id) => journal.get_by_approval(id).await?,
    };
    match entry {
        Some(entry) => Ok(Some(refreshed(journal, entry, now).await?)),
        None => Ok(None),
    }
}

/// `entry` as it stands at `now`: when it awaits an approval past its
/// expiry, the expiry is applied (by whichever process reads it first) and
/// the entry read again; otherwise it is returned as it is.
///
/// # Errors
/// When the journal cannot be read or written.
pub async fn refreshed(
    journal: &dyn Journal,
    entry: JournalEntry,
    now: SystemTime,
) -> JournalResult<JournalEntry> {
    let at = rfc3339(now);
    if !entry.approval_is_due(&at) {
        return Ok(entry);
    }
    expire(journal, &entry, &at).await?;
    Ok(journal.get(&entry.call_id).await?.unwrap_or(entry))
}

/// Expires `entry`'s approval as of `at` (RFC 3339, UTC), if it is still
/// pending and due then; whether this write did.
pub(crate) async fn expire(
    journal: &dyn Journal,
    entry: &JournalEntry,
    at: &str,
) -> JournalResult<bool> {
    let Some(approval) = &entry.asked.approval else {
        return Ok(false);
    };
    let record = undispatched_record(entry, StopReason::ApprovalExpired, None);
    journal
        .decide_approval(&ApprovalDecision {
            approval_id: approval.id.clone(),
            by: None,
            note: None,
            at: at.to_owned(),
            to: DecidedTo::Expired(record),
        })
        .await
}

/// One sweep of approvals: every call awaiting an approval past its expiry
/// at `now` (at most [`MAX_LIST`] of them) is expired; how many this sweep
/// expired. What the sweeper a server runs does besides settling orphans.
///
/// # Errors
/// When the journal cannot be read or written.
pub async fn expire_due(journal: &dyn Journal, now: SystemTime) -> JournalResult<usize> {
    let query = ListQuery {
        state: Some(CallState::AwaitingApproval),
        limit: Some(MAX_LIST),
        ..ListQuery::default()
    };
    let at = rfc3339(now);
    let mut expired = 0;
    for entry in journal.list(&query).await? {
        if entry.approval_is_due(&at) && expire(journal, &entry, &at).await? {
            expired += 1;
        }
    }
    Ok(expired)
}

/// The record of an approval's call that ended undispatched, for `reason`
/// (`error`, when one says more): failed, nothing sent. Its `approval` is
/// added whenever it is read ([`JournalEntry::record_json`]).
pub(crate) fn undispatched_record(
    entry: &JournalEntry,
    reason: StopReason,
    error: Option<ToolError>,
) -> RecordJson {
    let mut report: CallReport = entry.report();
    report.outcome = Outcome::Failed { error, reason };
    RecordJson::of(&report).unwrap_or_else(|_| RecordJson::from(&report.to_json()))
}
