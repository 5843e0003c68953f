//! The rules of SPEC §3, in order.

use std::time::Duration;

use recourse_protocol::{ErrorCategory, ParsedResponse, RetryPermission};

use super::{Action, StopReason};
use crate::transport::{TransportFailure, TransportFailureKind};

/// What an attempt produced: a response, or a transport failure.
#[derive(Debug, Clone, Copy)]
pub enum Observation<'a> {
    /// The tool answered.
    Response(&'a ParsedResponse),
    /// The transport failed.
    Transport(&'a TransportFailure),
}

/// What the capability declares about itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Traits {
    /// Whether resending the same request is harmless. Non-idempotent calls get
    /// an idempotency key, and a failure after sending leaves their outcome unknown.
    pub idempotent: bool,
    /// Whether the capability orchestrates other tools itself: it gets exactly one dispatch.
    pub delegated: bool,
}

impl Default for Traits {
    fn default() -> Self {
        Self {
            idempotent: true,
            delegated: false,
        }
    }
}

/// Per-call limits the policy enforces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Same-payload resends allowed per call.
    pub max_retries: u32,
    /// Corrected payloads allowed per call.
    pub max_corrections: u32,
    /// The longest single wait, whatever the server asks.
    pub max_backoff: Duration,
    /// Only `retryable: true` makes a failure eligible for correction.
    pub require_opt_in: bool,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_retries: 3,
            max_corrections: 2,
            max_backoff: Duration::from_secs(30),
            require_opt_in: false,
        }
    }
}

/// The state of the call when the policy is asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Situation {
    /// The capability's traits.
    pub traits: Traits,
    /// Same-payload resends already made.
    pub retries_used: u32,
    /// Corrections already made.
    pub corrections_used: u32,
    /// This attempt's draw from the backoff schedule.
    pub backoff: Duration,
    /// Time left before the deadline, if there is one.
    pub remaining: Option<Duration>,
    /// Whether a corrector is configured.
    pub corrector_available: bool,
    /// Whether the payload has at least one unprotected input.
    pub has_mutable_inputs: bool,
}

impl Situation {
    /// A first attempt with a corrector available, mutable inputs and no deadline.
    pub fn first_attempt(traits: Traits) -> Self {
        Self {
            traits,
            retries_used: 0,
            corrections_used: 0,
            backoff: Duration::ZERO,
            remaining: None,
            corrector_available: true,
            has_mutable_inputs: true,
        }
    }
}

/// The decision policy. Cheap to clone; clone one per call.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    limits: Limits,
}

/// Whether an observation leaves a write's outcome unknown (SPEC §5): the tool
/// said UNKNOWN_OUTCOME; or, for a non-idempotent call, the transport failed
/// after sending, or a non-envelope 500/502/504 came back.
pub fn is_unknown_outcome(observation: Observation<'_>, traits: Traits) -> bool {
    match observation {
        Observation::Response(r) if r.success => false,
        Observation::Response(r) => {
            r.category == Some(ErrorCategory::UnknownOutcome)
                || (!traits.idempotent
                    && !r.format.is_structured()
                    && matches!(r.status, 500 | 502 | 504))
        }
        Observation::Transport(t) => !traits.idempotent && t.kind.may_have_committed(),
    }
}

impl Policy {
    /// A policy enforcing `limits`.
    pub fn new(limits: Limits) -> Self {
        Self { limits }
    }

    /// The limits this policy enforces.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Decides what to do after an attempt. Pure: same inputs, same action.
    pub fn decide(&self, observation: Observation<'_>, situation: &Situation) -> Action {
        if let Observation::Response(r) = observation
            && r.success
        {
            return Action::Succeed;
        }
        if situation.traits.delegated {
            return Action::stop(StopReason::DelegatedSingleDispatch);
        }
        if is_unknown_outcome(observation, situation.traits) {
            return Action::Reconcile;
        }
        match observation {
            Observation::Response(r) => self.decide_failure(r, situation),
            Observation::Transport(t) => self.decide_transport(t, situation),
        }
    }

    fn decide_transport(&self, failure: &TransportFailure, situation: &Situation) -> Action {
        match failure.kind {
            TransportFailureKind::ResponseTooLarge => Action::stop(StopReason::ResponseTooLarge),
            // Nothing left the machine, or (for idempotent calls, rule 3 having
            // caught the others) a resend is harmless.
            _ => self.retry_same(None, situation),
        }
    }

    fn decide_failure(&self, r: &ParsedResponse, situation: &Situation) -> Action {
        if r.permission == RetryPermission::Refused {
            return Action::stop(StopReason::RetryRefused);
        }
        let Some(status) = r.routing_status() else {
            return Action::stop(StopReason::Unclassified);
        };
        if let Some(reason) = hard_stop(status, r.category.as_ref()) {
            return Action::stop(reason);
        }
        if is_transient(status) {
            return self.retry_same(r.server_wait, situation);
        }
        if (400..500).contains(&status) {
            return self.correct_if_eligible(r.permission, situation);
        }
        Action::stop(StopReason::UnexpectedStatus)
    }

    fn retry_same(&self, server_wait: Option<Duration>, situation: &Situation) -> Action {
        if situation.retries_used >= self.limits.max_retries {
            return Action::stop(StopReason::RetriesExhausted);
        }
        let wait = situation
            .backoff
            .max(server_wait.unwrap_or(Duration::ZERO))
            .min(self.limits.max_backoff);
        if situation.remaining.is_some_and(|left| wait >= left) {
            return Action::stop(StopReason::DeadlineExceeded);
        }
        Action::RetrySame { wait }
    }

    fn correct_if_eligible(&self, permission: RetryPermission, situation: &Situation) -> Action {
        let reason = if self.limits.require_opt_in && permission != RetryPermission::Allowed {
            StopReason::NotOptedIn
        } else if !situation.has_mutable_inputs {
            StopReason::NothingMutable
        } else if !situation.corrector_available {
            StopReason::NoCorrector
        } else if situation.corrections_used >= self.limits.max_corrections {
            StopReason::CorrectionBudgetExhausted
        } else {
            return Action::Correct;
        };
        Action::stop(reason)
    }
}

/// Rule 5: statuses and categories that no retry or correction can fix.
fn hard_stop(status: u16, category: Option<&ErrorCategory>) -> Option<StopReason> {
    match (status, category) {
        (401, _) | (_, Some(ErrorCategory::AuthError)) => Some(StopReason::AuthenticationFailed),
        (403, _) | (_, Some(ErrorCategory::PermissionDenied)) => Some(StopReason::PermissionDenied),
        (405, _) => Some(StopReason::MethodNotAllowed),
        (_, Some(ErrorCategory::PolicyRejection)) => Some(StopReason::PolicyRejected),
        _ => None,
    }
}

/// Rule 6: statuses worth the same payload again after a wait.
fn is_transient(status: u16) -> bool {
    matches!(status, 408 | 429 | 500..=599)
}

#[cfg(test)]
mod tests;
