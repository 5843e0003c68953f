//! What a person's decision on an approval comes to, decided before
//! anything is written: [`Approval::judge`].

use serde::{Deserialize, Serialize};

use super::{Approval, ApprovalState};

/// What an approver decides (`POST /v1/approvals/{id}`'s `decision`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// Send the request, exactly as it is.
    Approve,
    /// Do not send it: the call fails.
    Reject,
}

impl Decision {
    /// The state the approval takes.
    pub fn state(self) -> ApprovalState {
        match self {
            Self::Approve => ApprovalState::Approved,
            Self::Reject => ApprovalState::Rejected,
        }
    }
}

/// What deciding an approval comes to.
#[must_use = "a judgement says what the journal must be asked to write"]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Judgement {
    /// Write the decision (approved or rejected), if the approval is still
    /// pending then.
    Decide(ApprovalState),
    /// The approval is past its expiry: expire it; the decision comes too late.
    Expire,
    /// It was decided already (approved, rejected or expired): nothing changes.
    AlreadyDecided(ApprovalState),
    /// The approver read another request than the one awaiting approval:
    /// nothing changes.
    Stale,
}

impl Approval {
    /// What `decision`, taken at `now` (RFC 3339, UTC) by an approver who
    /// read the request whose hash is `request_sha256` (when they say),
    /// comes to. A decided approval stays as it is; one past its expiry
    /// expires whatever is decided; a hash that is not the pending request's
    /// (compared without regard to case) refuses the decision.
    pub fn judge(&self, decision: Decision, request_sha256: Option<&str>, now: &str) -> Judgement {
        if self.state.is_decided() {
            return Judgement::AlreadyDecided(self.state);
        }
        if self.is_due(now) {
            return Judgement::Expire;
        }
        if request_sha256.is_some_and(|given| !given.eq_ignore_ascii_case(&self.request_sha256)) {
            return Judgement::Stale;
        }
        Judgement::Decide(decision.state())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn approval(state: ApprovalState) -> Approval {
        Approval {
            id: "a-1".into(),
            call_id: "c-1".into(),
            state,
            request_sha256: "ab".repeat(32),
            expires_at: "2026-12-04T10:00:00.000Z".into(),
            reason: "r".into(),
            decided_by: None,
            decided_at: None,
            note: None,
        }
    }

    const BEFORE: &str = "2026-12-04T09:59:59.999Z";
    const AT: &str = "2026-12-04T10:00:00.000Z";

    #[test]
    fn a_pending_approval_takes_the_decision_until_it_expires() {
        let pending = approval(ApprovalState::Pending);
        assert_eq!(
            pending.judge(Decision::Approve, None, BEFORE),
            Judgement::Decide(ApprovalState::Approved)
        );
        assert_eq!(
            pending.judge(Decision::Reject, Some(&"AB".repeat(32)), BEFORE),
            Judgement::Decide(ApprovalState::Rejected)
        );
        assert_eq!(
            pending.judge(Decision::Approve, None, AT),
            Judgement::Expire
        );
        assert_eq!(pending.judge(Decision::Reject, None, AT), Judgement::Expire);
        assert_eq!(pending.state_at(BEFORE), ApprovalState::Pending);
        assert_eq!(pending.state_at(AT), ApprovalState::Expired);
    }

    #[test]
    fn another_requests_hash_is_stale_and_a_decided_approval_stays() {
        let pending = approval(ApprovalState::Pending);
        assert_eq!(
            pending.judge(Decision::Approve, Some(&"cd".repeat(32)), BEFORE),
            Judgement::Stale
        );
        for state in [
            ApprovalState::Approved,
            ApprovalState::Rejected,
            ApprovalState::Expired,
        ] {
            let decided = approval(state);
            for decision in [Decision::Approve, Decision::Reject] {
                assert_eq!(
                    decided.judge(decision, Some("other"), AT),
                    Judgement::AlreadyDecided(state)
                );
            }
            assert_eq!(decided.state_at(AT), state, "decided is not due");
        }
    }
}
