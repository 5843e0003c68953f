//! An approved call, dispatched by the gateway that approved it: exactly
//! once, with exactly the approved payload, in the gateway's call tracker
//! (shutdown waits for it, as for any call).
//!
//! The request kept in the journal is built again as it was first checked
//! — against this gateway's allowlists, an MCP session started only now —
//! for its caller, under its call id, every value of its payload protected
//! ([`CallBuilder::approved`](recourse::CallBuilder::approved)): no
//! coercion, repair or model may change what the person approved, so a tool
//! that refuses it stops the call. A request that cannot be built again (a
//! target no longer allowed, a server that does not start) ends the call
//! `failed`, nothing sent.
//!
//! The approval put the call in flight under this process's lease, and the
//! lease is renewed for as long as the dispatch runs — starting an MCP
//! session, asking a manifest — so no sweeper takes the call over while it
//! is being dispatched; the lease is checked once more just before the
//! call runs, and a call another process took over (this one lost its
//! journal past the lease) is left to it, nothing sent.

use std::sync::Arc;

use recourse::approval::end_undispatched;
use recourse::call::CallSpec;
use recourse::journal::{JournalEntry, LeaseKeeper, process_owner};
use recourse_tool::protocol::ToolError;

use crate::gateway::Gateway;
use crate::request;
use crate::resolve::resolve;

/// Dispatches the approved `spec` of call `entry`, in the background of
/// `g`'s call tracker; those waiting on the call are told when it ends.
pub(crate) fn start(g: &Arc<Gateway>, entry: JournalEntry, spec: CallSpec) {
    let gateway = Arc::clone(g);
    g.door.calls().spawn(async move {
        run(&gateway, entry, spec).await;
        gateway.waiting.changed.notify_waiters();
    });
}

async fn run(g: &Gateway, entry: JournalEntry, spec: CallSpec) {
    let Some(journal) = g.journal.clone() else {
        return;
    };
    let lease = g.executor.config().lease;
    let clock = Arc::clone(&g.clock);
    let _held = LeaseKeeper::start(Arc::clone(&journal), entry.call_id.clone(), lease, clock);
    let built = match resolve(g, spec).await {
        Ok((executor, call)) => {
            let call = call
                .caller(entry.caller(), g.key_scope())
                .call_id(entry.call_id.clone())
                .approved();
            request::build(call).map(|call| (executor, call))
        }
        Err(refused) => Err(refused.into_error()),
    };
    match built {
        Ok((executor, call)) => {
            match journal
                .renew_lease(&entry.call_id, process_owner(), lease)
                .await
            {
                Ok(true) => {}
                Ok(false) => {
                    tracing::warn!(call_id = %entry.call_id, "an approved call was taken over before its dispatch; nothing sent");
                    return;
                }
                Err(e) => {
                    tracing::warn!(call_id = %entry.call_id, error = %e, "the journal did not answer before an approved call's dispatch; nothing sent");
                    return;
                }
            }
            let report = executor.execute(call).await;
            g.metrics.observe(&report);
        }
        Err(error) => undispatched(g, &entry.call_id, error).await,
    }
}

/// Ends the call undispatched with `error`; a journal that does not answer
/// leaves it in flight, for the sweeper to settle once its lease runs out
/// (nothing was sent: it ends `failed`).
async fn undispatched(g: &Gateway, call_id: &str, error: ToolError) {
    let Some(journal) = g.journal.as_ref() else {
        return;
    };
    if let Err(e) = end_undispatched(journal.as_ref(), call_id, error).await {
        tracing::warn!(call_id, error = %e, "could not end an approved call that was not dispatched");
    }
}
