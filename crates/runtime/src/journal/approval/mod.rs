//! Approvals in the journal: a call held for a person's decision before its
//! first dispatch — asked ([`ask`]), decided ([`decide`]), followed
//! ([`find`]) and expired ([`expire_due`]) — by whichever process shares
//! the journal.
//!
//! # Why the journal holds the request
//!
//! The person who decides may do so on another replica than the one that
//! was asked, hours later, after restarts. So the call is journaled as
//! `awaiting_approval` with the request to dispatch once approved — the
//! request as its caller sent it, as the door that asked keeps it (the
//! gateway: its `POST /v1/calls` body). Nothing the door resolves from its
//! own configuration (a settling lookup's headers, an MCP server's
//! environment) is in it: whoever dispatches resolves those again. The
//! request stays until the call ends — a rejection, an expiry, or the end
//! of its dispatch — and is then let go.
//!
//! The decision is one conditional write: it applies only while the
//! approval is pending (and, for an approval, before its expiry), so of two
//! decisions at once exactly one wins. An approval takes the call in flight
//! under the decider's lease; the decider alone dispatches it, once. If it
//! dies before the call's first attempt, the sweeper finds the call in
//! flight with no attempt and settles it `failed` — nothing was sent, and
//! nothing ever is without a new decision.

mod ask;
mod decide;
mod expire;

pub use ask::{AskApproval, Asked, ask};
pub use decide::{Decide, DecideError, Decided, decide, end_undispatched};
pub use expire::{ApprovalOf, expire_due, find, refreshed};

use recourse_core::journal::{JournalEntry, RecordJson};
use recourse_core::policy::StopReason;
use recourse_core::record::{CallReport, Outcome};
use recourse_protocol::ToolError;

/// The record of an approval call that ended undispatched, for `reason`
/// (`error`, when one says more): failed, nothing sent. Its `approval` is
/// added whenever it is read ([`JournalEntry::record_json`]).
fn undispatched_record(
    entry: &JournalEntry,
    reason: StopReason,
    error: Option<ToolError>,
) -> RecordJson {
    let mut report: CallReport = entry.report();
    report.outcome = Outcome::Failed { error, reason };
    RecordJson::of(&report).unwrap_or_else(|_| RecordJson::from(&report.to_json()))
}
