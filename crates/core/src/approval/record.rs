//! An approval as a call's record shows it: [`Approval`].

use serde::{Deserialize, Serialize};

use super::ApprovalState;

/// A call's approval, as its record (`approval`), the gateway's
/// `POST /v1/approvals/{id}` and the journal give it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Approval {
    /// The approval's id: what an approver decides it by.
    pub id: String,
    /// The call it holds back.
    pub call_id: String,
    /// Where it stands. A pending approval past `expires_at` reads `expired`.
    pub state: ApprovalState,
    /// The SHA-256 (hex) of the request awaiting approval: send it with a
    /// decision to have it refused if the request is not the one you read.
    pub request_sha256: String,
    /// Until when a person may decide it (RFC 3339, UTC); after it, it expires.
    pub expires_at: String,
    /// Why the call needs approval: its caller's words, or its tool's
    /// manifest's (redacted).
    pub reason: String,
    /// Who decided it (a gateway caller's name); `null` while pending and
    /// for an expired one.
    pub decided_by: Option<String>,
    /// When it was decided, or expired (RFC 3339, UTC); `null` while pending.
    pub decided_at: Option<String>,
    /// What the approver said (redacted); `null` when nothing.
    pub note: Option<String>,
    /// Whether the caller that asked decided it — only on a server that
    /// allows self-approval (`--allow-self-approval`).
    #[serde(default)]
    pub self_approved: bool,
}

impl Approval {
    /// Whether, at `now` (RFC 3339, UTC), it is pending and past its expiry:
    /// due to be expired.
    pub fn is_due(&self, now: &str) -> bool {
        self.state == ApprovalState::Pending && self.expires_at.as_str() <= now
    }

    /// Its state at `now`: a pending approval past its expiry is expired,
    /// whether or not anybody wrote so yet.
    pub fn state_at(&self, now: &str) -> ApprovalState {
        if self.is_due(now) {
            ApprovalState::Expired
        } else {
            self.state
        }
    }
}
