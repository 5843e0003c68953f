//! Writing how a journaled call ended, until the journal holds it.
//!
//! # Why the outcome write outlives its request
//!
//! A call whose tool answered has an outcome its client is told at once.
//! If the journal does not take the write of that outcome — a database
//! failing over, a connection cut between two statements — and the write
//! is given up, the journal keeps the call `in_flight`: once its lease runs
//! out a sweeper settles it as `unknown`, and every resend under its key
//! replays `unknown` for a call whose client was told `succeeded`. So the
//! write is tried again: a few times while the client waits
//! ([`outcome_write_now`]), then past the request, in the background
//! ([`outcome_write_later`]), its lease held meanwhile so no sweeper takes
//! the call, until the journal holds it. The write sets the same state and
//! record each time: one that committed before its answer was lost is
//! written again unchanged.

use std::sync::Arc;
use std::time::Duration;

use recourse_core::clock::Clock;
use recourse_core::journal::{AttemptResult, CallState, Journal, JournalResult, RecordJson};
use recourse_core::timing::{outcome_write_later, outcome_write_now};

use crate::journal::{LeaseKeeper, process_owner};

/// How a call ended, as the journal is to hold it.
pub(super) struct OutcomeWrite {
    pub(super) journal: Arc<dyn Journal>,
    pub(super) call_id: String,
    pub(super) state: CallState,
    pub(super) operation_id: Option<String>,
    pub(super) record: Option<RecordJson>,
    /// The call's last attempt's end, when not yet written: with the call's.
    pub(super) attempt: Option<(u32, AttemptResult)>,
    /// For a call the journal stopped before it sent anything (settled by
    /// the journal: a resend under its key runs it), the lease to renew
    /// first. It is written only while this process still holds the call:
    /// one that another run took over meanwhile is that run's to finish.
    pub(super) unsent_under: Option<Duration>,
}

impl OutcomeWrite {
    /// Writes it, trying again on `clock` while the client waits; when the
    /// journal still has not taken it, goes on in the background, `lease`
    /// held until it has. Whether it was written before this returned.
    pub(super) async fn write(self, lease: LeaseKeeper, clock: &Arc<dyn Clock>) -> bool {
        let mut waits = outcome_write_now();
        loop {
            match self.once().await {
                Ok(()) => return true,
                Err(e) => match waits.next() {
                    Some(wait) => clock.sleep(wait).await,
                    None => {
                        tracing::warn!(
                            error = %e,
                            call_id = self.call_id,
                            "could not complete the call in the journal; trying again after \
                             answering"
                        );
                        tokio::spawn(self.later(lease, Arc::clone(clock)));
                        return false;
                    }
                },
            }
        }
    }

    /// Tries again until the journal holds it, `lease` held meanwhile.
    async fn later(self, lease: LeaseKeeper, clock: Arc<dyn Clock>) {
        for wait in outcome_write_later() {
            clock.sleep_in_background(wait).await;
            match self.once().await {
                Ok(()) => {
                    tracing::info!(call_id = self.call_id, "the call's outcome is journaled");
                    drop(lease);
                    return;
                }
                Err(e) => tracing::debug!(error = %e, "the call's outcome is not journaled yet"),
            }
        }
    }

    /// One try: the last attempt's end and the call's, in one write where
    /// the journal can.
    async fn once(&self) -> JournalResult<()> {
        let (journal, op) = (&self.journal, self.operation_id.as_deref());
        if let Some(lease) = self.unsent_under {
            let held = journal
                .renew_lease(&self.call_id, process_owner(), lease)
                .await?;
            if !held {
                return Ok(());
            }
        }
        match &self.attempt {
            Some((n, attempt)) => {
                journal
                    .finish_attempt_and_call(
                        (*n, attempt),
                        &self.call_id,
                        self.state,
                        op,
                        self.record.as_ref(),
                    )
                    .await
            }
            None => {
                journal
                    .finish_call(&self.call_id, self.state, op, self.record.as_ref())
                    .await
            }
        }
    }
}
