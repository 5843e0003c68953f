//! What a stop means to whoever reads the record, in one table: the step
//! the agent should take (`next.step`), the MCP failure class, and whether
//! sending the same call again may succeed.
//!
//! # Why one table
//!
//! The record tells a model what to do next; the MCP proxy tells an MCP
//! client the same in `toolFailure`'s `class` and `retryable`. Kept apart,
//! the two drifted: a write a lookup found not committed read "give up, try
//! again later" in the record and "not retryable" to the client. So every
//! reason's step, class and retryability come from here, and one table test
//! lists them side by side.

use recourse_protocol::ErrorCategory;
use recourse_protocol::mcp::FailureClass;

use super::NextStep;
use crate::policy::{StopKind, StopReason};

/// What a stop means: [`of_stop`](Self::of_stop).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Disposition {
    /// What the agent should do now (the record's `next.step`).
    pub step: NextStep,
    /// The kind of problem, as MCP's failure metadata classes it.
    pub class: FailureClass,
    /// Whether sending the same call again, later, may succeed.
    pub retryable: bool,
}

impl Disposition {
    /// What stopping for `reason` means, when the last error had `category`
    /// and the tool's details made a question for the user (`asks`).
    ///
    /// ```
    /// use recourse_core::policy::StopReason;
    /// use recourse_core::record::{Disposition, NextStep};
    /// use recourse_protocol::mcp::FailureClass;
    ///
    /// let lost = Disposition::of_stop(&StopReason::OutcomeUnknown, None, false);
    /// assert_eq!(lost.step, NextStep::DoNotRepeat);
    /// assert_eq!(lost.class, FailureClass::Reliability);
    /// assert!(!lost.retryable);
    /// let absent = Disposition::of_stop(&StopReason::NotCommitted, None, false);
    /// assert_eq!((absent.step, absent.retryable), (NextStep::GiveUp, true));
    /// ```
    pub fn of_stop(reason: &StopReason, category: Option<&ErrorCategory>, asks: bool) -> Self {
        Self {
            step: NextStep::after_stop(reason, category, asks),
            class: class(reason.kind(category)),
            retryable: resend_may_help(reason),
        }
    }
}

impl StopKind {
    /// The MCP failure class of a problem of this kind.
    pub fn failure_class(self) -> FailureClass {
        class(self)
    }
}

/// The MCP class of a problem of `kind`: what passes with time or left a
/// write in doubt is `reliability`; credentials, access and rules are
/// `governance`; the call's input or setup is `capability`.
fn class(kind: StopKind) -> FailureClass {
    match kind {
        StopKind::Transient | StopKind::Budget | StopKind::UnknownOutcome => {
            FailureClass::Reliability
        }
        StopKind::Auth | StopKind::Permission | StopKind::Policy => FailureClass::Governance,
        StopKind::Input | StopKind::Configuration => FailureClass::Capability,
    }
}

/// Whether the same call, sent again later, may succeed: only after a stop
/// that passes with time (the tool down or limiting, a spent budget, a
/// deadline, a cancellation) and did not leave a write in doubt — and after
/// a write found not committed, which nothing stops being sent again.
fn resend_may_help(reason: &StopReason) -> bool {
    use StopReason as R;
    match reason {
        R::RetriesExhausted
        | R::RateLimited { .. }
        | R::DeadlineExceeded
        | R::RetryBudgetExhausted
        | R::CircuitOpen
        | R::NotCommitted
        | R::Cancelled => true,
        // The tool refused, a person or a rule decided, the input or the
        // setup is wrong, a write may have run, or the failure was only
        // guessed: the same call again changes nothing, or is not safe.
        R::DelegatedSingleDispatch
        | R::RetryRefused
        | R::AuthenticationFailed
        | R::PermissionDenied
        | R::MethodNotAllowed
        | R::PolicyRejected
        | R::NoCorrector
        | R::CorrectionBudgetExhausted
        | R::NotOptedIn
        | R::NothingMutable
        | R::CannotFix
        | R::Unclassified
        | R::UnexpectedStatus
        | R::ResponseTooLarge
        | R::OutcomeUnknown
        | R::NotApplied
        | R::InvalidCall
        | R::JournalUnavailable
        | R::NeedsInput
        | R::ProtocolMismatch
        | R::UnstructuredFailure
        | R::ApprovalRejected
        | R::ApprovalExpired
        | R::TlsFailed
        | R::AuthRequired => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::every_reason;
    use FailureClass::{Capability as C, Governance as G, Reliability as R};
    use NextStep as S;

    /// Every reason's step, class and retryability, side by side (the last
    /// error's category is `SERVICE_ERROR` where a reason reads it, and the
    /// tool asked nothing of the user).
    #[test]
    fn every_stop_has_one_step_class_and_retryability() {
        let table: [(&str, NextStep, FailureClass, bool); 32] = [
            ("delegated_single_dispatch", S::GiveUp, R, false),
            ("retry_refused", S::GiveUp, R, false),
            ("authentication_failed", S::FixConfiguration, G, false),
            ("permission_denied", S::FixConfiguration, G, false),
            ("method_not_allowed", S::FixConfiguration, C, false),
            ("policy_rejected", S::ExplainRefusal, G, false),
            ("retries_exhausted", S::GiveUp, R, true),
            ("rate_limited", S::GiveUp, R, true),
            ("deadline_exceeded", S::GiveUp, R, true),
            ("retry_budget_exhausted", S::GiveUp, R, true),
            ("circuit_open", S::GiveUp, R, true),
            ("no_corrector", S::FixArguments, C, false),
            ("correction_budget_exhausted", S::FixArguments, C, false),
            ("not_opted_in", S::FixArguments, C, false),
            ("nothing_mutable", S::AskUser, C, false),
            ("cannot_fix", S::FixArguments, C, false),
            ("unclassified", S::FixConfiguration, C, false),
            ("unexpected_status", S::FixConfiguration, C, false),
            ("response_too_large", S::FixConfiguration, C, false),
            ("outcome_unknown", S::DoNotRepeat, R, false),
            ("not_committed", S::GiveUp, R, true),
            ("not_applied", S::DoNotRepeat, R, false),
            ("cancelled", S::GiveUp, R, true),
            ("invalid_call", S::FixConfiguration, C, false),
            ("journal_unavailable", S::FixConfiguration, C, false),
            ("needs_input", S::AskUser, C, false),
            ("protocol_mismatch", S::FixConfiguration, C, false),
            ("unstructured_failure", S::GiveUp, R, false),
            ("approval_rejected", S::ExplainRefusal, G, false),
            ("approval_expired", S::ExplainRefusal, G, false),
            ("tls_failed", S::FixConfiguration, C, false),
            ("auth_required", S::FixConfiguration, G, false),
        ];
        let reasons = every_reason();
        assert_eq!(
            reasons.len(),
            table.len(),
            "a reason is missing from the table"
        );
        let service = ErrorCategory::ServiceError;
        for reason in reasons {
            let (_, step, class, retryable) = table
                .iter()
                .find(|(code, ..)| *code == reason.code())
                .copied()
                .unwrap_or_else(|| panic!("{} is not in the table", reason.code()));
            let got = Disposition::of_stop(&reason, Some(&service), false);
            assert_eq!(
                (got.step, got.class, got.retryable),
                (step, class, retryable),
                "{}",
                reason.code()
            );
        }
    }

    /// What may be sent again is what the model is told to try again later;
    /// what must not be repeated is never retryable.
    #[test]
    fn retryable_means_give_up_for_now_and_never_do_not_repeat() {
        let categories = [
            None,
            Some(ErrorCategory::AuthError),
            Some(ErrorCategory::PolicyRejection),
            Some(ErrorCategory::InputError),
            Some(ErrorCategory::RateLimit),
            Some(ErrorCategory::UnknownOutcome),
        ];
        for reason in every_reason() {
            for category in &categories {
                for asks in [false, true] {
                    let d = Disposition::of_stop(&reason, category.as_ref(), asks);
                    if d.retryable {
                        assert_eq!(d.step, NextStep::GiveUp, "{}", reason.code());
                    }
                    if d.step == NextStep::DoNotRepeat {
                        assert!(!d.retryable, "{}", reason.code());
                    }
                }
            }
        }
    }
}
