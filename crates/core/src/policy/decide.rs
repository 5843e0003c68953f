//! The rules of protocol §3, in order.

use std::time::Duration;

use recourse_protocol::{
    BodyFormat, CategoryBasis, ErrorCategory, Need, ParsedResponse, RetryPermission,
};

use super::{Action, StopReason};
use crate::policy::WaitCause;
use crate::reconcile::Reconciliation;
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
    /// Lookups of one unknown outcome before it stays unknown.
    pub max_lookups: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_retries: 3,
            max_corrections: 2,
            max_backoff: Duration::from_secs(30),
            require_opt_in: false,
            max_lookups: 10,
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
    /// Lookups of the current unknown outcome already made.
    pub lookups_used: u32,
    /// This attempt's draw from the backoff schedule.
    pub backoff: Duration,
    /// Time left before the deadline, if there is one.
    pub remaining: Option<Duration>,
    /// Whether a corrector is configured.
    pub corrector_available: bool,
    /// Whether a reconciler (or a declared verification) is configured to
    /// look up unknown outcomes.
    pub reconciler_available: bool,
    /// Whether a success is read back before it is reported: the call's
    /// verification runs after successes too, or the attempt resent a
    /// write a verification found not committed.
    pub verify_success: bool,
    /// Whether the payload has at least one unprotected input.
    pub has_mutable_inputs: bool,
}

impl Situation {
    /// A first attempt with a corrector and a reconciler available, mutable
    /// inputs and no deadline.
    pub fn first_attempt(traits: Traits) -> Self {
        Self {
            traits,
            retries_used: 0,
            corrections_used: 0,
            lookups_used: 0,
            backoff: Duration::ZERO,
            remaining: None,
            corrector_available: true,
            reconciler_available: true,
            verify_success: false,
            has_mutable_inputs: true,
        }
    }
}

/// The decision policy. Cheap to clone; clone one per call.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    pub(super) limits: Limits,
}

/// Whether an observation leaves a write's outcome unknown (protocol §5): the tool
/// said UNKNOWN_OUTCOME; or, for a non-idempotent call, the transport failed
/// after sending, a non-envelope 500/502/504 came back, a JSON-RPC error said
/// only that the server failed ([`CategoryBasis::Opaque`], its form of a bare
/// 500), or the tool answered a status that says it acted with a body over
/// the cap. The same question as [`AnswerFacts::leaves_outcome_unknown`].
pub fn is_unknown_outcome(observation: Observation<'_>, traits: Traits) -> bool {
    AnswerFacts::of(observation).leaves_outcome_unknown(traits)
}

/// What an attempt's answer says about whether a write ran, as rule 3
/// reads it. The record keeps it with each attempt
/// ([`AttemptRecord::facts`](crate::record::AttemptRecord::facts)), so
/// whoever judges a record asks the very question the executor asked.
///
/// ```
/// use recourse_core::policy::{AnswerFacts, Observation, Traits};
/// use recourse_core::transport::{TransportFailure, TransportFailureKind};
///
/// let lost = TransportFailure::new(TransportFailureKind::TimedOutAfterSend, "no answer");
/// let facts = AnswerFacts::of(Observation::Transport(&lost));
/// assert!(facts.leaves_outcome_unknown(Traits { idempotent: false, delegated: false }));
/// assert!(!facts.leaves_outcome_unknown(Traits::default()), "an idempotent call is resent");
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct AnswerFacts {
    /// The tool said it succeeded.
    pub succeeded: bool,
    /// The tool said the outcome is unknown (`UNKNOWN_OUTCOME`).
    pub stated_unknown: bool,
    /// A 500, 502 or 504 without an envelope: the server failed, maybe mid-write.
    pub bare_server_error: bool,
    /// A JSON-RPC error that says only that the server failed internally.
    pub opaque: bool,
    /// The request was (or may have been) sent and its answer was lost: the
    /// connection failed or timed out after sending, or a body over the cap
    /// came after a status that says the tool acted.
    pub lost_after_send: bool,
    /// How the tool answered, when it did: an HTTP body of some convention,
    /// an MCP result, a JSON-RPC error — what a message may call its status.
    pub format: Option<BodyFormat>,
    /// The tool named no category: the one it routes by is assumed
    /// ([`CategoryBasis::Assumed`]), and nothing shown may claim it said so.
    pub category_assumed: bool,
}

impl AnswerFacts {
    /// The facts of `observation`.
    pub fn of(observation: Observation<'_>) -> Self {
        match observation {
            Observation::Response(r) => Self {
                succeeded: r.success,
                stated_unknown: !r.success && r.category == Some(ErrorCategory::UnknownOutcome),
                bare_server_error: !r.success
                    && !r.format.is_structured()
                    && matches!(r.status, 500 | 502 | 504),
                opaque: !r.success && r.basis == CategoryBasis::Opaque,
                lost_after_send: false,
                format: Some(r.format),
                category_assumed: !r.success && r.basis == CategoryBasis::Assumed,
            },
            Observation::Transport(t) => Self {
                lost_after_send: t.kind.may_have_committed() || oversized_after_acting(t),
                ..Self::default()
            },
        }
    }

    /// Whether a write's outcome is unknown after this answer, for a call
    /// with `traits`: the tool said so, or — when resending is not known to
    /// be harmless — the answer could have come after the write ran.
    pub fn leaves_outcome_unknown(self, traits: Traits) -> bool {
        !self.succeeded
            && (self.stated_unknown
                || (!traits.idempotent
                    && (self.bare_server_error || self.opaque || self.lost_after_send)))
    }
}

/// A body over the cap after a 2xx: the tool did what it was asked and only
/// its answer was lost, like a connection dropped after the response began.
/// A 500/502/504 leaves it as open as it does with a readable body, and so
/// does an unknown status (a transport that could not say which). Other
/// statuses (4xx, 503) say the tool refused, and the call stops as before.
fn oversized_after_acting(failure: &TransportFailure) -> bool {
    failure.kind == TransportFailureKind::ResponseTooLarge
        && failure
            .status
            .is_none_or(|s| (200..300).contains(&s) || matches!(s, 500 | 502 | 504))
}

impl Policy {
    /// A policy enforcing `limits`.
    pub fn new(limits: Limits) -> Self {
        Self { limits }
    }

    /// Rule 1: a 2xx that does not report failure succeeds — or is read back
    /// first, when the call reads its successes back (`verify_success`).
    /// `None` for any other observation. (Nothing else of the situation
    /// matters to a success, so the machine asks this first.)
    pub fn on_success(observation: Observation<'_>, verify_success: bool) -> Option<Action> {
        match observation {
            Observation::Response(r) if r.success && verify_success => Some(Action::Verify),
            Observation::Response(r) if r.success => Some(Action::Succeed),
            _ => None,
        }
    }

    /// Decides what to do after an attempt. Pure: same inputs, same action.
    pub fn decide(&self, observation: Observation<'_>, situation: &Situation) -> Action {
        if let Some(action) = Self::on_success(observation, situation.verify_success) {
            return action;
        }
        if situation.traits.delegated {
            return Action::stop(StopReason::DelegatedSingleDispatch);
        }
        if is_unknown_outcome(observation, situation.traits) {
            if !situation.reconciler_available {
                return Action::stop(StopReason::OutcomeUnknown);
            }
            return Action::reconcile();
        }
        match observation {
            Observation::Response(r) => self.decide_failure(r, situation),
            Observation::Transport(t) => self.decide_transport(t, situation),
        }
    }

    fn decide_transport(&self, failure: &TransportFailure, situation: &Situation) -> Action {
        match failure.kind {
            TransportFailureKind::ResponseTooLarge => Action::stop(StopReason::ResponseTooLarge),
            TransportFailureKind::RequestNotBuilt => Action::stop(StopReason::InvalidCall),
            TransportFailureKind::TlsFailed => Action::stop(StopReason::TlsFailed),
            TransportFailureKind::AuthRequired => Action::stop(StopReason::AuthRequired),
            // Nothing left the machine, or (for idempotent calls, rule 3 having
            // caught the others) a resend is harmless.
            _ => self.retry_same(None, situation),
        }
    }

    fn decide_failure(&self, r: &ParsedResponse, situation: &Situation) -> Action {
        if r.permission == RetryPermission::Refused {
            return Action::stop(StopReason::RetryRefused);
        }
        if let Some(need) = r.needs {
            return Action::stop(match need {
                Need::Input => StopReason::NeedsInput,
                Need::Configuration => StopReason::ProtocolMismatch,
            });
        }
        let Some(status) = r.routing_status() else {
            return Action::stop(StopReason::Unclassified);
        };
        if let Some(reason) = hard_stop(status, r.category.as_ref()) {
            return Action::stop(reason);
        }
        match r.basis {
            CategoryBasis::FreeText => return self.on_a_guess(status, r, situation),
            // An MCP `isError` that named no category routes as the input
            // error the protocol takes it for: a correction may help.
            CategoryBasis::Stated | CategoryBasis::Opaque | CategoryBasis::Assumed => {}
        }
        if is_transient(status) {
            return self.retry_same(r.server_wait, situation);
        }
        if (400..500).contains(&status) {
            return self.correct_if_eligible(r.permission, situation);
        }
        Action::stop(StopReason::UnexpectedStatus)
    }

    /// A category guessed from free text: enough to resend an idempotent call
    /// when the guess is a transient failure, never enough to resend a write
    /// (the text may be wrong about what happened) or to hand the payload to
    /// a model (there is no structured failure to correct against).
    fn on_a_guess(&self, status: u16, r: &ParsedResponse, situation: &Situation) -> Action {
        if is_transient(status) && situation.traits.idempotent {
            return self.retry_same(r.server_wait, situation);
        }
        Action::stop(StopReason::UnstructuredFailure)
    }

    /// How long the next attempt may take: the per-attempt timeout, cut to
    /// the time left before the deadline — `None` when no time is left, and
    /// the call stops rather than dispatch.
    pub fn attempt_timeout(
        &self,
        per_attempt: Duration,
        remaining: Option<Duration>,
    ) -> Option<Duration> {
        match remaining {
            Some(left) if left.is_zero() => None,
            Some(left) => Some(per_attempt.min(left)),
            None => Some(per_attempt),
        }
    }

    /// Decides what follows a lookup of an unknown outcome (rule 3's
    /// second half): `committed` → succeed with its result; `not committed`
    /// → one resend with the same key, under rule 4, the retry limit and the
    /// deadline; `pending` → look again after its wait, within the deadline
    /// and the lookup limit; anything else → the outcome stays unknown.
    /// `permission` is the retry permission of the attempt whose outcome is
    /// unknown.
    pub fn after_lookup(
        &self,
        found: Reconciliation,
        permission: RetryPermission,
        situation: &Situation,
    ) -> AfterLookup {
        match found {
            Reconciliation::Committed(result) => AfterLookup::Succeed(result),
            Reconciliation::NotCommitted => {
                match self.resend_not_committed(permission, situation) {
                    Some(reason) => AfterLookup::Stop(reason),
                    None => AfterLookup::Resend,
                }
            }
            Reconciliation::Pending { wait } => {
                let wait = wait
                    .unwrap_or(situation.backoff)
                    .min(self.limits.max_backoff);
                let late = situation.remaining.is_some_and(|left| wait >= left);
                if late || situation.lookups_used >= self.limits.max_lookups {
                    return AfterLookup::Stop(StopReason::OutcomeUnknown);
                }
                AfterLookup::LookAgain { wait }
            }
            Reconciliation::Unknown(_) => AfterLookup::Stop(StopReason::OutcomeUnknown),
        }
    }

    /// Rule 6's wait: the longer of our backoff and the tool's demand. A
    /// demand is never cut short: longer than `max_backoff`, or past the
    /// deadline, and the call stops now, saying when the tool accepts calls.
    fn retry_same(&self, server_wait: Option<Duration>, situation: &Situation) -> Action {
        if situation.retries_used >= self.limits.max_retries {
            return Action::stop(StopReason::RetriesExhausted);
        }
        let backoff = situation.backoff.min(self.limits.max_backoff);
        let (wait, cause) = match server_wait {
            Some(demand)
                if demand > self.limits.max_backoff
                    || situation.remaining.is_some_and(|left| demand >= left) =>
            {
                return Action::stop(StopReason::RateLimited {
                    retry_after: demand,
                });
            }
            Some(demand) if demand >= backoff => (demand, WaitCause::RetryAfter),
            _ => (backoff, WaitCause::Backoff),
        };
        if situation.remaining.is_some_and(|left| wait >= left) {
            return Action::stop(StopReason::DeadlineExceeded);
        }
        Action::RetrySame { wait, cause }
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

/// Whether an answer says the endpoint failed transiently (what its circuit
/// breaker counts): a transient status, or a transport failure a resend can help.
pub(super) fn is_transient_observation(observation: Observation<'_>) -> bool {
    match observation {
        Observation::Response(r) => !r.success && r.routing_status().is_some_and(is_transient),
        Observation::Transport(t) => t.kind.is_transient(),
    }
}

#[cfg(test)]
mod tests;

/// What follows a lookup of an unknown outcome (rule 3's second half).
#[must_use]
#[derive(Debug, Clone, PartialEq)]
pub enum AfterLookup {
    /// Committed: the call succeeded, with this result.
    Succeed(serde_json::Value),
    /// Not committed: one resend with the same key.
    Resend,
    /// Still pending: look again after `wait`.
    LookAgain {
        /// How long to wait first.
        wait: Duration,
    },
    /// Stop, for a reason.
    Stop(StopReason),
}
