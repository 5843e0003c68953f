//! The `Reconcile` action: look up a write whose outcome is unknown, never resend blindly.

use std::time::Duration;

use recourse_protocol::RetryPermission;
use tracing::Instrument;

use super::{Flow, Run};
use crate::{Outcome, ReconcileRequest, Reconciliation, StopReason};

/// How many times a pending write is looked up before giving up as unknown.
const MAX_LOOKUPS: u32 = 10;

impl Run<'_> {
    pub(super) async fn reconcile(&mut self) -> Flow {
        let Some(reconciler) = self
            .call
            .reconciler
            .clone()
            .or_else(|| self.exec.reconciler.clone())
        else {
            self.note("outcome unknown and no reconciler configured");
            return Flow::Done(self.stopped(StopReason::OutcomeUnknown));
        };
        for _ in 0..MAX_LOOKUPS {
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
            match found {
                Reconciliation::Committed(data) => {
                    self.note("reconcile: committed");
                    return Flow::Done(Outcome::Succeeded { data });
                }
                Reconciliation::NotCommitted => return self.resend_uncommitted(),
                Reconciliation::Pending { wait } => {
                    let wait = wait
                        .unwrap_or(self.exec.config.backoff_base)
                        .min(self.exec.config.limits.max_backoff);
                    self.note(format!(
                        "reconcile: pending, looking again in {} ms",
                        wait.as_millis()
                    ));
                    if self.crosses_deadline(wait) || !self.sleep(wait).await {
                        return Flow::Done(self.stopped(StopReason::OutcomeUnknown));
                    }
                }
                Reconciliation::Unknown(why) => {
                    self.note(format!("reconcile: unknown ({why})"));
                    return Flow::Done(self.stopped(StopReason::OutcomeUnknown));
                }
            }
        }
        Flow::Done(self.stopped(StopReason::OutcomeUnknown))
    }

    /// "Not committed": one resend with the same key, counted as a retry —
    /// unless the tool refused retries.
    fn resend_uncommitted(&mut self) -> Flow {
        self.note("reconcile: not committed");
        let reason = if self.last_permission == RetryPermission::Refused {
            StopReason::NotCommitted
        } else if self.retries >= self.exec.config.limits.max_retries {
            StopReason::RetriesExhausted
        } else if self.exec.budget.as_ref().is_some_and(|b| !b.withdraw()) {
            StopReason::RetryBudgetExhausted
        } else {
            self.retries += 1;
            return Flow::Next;
        };
        Flow::Done(Outcome::Failed {
            error: self.last_error.clone(),
            reason,
        })
    }

    fn crosses_deadline(&self, wait: Duration) -> bool {
        let elapsed = self
            .exec
            .clock
            .now()
            .saturating_duration_since(self.started);
        self.exec
            .config
            .deadline
            .is_some_and(|d| elapsed + wait >= d)
    }
}
