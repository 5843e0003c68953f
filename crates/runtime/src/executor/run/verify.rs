//! Reading a write's effect back: once before the first dispatch, and after
//! an unknown outcome (or a success the call reads back). What follows each
//! read is the machine's decision.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tracing::Instrument;

use super::Run;
use crate::span;
use crate::verify::{self, Against, Reading, ResolvedRead};
use recourse_core::machine::{AfterRead, CallMachine, Command, ReadBack, SuccessFrom};
use recourse_core::policy::Verification;
use recourse_core::record::{Event, VerifyPhase};
use recourse_core::transport::Transport;

impl Run<'_> {
    /// The read before the first dispatch, within `timeout`: was the
    /// effect there already? Skipped when the call is cancelled.
    pub(super) async fn verify_before(&mut self, timeout: Option<Duration>) {
        let Some(verifier) = self.call.settling.verifier.clone() else {
            return;
        };
        if self.cancel.is_cancelled() {
            return;
        }
        let read = match verifier.resolve(&self.payload.value) {
            Ok(read) => read,
            Err(why) => {
                self.note_reading(VerifyPhase::Before, &Reading::cannot_tell(why));
                return;
            }
        };
        let reading = self.read_back(&read, timeout, Against::NothingYet).await;
        self.note_reading(VerifyPhase::Before, &reading);
        self.reads.before = Some(Box::new((read, reading)));
    }

    /// Reads the effect back after the write answered, and tells the
    /// machine what the read found.
    pub(super) async fn verify_after(
        &mut self,
        machine: &mut CallMachine,
        read: ReadBack,
    ) -> Command {
        let answer = read.answer();
        let (reading, before) = match self
            .call
            .settling
            .verifier
            .clone()
            .map(|v| v.resolve(&self.payload.value))
        {
            Some(Ok(resolved)) => {
                // A correction since may have changed what the read asks:
                // the earlier read then says nothing about this payload.
                let before = self
                    .reads
                    .before
                    .as_ref()
                    .filter(|before| before.0 == resolved)
                    .map(|before| &before.1);
                let timeout = machine.read_timeout(self.exec.clock.now());
                let against = Against::Before(before.and_then(|b| b.document.as_ref()));
                let reading = self.read_back(&resolved, timeout, against).await;
                (reading, before.map(|b| b.result))
            }
            Some(Err(why)) => (Reading::cannot_tell(why), None),
            None => (Reading::cannot_tell("no verification declared"), None),
        };
        self.note_reading(VerifyPhase::After, &reading);
        self.reads.verification = Some(Verification::of(before, reading.result, answer));
        let verdict = machine.read_back(read, before, reading.result, self.exec.clock.now());
        let decided = self.gated(verdict).await;
        if let AfterRead::Succeed(SuccessFrom::ReadBack) = decided.action() {
            self.last.data = Some(reading.document.unwrap_or(Value::Null).into());
        }
        machine.follow(decided)
    }

    /// One read, within `timeout` (`None`: no time is left before the
    /// deadline), `against` the read before the write.
    async fn read_back(
        &self,
        read: &ResolvedRead,
        timeout: Option<Duration>,
        against: Against<'_>,
    ) -> Reading {
        let Some(timeout) = timeout else {
            return Reading::cannot_tell("no time left before the deadline");
        };
        let transport: Arc<dyn Transport> = self
            .call
            .settling
            .verify_transport
            .clone()
            .unwrap_or_else(|| Arc::clone(&self.exec.transport));
        let span = span::verify(&read.target.to_string());
        let reading = verify::read(
            transport.as_ref(),
            read,
            &self.call.headers,
            timeout,
            against,
        )
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
