//! The `LookUp` command: look up a write whose outcome is unknown, never
//! resend blindly. What follows each lookup is the machine's decision.

use recourse_protocol::redact;
use tracing::Instrument;

use super::Run;
use crate::span;
use recourse_core::machine::{CallMachine, Command, LookUp};
use recourse_core::reconcile::{ReconcileRequest, Reconciliation};
use recourse_core::record::{Event, LookupResult};

impl Run<'_> {
    /// Lookup `lookup` of the current unknown outcome, under the span of
    /// its reconciliation (opened by the first lookup, closed when the
    /// lookups end).
    pub(super) async fn look_up(&mut self, machine: &mut CallMachine, lookup: LookUp) -> Command {
        let reconcile = match self.reads.reconciling.take() {
            Some(span) if lookup.n() > 1 => span,
            _ => span::reconcile(),
        };
        let span = reconcile.in_scope(|| span::lookup(lookup.n()));
        let found = match self
            .call
            .settling
            .reconciler
            .clone()
            .or_else(|| self.exec.reconciler.clone())
        {
            Some(reconciler) => {
                let request = ReconcileRequest {
                    target: &self.call.target,
                    idempotency_key: self.keying.key.as_deref(),
                    operation_id: self.last.operation_id.as_deref(),
                    payload: &self.payload.value,
                };
                reconciler.reconcile(request).instrument(span.clone()).await
            }
            None => Reconciliation::Unknown("no reconciler".to_owned()),
        };
        let event = lookup_event(&found);
        if let Event::Lookup { result, .. } = &event {
            span::lookup_found(&span, *result);
            reconcile.record("recourse.result", result.as_str());
        }
        self.event(event);
        let verdict = machine.looked_up(lookup, found, self.exec.clock.now());
        let decided = self.gated(verdict).await;
        span::after_lookup(&span, decided.action());
        reconcile.record("recourse.action", decided.action().name());
        reconcile.record("recourse.lookups", span::int(machine.lookups()));
        let next = machine.follow(decided);
        if matches!(next, Command::Wait(_)) {
            self.reads.reconciling = Some(reconcile);
        }
        next
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
