//! What follows a read-back verification: the write's effect is there, it is
//! not, or the read could not tell — before and after the write.
//!
//! A verification is a read the caller declared (an HTTP read endpoint or an
//! MCP read tool) and expectations over its result, such as
//! `/status == "cancelled"`. It runs once before the write and once after an
//! unknown outcome (or, when asked, after a success too). Reading the before
//! and after together is what makes it evidence: an effect present after the
//! write but not before is the write's own; one present both times was there
//! already; one absent after the write says it did not happen.

use recourse_protocol::RetryPermission;
use serde::{Deserialize, Serialize};
use strum::{EnumIter, EnumString, IntoStaticStr, VariantNames};

use super::machine::{AfterRead, SuccessFrom};
use super::{Policy, Situation, StopReason};

/// What one verification read found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
#[derive(IntoStaticStr, EnumString, EnumIter, VariantNames)]
#[strum(serialize_all = "snake_case")]
pub enum VerifyResult {
    /// Every expectation held.
    Holds,
    /// The read answered, and an expectation did not hold.
    NotHeld,
    /// The read failed, or its answer could not be read against the expectations.
    CannotTell,
}

impl VerifyResult {
    /// `holds`, `not_held` or `cannot_tell`.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// What the write answered before the verification read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteAnswer {
    /// Its outcome is unknown; `permission` is the retry permission of the
    /// attempt whose outcome is unknown.
    Unknown {
        /// The attempt's retry permission (rule 4 still applies to a resend).
        permission: RetryPermission,
    },
    /// The tool said it succeeded.
    Succeeded,
}

/// What a verification established about the write (the record's
/// `verification`), from the reads before and after it — or why none ran
/// after it: it did not apply to the call, or nothing had to be settled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
#[derive(IntoStaticStr, EnumString, EnumIter, VariantNames)]
#[strum(serialize_all = "snake_case")]
pub enum Verification {
    /// The expectations hold after the write and did not before (or were not read before).
    Verified,
    /// The expectations held before the write and after: its effect is present either way.
    AlreadyApplied,
    /// The outcome was unknown and the expectations do not hold: the write did not commit.
    NotCommitted,
    /// The tool said it succeeded, and the expectations do not hold: it did not apply.
    NotApplied,
    /// The read failed or was ambiguous: nothing was established.
    CannotTell,
    /// The call did not fill a template the declared verification
    /// requires: it ran as a call without one.
    NotApplicable,
    /// The write answered, and nothing had to be settled: no read ran
    /// after it.
    Unneeded,
}

impl Verification {
    /// The snake-case name used in the record.
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// What the reads `before` (if one ran) and `after` the write establish,
    /// given what the write answered. Pure, like the policy's decision on
    /// the same inputs ([`Policy::after_verification`]). Never
    /// [`NotApplicable`](Self::NotApplicable) or [`Unneeded`](Self::Unneeded),
    /// which say no read ran after the write.
    pub fn of(before: Option<VerifyResult>, after: VerifyResult, answer: WriteAnswer) -> Self {
        let held_before = before == Some(VerifyResult::Holds);
        match (after, answer) {
            (VerifyResult::Holds, _) if held_before => Self::AlreadyApplied,
            (VerifyResult::Holds, _) => Self::Verified,
            (VerifyResult::NotHeld, WriteAnswer::Succeeded) => Self::NotApplied,
            // It held before and no longer does: something else changed it.
            (VerifyResult::NotHeld, WriteAnswer::Unknown { .. }) if held_before => Self::CannotTell,
            (VerifyResult::NotHeld, WriteAnswer::Unknown { .. }) => Self::NotCommitted,
            (VerifyResult::CannotTell, _) => Self::CannotTell,
        }
    }
}

impl std::fmt::Display for Verification {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Policy {
    /// Decides what follows a verification read (rule 3's read-back form,
    /// and the check of a success): the reads `before` (`None` when it was
    /// skipped or no longer applies) and `after` the write, and what the
    /// write answered.
    ///
    /// After an unknown outcome: the expectations hold now → succeed
    /// (verified, or already applied when they held before too); they do
    /// not hold and did not before → not committed, one resend with the same
    /// key under rule 4, the retry limit and the deadline (as
    /// [`after_lookup`](Self::after_lookup)); they held before and no longer
    /// do, or the read could not tell → the outcome stays unknown.
    ///
    /// After a success: the expectations hold → succeed; they do not → stop,
    /// [`StopReason::NotApplied`] (the tool said it wrote; the read says it
    /// did not); the read could not tell → succeed on the tool's word.
    pub fn after_verification(
        &self,
        before: Option<VerifyResult>,
        after: VerifyResult,
        answer: WriteAnswer,
        situation: &Situation,
    ) -> AfterRead {
        let from = match answer {
            WriteAnswer::Succeeded => SuccessFrom::Answered,
            WriteAnswer::Unknown { .. } => SuccessFrom::ReadBack,
        };
        match (Verification::of(before, after, answer), answer) {
            (Verification::Verified | Verification::AlreadyApplied, _) => AfterRead::Succeed(from),
            (Verification::NotApplied, _) => AfterRead::Stop(StopReason::NotApplied),
            // `of` gives neither of the two that say no read ran: were it
            // to, nothing was established, as when the read cannot tell.
            (
                Verification::CannotTell | Verification::NotApplicable | Verification::Unneeded,
                WriteAnswer::Succeeded,
            ) => AfterRead::Succeed(from),
            (
                Verification::CannotTell | Verification::NotApplicable | Verification::Unneeded,
                WriteAnswer::Unknown { .. },
            ) => AfterRead::Stop(StopReason::OutcomeUnknown),
            (Verification::NotCommitted, WriteAnswer::Unknown { permission }) => {
                match self.resend_not_committed(permission, situation) {
                    Some(reason) => AfterRead::Stop(reason),
                    None => AfterRead::Resend,
                }
            }
            (Verification::NotCommitted, WriteAnswer::Succeeded) => {
                AfterRead::Stop(StopReason::NotApplied)
            }
        }
    }

    /// Whether a write found not committed may be resent once, with the
    /// same key: the reason it may not (rule 4, the retry limit, the
    /// deadline), or `None` when it may.
    pub(super) fn resend_not_committed(
        &self,
        permission: RetryPermission,
        situation: &Situation,
    ) -> Option<StopReason> {
        if permission == RetryPermission::Refused {
            Some(StopReason::NotCommitted)
        } else if situation.retries_used >= self.limits.max_retries {
            Some(StopReason::RetriesExhausted)
        } else if situation.remaining.is_some_and(|left| left.is_zero()) {
            Some(StopReason::DeadlineExceeded)
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::policy::{Limits, Traits};

    const UNKNOWN: WriteAnswer = WriteAnswer::Unknown {
        permission: RetryPermission::Unspecified,
    };
    use VerifyResult::{CannotTell, Holds, NotHeld};

    fn write() -> Situation {
        Situation::first_attempt(Traits {
            idempotent: false,
            delegated: false,
        })
    }

    fn after(before: Option<VerifyResult>, now: VerifyResult, answer: WriteAnswer) -> AfterRead {
        Policy::default().after_verification(before, now, answer, &write())
    }

    const RESEND: AfterRead = AfterRead::Resend;
    const COMMITTED: AfterRead = AfterRead::Succeed(SuccessFrom::ReadBack);
    const KEPT: AfterRead = AfterRead::Succeed(SuccessFrom::Answered);

    #[test]
    fn an_unknown_outcome_whose_effect_appeared_is_committed() {
        for before in [Some(NotHeld), Some(CannotTell), None] {
            assert_eq!(after(before, Holds, UNKNOWN), COMMITTED);
            assert_eq!(
                Verification::of(before, Holds, UNKNOWN),
                Verification::Verified
            );
        }
    }

    #[test]
    fn an_effect_present_before_and_after_is_already_applied() {
        assert_eq!(after(Some(Holds), Holds, UNKNOWN), COMMITTED);
        assert_eq!(
            Verification::of(Some(Holds), Holds, UNKNOWN),
            Verification::AlreadyApplied
        );
        assert_eq!(
            Verification::of(Some(Holds), Holds, WriteAnswer::Succeeded),
            Verification::AlreadyApplied
        );
    }

    #[test]
    fn an_effect_absent_after_an_unknown_outcome_allows_one_resend_with_the_same_key() {
        for before in [Some(NotHeld), Some(CannotTell), None] {
            assert_eq!(after(before, NotHeld, UNKNOWN), RESEND);
            assert_eq!(
                Verification::of(before, NotHeld, UNKNOWN),
                Verification::NotCommitted
            );
        }
        let refused = WriteAnswer::Unknown {
            permission: RetryPermission::Refused,
        };
        assert_eq!(
            after(None, NotHeld, refused),
            AfterRead::Stop(StopReason::NotCommitted)
        );
        let spent = Situation {
            retries_used: 3,
            ..write()
        };
        let policy = Policy::new(Limits::default());
        assert_eq!(
            policy.after_verification(None, NotHeld, UNKNOWN, &spent),
            AfterRead::Stop(StopReason::RetriesExhausted)
        );
        let late = Situation {
            remaining: Some(Duration::ZERO),
            ..write()
        };
        assert_eq!(
            policy.after_verification(None, NotHeld, UNKNOWN, &late),
            AfterRead::Stop(StopReason::DeadlineExceeded)
        );
    }

    #[test]
    fn a_read_that_cannot_tell_leaves_the_outcome_unknown() {
        for before in [Some(Holds), Some(NotHeld), Some(CannotTell), None] {
            assert_eq!(
                after(before, CannotTell, UNKNOWN),
                AfterRead::Stop(StopReason::OutcomeUnknown)
            );
        }
    }

    #[test]
    fn an_effect_that_vanished_during_an_unknown_write_is_ambiguous() {
        assert_eq!(
            after(Some(Holds), NotHeld, UNKNOWN),
            AfterRead::Stop(StopReason::OutcomeUnknown)
        );
        assert_eq!(
            Verification::of(Some(Holds), NotHeld, UNKNOWN),
            Verification::CannotTell
        );
    }

    #[test]
    fn a_success_whose_effect_is_absent_is_not_applied() {
        for before in [Some(Holds), Some(NotHeld), None] {
            assert_eq!(
                after(before, NotHeld, WriteAnswer::Succeeded),
                AfterRead::Stop(StopReason::NotApplied)
            );
            assert_eq!(
                Verification::of(before, NotHeld, WriteAnswer::Succeeded),
                Verification::NotApplied
            );
        }
    }

    #[test]
    fn a_success_is_kept_when_it_holds_or_the_read_cannot_tell() {
        assert_eq!(after(Some(NotHeld), Holds, WriteAnswer::Succeeded), KEPT);
        assert_eq!(after(None, CannotTell, WriteAnswer::Succeeded), KEPT);
        assert_eq!(
            Verification::of(None, CannotTell, WriteAnswer::Succeeded),
            Verification::CannotTell
        );
    }
}
