//! The `Reconcile` action: look up a write whose outcome is unknown, never
//! resend blindly. What follows each lookup is the policy's decision.

use recourse_protocol::redact;
use tracing::Instrument;

use super::{Flow, Run};
use crate::{
    Action, Event, LookupResult, Outcome, ReconcileRequest, Reconciliation, StopReason, WaitCause,
};

impl Run<'_> {
    pub(super) async fn reconcile(&mut self) -> Flow {
        let Some(reconciler) = self
            .call
            .reconciler
            .clone()
            .or_else(|| self.exec.reconciler.clone())
        else {
            return Flow::Done(self.stopped(StopReason::OutcomeUnknown));
        };
        self.lookups = 0;
        loop {
            let request = ReconcileRequest {
                target: &self.call.target,
                idempotency_key: self.key.as_deref(),
                operation_id: self.operation_id.as_deref(),
                payload: &self.payload,
            };
            let found = reconciler
                .reconcile(request)
                .instrument(tracing::info_span!("reconcile"))
                .await;
            self.lookups += 1;
            self.event(lookup_event(&found));
            let situation = self.situation();
            let decided = self
                .policy
                .after_lookup(&found, self.last_permission, &situation);
            match self.gate_retry(decided) {
                Action::Succeed => {
                    let Reconciliation::Committed(data) = found else {
                        return Flow::Done(self.stopped(StopReason::OutcomeUnknown));
                    };
                    return Flow::Done(Outcome::Succeeded { data });
                }
                Action::RetrySame { .. } => {
                    self.retries += 1;
                    return Flow::Next;
                }
                Action::Reconcile { wait } => {
                    if !self.wait(wait, WaitCause::PendingLookup).await {
                        return Flow::Done(self.stopped(StopReason::OutcomeUnknown));
                    }
                }
                Action::Correct => return Flow::Done(self.stopped(StopReason::OutcomeUnknown)),
                Action::Stop { reason } => return Flow::Done(self.stopped(reason)),
            }
        }
    }
}

fn lookup_event(found: &Reconciliation) -> Event {
    let (result, detail) = match found {
        Reconciliation::Committed(_) => (LookupResult::Committed, None),
        Reconciliation::NotCommitted => (LookupResult::NotCommitted, None),
        Reconciliation::Pending { .. } => (LookupResult::Pending, None),
        Reconciliation::Unknown(why) => (LookupResult::CannotTell, Some(redact(why))),
    };
    Event::Lookup { result, detail }
}
