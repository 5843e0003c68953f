//! Deciding an approval: judged from what the journal holds, then written
//! only if it is still pending — exactly one decision wins.

use std::fmt;
use std::time::{Duration, SystemTime};

use recourse_core::approval::{Approval, ApprovalState, Decider, Decision, Judgement};
use recourse_core::journal::{
    ApprovalDecision, CallState, DecidedTo, Journal, JournalEntry, JournalError, rfc3339,
};
use recourse_core::policy::StopReason;
use recourse_protocol::{ToolError, redact};

use crate::call::CallSpec;
use crate::journal::expiry::{expire, refreshed, undispatched_record};
use crate::journal::{MAX_NOTE, process_owner};

/// A person's decision on an approval.
#[derive(Debug, Clone, Copy)]
pub struct Decide<'a> {
    /// The approval decided.
    pub approval_id: &'a str,
    /// Approve or reject.
    pub decision: Decision,
    /// Who decides (a gateway caller's name).
    pub by: &'a str,
    /// What they say, if anything (at most 2,000 characters; stored redacted).
    pub note: Option<&'a str>,
    /// The hash of the request they read, if they say: a decision about
    /// another request than the one awaiting approval is refused.
    pub request_sha256: Option<&'a str>,
    /// Whether the caller that asked may decide its own call (a one-person
    /// setup's `--allow-self-approval`); otherwise it is refused.
    pub self_approval_allowed: bool,
    /// Who sends an approved call, when the deciding process says: an MCP
    /// proxy deciding in its client holds the call's server, and sends it
    /// itself even when another process asked (one that has stopped since).
    /// `None`: the asker when it sends its own calls, else this process.
    pub dispatcher: Option<&'a str>,
}

/// A decision that was applied.
#[derive(Debug, Clone, PartialEq)]
pub struct Decided {
    /// The approval as decided.
    pub approval: Approval,
    /// The call after it: in flight (approved: held by its dispatcher's
    /// lease — this process's, or the asker's when it must send it) or
    /// failed (rejected).
    pub entry: JournalEntry,
    /// With an approval: the request to dispatch now, exactly once, by this
    /// process alone — its `approval` taken out. `None` after a rejection,
    /// for a call its asker sends (an MCP proxy's), and when the kept
    /// request could not be read (then the call was ended `failed`, nothing
    /// sent).
    pub dispatch: Option<CallSpec>,
}

/// Why a decision was not applied.
#[derive(Debug)]
pub enum DecideError {
    /// No approval has this id.
    NotFound,
    /// The note is over 2,000 characters.
    BadNote,
    /// The hash the approver read is not the pending request's: nothing changed.
    Stale(Box<Approval>),
    /// The caller that asked may not decide its own call: nothing changed.
    SelfApproval,
    /// It was decided already (another decision came first, or it expired):
    /// the approval as it stands.
    AlreadyDecided(Box<Approval>),
    /// The journal could not be read or written.
    Journal(JournalError),
}

impl fmt::Display for DecideError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotFound => f.write_str("no approval with this id"),
            Self::BadNote => write!(f, "a note is at most {MAX_NOTE} characters"),
            Self::Stale(_) => f.write_str(
                "the request awaiting approval is not the one whose request_sha256 was given: \
                 read it again before deciding",
            ),
            Self::SelfApproval => f.write_str(
                "the caller that asked for this approval may not decide it: another approver must \
                 (a one-person setup allows it with --allow-self-approval)",
            ),
            Self::AlreadyDecided(approval) => {
                write!(f, "the approval is {} already", approval.state)
            }
            Self::Journal(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for DecideError {}

impl From<JournalError> for DecideError {
    fn from(e: JournalError) -> Self {
        Self::Journal(e)
    }
}

/// Applies `decide` at `now` (the wall clock: pass the injected clock's
/// [`wall`](recourse_core::clock::Clock::wall)): judged from the journal's
/// entry ([`Approval::judge`]), then written only while the approval is
/// still pending. An approval puts the call in flight under this process
/// and a lease of `lease`, and hands back the request to dispatch; a
/// rejection ends it `failed` (reason `approval_rejected`), nothing sent.
/// An approval found past its expiry is expired instead, and the decision
/// refused as [`AlreadyDecided`](DecideError::AlreadyDecided).
///
/// # Errors
/// [`DecideError`]: no such approval, a note too long, a stale hash, a
/// decided (or expired) approval, or the journal failing.
pub async fn decide(
    journal: &dyn Journal,
    decide: &Decide<'_>,
    now: SystemTime,
    lease: Duration,
) -> Result<Decided, DecideError> {
    apply(journal, decide, now, lease, StopReason::ApprovalRejected).await
}

/// Withdraws, for the caller that asked (`by`), a call still awaiting
/// approval: its approval rejected and the call ended `failed` with reason
/// `cancelled`, nothing sent — what an MCP client's `tasks/cancel` does.
/// A call decided already is not withdrawn
/// ([`AlreadyDecided`](DecideError::AlreadyDecided)): approved, it may be
/// on its way to the tool.
///
/// # Errors
/// As [`decide`].
pub async fn withdraw(
    journal: &dyn Journal,
    approval_id: &str,
    by: &str,
    now: SystemTime,
) -> Result<Decided, DecideError> {
    let withdrawing = Decide {
        approval_id,
        decision: Decision::Reject,
        by,
        note: Some("withdrawn by the client that asked"),
        request_sha256: None,
        // Taking back one's own call sends nothing.
        self_approval_allowed: true,
        dispatcher: None,
    };
    apply(
        journal,
        &withdrawing,
        now,
        Duration::ZERO,
        StopReason::Cancelled,
    )
    .await
}

/// [`decide`], a rejection ending the call for `rejected_as`.
async fn apply(
    journal: &dyn Journal,
    decide: &Decide<'_>,
    now: SystemTime,
    lease: Duration,
    rejected_as: StopReason,
) -> Result<Decided, DecideError> {
    let note = match decide.note.map(str::trim).filter(|n| !n.is_empty()) {
        Some(note) if note.chars().count() > MAX_NOTE => return Err(DecideError::BadNote),
        note => note.map(redact),
    };
    let at = rfc3339(now);
    let entry = found(journal.get_by_approval(decide.approval_id).await?)?;
    let approval = entry.asked.approval.clone().ok_or(DecideError::NotFound)?;
    // A call recorded without a caller (a stdio proxy's, a library's) was
    // asked by nobody who could decide it.
    let decider = match entry.caller.as_deref() {
        Some(asker) => Decider::of(decide.by, asker, decide.self_approval_allowed),
        None => Decider::Another,
    };
    let to = match approval.judge(decide.decision, decide.request_sha256, &at, decider) {
        Judgement::AlreadyDecided(_) => {
            return Err(DecideError::AlreadyDecided(Box::new(approval)));
        }
        Judgement::SelfApproval => return Err(DecideError::SelfApproval),
        Judgement::Stale => return Err(DecideError::Stale(Box::new(approval))),
        Judgement::Expire => {
            expire(journal, &entry, &at).await?;
            return Err(settled(journal, decide.approval_id, now).await);
        }
        Judgement::Decide(ApprovalState::Rejected) => {
            DecidedTo::Rejected(undispatched_record(&entry, rejected_as, None))
        }
        // Approved: in flight under its dispatcher's lease — the asker's,
        // when it must send it (a proxy holding the upstream), else this
        // process's.
        Judgement::Decide(_) => DecidedTo::Approved {
            owner: decide
                .dispatcher
                .or(entry.lease.owner.as_deref())
                .unwrap_or_else(|| process_owner())
                .to_owned(),
            lease,
        },
    };
    let decision = ApprovalDecision {
        approval_id: decide.approval_id.to_owned(),
        by: Some(decide.by.to_owned()),
        note,
        at,
        to,
    };
    if !journal.decide_approval(&decision).await? {
        // Another decision came first (or the expiry did).
        return Err(settled(journal, decide.approval_id, now).await);
    }
    let entry = found(journal.get_by_approval(decide.approval_id).await?)?;
    let approval = entry.asked.approval.clone().ok_or(DecideError::NotFound)?;
    let dispatch = match &decision.to {
        DecidedTo::Approved { owner, .. } if owner == process_owner() => {
            approved_request(journal, &entry).await?
        }
        // Another process sends it: the one that asked, and holds its server.
        DecidedTo::Approved { .. } | DecidedTo::Rejected(_) | DecidedTo::Expired(_) => None,
    };
    Ok(Decided {
        approval,
        entry,
        dispatch,
    })
}

fn found(entry: Option<JournalEntry>) -> Result<JournalEntry, DecideError> {
    entry.ok_or(DecideError::NotFound)
}

/// The refusal for a decision that came second: the approval as it stands
/// (an expiry due applied first).
async fn settled(journal: &dyn Journal, approval_id: &str, now: SystemTime) -> DecideError {
    let entry = match journal.get_by_approval(approval_id).await {
        Ok(Some(entry)) => entry,
        Ok(None) => return DecideError::NotFound,
        Err(e) => return DecideError::Journal(e),
    };
    match refreshed(journal, entry, now).await {
        Ok(entry) => match entry.asked.approval {
            Some(approval) => DecideError::AlreadyDecided(Box::new(approval)),
            None => DecideError::NotFound,
        },
        Err(e) => DecideError::Journal(e),
    }
}

/// The request an approval lets go, its `approval` taken out; a kept
/// request that cannot be read ends the call undispatched.
async fn approved_request(
    journal: &dyn Journal,
    entry: &JournalEntry,
) -> Result<Option<CallSpec>, JournalError> {
    let spec = entry
        .asked
        .request
        .clone()
        .and_then(|request| serde_json::from_value::<CallSpec>(request).ok());
    match spec {
        Some(mut spec) => {
            spec.approval = None;
            Ok(Some(spec))
        }
        None => {
            let unreadable = ToolError::service_error(
                "APPROVED_REQUEST_UNREADABLE",
                "the journal holds no request this process can read for the approved call",
            );
            end_undispatched(journal, &entry.call_id, unreadable).await?;
            Ok(None)
        }
    }
}

/// Ends an approved call that could not be dispatched (its request could
/// not be built again: a target no longer allowed, an MCP server that does
/// not start) as `failed` with `error` — reason `invalid_call`, nothing
/// sent — letting its request and lease go.
///
/// # Errors
/// When the journal cannot be read or written.
pub async fn end_undispatched(
    journal: &dyn Journal,
    call_id: &str,
    error: ToolError,
) -> Result<(), JournalError> {
    let Some(entry) = journal.get(call_id).await? else {
        return Ok(());
    };
    if entry.state != CallState::InFlight || entry.attempts > 0 {
        return Ok(());
    }
    let record = undispatched_record(&entry, StopReason::InvalidCall, Some(error.redacted()));
    journal
        .finish_call(call_id, CallState::Failed, None, Some(&record))
        .await
}
