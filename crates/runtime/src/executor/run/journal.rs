//! Write-ahead journaling of the call and each attempt.

use std::sync::Arc;

use recourse_protocol::{redact_template_value, redact_value};

use super::Run;
use super::outcome::OutcomeWrite;
use crate::journal::{LeaseKeeper, give_back, process_owner, within};
use recourse_core::journal::{
    AttemptResult, CallState, Journal, JournalErrorKind, NewCall, RecordJson, rfc3339,
};
use recourse_core::record::{CallReport, Event, Outcome, SettledBy, Settlement};

impl Run<'_> {
    /// Records the call before its first dispatch — when it has something to
    /// settle: a write (not idempotent) or a caller's key — or when a person
    /// approved it (the journal holds it already, and its end goes there).
    /// An idempotent call without a key can never be left in doubt, so the
    /// read path writes nothing.
    pub(super) async fn journal_call(
        &mut self,
    ) -> Result<(), recourse_core::journal::JournalError> {
        let Some(journal) = self.exec.journal.clone() else {
            return Ok(());
        };
        if self.keying.idempotency.idempotent
            && self.call.caller_key.is_none()
            && !self.call.approved
        {
            return Ok(());
        }
        let lease = self.exec.config.lease;
        let call = NewCall {
            call_id: self.call_id.clone(),
            target: self.call.target.to_string(),
            capability: self.call.described.capability.clone(),
            idempotency_key: self.keying.key.clone(),
            // A credential in the template (`?token=…`, `user:pass@`) is not
            // kept at rest: a settler gets credentials from its configuration.
            // Its placeholders are, whatever the parameter is called.
            reconcile: self
                .call
                .settling
                .reconcile_template
                .as_deref()
                .map(recourse_protocol::redact_template),
            verification: self
                .call
                .settling
                .verifier
                .as_ref()
                .and_then(|v| serde_json::to_value(v.spec()).ok())
                .map(|spec| redact_template_value(&spec)),
            // Still the caller's payload: the call is journaled before admission.
            payload: redact_value(&self.payload.value),
            owner: process_owner().to_owned(),
            lease,
            caller: self.call.caller.clone(),
        };
        within(
            self.remaining(),
            "recording call",
            journal.begin_call(&call),
        )
        .await?;
        self.journaling.journaled = Some(call.payload);
        let clock = Arc::clone(&self.exec.clock);
        self.journaling.lease = Some(LeaseKeeper::start(
            journal,
            self.call_id.clone(),
            lease,
            clock,
        ));
        self.history.upcoming.push(Event::Journal {
            state: CallState::InFlight,
        });
        Ok(())
    }

    /// Gives the key's claim back when the call could not be journaled
    /// (so nothing was sent): its lease ends now, and a retry of the same
    /// request takes the call over at once instead of after the lease. The
    /// journal has just failed, so this is asked in the background, a few
    /// times, as it comes back.
    pub(super) fn give_back_claim(&self) {
        let (Some(journal), Some(_)) = (self.exec.journal.clone(), &self.call.caller_key) else {
            return;
        };
        let (call_id, clock) = (self.call_id.clone(), Arc::clone(&self.exec.clock));
        tokio::spawn(give_back(journal, call_id, clock));
    }

    pub(super) async fn journal_attempt_start(
        &mut self,
        n: u32,
    ) -> Result<(), recourse_core::journal::JournalError> {
        self.journal_ended_attempt().await;
        match self.journaled() {
            Some(journal) => {
                let payload = redact_value(&self.payload.value);
                // The call's own payload is stored once, with the call.
                let sent =
                    (self.journaling.journaled.as_ref() != Some(&payload)).then_some(&payload);
                let begun = within(
                    self.remaining(),
                    "recording attempt",
                    journal.begin_attempt(&self.call_id, n, sent),
                )
                .await;
                if begun
                    .as_ref()
                    .is_err_and(|e| e.kind() == JournalErrorKind::Conflict)
                {
                    // Another run of this call recorded the attempt: it took
                    // the call over when this run's lease ran out, and the
                    // call is its to finish. This run sent nothing, and
                    // writes no more of it.
                    self.journaling.lease = None;
                }
                // The attempt's record shows the same payload, redacted once.
                self.journaling.redacted = Some(payload);
                begun
            }
            None => Ok(()),
        }
    }

    /// Notes how attempt `n` ended, for the journal's next write: the next
    /// attempt's start, or the call's end, which takes it in the same commit.
    /// The attempt's end is history, read by nothing that settles a call, so
    /// it need not hold up what the run does next.
    pub(super) fn journal_attempt_end(&mut self, n: u32) {
        if self.journaled().is_none() {
            return;
        }
        if let Some(last) = self.history.attempts.last() {
            self.journaling.ended = Some((
                n,
                AttemptResult {
                    status: last.status,
                    transport_error: last.transport_error.clone(),
                    action: last.action.clone(),
                },
            ));
        }
    }

    /// Writes the noted end of the last attempt, if any.
    async fn journal_ended_attempt(&mut self) {
        let Some((n, result)) = self.journaling.ended.take() else {
            return;
        };
        if let Some(journal) = self.journaled()
            && let Err(e) = journal.finish_attempt(&self.call_id, n, &result).await
        {
            tracing::warn!(error = %e, "could not complete the attempt in the journal");
        }
    }

    /// The journal, when this call is recorded in it.
    pub(super) fn journaled(&self) -> Option<&Arc<dyn Journal>> {
        self.journaling
            .lease
            .as_ref()
            .and(self.exec.journal.as_ref())
    }

    /// Records how the call ended, with its record, and releases its lease
    /// ([`OutcomeWrite`]: tried again until the journal holds it, past the
    /// request if need be). The report says `journal: STATE` only if the
    /// write succeeded before it returned. A call the journal stopped before
    /// anything was sent is settled by the journal: nothing was written, and
    /// a resend under its key runs it.
    pub(super) async fn journal_outcome(&mut self, mut report: CallReport) -> CallReport {
        let Some(lease) = self.journaling.lease.take() else {
            return report;
        };
        let Some(journal) = self.exec.journal.clone() else {
            return report;
        };
        let state = match &report.outcome {
            Outcome::Succeeded { .. } => CallState::Succeeded,
            Outcome::Failed { .. } => CallState::Failed,
            Outcome::Unknown { .. } => CallState::Unknown,
        };
        let unsent = report.is_unsent_for_the_journal();
        if unsent {
            let at = rfc3339(self.exec.clock.wall());
            report.settlement = Some(Settlement::new(SettledBy::Journal, at));
        }
        let event = Event::Journal { state };
        if let Some(last) = report.attempts.last_mut() {
            last.events.push(event.clone());
        }
        let record = match &self.journaling.journaled {
            Some(payload) => RecordJson::beside(&report, payload),
            None => RecordJson::of(&report),
        }
        .inspect_err(|e| tracing::warn!(error = %e, "could not write the call's record"))
        .ok();
        let outcome = OutcomeWrite {
            journal,
            call_id: report.call_id.clone(),
            state,
            operation_id: report.operation_id.clone(),
            record,
            attempt: self.journaling.ended.take(),
            unsent_under: unsent.then_some(self.exec.config.lease),
        };
        if !outcome.write(lease, &self.exec.clock).await
            && let Some(last) = report.attempts.last_mut()
            && last.events.last() == Some(&event)
        {
            last.events.pop();
        }
        report
    }
}
