//! What kind of problem stopped a call: a [`StopKind`], read from the
//! [`StopReason`] and, where the reason alone cannot tell, the failure's category.
//!
//! # Why a kind next to the reason
//!
//! A reason says why the *policy* stopped; scripts match on it and it keeps
//! its codes. But one reason can cover problems a caller handles in opposite
//! ways: a tool that says `retryable: false` stops the call with
//! [`StopReason::RetryRefused`] whether it answered 401 (fix the credentials)
//! or 422 (a business rule; explain it to the user). The kind names the
//! problem the caller faces — credentials, access, a rule, its input, a
//! passing condition, a lost answer, a spent budget, a broken setup — so
//! those two no longer read alike.
//!
//! Two reasons take their kind from the failure's category, because they stop
//! on whatever the tool reported: [`StopReason::RetryRefused`] and
//! [`StopReason::DelegatedSingleDispatch`]. Every other reason has one kind.

use recourse_protocol::ErrorCategory;
use serde::{Deserialize, Serialize};
use strum::{EnumIter, EnumString, IntoStaticStr, VariantNames};

use super::StopReason;

/// The kind of problem a stopped call ran into (the record's `stop_kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
#[derive(IntoStaticStr, EnumString, EnumIter, VariantNames)]
#[strum(serialize_all = "snake_case")]
pub enum StopKind {
    /// Credentials are missing or invalid (401, `AUTH_ERROR`).
    Auth,
    /// The principal lacks access (403, `PERMISSION_DENIED`).
    Permission,
    /// A business rule refused the request (`POLICY_REJECTION`).
    Policy,
    /// The input is wrong, and no correction made it right (`INPUT_ERROR`, `NOT_FOUND`).
    Input,
    /// A condition that passes with time: an outage, a rate limit, an open circuit.
    Transient,
    /// A write may or may not have committed, a lookup of one settled it
    /// without allowing another attempt, or the tool's word and a read of
    /// the write's effect disagree.
    UnknownOutcome,
    /// The call's own limits ran out: its deadline, the shared retry budget,
    /// or the caller cancelled it.
    Budget,
    /// The call, the tool or recourse is set up wrong: a method, a status or
    /// a response recourse cannot use, a request that cannot be built, a
    /// journal that cannot record.
    Configuration,
}

impl StopKind {
    /// The snake-case name used in the record.
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// The kind of a failure the tool reported as `category`: what
    /// [`StopReason::RetryRefused`] and [`StopReason::DelegatedSingleDispatch`]
    /// stop with. An unknown or missing category is a protocol mismatch,
    /// [`Configuration`](Self::Configuration).
    pub fn of_category(category: Option<&ErrorCategory>) -> Self {
        match category {
            Some(ErrorCategory::AuthError) => Self::Auth,
            Some(ErrorCategory::PermissionDenied) => Self::Permission,
            Some(ErrorCategory::PolicyRejection) => Self::Policy,
            Some(ErrorCategory::InputError | ErrorCategory::NotFound) => Self::Input,
            Some(ErrorCategory::RateLimit | ErrorCategory::ServiceError) => Self::Transient,
            Some(ErrorCategory::UnknownOutcome) => Self::UnknownOutcome,
            Some(ErrorCategory::Other(_)) | None => Self::Configuration,
        }
    }
}

impl std::fmt::Display for StopKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl StopReason {
    /// The kind of problem behind this stop. `category` is the category of
    /// the call's last error (`None` if there was none); only
    /// [`RetryRefused`](Self::RetryRefused),
    /// [`DelegatedSingleDispatch`](Self::DelegatedSingleDispatch) and
    /// [`UnstructuredFailure`](Self::UnstructuredFailure) read it.
    ///
    /// ```
    /// use recourse_core::policy::{StopKind, StopReason};
    /// use recourse_protocol::ErrorCategory;
    ///
    /// let refused = StopReason::RetryRefused;
    /// assert_eq!(refused.kind(Some(&ErrorCategory::AuthError)), StopKind::Auth);
    /// assert_eq!(refused.kind(Some(&ErrorCategory::PolicyRejection)), StopKind::Policy);
    /// assert_eq!(StopReason::CannotFix.kind(None), StopKind::Input);
    /// ```
    pub fn kind(&self, category: Option<&ErrorCategory>) -> StopKind {
        match self {
            Self::RetryRefused | Self::DelegatedSingleDispatch | Self::UnstructuredFailure => {
                StopKind::of_category(category)
            }
            Self::NeedsInput => StopKind::Input,
            Self::ProtocolMismatch => StopKind::Configuration,
            Self::AuthenticationFailed | Self::AuthRequired => StopKind::Auth,
            Self::PermissionDenied => StopKind::Permission,
            Self::PolicyRejected | Self::ApprovalRejected | Self::ApprovalExpired => {
                StopKind::Policy
            }
            Self::NoCorrector
            | Self::CorrectionBudgetExhausted
            | Self::NotOptedIn
            | Self::NothingMutable
            | Self::CannotFix => StopKind::Input,
            Self::RetriesExhausted | Self::RateLimited { .. } | Self::CircuitOpen => {
                StopKind::Transient
            }
            Self::OutcomeUnknown | Self::NotCommitted | Self::NotApplied => {
                StopKind::UnknownOutcome
            }
            Self::DeadlineExceeded | Self::RetryBudgetExhausted | Self::Cancelled => {
                StopKind::Budget
            }
            Self::MethodNotAllowed
            | Self::Unclassified
            | Self::UnexpectedStatus
            | Self::ResponseTooLarge
            | Self::InvalidCall
            | Self::JournalUnavailable
            | Self::TlsFailed => StopKind::Configuration,
        }
    }
}

/// Every stop reason, once each, in declaration order (for tests that
/// must cover them all): generated from the enum, so a new reason is in it
/// — and in every table test over it — the moment it is declared.
/// [`RateLimited`](StopReason::RateLimited) waits a minute.
#[cfg(test)]
pub(crate) fn every_reason() -> Vec<StopReason> {
    use strum::IntoEnumIterator;
    StopReason::iter()
        .map(|reason| match reason {
            StopReason::RateLimited { .. } => StopReason::RateLimited {
                retry_after: std::time::Duration::from_secs(60),
            },
            other => other,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    /// Every category a failure can carry, and none.
    fn categories() -> Vec<Option<ErrorCategory>> {
        let mut all: Vec<_> = ErrorCategory::KNOWN.into_iter().map(Some).collect();
        all.push(Some(ErrorCategory::Other("QUOTA".into())));
        all.push(None);
        all
    }

    #[test]
    fn every_reason_is_listed_once() {
        let all = every_reason();
        let codes: HashSet<_> = all.iter().map(StopReason::code).collect();
        assert_eq!(codes.len(), all.len());
        // A new reason joins `docs/record.md`'s table of reasons, and this count.
        assert_eq!(all.len(), 32);
    }

    #[test]
    fn a_refused_401_and_a_refused_422_are_different_kinds() {
        let refused = StopReason::RetryRefused;
        assert_eq!(
            refused.kind(Some(&ErrorCategory::AuthError)),
            StopKind::Auth
        );
        assert_eq!(
            refused.kind(Some(&ErrorCategory::PolicyRejection)),
            StopKind::Policy
        );
        assert_eq!(
            refused.kind(Some(&ErrorCategory::NotFound)),
            StopKind::Input
        );
        assert_eq!(
            refused.kind(Some(&ErrorCategory::ServiceError)),
            StopKind::Transient
        );
        assert_eq!(
            refused.kind(Some(&ErrorCategory::Other("QUOTA".into()))),
            StopKind::Configuration
        );
    }

    #[test]
    fn only_the_category_driven_reasons_read_the_category() {
        for reason in every_reason() {
            let kinds: HashSet<_> = categories()
                .iter()
                .map(|c| reason.kind(c.as_ref()))
                .collect();
            let driven = matches!(
                reason,
                StopReason::RetryRefused
                    | StopReason::DelegatedSingleDispatch
                    | StopReason::UnstructuredFailure
            );
            assert_eq!(kinds.len() > 1, driven, "{}", reason.code());
        }
    }

    #[test]
    fn the_kind_of_a_hard_stop_agrees_with_its_category() {
        let pairs = [
            (StopReason::AuthenticationFailed, ErrorCategory::AuthError),
            (
                StopReason::PermissionDenied,
                ErrorCategory::PermissionDenied,
            ),
            (StopReason::PolicyRejected, ErrorCategory::PolicyRejection),
        ];
        for (reason, category) in pairs {
            assert_eq!(
                reason.kind(None),
                StopReason::RetryRefused.kind(Some(&category))
            );
        }
    }

    #[test]
    fn names_are_snake_case() {
        assert_eq!(StopKind::UnknownOutcome.as_str(), "unknown_outcome");
        assert_eq!(
            serde_json::to_value(StopKind::Configuration).unwrap(),
            "configuration"
        );
        assert_eq!(StopKind::Auth.to_string(), "auth");
    }
}
