//! Write-ahead journaling of the call and each attempt.

use recourse_protocol::redact_value;

use super::Run;
use crate::{AttemptResult, CallState, Event, NewCall, Outcome, StopReason};

impl Run<'_> {
    pub(super) async fn journal_call(&mut self) -> Result<(), crate::JournalError> {
        let Some(journal) = &self.exec.journal else {
            return Ok(());
        };
        let call = NewCall {
            call_id: self.call_id.clone(),
            target: self.call.target.to_string(),
            capability: self.call.capability.clone(),
            idempotency_key: self.key.clone(),
            reconcile: self.call.reconcile_template.clone(),
            payload: redact_value(&self.call.payload),
        };
        journal.begin_call(&call).await?;
        self.upcoming.push(Event::Journal {
            state: CallState::InFlight,
        });
        Ok(())
    }

    pub(super) async fn journal_attempt_start(&self, n: u32) -> Result<(), crate::JournalError> {
        match &self.exec.journal {
            Some(journal) => {
                let payload = redact_value(&self.payload);
                journal.begin_attempt(&self.call_id, n, &payload).await
            }
            None => Ok(()),
        }
    }

    pub(super) async fn journal_attempt_end(&self, n: u32) {
        let (Some(journal), Some(last)) = (&self.exec.journal, self.attempts.last()) else {
            return;
        };
        let result = AttemptResult {
            status: last.status,
            transport_error: last.transport_error.clone(),
            action: last.action.clone(),
        };
        if let Err(e) = journal.finish_attempt(&self.call_id, n, &result).await {
            tracing::warn!(error = %e, "could not complete the attempt in the journal");
        }
    }

    pub(super) async fn journal_outcome(&mut self, outcome: &Outcome) {
        let Some(journal) = &self.exec.journal else {
            return;
        };
        if matches!(outcome.reason(), Some(StopReason::JournalUnavailable)) {
            return;
        }
        let state = match outcome {
            Outcome::Succeeded { .. } => CallState::Succeeded,
            Outcome::Failed { .. } => CallState::Failed,
            Outcome::Unknown { .. } => CallState::Unknown,
        };
        let op = self.operation_id.as_deref();
        match journal.set_state(&self.call_id, state, op).await {
            Ok(()) => self.event(Event::Journal { state }),
            Err(e) => tracing::warn!(error = %e, "could not complete the call in the journal"),
        }
    }
}
