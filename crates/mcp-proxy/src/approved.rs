//! The approved calls this proxy sends itself.
//!
//! # Why the proxy, and not whoever approved
//!
//! A person may approve a held call anywhere — the console of a gateway
//! sharing the journal, the API, the client's own form. Had the deciding
//! process sent it, a gateway would start a second copy of the proxy's
//! upstream server to do so (and a server keeping its state in memory would
//! then have two). So the proxy asks with itself as the call's dispatcher
//! ([`AskApproval::dispatched_by_asker`](recourse::approval::AskApproval)):
//! an approval puts the call in flight under this process's lease, and this
//! process sends it — when the client calls again, or on its next look at
//! the journal ([`McpProxy::sweep`](crate::McpProxy::sweep)) — exactly the
//! kept request, once, no correction allowed to change it. A proxy that
//! stopped before sending it leaves it to its lease; once that runs out, a
//! proxy of the same server (it again, restarted, or another on the journal)
//! takes the call over and sends it at its next look, before it settles
//! anything — so its own sweep never ends an approved call unsent. (A
//! gateway sweeping the same journal may still end it unsent first; the
//! client's next identical call then asks again.)

use std::sync::Arc;
use std::time::SystemTime;

use recourse::SystemClock;
use recourse::approval::{ApprovalState, end_undispatched};
use recourse::call::{CallSpec, KeyScope};
use recourse::journal::{CallState, JournalEntry, LeaseKeeper, ListQuery, process_owner};
use recourse_door::DoorAnswer;
use rmcp::model::CallToolResult;

use crate::answer;
use crate::ask;
use crate::capture::Capture;
use crate::catalog::Offered;
use crate::proxy::Shared;

/// Whether `entry` is an approved call this process is to send: in flight
/// under its lease, nothing sent yet.
pub(crate) fn is_ours_to_send(entry: &JournalEntry) -> bool {
    entry.state == CallState::InFlight
        && entry.attempts == 0
        && entry.lease.owner.as_deref() == Some(process_owner())
        && entry
            .asked
            .approval
            .as_ref()
            .is_some_and(|a| a.state == ApprovalState::Approved)
}

/// Whether `entry` is an approved call another process was to send and
/// left unsent: its lease ran out at `now` before a first attempt — the
/// proxy that asked stopped, and one holding the same server takes it over.
fn left_unsent(entry: &JournalEntry, now: SystemTime) -> bool {
    entry.state == CallState::InFlight
        && entry.attempts == 0
        && entry.lease.owner.as_deref() != Some(process_owner())
        && !entry.is_leased(now)
        && entry
            .asked
            .approval
            .as_ref()
            .is_some_and(|a| a.state == ApprovalState::Approved)
}

/// The request kept for `entry` and the tool of this proxy's it calls — the
/// same server and tool as when it was asked; `None` when this proxy does
/// not offer it.
fn sendable(shared: &Shared, entry: &JournalEntry) -> Option<(CallSpec, Offered)> {
    let spec: CallSpec = serde_json::from_value(entry.asked.request.clone()?).ok()?;
    let catalog = shared.catalog();
    let offered = catalog.tools().iter().find(|o| {
        let target = shared.upstreams[o.upstream].upstream.target();
        ask::spec(o, target, &spec.payload).mcp == spec.mcp
    })?;
    Some((spec, offered.clone()))
}

/// Sends the approved call `entry`, if it is this process's to send and
/// not being sent already: its answer.
pub(crate) async fn send(shared: &Arc<Shared>, entry: &JournalEntry) -> Option<CallToolResult> {
    if !is_ours_to_send(entry) {
        return None;
    }
    let journal = shared.journal.clone()?;
    let (spec, offered) = sendable(shared, entry)?;
    let _place = shared.sending.take(&entry.call_id)?;
    let upstream = &shared.upstreams[offered.upstream];
    let lease = upstream.executor.config().lease;
    let _held = LeaseKeeper::start(
        Arc::clone(&journal),
        entry.call_id.clone(),
        lease,
        Arc::new(SystemClock),
    );
    let key = spec.idempotency_key.clone();
    let mut built = offered.described(spec.payload.clone(), &entry.call_id, key.clone());
    if let (Some(name), Some(key)) = (&entry.caller, &key) {
        // Claimed as given, or in the caller's own space.
        let scope = if entry.replay.caller_key.as_deref() == Some(key.as_str()) {
            KeyScope::Shared
        } else {
            KeyScope::PerCaller
        };
        built = built.caller(name.clone(), scope);
    }
    let call = match built.approved().build() {
        Ok(call) => call,
        Err(e) => {
            let error =
                recourse_protocol::ToolError::input_error("APPROVED_CALL_INVALID", e.problem());
            let _ = end_undispatched(journal.as_ref(), &entry.call_id, error).await;
            return None;
        }
    };
    // Still this process's: a lease lost meanwhile leaves it to its taker.
    if !journal
        .renew_lease(&entry.call_id, process_owner(), lease)
        .await
        .unwrap_or(false)
    {
        return None;
    }
    let capture = Arc::new(Capture::new(
        Arc::clone(&upstream.transport),
        offered.tool.name.clone(),
    ));
    let executor = upstream.executor.with_transport(Arc::clone(&capture) as _);
    let report = executor.execute(call).await;
    Some(answer::door_answer(
        DoorAnswer::of_report(Box::new(report)),
        &entry.call_id,
        capture.take(),
        offered.output.as_ref(),
        SystemTime::now(),
    ))
}

/// Sends every approved call the journal holds for this process, each in
/// the proxy's call tracker: what the sweep does between clients' calls.
pub(crate) async fn send_waiting(shared: &Arc<Shared>) {
    let Some(journal) = shared.journal.clone() else {
        return;
    };
    let query = ListQuery {
        state: Some(CallState::InFlight),
        limit: Some(200),
        ..ListQuery::default()
    };
    let Ok(entries) = journal.list(&query).await else {
        return;
    };
    let now = SystemTime::now();
    let mut ours = Vec::new();
    for entry in entries {
        if is_ours_to_send(&entry) {
            ours.push(entry);
        } else if left_unsent(&entry, now)
            && let Some((_, offered)) = sendable(shared, &entry)
            && journal
                .take_over(
                    &entry.call_id,
                    process_owner(),
                    shared.lease(offered.upstream),
                )
                .await
                .unwrap_or(false)
            && let Ok(Some(taken)) = journal.get(&entry.call_id).await
        {
            ours.push(taken);
        }
    }
    for entry in ours {
        let shared = Arc::clone(shared);
        shared.door.calls().spawn({
            let shared = Arc::clone(&shared);
            async move {
                send(&shared, &entry).await;
            }
        });
    }
}
