//! What the policy decides: an [`Action`], and when it stops, a typed [`StopReason`].

use std::fmt;
use std::time::Duration;

use serde::{Serialize, Serializer};

use crate::policy::WaitCause;

/// The one thing to do after an attempt.
#[must_use = "an action decides what the executor does next"]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// The call succeeded.
    Succeed,
    /// Wait, then resend exactly the same admitted payload.
    RetrySame {
        /// How long to wait before resending.
        wait: Duration,
        /// Whose wait it is: the executor's backoff or the tool's demand.
        cause: WaitCause,
    },
    /// Ask a corrector for a different payload.
    Correct,
    /// The outcome of a write is unknown: look it up (again, after `wait`)
    /// before anything else.
    Reconcile {
        /// How long to wait before the lookup: zero for the first, the
        /// pending write's wait for the next.
        wait: Duration,
    },
    /// The tool said it succeeded, and the call declared a verification
    /// to run after a success too: read the write's effect back before
    /// reporting it.
    Verify,
    /// Stop, for a reason.
    Stop {
        /// Why the call stops.
        reason: StopReason,
    },
}

impl Action {
    /// The snake-case name used in reports: `succeed`, `retry_same`,
    /// `correct`, `reconcile`, `verify`, `stop`.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Succeed => "succeed",
            Self::RetrySame { .. } => "retry_same",
            Self::Correct => "correct",
            Self::Reconcile { .. } => "reconcile",
            Self::Verify => "verify",
            Self::Stop { .. } => "stop",
        }
    }

    /// Shorthand for `Action::Stop { reason }`.
    pub fn stop(reason: StopReason) -> Self {
        Self::Stop { reason }
    }

    /// Shorthand for the first lookup of an unknown outcome, without waiting.
    pub fn reconcile() -> Self {
        Self::Reconcile {
            wait: Duration::ZERO,
        }
    }
}

/// Why a call stopped. Stable snake-case codes via [`StopReason::code`]; a
/// sentence via `Display`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StopReason {
    /// The capability is a delegated orchestrator: it gets exactly one dispatch.
    DelegatedSingleDispatch,
    /// The tool said `retryable: false`.
    RetryRefused,
    /// Credentials are missing or invalid (401 / AUTH_ERROR): needs configuration.
    AuthenticationFailed,
    /// The principal lacks access (403 / PERMISSION_DENIED): never switch identity.
    PermissionDenied,
    /// The endpoint does not accept this method (405).
    MethodNotAllowed,
    /// A business rule refused the request (POLICY_REJECTION): explain, do not retry.
    PolicyRejected,
    /// Same-payload resends used up (`max_retries`).
    RetriesExhausted,
    /// The tool asked for a wait longer than `max_backoff` or past the
    /// deadline, so the call stopped now instead of resending early.
    RateLimited {
        /// How long after the failing attempt the tool accepts calls again
        /// (`Duration::MAX` when the tool's demand was too large to represent).
        retry_after: Duration,
    },
    /// The next wait would cross the deadline, so the call stopped without sleeping.
    DeadlineExceeded,
    /// The shared retry budget across calls is spent.
    RetryBudgetExhausted,
    /// The endpoint's circuit breaker is open.
    CircuitOpen,
    /// A correctable failure, but no corrector is configured.
    NoCorrector,
    /// Corrections used up (`max_corrections`).
    CorrectionBudgetExhausted,
    /// `require_opt_in` is set and the tool did not say `retryable: true`.
    NotOptedIn,
    /// Every input is protected, so there is nothing a correction may change.
    NothingMutable,
    /// The corrector could not produce an acceptable payload.
    CannotFix,
    /// A 2xx reported a failure without a category.
    Unclassified,
    /// A status that is neither success nor a known failure class (1xx, 3xx).
    UnexpectedStatus,
    /// The response body was larger than the configured cap.
    ResponseTooLarge,
    /// A write's outcome is unknown and no reconciler could settle it.
    OutcomeUnknown,
    /// A reconcile lookup said nothing was committed and another attempt is not allowed.
    NotCommitted,
    /// The tool said the write succeeded, and the declared verification
    /// read says its effect is absent: a silent no-op, or a write undone.
    NotApplied,
    /// The call was cancelled.
    Cancelled,
    /// The request could not be built (a URL or header the HTTP stack
    /// refused): nothing was sent; fix the call or its configuration.
    InvalidCall,
    /// The journal could not record the call or attempt, so nothing was dispatched.
    JournalUnavailable,
    /// The MCP server asked for input from the user (`input_required`)
    /// before the tool runs, which an unattended call cannot give.
    NeedsInput,
    /// The MCP server refused the client's protocol setup (a header
    /// mismatch, a missing client capability, an unsupported protocol
    /// version): permanent until the configuration changes.
    ProtocolMismatch,
    /// The failure's category was only guessed from its text, and the guess
    /// allows nothing more: a guess is never corrected by a model, and only
    /// an idempotent call is resent on a guess of a transient failure.
    UnstructuredFailure,
}

impl StopReason {
    /// A stable snake-case code for scripts and reports.
    pub fn code(&self) -> &'static str {
        match self {
            Self::DelegatedSingleDispatch => "delegated_single_dispatch",
            Self::RetryRefused => "retry_refused",
            Self::AuthenticationFailed => "authentication_failed",
            Self::PermissionDenied => "permission_denied",
            Self::MethodNotAllowed => "method_not_allowed",
            Self::PolicyRejected => "policy_rejected",
            Self::RetriesExhausted => "retries_exhausted",
            Self::RateLimited { .. } => "rate_limited",
            Self::DeadlineExceeded => "deadline_exceeded",
            Self::RetryBudgetExhausted => "retry_budget_exhausted",
            Self::CircuitOpen => "circuit_open",
            Self::NoCorrector => "no_corrector",
            Self::CorrectionBudgetExhausted => "correction_budget_exhausted",
            Self::NotOptedIn => "not_opted_in",
            Self::NothingMutable => "nothing_mutable",
            Self::CannotFix => "cannot_fix",
            Self::Unclassified => "unclassified",
            Self::UnexpectedStatus => "unexpected_status",
            Self::ResponseTooLarge => "response_too_large",
            Self::OutcomeUnknown => "outcome_unknown",
            Self::NotCommitted => "not_committed",
            Self::NotApplied => "not_applied",
            Self::Cancelled => "cancelled",
            Self::InvalidCall => "invalid_call",
            Self::JournalUnavailable => "journal_unavailable",
            Self::NeedsInput => "needs_input",
            Self::ProtocolMismatch => "protocol_mismatch",
            Self::UnstructuredFailure => "unstructured_failure",
        }
    }

    /// Whether stopping for this reason leaves the outcome unknown (rather than failed).
    pub fn leaves_outcome_unknown(&self) -> bool {
        matches!(self, Self::OutcomeUnknown)
    }
}

impl fmt::Display for StopReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::DelegatedSingleDispatch => {
                "delegated orchestrator: dispatched once, never retried"
            }
            Self::RetryRefused => "the tool refused retries (retryable: false)",
            Self::AuthenticationFailed => "credentials missing or invalid; fix the configuration",
            Self::PermissionDenied => "permission denied; recourse never switches identity",
            Self::MethodNotAllowed => "method not allowed by the endpoint",
            Self::PolicyRejected => "a business rule refused the request; explain it to the user",
            Self::RetriesExhausted => "same-payload retries exhausted",
            Self::RateLimited { retry_after } if *retry_after == Duration::MAX => {
                "the tool asked for a wait too long to represent; it accepts no calls for now"
            }
            Self::RateLimited { retry_after } => {
                return write!(
                    f,
                    "the tool accepts calls again in {} ms, longer than recourse may wait",
                    retry_after.as_millis()
                );
            }
            Self::DeadlineExceeded => "the next wait would cross the deadline",
            Self::RetryBudgetExhausted => "the shared retry budget is exhausted",
            Self::CircuitOpen => "the endpoint's circuit breaker is open",
            Self::NoCorrector => "no corrector configured",
            Self::CorrectionBudgetExhausted => "correction budget exhausted",
            Self::NotOptedIn => "require_opt_in is set and the tool did not allow a retry",
            Self::NothingMutable => "every input is protected; nothing may be corrected",
            Self::CannotFix => "no acceptable corrected payload",
            Self::Unclassified => "a 2xx reported failure without a category",
            Self::UnexpectedStatus => "unexpected HTTP status",
            Self::ResponseTooLarge => "response body over the size cap",
            Self::OutcomeUnknown => {
                "the outcome of the write is unknown; check before writing again"
            }
            Self::NotCommitted => "nothing was committed and another attempt is not allowed",
            Self::NotApplied => {
                "the tool said the write succeeded, but reading it back shows it did not take effect"
            }
            Self::Cancelled => "cancelled",
            Self::InvalidCall => "the request could not be built; nothing was sent",
            Self::JournalUnavailable => "the journal could not record the call; nothing was sent",
            Self::NeedsInput => {
                "the MCP server asked for input from the user before the tool runs; an unattended call cannot give it"
            }
            Self::ProtocolMismatch => {
                "the MCP server refused the client's protocol setup (a header, a client capability or the protocol version); fix the configuration"
            }
            Self::UnstructuredFailure => {
                "the tool described its failure only in text; recourse neither corrects a payload nor resends a write on a guess"
            }
        })
    }
}

impl Serialize for StopReason {
    /// As its [`code`](Self::code).
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.code())
    }
}

/// One reason of each kind, in declaration order: what the schema lists.
#[cfg(feature = "schema")]
const EVERY_REASON: [StopReason; 28] = [
    StopReason::DelegatedSingleDispatch,
    StopReason::RetryRefused,
    StopReason::AuthenticationFailed,
    StopReason::PermissionDenied,
    StopReason::MethodNotAllowed,
    StopReason::PolicyRejected,
    StopReason::RetriesExhausted,
    StopReason::RateLimited {
        retry_after: Duration::ZERO,
    },
    StopReason::DeadlineExceeded,
    StopReason::RetryBudgetExhausted,
    StopReason::CircuitOpen,
    StopReason::NoCorrector,
    StopReason::CorrectionBudgetExhausted,
    StopReason::NotOptedIn,
    StopReason::NothingMutable,
    StopReason::CannotFix,
    StopReason::Unclassified,
    StopReason::UnexpectedStatus,
    StopReason::ResponseTooLarge,
    StopReason::OutcomeUnknown,
    StopReason::NotCommitted,
    StopReason::NotApplied,
    StopReason::Cancelled,
    StopReason::InvalidCall,
    StopReason::JournalUnavailable,
    StopReason::NeedsInput,
    StopReason::ProtocolMismatch,
    StopReason::UnstructuredFailure,
];

/// The stop reason's code: one of [`StopReason::code`]'s.
#[cfg(feature = "schema")]
impl schemars::JsonSchema for StopReason {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "StopReason".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let codes: Vec<&str> = EVERY_REASON.iter().map(StopReason::code).collect();
        schemars::json_schema!({
            "type": "string",
            "description": "Why the call stopped: a stable snake-case code (the sentence is `reason_text`).",
            "enum": codes,
        })
    }
}

#[cfg(all(test, feature = "schema"))]
mod schema_tests {
    use super::*;

    /// The position of `reason`'s variant in [`EVERY_REASON`]: a new variant
    /// does not compile until it is given one.
    fn position(reason: &StopReason) -> usize {
        use StopReason::*;
        match reason {
            DelegatedSingleDispatch => 0,
            RetryRefused => 1,
            AuthenticationFailed => 2,
            PermissionDenied => 3,
            MethodNotAllowed => 4,
            PolicyRejected => 5,
            RetriesExhausted => 6,
            RateLimited { .. } => 7,
            DeadlineExceeded => 8,
            RetryBudgetExhausted => 9,
            CircuitOpen => 10,
            NoCorrector => 11,
            CorrectionBudgetExhausted => 12,
            NotOptedIn => 13,
            NothingMutable => 14,
            CannotFix => 15,
            Unclassified => 16,
            UnexpectedStatus => 17,
            ResponseTooLarge => 18,
            OutcomeUnknown => 19,
            NotCommitted => 20,
            NotApplied => 21,
            Cancelled => 22,
            InvalidCall => 23,
            JournalUnavailable => 24,
            NeedsInput => 25,
            ProtocolMismatch => 26,
            UnstructuredFailure => 27,
        }
    }

    #[test]
    fn the_schema_lists_every_reason_once() {
        for (n, reason) in EVERY_REASON.iter().enumerate() {
            assert_eq!(position(reason), n, "{}", reason.code());
        }
    }
}
