//! The `Reconcile` action: look up a write whose outcome is unknown, never
//! resend blindly. What follows each lookup is the policy's decision.

use recourse_protocol::redact;
use tracing::{Instrument, Span};

use super::{Flow, Run, span};
use crate::{
    Action, Event, LookupResult, Outcome, ReconcileRequest, Reconciler, Reconciliation, StopReason,
    WaitCause,
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
        let span = span::reconcile();
        let flow = self
            .lookups(reconciler.as_ref(), &span)
            .instrument(span.clone())
            .await;
        span.record("recourse.lookups", crate::run::span::int(self.lookups));
        flow
    }

    /// Looks up until the policy's decision after a lookup ends the reconciliation.
    async fn lookups(&mut self, reconciler: &dyn Reconciler, reconcile: &Span) -> Flow {
        self.lookups = 0;
        loop {
            let request = ReconcileRequest {
                target: &self.call.target,
                idempotency_key: self.key.as_deref(),
                operation_id: self.operation_id.as_deref(),
                payload: &self.payload,
            };
            let lookup = span::lookup(self.lookups + 1);
            let found = reconciler
                .reconcile(request)
                .instrument(lookup.clone())
                .await;
            self.lookups += 1;
            let event = lookup_event(&found);
            if let Event::Lookup { result, .. } = &event {
                span::lookup_found(&lookup, *result);
                reconcile.record("recourse.result", result.as_str());
            }
            self.event(event);
            let situation = self.situation();
            let decided = self
                .policy
                .after_lookup(&found, self.last_permission, &situation);
            let decided = self.gate_retry(decided).await;
            span::action(&lookup, &decided);
            reconcile.record("recourse.action", decided.name());
            drop(lookup);
            match decided {
                Action::Succeed => {
                    let Reconciliation::Committed(data) = found else {
                        return Flow::Done(self.stopped(StopReason::OutcomeUnknown));
                    };
                    return Flow::Done(Outcome::Succeeded { data: data.into() });
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
                Action::Correct | Action::Verify => {
                    return Flow::Done(self.stopped(StopReason::OutcomeUnknown));
                }
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
