//! The spans the loop opens, and the typed fields they carry.
//!
//! One span per call, per attempt, per correction, per reconciliation and per
//! lookup (the correction chain adds one per layer). Their fields come from
//! the record's types — outcome, stop reason, stop kind, category, action,
//! wait cause, lookup result, idempotency evidence, counts — so a trace says
//! what the record says and nothing more: never a payload, a header, a tool's
//! message or a model's words. The only strings a tool chooses (an error code,
//! a category this version does not know) are redacted and cut to
//! [`TOOL_TEXT_MAX_CHARS`]; the target is its endpoint (no query), redacted.
//!
//! Fields are declared empty when a span opens and recorded once the loop
//! knows them, so a subscriber (such as an OpenTelemetry bridge) sees each
//! span whole when it closes.

use recourse_protocol::{ErrorCategory, redact, truncate_chars};
use tracing::Span;
use tracing::field::Empty;

use crate::call::Call;
use recourse_core::machine::AfterLookup;
use recourse_core::policy::{Action, StopKind};
use recourse_core::record::{AttemptRecord, CallReport, LookupResult, WaitCause};

/// The most characters of a tool-chosen string (code, unknown category) on a span.
pub(crate) const TOOL_TEXT_MAX_CHARS: usize = 64;

/// A count or duration as a span field: an `i64`, the only integer
/// OpenTelemetry bridges keep as a number (`u32`/`u64`/`usize` fields reach
/// them as text).
pub(crate) fn int<T: TryInto<i64>>(n: T) -> i64 {
    n.try_into().unwrap_or(i64::MAX)
}

/// A tool-chosen string as a span may carry it: redacted, then cut short
/// (in that order, so a cut never hides a credential from the redactor).
pub(crate) fn tool_text(text: &str) -> String {
    truncate_chars(&redact(text), TOOL_TEXT_MAX_CHARS)
}

/// A category's name: the wire name, or the tool's own (redacted, short).
pub(crate) fn category_name(category: &ErrorCategory) -> String {
    match category {
        ErrorCategory::Other(_) => tool_text(category.as_str()),
        known => known.as_str().to_owned(),
    }
}

/// The span of one logical call.
pub(super) fn call(call: &Call, call_id: &str) -> Span {
    tracing::info_span!(
        "call",
        recourse.call_id = %tool_text(call_id),
        recourse.target = %redact(call.target.endpoint()),
        recourse.method = call.method.as_str(),
        recourse.outcome = Empty,
        recourse.reason = Empty,
        recourse.stop_kind = Empty,
        recourse.category = Empty,
        recourse.code = Empty,
        recourse.next_step = Empty,
        recourse.attempts = Empty,
        recourse.http_calls = Empty,
        recourse.llm_calls = Empty,
        recourse.tokens.prompt = Empty,
        recourse.tokens.completion = Empty,
        recourse.idempotent = Empty,
        recourse.idempotency_from = Empty,
        recourse.elapsed_ms = Empty,
        otel.status_code = Empty,
    )
}

/// Records how the call ended on its span, from the report's types.
pub(super) fn call_finished(span: &Span, report: &CallReport) {
    if span.is_disabled() {
        return;
    }
    span.record("recourse.outcome", report.outcome.name());
    if let Some(reason) = report.outcome.reason() {
        span.record("recourse.reason", reason.code());
    }
    if let Some(kind) = report.stop_kind() {
        span.record("recourse.stop_kind", StopKind::as_str(kind));
    }
    // The category and code the call last met: the final error's, else the
    // last attempt that named one (a call that succeeded after a failure).
    let last_named = report.attempts.iter().rev().find(|a| a.category.is_some());
    let category = report
        .outcome
        .error()
        .map(|e| &e.category)
        .or_else(|| last_named.and_then(|a| a.category.as_ref()));
    if let Some(category) = category {
        span.record("recourse.category", category_name(category));
    }
    let code = match report.outcome.error() {
        Some(error) => Some(error.code.as_str()),
        None => last_named.and_then(|a| a.code.as_deref()),
    };
    if let Some(code) = code.filter(|c| !c.is_empty()) {
        span.record("recourse.code", tool_text(code));
    }
    span.record("recourse.next_step", report.next().step.as_str());
    span.record("recourse.attempts", int(report.attempts.len()));
    span.record("recourse.http_calls", int(report.http_calls));
    span.record("recourse.llm_calls", int(report.llm_calls));
    span.record("recourse.tokens.prompt", int(report.tokens.prompt));
    span.record("recourse.tokens.completion", int(report.tokens.completion));
    span.record("recourse.idempotent", report.idempotency.idempotent);
    span.record(
        "recourse.idempotency_from",
        report.idempotency.from.as_str(),
    );
    span.record(
        "recourse.elapsed_ms",
        int(recourse_core::record::millis(report.elapsed)),
    );
    let status = if report.outcome.reason().is_some() {
        "error"
    } else {
        "ok"
    };
    span.record("otel.status_code", status);
}

/// The span of attempt `n`: its dispatch and the policy's decision.
pub(super) fn attempt(n: u32, timeout_ms: u64) -> Span {
    tracing::info_span!(
        "attempt",
        recourse.attempt = int(n),
        recourse.timeout_ms = int(timeout_ms),
        recourse.source = Empty,
        recourse.status = Empty,
        recourse.transport_error = Empty,
        recourse.category = Empty,
        recourse.code = Empty,
        recourse.retry_permission = Empty,
        recourse.action = Empty,
        recourse.wait_ms = Empty,
        recourse.wait_cause = Empty,
        recourse.reason = Empty,
    )
}

/// Records what attempt `record` met and what the policy decided.
pub(super) fn attempt_decided(span: &Span, record: &AttemptRecord) {
    if span.is_disabled() {
        return;
    }
    span.record("recourse.source", record.source.as_str());
    if let Some(status) = record.status {
        span.record("recourse.status", int(status));
    }
    if let Some(failure) = &record.transport_error {
        span.record("recourse.transport_error", failure.kind.as_str());
    }
    if let Some(category) = &record.category {
        span.record("recourse.category", category_name(category));
    }
    if let Some(code) = record.code.as_deref().filter(|c| !c.is_empty()) {
        span.record("recourse.code", tool_text(code));
    }
    span.record(
        "recourse.retry_permission",
        record.retry_permission.as_str(),
    );
    action(span, &record.action);
}

/// Records a decision: the action, its wait and who asked for it, or the stop reason.
pub(super) fn action(span: &Span, action: &Action) {
    span.record("recourse.action", action.name());
    match action {
        Action::RetrySame { wait, cause } => {
            span.record(
                "recourse.wait_ms",
                int(recourse_core::record::millis(*wait)),
            );
            span.record("recourse.wait_cause", cause.as_str());
        }
        Action::Reconcile { wait } => {
            span.record(
                "recourse.wait_ms",
                int(recourse_core::record::millis(*wait)),
            );
            span.record("recourse.wait_cause", WaitCause::PendingLookup.as_str());
        }
        Action::Stop { reason } => {
            span.record("recourse.reason", reason.code());
        }
        Action::Succeed | Action::Correct | Action::Verify => {}
    }
}

/// Records what follows a lookup: the action, the wait before the next
/// lookup, or the stop reason.
pub(super) fn after_lookup(span: &Span, after: &AfterLookup) {
    span.record("recourse.action", after.name());
    match after {
        AfterLookup::LookAgain { wait } => {
            span.record(
                "recourse.wait_ms",
                int(recourse_core::record::millis(*wait)),
            );
            span.record("recourse.wait_cause", WaitCause::PendingLookup.as_str());
        }
        AfterLookup::Stop(reason) => {
            span.record("recourse.reason", reason.code());
        }
        AfterLookup::Succeed(_) | AfterLookup::Resend => {}
    }
}

/// The span of correction `n` of the call (the layers it runs nest in it).
pub(super) fn correction(n: u32) -> Span {
    tracing::info_span!(
        "correction",
        recourse.correction = int(n),
        recourse.layer = Empty,
        recourse.verdict = Empty,
        recourse.gate_rule = Empty,
        recourse.llm_calls = Empty,
        recourse.tokens.prompt = Empty,
        recourse.tokens.completion = Empty,
    )
}

/// The span of a reconciliation (its lookups nest in it).
pub(super) fn reconcile() -> Span {
    tracing::info_span!(
        "reconcile",
        recourse.lookups = Empty,
        recourse.result = Empty,
        recourse.action = Empty,
    )
}

/// The span of lookup `n` of a reconciliation.
pub(super) fn lookup(n: u32) -> Span {
    tracing::info_span!(
        "lookup",
        recourse.lookup = int(n),
        recourse.result = Empty,
        recourse.action = Empty,
        recourse.wait_ms = Empty,
        recourse.wait_cause = Empty,
        recourse.reason = Empty,
    )
}

/// The span of a verification read of `target` (redacted).
pub(super) fn verify(target: &str) -> Span {
    tracing::info_span!(
        "verify",
        recourse.target = %redact(target),
        recourse.result = Empty,
    )
}

/// Records what a lookup found.
pub(super) fn lookup_found(span: &Span, result: LookupResult) {
    span.record("recourse.result", result.as_str());
}
