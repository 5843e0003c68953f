//! What each attempt leaves in the call's history: its record, and the
//! error the call would end with.

use std::time::Duration;

use recourse_core::machine::Assessment;
use recourse_core::policy::{Action, Observation};
use recourse_core::record::{AttemptRecord, millis};
use recourse_protocol::{ParsedResponse, RetryPermission, ToolError, redact, redact_value};
use serde_json::Value;

use super::Run;

impl Run<'_> {
    /// Remembers what the attempt said, as the machine assessed it.
    pub(super) fn remember(&mut self, observation: Observation<'_>, assessment: Assessment) {
        match observation {
            Observation::Response(r) => self.remember_response(r, assessment),
            Observation::Transport(t) => {
                let code = t.kind.as_str().to_ascii_uppercase();
                let retryable = assessment.retryable(RetryPermission::Unspecified, false);
                self.last.error =
                    Some(ToolError::service_error(code, redact(&t.message)).retryable(retryable));
            }
        }
    }

    fn remember_response(&mut self, r: &ParsedResponse, assessment: Assessment) {
        if r.success {
            // Its data is taken once the attempt is recorded (`attempt`).
            return;
        }
        self.last.error = r.to_tool_error().map(|mut error| {
            error.retryable = assessment.retryable(r.permission, error.retryable);
            error
        });
        if let Some(op) = r.details.get("operation_id").and_then(Value::as_str) {
            self.last.operation_id = Some(op.to_owned());
        }
    }

    pub(super) fn journal_failed(&mut self, error: &recourse_core::journal::JournalError) {
        self.last.error = Some(ToolError::service_error(
            "JOURNAL_UNAVAILABLE",
            error.to_string(),
        ));
    }

    /// Records attempt `n`: what was sent (redacted), what came back, what
    /// the machine made of it, and the events gathered for it.
    pub(super) fn record(
        &mut self,
        n: u32,
        observation: Observation<'_>,
        action: &Action,
        timeout: Duration,
        assessment: Assessment,
    ) {
        let (status, transport_error, category, code, permission) = match observation {
            Observation::Response(r) => (
                Some(r.status),
                None,
                r.category.clone(),
                r.code.clone(),
                r.permission,
            ),
            Observation::Transport(t) => {
                let mut failure = t.clone();
                failure.message = redact(&t.message);
                (
                    t.status,
                    Some(failure),
                    None,
                    None,
                    RetryPermission::Unspecified,
                )
            }
        };
        self.history.attempts.push(AttemptRecord {
            n,
            payload: self
                .journaling
                .redacted
                .take()
                .unwrap_or_else(|| redact_value(&self.payload.value)),
            status,
            transport_error,
            category,
            code,
            retry_permission: permission,
            action: action.clone(),
            timeout_ms: millis(timeout),
            source: self.payload.source,
            facts: assessment.facts,
            events: std::mem::take(&mut self.history.upcoming),
        });
    }
}
