//! Settling a journaled call whose outcome is open — in flight after its
//! process died, or unknown — by its recorded lookup, never by resending.

use std::time::Duration;

use serde::Serialize;

use super::{CallState, Journal, JournalEntry, JournalResult, process_owner};
use crate::{HttpReconciler, ReconcileRequest, Reconciler, Reconciliation, Target};

/// How many times a pending write is looked up before it is left unknown.
const PENDING_LOOKUPS: u32 = 10;

/// What settling one call did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Settlement {
    /// The call.
    pub call_id: String,
    /// Its state before.
    pub from: CallState,
    /// Its state now.
    pub state: CallState,
    /// Whether another process still holds the call (it was left alone).
    pub held: bool,
    /// What happened, in words.
    pub note: String,
}

/// Settles `entry` through its reconcile lookup, unless another process's
/// lease still holds it: committed → succeeded, not committed or never
/// dispatched → failed, otherwise unknown. The call is taken over (with a
/// lease of `lease`) before it is looked up, so two settlers never race.
///
/// # Errors
/// When the journal cannot be read or written.
pub async fn settle(
    journal: &dyn Journal,
    entry: &JournalEntry,
    lease: Duration,
) -> JournalResult<Settlement> {
    let held = |note: String| Settlement {
        call_id: entry.call_id.clone(),
        from: entry.state,
        state: entry.state,
        held: true,
        note,
    };
    if entry.is_leased()
        || !journal
            .take_over(&entry.call_id, process_owner(), lease)
            .await?
    {
        let owner = entry.owner.as_deref().unwrap_or("another process");
        let until = entry.lease_until.as_deref().unwrap_or("now");
        return Ok(held(format!(
            "still running: held by {owner} until {until}; left alone"
        )));
    }
    let (state, note) = look_up(entry).await;
    journal
        .finish_call(&entry.call_id, state, None, None)
        .await?;
    Ok(Settlement {
        call_id: entry.call_id.clone(),
        from: entry.state,
        state,
        held: false,
        note,
    })
}

/// What a journaled call's lookup says it became.
async fn look_up(entry: &JournalEntry) -> (CallState, String) {
    if entry.attempts == 0 {
        return (CallState::Failed, "never dispatched".to_owned());
    }
    let Some(template) = &entry.reconcile else {
        let key = entry.idempotency_key.as_deref().unwrap_or("none");
        return (
            CallState::Unknown,
            format!("no reconcile lookup configured; check by hand (key {key})"),
        );
    };
    let reconciler = match HttpReconciler::new(template.clone()) {
        Ok(r) => r,
        Err(e) => return (CallState::Unknown, e.to_string()),
    };
    let target = match Target::parse(&entry.target) {
        Ok(t) => t,
        Err(e) => return (CallState::Unknown, e.to_string()),
    };
    for _ in 0..PENDING_LOOKUPS {
        let request = ReconcileRequest {
            target: &target,
            idempotency_key: entry.idempotency_key.as_deref(),
            operation_id: entry.operation_id.as_deref(),
            payload: &entry.payload,
        };
        match reconciler.reconcile(request).await {
            Reconciliation::Committed(_) => return (CallState::Succeeded, "committed".to_owned()),
            Reconciliation::NotCommitted => {
                return (
                    CallState::Failed,
                    "not committed; nothing was written".to_owned(),
                );
            }
            Reconciliation::Pending { wait } => {
                let wait = wait
                    .unwrap_or(Duration::from_millis(500))
                    .min(Duration::from_secs(5));
                tokio::time::sleep(wait).await;
            }
            Reconciliation::Unknown(why) => return (CallState::Unknown, why),
        }
    }
    (CallState::Unknown, "still pending".to_owned())
}
