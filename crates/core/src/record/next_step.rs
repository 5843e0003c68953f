//! What to hand back to the model after a call: [`Next`].
//!
//! # Why the record says what to tell the model
//!
//! An agent that gets a call record back still has to decide what to say
//! next, and the record is long: attempts, events, a redacted error. Left to
//! itself, a model reads the tool's message and improvises — retries a
//! refused write, switches to the "latest" version the user did not ask for,
//! follows a workaround an error body suggests. So the record ends with one
//! decision of its own, made from its types: the [`NextStep`] (what the agent
//! should do now), a short [`model_message`](Next::model_message) to hand the
//! model, and — when the choice is the user's — the [`question`](Next::question)
//! to ask them.
//!
//! The step is a pure function of the outcome, the [`StopReason`], the last
//! error's category (through [`StopKind`]) and whether the tool's details make
//! a question for the user. Every reason maps to exactly one step, given that
//! category and that question (see [`NextStep::after_stop`]); reasons added
//! later must be given one, since the mapping is an exhaustive `match`. A reason asking the user for input maps
//! to [`AskUser`](NextStep::AskUser); one saying a write the tool reported
//! done did not take effect maps to [`DoNotRepeat`](NextStep::DoNotRepeat), as
//! an unknown outcome does: the evidence disagrees, so a person checks before
//! anything is written again.
//!
//! The tool's own words (its message, `suggested_action`, `details.suggestion`)
//! reach the model only inside the message, fenced and labelled as the tool's:
//! they may tell the model what to say to the user, never what recourse does —
//! the policy alone decided the resends and corrections the record shows.
//!
//! # Computed, not stored
//!
//! `next` is not a field of [`CallReport`]: [`CallReport::next`] derives it
//! from the report each time, and serialization calls it. A stored copy could
//! disagree with the outcome it summarizes once anything edits or builds a
//! report (a test, a replayed record, a workflow step), and every place that
//! builds one would have to remember to fill it; a derived one cannot. It
//! costs a few string operations per serialization.

use std::time::Duration;

use recourse_protocol::{ErrorCategory, ToolError, parse_retry_after_detail, redact};
use serde::{Deserialize, Serialize};
use strum::{EnumIter, EnumString, IntoStaticStr, VariantNames};

use super::millis;
use super::{Disposition, question};
use crate::policy::{StopKind, StopReason};
use crate::record::{CallReport, Outcome};

/// The most characters of recourse's own sentences in a
/// [`Next::model_message`]; the tool's own words follow them.
pub const MODEL_MESSAGE_MAX_CHARS: usize = 600;

/// The most bytes of the tool's own text quoted whole in a
/// [`Next::model_message`] (8 KiB); a longer text is cut, the cut marked.
pub const TOOL_TEXT_MAX_BYTES: usize = 8 * 1024;

/// What the agent should do after a call (the record's `next.step`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
#[derive(IntoStaticStr, EnumString, EnumIter, VariantNames)]
#[strum(serialize_all = "snake_case")]
pub enum NextStep {
    /// The call succeeded: use its result.
    UseResult,
    /// The input was wrong and recourse did not (or could not) correct it:
    /// the model may correct its arguments and call again.
    FixArguments,
    /// The choice is the user's: ask them [`Next::question`] before calling again.
    AskUser,
    /// Credentials, access or the setup are wrong: tell the user; retrying changes nothing.
    FixConfiguration,
    /// A business rule refused the request: explain the refusal to the user.
    ExplainRefusal,
    /// A write may have taken effect: do not repeat it; check first
    /// ([`Next::operation_id`]).
    DoNotRepeat,
    /// It did not work now, and recourse has done what it may: tell the user,
    /// and try again later ([`Next::retry_after_ms`], when the tool said).
    GiveUp,
}

impl NextStep {
    /// The snake-case name used in the record.
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// The step after a call stopped for `reason`, when its last error had
    /// `category` and the tool's details made a question for the user
    /// (`asks`). Pure; exactly one step per reason, except where the reason
    /// leaves it to the failure ([`StopReason::RetryRefused`],
    /// [`StopReason::DelegatedSingleDispatch`]: by their [`StopKind`]) or to
    /// the question (an input the model could correct becomes
    /// [`AskUser`](Self::AskUser) when the tool offered the user a choice).
    ///
    /// ```
    /// use recourse_core::policy::StopReason;
    /// use recourse_core::record::NextStep;
    /// use recourse_protocol::ErrorCategory;
    ///
    /// let refused = StopReason::RetryRefused;
    /// let auth = NextStep::after_stop(&refused, Some(&ErrorCategory::AuthError), false);
    /// let rule = NextStep::after_stop(&refused, Some(&ErrorCategory::PolicyRejection), false);
    /// assert_eq!(auth, NextStep::FixConfiguration);
    /// assert_eq!(rule, NextStep::ExplainRefusal);
    /// assert_eq!(NextStep::after_stop(&StopReason::CannotFix, None, true), NextStep::AskUser);
    /// ```
    pub fn after_stop(reason: &StopReason, category: Option<&ErrorCategory>, asks: bool) -> Self {
        use StopReason as R;
        match reason {
            R::RetryRefused | R::DelegatedSingleDispatch | R::UnstructuredFailure => {
                Self::of_kind(reason.kind(category), asks)
            }
            R::NeedsInput => Self::AskUser,
            R::ProtocolMismatch => Self::FixConfiguration,
            R::AuthenticationFailed
            | R::PermissionDenied
            | R::MethodNotAllowed
            | R::Unclassified
            | R::UnexpectedStatus
            | R::ResponseTooLarge
            | R::InvalidCall
            | R::JournalUnavailable
            | R::TlsFailed
            | R::AuthRequired => Self::FixConfiguration,
            R::PolicyRejected | R::ApprovalRejected | R::ApprovalExpired => Self::ExplainRefusal,
            R::NoCorrector | R::CorrectionBudgetExhausted | R::NotOptedIn | R::CannotFix => {
                Self::fix_or_ask(asks)
            }
            R::NothingMutable => Self::AskUser,
            R::OutcomeUnknown | R::NotApplied => Self::DoNotRepeat,
            R::RetriesExhausted
            | R::RateLimited { .. }
            | R::DeadlineExceeded
            | R::RetryBudgetExhausted
            | R::CircuitOpen
            | R::NotCommitted
            | R::Cancelled => Self::GiveUp,
        }
    }

    /// The step for a failure of `kind`: what the category-driven reasons take.
    fn of_kind(kind: StopKind, asks: bool) -> Self {
        match kind {
            StopKind::Auth | StopKind::Permission | StopKind::Configuration => {
                Self::FixConfiguration
            }
            StopKind::Policy => Self::ExplainRefusal,
            StopKind::Input => Self::fix_or_ask(asks),
            StopKind::Transient | StopKind::Budget => Self::GiveUp,
            StopKind::UnknownOutcome => Self::DoNotRepeat,
        }
    }

    fn fix_or_ask(asks: bool) -> Self {
        if asks {
            Self::AskUser
        } else {
            Self::FixArguments
        }
    }
}

impl std::fmt::Display for NextStep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What to hand back to the model after a call (the record's `next`):
/// computed from the record's types by [`CallReport::next`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Next {
    /// The one thing the agent should do now.
    pub step: NextStep,
    /// A text for the model: what happened, what recourse already did, and
    /// what to do now, in at most 600 characters
    /// ([`MODEL_MESSAGE_MAX_CHARS`]); then the tool's own words, whole up to
    /// 8 KiB ([`TOOL_TEXT_MAX_BYTES`]), fenced and labelled as the tool's.
    /// Redacted.
    pub model_message: String,
    /// With `ask_user` ([`NextStep::AskUser`]): the question to put to the user (redacted).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub question: Option<String>,
    /// With `do_not_repeat` ([`NextStep::DoNotRepeat`]): the tool's id for the write, to check it by.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub operation_id: Option<String>,
    /// With `give_up` ([`NextStep::GiveUp`]): how long after the last attempt the tool
    /// said it accepts calls again, when it said.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_after_ms: Option<u64>,
}

/// The most characters of an operation id handed to the model.
const MAX_ID_CHARS: usize = 64;

/// Whether `id` (a tool's operation id) is fit to hand the model: at most
/// [`MAX_ID_CHARS`] letters, digits and `_.:-` — nothing that could end a
/// sentence, start an instruction or hold a secret the redactor marked.
fn is_id(id: &str) -> bool {
    (1..=MAX_ID_CHARS).contains(&id.len())
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '-'))
}

/// The [`Next`] of `report`.
pub(super) fn of(report: &CallReport) -> Next {
    let (reason, error) = match &report.outcome {
        Outcome::Succeeded { .. } => {
            return Next {
                step: NextStep::UseResult,
                model_message: message::succeeded(report),
                question: None,
                operation_id: None,
                retry_after_ms: None,
            };
        }
        Outcome::Failed { error, reason } | Outcome::Unknown { error, reason } => {
            (reason, error.as_ref())
        }
    };
    let category = error.map(|e| &e.category);
    let sent = report.attempts.last().map(|a| &a.payload);
    let offered = offered(reason, error, sent);
    let step = NextStep::after_stop(reason, category, offered.is_some());
    // A step that asks the user always has a question: the tool's choice, or
    // one the reason makes (whose value it is, what is missing).
    let question = (step == NextStep::AskUser)
        .then(|| offered.unwrap_or_else(|| question::for_reason(reason, error, sent)));
    let mut next = Next {
        step,
        model_message: String::new(),
        question,
        operation_id: None,
        retry_after_ms: None,
    };
    match step {
        NextStep::DoNotRepeat => {
            next.operation_id = report
                .operation_id
                .as_deref()
                .map(redact)
                .filter(|id| is_id(id));
        }
        NextStep::GiveUp => next.retry_after_ms = retry_after(reason, error).map(millis),
        _ => {}
    }
    next.model_message = message::stopped(report, reason, error, &next);
    next
}

/// The question the tool's details offer the user of a call that stopped
/// for `reason` on `error` (only for a problem with its input).
fn offered(
    reason: &StopReason,
    error: Option<&ToolError>,
    sent: Option<&serde_json::Value>,
) -> Option<String> {
    match error {
        Some(e) if reason.kind(Some(&e.category)) == StopKind::Input => {
            question::from_details(e, sent)
        }
        _ => None,
    }
}

/// What the stop of `report` means ([`Disposition::of_stop`], the tool's
/// question read as [`of`] reads it); `None` when it succeeded.
pub(super) fn disposition(report: &CallReport) -> Option<Disposition> {
    let reason = report.outcome.reason()?;
    let error = report.outcome.error();
    let sent = report.attempts.last().map(|a| &a.payload);
    let asks = offered(reason, error, sent).is_some();
    Some(Disposition::of_stop(
        reason,
        error.map(|e| &e.category),
        asks,
    ))
}

/// The [`Next`] of a call awaiting `approval`: ask the user whether to
/// wait for the approver's decision.
pub(super) fn awaiting(approval: &crate::approval::Approval) -> Next {
    let question = question::for_approval(&approval.reason, &approval.expires_at);
    Next {
        step: NextStep::AskUser,
        model_message: message::awaiting(approval, &question),
        question: Some(question),
        operation_id: None,
        retry_after_ms: None,
    }
}

/// When the tool accepts calls again, if it said: the demand that stopped
/// a rate-limited call, or its last error's `details.retry_after`.
fn retry_after(reason: &StopReason, error: Option<&ToolError>) -> Option<Duration> {
    match reason {
        StopReason::RateLimited { retry_after } if *retry_after == Duration::MAX => None,
        StopReason::RateLimited { retry_after } => Some(*retry_after),
        _ => error
            .and_then(|e| e.details.get("retry_after"))
            .and_then(parse_retry_after_detail),
    }
}

mod message;
#[cfg(test)]
mod tests;
