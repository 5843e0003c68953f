//! What rig hands the model after a call: [`tool_answer`].
//!
//! # Why the answer comes from the record's `next`
//!
//! rig shows the model whatever a tool returns — its output on success, the
//! error's model-visible output on failure — and nothing else: the OpenAI
//! wire has no error flag on a `tool` message, so the text is all the model
//! reads. A tool that returned the tool server's message would let the model
//! improvise: resend a write whose outcome is unknown, follow a workaround an
//! error body urges. So the answer is the record's [`Next`], which recourse
//! computed from the record's types: the data when the step is
//! [`UseResult`](NextStep::UseResult), otherwise a failure whose text opens
//! with the step and carries the [`model_message`](Next::model_message).
//!
//! The failure's structured fields are for rig and the host's hooks, which
//! read no text: the step is the `code`, the tool's last HTTP error status
//! the `http_status`, and `retryable` is always `false` — recourse already
//! resent everything that was safe to resend, within its budgets, so nothing
//! should resend the same call on its own. A step of
//! [`DoNotRepeat`](NextStep::DoNotRepeat) says so twice over: in the code,
//! and in capitals at the head of the text.

use recourse::record::{Event, Next, NextStep};
use recourse::{CallReport, Outcome, StopKind, StopReason};
use rig_core::message::ToolResultContent;
use rig_core::tool::{ToolErrorKind, ToolExecutionError, ToolOutput};

/// The first line of the text the model reads after a call whose outcome is
/// unknown.
pub const DO_NOT_REPEAT_LINE: &str = "DO NOT REPEAT THIS CALL: it may already have taken effect, \
     and calling again could do it twice.";

/// What rig hands the model after `report`: the data on success, else a
/// [`ToolExecutionError`] built from the record's [`Next`].
///
/// On success the output is the data alone when the first attempt succeeded
/// as sent; when recourse resent, corrected or looked the call up, a second
/// block carries the model message (what the result is for: "recourse
/// corrected the arguments …", "a lookup found the write committed: do not
/// repeat it").
///
/// A failure's model-visible text is `recourse: next step STEP.` followed by
/// the model message ([`DO_NOT_REPEAT_LINE`] first for
/// [`NextStep::DoNotRepeat`]). Its fields: `code` is the step's name,
/// `retryable` is `false`, `http_status` the last status the tool answered
/// with when it is an error status (4xx, 5xx), and the kind follows the problem (`invalid_args` for arguments to
/// fix, `permission_denied` for credentials or access, a refusal for a
/// business rule, `rate_limited`, `timeout`, `cancelled`, `network` or
/// `provider` for what passes with time, `other` for an unknown outcome).
///
/// ```
/// use recourse::{CallReport, Outcome, StopReason};
/// use recourse::idempotency::{Evidence, Idempotency};
/// use recourse::record::TokenUsage;
/// use recourse_protocol::ToolError;
/// use std::time::Duration;
///
/// let report = CallReport {
///     call_id: "c-1".into(),
///     outcome: Outcome::Unknown {
///         error: Some(ToolError::unknown_outcome("UNKNOWN_OUTCOME", "the export may have been written")),
///         reason: StopReason::OutcomeUnknown,
///     },
///     attempts: Vec::new(),
///     http_calls: 1,
///     llm_calls: 0,
///     tokens: TokenUsage::default(),
///     llm_time: Duration::ZERO,
///     idempotency: Idempotency { idempotent: false, from: Evidence::Manifest },
///     idempotency_key: Some("k-1".into()),
///     operation_id: None,
///     verification: None,
///     elapsed: Duration::from_millis(3),
///     settlement: None,
///     answer: None,
///     ended_at: None,
/// };
/// let error = recourse_rig::tool_answer(&report).unwrap_err();
/// assert_eq!(error.code(), Some("do_not_repeat"));
/// assert_eq!(error.retryable(), Some(false));
/// assert!(error.model_feedback().unwrap().starts_with(recourse_rig::DO_NOT_REPEAT_LINE));
/// ```
pub fn tool_answer(report: &CallReport) -> Result<ToolOutput, ToolExecutionError> {
    let next = report.next();
    match &report.outcome {
        Outcome::Succeeded { data } if went_as_sent(report) => {
            Ok(ToolOutput::json(data.to_value()))
        }
        Outcome::Succeeded { data } => Ok(ToolOutput::content(vec![
            ToolResultContent::json(data.to_value()),
            ToolResultContent::text(format!("recourse: {}", next.model_message)),
        ])
        .unwrap_or_else(|_| ToolOutput::json(data.to_value()))),
        Outcome::Failed { reason, .. } | Outcome::Unknown { reason, .. } => {
            Err(failure(report, reason, &next))
        }
    }
}

/// Whether the call succeeded on its first attempt, as sent, with no lookup.
fn went_as_sent(report: &CallReport) -> bool {
    report.attempts.len() <= 1
        && !report
            .attempts
            .iter()
            .flat_map(|a| &a.events)
            .any(|e| matches!(e, Event::Lookup { .. }))
}

fn failure(report: &CallReport, reason: &StopReason, next: &Next) -> ToolExecutionError {
    let kind = report.stop_kind();
    let error = if next.step == NextStep::ExplainRefusal {
        ToolExecutionError::refused(next.model_message.clone())
    } else {
        ToolExecutionError::new(
            rig_kind(report, reason, kind, next.step),
            next.model_message.clone(),
        )
    };
    let error = error
        .with_model_feedback(model_text(next))
        .with_retryable(false)
        .with_code(next.step.as_str());
    // A failure over MCP arrives in an HTTP 200 exchange: only an error
    // status says anything about the failure.
    match report.attempts.iter().rev().find_map(|a| a.status) {
        Some(status) if status >= 400 => error.with_http_status(status),
        _ => error,
    }
}

/// The text the model reads for a failure.
fn model_text(next: &Next) -> String {
    let head = format!("recourse: next step {}.", next.step);
    if next.step == NextStep::DoNotRepeat {
        format!("{DO_NOT_REPEAT_LINE}\n{head}\n{}", next.model_message)
    } else {
        format!("{head}\n{}", next.model_message)
    }
}

/// rig's normalized kind for a stop.
fn rig_kind(
    report: &CallReport,
    reason: &StopReason,
    kind: Option<StopKind>,
    step: NextStep,
) -> ToolErrorKind {
    match step {
        NextStep::FixArguments => return ToolErrorKind::InvalidArgs,
        NextStep::DoNotRepeat | NextStep::AskUser | NextStep::UseResult => {
            return ToolErrorKind::Other;
        }
        NextStep::FixConfiguration | NextStep::ExplainRefusal | NextStep::GiveUp => {}
    }
    match (reason, kind) {
        (_, Some(StopKind::Auth | StopKind::Permission | StopKind::Policy)) => {
            ToolErrorKind::PermissionDenied
        }
        (StopReason::RateLimited { .. }, _) => ToolErrorKind::RateLimited,
        (StopReason::DeadlineExceeded, _) => ToolErrorKind::Timeout,
        (StopReason::Cancelled, _) => ToolErrorKind::Cancelled,
        (_, Some(StopKind::Transient | StopKind::Budget)) => {
            let unanswered = report
                .attempts
                .last()
                .is_some_and(|a| a.transport_error.is_some());
            if unanswered {
                ToolErrorKind::Network
            } else {
                ToolErrorKind::Provider
            }
        }
        _ => ToolErrorKind::Other,
    }
}

#[cfg(test)]
mod tests;
