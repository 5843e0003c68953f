//! What the journal is asked to write for a call that waits for a person:
//! [`AwaitingCall`], and a decision on it ([`ApprovalDecision`], [`DecidedTo`]).

use super::*;

/// A call that waits for a person's approval before its first dispatch,
/// as the journal records it ([`Journal::await_approval`]).
#[derive(Debug, Clone, PartialEq)]
pub struct AwaitingCall {
    /// The call's id: a fresh one, or its key's claimed call.
    pub call_id: String,
    /// The target, for people reading the journal.
    pub target: String,
    /// The capability name, if any.
    pub capability: Option<String>,
    /// The caller's payload (redacted).
    pub payload: Value,
    /// The request to dispatch once approved, as the door that asked keeps
    /// it; held until the call ends.
    pub request: Value,
    /// A digest of the request (the runtime's `recourse::keyed::request_hash`):
    /// what the approval binds.
    pub request_hash: String,
    /// Who makes the call (a gateway caller's name), if anyone in particular.
    pub caller: Option<String>,
    /// The approval's id.
    pub approval_id: String,
    /// Why it needs approval (redacted).
    pub reason: String,
    /// Until when a person may decide it (RFC 3339, UTC).
    pub expires_at: String,
    /// The process that sends the call once approved, when it must be the
    /// asker's (an MCP proxy holding the upstream: no other process starts
    /// a second copy of its server); `None` lets the deciding process send
    /// it. Kept as the call's `owner` while it waits.
    pub dispatcher: Option<String>,
}

/// A decision on a pending approval, for [`Journal::decide_approval`].
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalDecision {
    /// The approval decided.
    pub approval_id: String,
    /// Who decided it (`None` when it expired).
    pub by: Option<String>,
    /// What they said (redacted), if anything.
    pub note: Option<String>,
    /// When (RFC 3339, UTC): an approval or a rejection holds only before
    /// the approval's expiry, an expiry only from it on.
    pub at: String,
    /// What the call becomes.
    pub to: DecidedTo,
}

/// What a decided call becomes.
#[derive(Debug, Clone, PartialEq)]
pub enum DecidedTo {
    /// Approved: in flight, held by `owner`'s lease, to be dispatched by it.
    Approved {
        /// The process that dispatches it.
        owner: String,
        /// How long its lease lasts unless renewed.
        lease: Duration,
    },
    /// Rejected: failed, with this record; nothing was sent.
    Rejected(RecordJson),
    /// Expired: failed, with this record; nothing was sent.
    Expired(RecordJson),
}

impl DecidedTo {
    /// The approval's state after it.
    pub fn approval_state(&self) -> ApprovalState {
        match self {
            Self::Approved { .. } => ApprovalState::Approved,
            Self::Rejected(_) => ApprovalState::Rejected,
            Self::Expired(_) => ApprovalState::Expired,
        }
    }

    /// The call's state after it.
    pub fn call_state(&self) -> CallState {
        match self {
            Self::Approved { .. } => CallState::InFlight,
            Self::Rejected(_) | Self::Expired(_) => CallState::Failed,
        }
    }
}
