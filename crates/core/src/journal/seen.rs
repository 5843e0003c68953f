//! Which calls a list asks for, and whose a viewer sees: [`ListQuery`], [`Seen`].

use super::*;

/// Which calls to list: newest first, at most `limit`, older than `before`,
/// only those `seen` admits.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListQuery {
    /// Only calls in this state.
    pub state: Option<CallState>,
    /// At most this many.
    pub limit: Option<u32>,
    /// Only calls whose id sorts before this one (call ids are time-ordered).
    pub before: Option<String>,
    /// Only calls this viewer may see.
    pub seen: Seen,
}

/// Whose calls a viewer sees: what a list returns, and which single call a
/// gateway shows (one it does not see is answered as absent).
///
/// ```
/// use recourse_core::journal::{CallState, Seen};
///
/// let mine = Seen::Own("agent".into());
/// assert!(mine.admits("agent", CallState::Succeeded));
/// assert!(!mine.admits("ops", CallState::Unknown));
/// let approver = Seen::OwnAndInDoubt("ops".into());
/// assert!(approver.admits("agent", CallState::Unknown));
/// assert!(approver.admits("agent", CallState::AwaitingApproval));
/// assert!(!approver.admits("agent", CallState::Succeeded));
/// assert!(Seen::All.admits("agent", CallState::Failed));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Seen {
    /// Every caller's calls (an admin; a journal read on its own machine).
    #[default]
    All,
    /// The named caller's own calls.
    Own(String),
    /// The named caller's own calls, every caller's call in doubt
    /// (`unknown`) or awaiting approval (`awaiting_approval`), and the calls
    /// whose approval they decided: what an approver sees, to settle or
    /// decide a call, and to follow what they decided.
    OwnAndInDoubt(String),
}

impl Seen {
    /// Whether a call of `caller` (see [`JournalEntry::caller`]) in `state` is seen.
    pub fn admits(&self, caller: &str, state: CallState) -> bool {
        match self {
            Self::All => true,
            Self::Own(name) => name == caller,
            Self::OwnAndInDoubt(name) => name == caller || state.awaits_a_person(),
        }
    }

    /// Whether `entry` is seen: as [`admits`](Self::admits) says of its
    /// caller and state, or — for an approver — because they decided its
    /// approval.
    pub fn admits_entry(&self, entry: &JournalEntry) -> bool {
        self.admits(entry.caller(), entry.state)
            || matches!(self, Self::OwnAndInDoubt(name)
                if entry.asked.approval.as_ref().and_then(|a| a.decided_by.as_deref()) == Some(name))
    }
}
