//! Reading a write's effect back: once before the first dispatch, and after
//! an unknown outcome (or a success the call reads back). What follows each
//! read is the policy's decision.

use std::sync::Arc;

use serde_json::Value;
use tracing::Instrument;

use super::{Flow, Run, span};
use crate::verify::{self, Reading, ResolvedRead};
use crate::{
    Action, Event, Outcome, StopReason, Transport, Verification, VerifyPhase, WriteAnswer,
};

impl Run<'_> {
    /// The read before the first dispatch: was the effect there already?
    /// Skipped with `after_only`, and when no time is left.
    pub(super) async fn verify_before(&mut self) {
        let Some(verifier) = self.call.verifier.clone() else {
            return;
        };
        if verifier.after_only() || self.cancel.is_cancelled() {
            return;
        }
        let read = match verifier.resolve(&self.payload) {
            Ok(read) => read,
            Err(why) => {
                self.note_reading(VerifyPhase::Before, &Reading::cannot_tell(why));
                return;
            }
        };
        let reading = self.read_back(&read).await;
        self.note_reading(VerifyPhase::Before, &reading);
        self.before = Some(Box::new((read, reading.result)));
    }

    /// Reads the effect back after the write answered, and does what the
    /// policy decides.
    pub(super) async fn verify_after(&mut self, answer: WriteAnswer) -> Flow {
        let Some(verifier) = self.call.verifier.clone() else {
            return Flow::Done(self.stopped(StopReason::OutcomeUnknown));
        };
        let (reading, before) = match verifier.resolve(&self.payload) {
            Ok(read) => {
                // A correction since may have changed what the read asks:
                // the earlier read then says nothing about this payload.
                let before = self
                    .before
                    .as_ref()
                    .filter(|before| before.0 == read)
                    .map(|before| before.1);
                (self.read_back(&read).await, before)
            }
            Err(why) => (Reading::cannot_tell(why), None),
        };
        self.lookups += 1;
        self.note_reading(VerifyPhase::After, &reading);
        self.verification = Some(Verification::of(before, reading.result, answer));
        let situation = self.situation();
        let decided = self
            .policy
            .after_verification(before, reading.result, answer, &situation);
        match (self.gate_retry(decided).await, answer) {
            (Action::Succeed, WriteAnswer::Succeeded) => Flow::Done(Outcome::Succeeded {
                data: self.last_data.take().unwrap_or_default(),
            }),
            (Action::Succeed, WriteAnswer::Unknown { .. }) => Flow::Done(Outcome::Succeeded {
                data: reading.document.unwrap_or(Value::Null).into(),
            }),
            (Action::RetrySame { .. }, _) => {
                self.retries += 1;
                // The resend's success is read back too.
                self.verify_next_success = true;
                Flow::Next
            }
            (Action::Stop { reason }, _) => Flow::Done(self.stopped(reason)),
            (Action::Correct | Action::Reconcile { .. } | Action::Verify, _) => {
                Flow::Done(self.stopped(StopReason::OutcomeUnknown))
            }
        }
    }

    /// One read, within the attempt timeout and the deadline.
    async fn read_back(&self, read: &ResolvedRead) -> Reading {
        let Some(timeout) = self
            .policy
            .attempt_timeout(self.exec.config.request_timeout, self.remaining())
        else {
            return Reading::cannot_tell("no time left before the deadline");
        };
        let transport: Arc<dyn Transport> = self
            .call
            .verify_transport
            .clone()
            .unwrap_or_else(|| Arc::clone(&self.exec.transport));
        let span = span::verify(&read.target.to_string());
        let reading = verify::read(transport.as_ref(), read, &self.call.headers, timeout)
            .instrument(span.clone())
            .await;
        span.record("recourse.result", reading.result.as_str());
        reading
    }

    fn note_reading(&mut self, phase: VerifyPhase, reading: &Reading) {
        tracing::debug!(
            phase = phase.as_str(),
            result = reading.result.as_str(),
            "verification read"
        );
        self.event(Event::Verify {
            phase,
            result: reading.result,
            detail: reading.detail.clone(),
        });
    }
}
