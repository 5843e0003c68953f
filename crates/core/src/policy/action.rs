//! What the policy decides: an [`Action`], and when it stops, a typed [`StopReason`].

use std::fmt;
use std::time::Duration;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use strum::{EnumDiscriminants, EnumIter, EnumString, IntoStaticStr, VariantNames};

use crate::policy::WaitCause;

/// The one thing to do after an attempt.
///
/// Its [`ActionKind`] is the action without its wait or reason: what the
/// record's `action` names.
#[must_use = "an action decides what the executor does next"]
#[derive(Debug, Clone, PartialEq, Eq, EnumDiscriminants)]
#[strum_discriminants(
    name(ActionKind),
    doc = "What an [`Action`] does, without its wait or reason: the record's `action`.",
    derive(
        Hash,
        Serialize,
        Deserialize,
        IntoStaticStr,
        EnumString,
        EnumIter,
        VariantNames
    ),
    serde(rename_all = "snake_case"),
    strum(serialize_all = "snake_case")
)]
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
    /// What the action does, without its wait or reason.
    pub fn kind(&self) -> ActionKind {
        self.into()
    }

    /// The snake-case name used in reports: `succeed`, `retry_same`,
    /// `correct`, `reconcile`, `verify`, `stop` (the [`kind`](Self::kind)'s).
    pub fn name(&self) -> &'static str {
        self.kind().as_str()
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

impl ActionKind {
    /// `succeed`, `retry_same`, `correct`, `reconcile`, `verify` or `stop`.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// Why a call stopped. Stable snake-case codes via [`StopReason::code`]; a
/// sentence via `Display`.
///
/// It serializes as its code, and deserializes from one: a
/// [`RateLimited`](Self::RateLimited) read back has a zero `retry_after`,
/// which the code does not carry.
#[derive(Debug, Clone, PartialEq, Eq, IntoStaticStr, EnumString, EnumIter, VariantNames)]
#[strum(serialize_all = "snake_case")]
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
    /// A person rejected the call before its first dispatch: nothing was sent.
    ApprovalRejected,
    /// Nobody approved the call before its approval expired: nothing was sent.
    ApprovalExpired,
    /// The TLS handshake with the server failed (an untrusted issuer, an
    /// expired certificate, another name, a broken handshake): nothing was
    /// sent; fix the configuration (the CA to trust) or the server.
    TlsFailed,
    /// The server refused the credentials and no fresh ones could be had
    /// (a login that expired or was revoked): refused before any effect;
    /// someone must log in again.
    AuthRequired,
}

impl StopReason {
    /// A stable snake-case code for scripts and reports.
    pub fn code(&self) -> &'static str {
        self.into()
    }

    /// Whether `other` is the same reason, whatever its data (the
    /// `retry_after` of [`RateLimited`](Self::RateLimited)): whether the two
    /// have one [`code`](Self::code).
    pub fn is_same_reason(&self, other: &Self) -> bool {
        std::mem::discriminant(self) == std::mem::discriminant(other)
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
            Self::ApprovalRejected => "a person rejected the call before it was sent; nothing was sent",
            Self::ApprovalExpired => {
                "nobody approved the call before its approval expired; nothing was sent"
            }
            Self::TlsFailed => {
                "the TLS handshake with the server failed; nothing was sent; fix the configuration"
            }
            Self::AuthRequired => {
                "the server refused the login and it could not be renewed; nothing took effect"
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

impl<'de> Deserialize<'de> for StopReason {
    /// From its [`code`](Self::code); any other string is an error naming the codes.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let code = std::borrow::Cow::<'de, str>::deserialize(deserializer)?;
        code.parse()
            .map_err(|_| D::Error::unknown_variant(&code, Self::VARIANTS))
    }
}

/// The stop reason's code: one of [`StopReason::code`]'s.
#[cfg(feature = "schema")]
impl schemars::JsonSchema for StopReason {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "StopReason".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "description": "Why the call stopped: a stable snake-case code (the sentence is `reason_text`).",
            "enum": Self::VARIANTS,
        })
    }
}

#[cfg(test)]
mod tests {
    use strum::IntoEnumIterator;

    use super::*;

    #[test]
    fn a_reason_reads_back_from_its_code() {
        for reason in StopReason::iter() {
            let json = serde_json::to_value(&reason).unwrap();
            assert_eq!(json, reason.code());
            let back: StopReason = serde_json::from_value(json).unwrap();
            assert!(back.is_same_reason(&reason), "{}", reason.code());
            assert_eq!(reason.code().parse::<StopReason>().unwrap(), back);
        }
        let limited = StopReason::RateLimited {
            retry_after: Duration::from_secs(60),
        };
        let back: StopReason = serde_json::from_value("rate_limited".into()).unwrap();
        assert_eq!(
            back,
            StopReason::RateLimited {
                retry_after: Duration::ZERO
            }
        );
        assert!(back.is_same_reason(&limited) && !back.is_same_reason(&StopReason::CannotFix));
    }

    #[test]
    fn an_unknown_code_names_the_codes() {
        let err = serde_json::from_value::<StopReason>("gave_up".into())
            .unwrap_err()
            .to_string();
        assert!(err.contains("gave_up"), "{err}");
        assert!(
            err.contains("`retry_refused`") && err.contains("`unstructured_failure`"),
            "{err}"
        );
    }

    #[test]
    fn an_action_is_named_by_its_kind() {
        let wait = Duration::from_millis(5);
        let actions = [
            Action::Succeed,
            Action::RetrySame {
                wait,
                cause: WaitCause::Backoff,
            },
            Action::Correct,
            Action::Reconcile { wait },
            Action::Verify,
            Action::stop(StopReason::CannotFix),
        ];
        let kinds: Vec<ActionKind> = actions.iter().map(Action::kind).collect();
        assert_eq!(kinds, ActionKind::iter().collect::<Vec<_>>());
        for action in &actions {
            let name = serde_json::to_value(action.kind()).unwrap();
            assert_eq!(name, action.name());
            assert_eq!(action.name().parse::<ActionKind>().unwrap(), action.kind());
        }
    }
}

#[cfg(all(test, feature = "schema"))]
mod schema_tests {
    use std::collections::HashSet;

    use strum::IntoEnumIterator;

    use super::*;

    #[test]
    fn the_schema_lists_every_reason_once() {
        let schema = schemars::schema_for!(StopReason);
        let listed: Vec<&str> = schema.as_value()["enum"]
            .as_array()
            .unwrap()
            .iter()
            .map(|code| code.as_str().unwrap())
            .collect();
        let codes: Vec<&str> = StopReason::iter().map(|r| r.code()).collect();
        assert_eq!(listed, codes, "in declaration order");
        assert_eq!(
            listed.iter().collect::<HashSet<_>>().len(),
            listed.len(),
            "once each"
        );
    }
}
