//! A person settles what recourse cannot: a call whose outcome is unknown
//! (or left in flight by a process that died) gets the state a person found
//! out — by looking at the tool, asking its owner — with who and why.

use std::time::{Duration, SystemTime};

use recourse_protocol::redact;

use super::{CallState, Journal, JournalEntry, JournalError, RecordJson, process_owner, rfc3339};
use recourse_core::policy::StopReason;
use recourse_core::record::{Outcome, SettledBy, Settlement};
use serde_json::Value;

/// The longest note a person's settlement keeps.
pub const MAX_NOTE: usize = 2000;

/// What a person found: the call's state, who they are, and how they know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HandSettlement {
    /// `succeeded` (the write took effect) or `failed` (it did not).
    pub state: CallState,
    /// Who settles it.
    pub who: String,
    /// How they know, in words (redacted as it is stored).
    pub note: String,
}

/// Why a call could not be settled by hand.
#[derive(Debug)]
pub enum HandSettleError {
    /// Only `succeeded` or `failed` settle a call.
    NotAState(CallState),
    /// The note is empty or over [`MAX_NOTE`] characters.
    BadNote,
    /// The call is not open: it finished (or is still running under a
    /// process's lease); its state now.
    NotSettleable(CallState),
    /// The journal could not be read or written.
    Journal(JournalError),
}

impl std::fmt::Display for HandSettleError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NotAState(state) => write!(
                f,
                "a call is settled as succeeded or failed, not {}",
                state.as_str()
            ),
            Self::BadNote => write!(f, "the note says how you know, in 1–{MAX_NOTE} characters"),
            Self::NotSettleable(CallState::InFlight) => f.write_str(
                "the call is still running (its process holds its lease): it cannot be settled by hand",
            ),
            Self::NotSettleable(state) => write!(
                f,
                "the call is {}: only an unknown call, or one left in flight past its lease, is settled by hand",
                state.as_str()
            ),
            Self::Journal(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for HandSettleError {}

impl From<JournalError> for HandSettleError {
    fn from(e: JournalError) -> Self {
        Self::Journal(e)
    }
}

/// Whether `entry` may be settled by hand at `now` (wall-clock time):
/// `unknown`, or `in_flight` with no lease holding it.
pub fn settleable(entry: &JournalEntry, now: SystemTime) -> bool {
    match entry.state {
        CallState::Unknown => true,
        CallState::InFlight => !entry.is_leased(now),
        // A call awaiting approval sent nothing: a person decides its approval instead.
        CallState::Succeeded | CallState::Failed | CallState::AwaitingApproval => false,
    }
}

/// Settles the call `call_id` as `settlement` says: taken over first (so
/// no settler races it), checked again, then finished with a record whose
/// `settlement` is `{"by": "person", "who", "note", "at"}`. The journaled
/// entry after it is returned; `None` when no call has the id.
///
/// # Errors
/// [`HandSettleError`]: a state that is not an end, a note that is not
/// 1–2000 characters, a call that is not open, or the journal failing.
pub async fn settle_by_hand(
    journal: &dyn Journal,
    call_id: &str,
    settlement: &HandSettlement,
    lease: Duration,
) -> Result<Option<JournalEntry>, HandSettleError> {
    if !matches!(settlement.state, CallState::Succeeded | CallState::Failed) {
        return Err(HandSettleError::NotAState(settlement.state));
    }
    let note = settlement.note.trim();
    if note.is_empty() || note.chars().count() > MAX_NOTE {
        return Err(HandSettleError::BadNote);
    }
    let Some(entry) = journal.get(call_id).await? else {
        return Ok(None);
    };
    let now = SystemTime::now();
    if !settleable(&entry, now) {
        return Err(HandSettleError::NotSettleable(entry.state));
    }
    if !journal.take_over(call_id, process_owner(), lease).await? {
        return Err(HandSettleError::NotSettleable(CallState::InFlight));
    }
    // Ours now; another settler may have finished it just before.
    let Some(entry) = journal.get(call_id).await? else {
        return Ok(None);
    };
    if !matches!(entry.state, CallState::Unknown | CallState::InFlight) {
        return Err(HandSettleError::NotSettleable(entry.state));
    }
    let outcome = match settlement.state {
        CallState::Succeeded => Outcome::Succeeded {
            data: Value::Null.into(),
        },
        _ => Outcome::Failed {
            error: None,
            reason: StopReason::NotCommitted,
        },
    };
    let settled = Settlement::new(SettledBy::Person, rfc3339(now))
        .with_who(settlement.who.clone())
        .with_note(redact(note));
    let record = RecordJson::from(&entry.settled_record(outcome, settled));
    journal
        .finish_call(call_id, settlement.state, None, Some(&record))
        .await?;
    Ok(journal.get(call_id).await?)
}
