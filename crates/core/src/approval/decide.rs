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

/// Who decides an approval, as its rule reads them: the caller that asked
/// may not decide its own call unless the server allows it
/// (`--allow-self-approval`, for one-person setups).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decider {
    /// A caller other than the one that asked.
    Another,
    /// The caller that asked, on a server that does not allow it.
    Asker,
    /// The caller that asked, on a server that allows it: the approval
    /// then says `self_approved`.
    AskerAllowed,
}

impl Decider {
    /// Who `by` is for a call `asker` asked, on a server that allows
    /// self-approval or not.
    pub fn of(by: &str, asker: &str, self_approval_allowed: bool) -> Self {
        match (by == asker, self_approval_allowed) {
            (false, _) => Self::Another,
            (true, false) => Self::Asker,
            (true, true) => Self::AskerAllowed,
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
    /// The caller that asked may not decide its own call: nothing changes.
    SelfApproval,
}

impl Approval {
    /// What `decision`, taken at `now` (RFC 3339, UTC) by an approver who
    /// read the request whose hash is `request_sha256` (when they say),
    /// comes to, `decider` deciding. A decided approval stays as it is; one
    /// past its expiry expires whatever is decided; the asker may not decide
    /// it ([`Decider::Asker`]); a hash that is not the pending request's
    /// (compared without regard to case) refuses the decision.
    pub fn judge(
        &self,
        decision: Decision,
        request_sha256: Option<&str>,
        now: &str,
        decider: Decider,
    ) -> Judgement {
        if self.state.is_decided() {
            return Judgement::AlreadyDecided(self.state);
        }
        if self.is_due(now) {
            return Judgement::Expire;
        }
        if decider == Decider::Asker {
            return Judgement::SelfApproval;
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
            self_approved: false,
        }
    }

    const BEFORE: &str = "2026-12-04T09:59:59.999Z";
    const AT: &str = "2026-12-04T10:00:00.000Z";

    #[test]
    fn a_pending_approval_takes_the_decision_until_it_expires() {
        let pending = approval(ApprovalState::Pending);
        assert_eq!(
            pending.judge(Decision::Approve, None, BEFORE, Decider::Another),
            Judgement::Decide(ApprovalState::Approved)
        );
        assert_eq!(
            pending.judge(
                Decision::Reject,
                Some(&"AB".repeat(32)),
                BEFORE,
                Decider::Another
            ),
            Judgement::Decide(ApprovalState::Rejected)
        );
        assert_eq!(
            pending.judge(Decision::Approve, None, AT, Decider::Another),
            Judgement::Expire
        );
        assert_eq!(
            pending.judge(Decision::Reject, None, AT, Decider::Another),
            Judgement::Expire
        );
        assert_eq!(pending.state_at(BEFORE), ApprovalState::Pending);
        assert_eq!(pending.state_at(AT), ApprovalState::Expired);
    }

    #[test]
    fn the_asker_decides_its_own_call_only_where_allowed() {
        let pending = approval(ApprovalState::Pending);
        assert_eq!(Decider::of("lead", "lead", false), Decider::Asker);
        assert_eq!(Decider::of("lead", "lead", true), Decider::AskerAllowed);
        assert_eq!(Decider::of("lead", "agent", false), Decider::Another);
        for decision in [Decision::Approve, Decision::Reject] {
            assert_eq!(
                pending.judge(decision, None, BEFORE, Decider::Asker),
                Judgement::SelfApproval
            );
            assert_eq!(
                pending.judge(decision, None, BEFORE, Decider::AskerAllowed),
                Judgement::Decide(decision.state())
            );
        }
        // Expiry and a decision already taken come first: nothing to refuse.
        assert_eq!(
            pending.judge(Decision::Approve, None, AT, Decider::Asker),
            Judgement::Expire
        );
        assert_eq!(
            approval(ApprovalState::Approved).judge(
                Decision::Approve,
                None,
                BEFORE,
                Decider::Asker
            ),
            Judgement::AlreadyDecided(ApprovalState::Approved)
        );
    }

    #[test]
    fn another_requests_hash_is_stale_and_a_decided_approval_stays() {
        let pending = approval(ApprovalState::Pending);
        assert_eq!(
            pending.judge(
                Decision::Approve,
                Some(&"cd".repeat(32)),
                BEFORE,
                Decider::Another
            ),
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
                    decided.judge(decision, Some("other"), AT, Decider::Another),
                    Judgement::AlreadyDecided(state)
                );
            }
            assert_eq!(decided.state_at(AT), state, "decided is not due");
        }
    }
}
