//! The lease sweeper: settling, while a server runs, the calls another
//! process left in flight.
//!
//! # Why sweep
//!
//! A process that dies mid-call leaves its call `in_flight` with a lease.
//! Until someone settles it, the call's key answers `CALL_IN_PROGRESS` and
//! nobody knows whether it wrote. A server that keeps a journal — the
//! gateway, the MCP proxy — therefore looks, at once and then every half
//! lease (at least every second), for in-flight calls whose lease ran out,
//! and settles each through [`settle_with`]: its recorded read or lookup,
//! else unknown; never a resend. Every replica sweeps; the lease, taken
//! before the lookup, decides which one settles a call. The same sweep
//! expires the approvals nobody decided in time ([`expire_due`]), by the
//! options' clock, so a call held for a person fails on time even if
//! nobody looks at it.

use std::sync::Arc;

use super::expiry::expire_due;
use super::{CallState, Journal, ListQuery, MAX_LIST, SettleOptions, settle_with};

/// How often [`sweep`] looks for calls whose lease ran out: half a lease,
/// at least a second ([`recourse_core::timing::sweep_every`]).
pub use recourse_core::timing::sweep_every as sweep_interval;

/// Settles, for as long as it runs, every in-flight call whose lease has run
/// out, as [`settle_expired`] does, and expires every approval past its
/// expiry on the options' clock ([`expire_due`]): at once, then every
/// [`sweep_interval`] of the options' lease, waiting on the options'
/// clock. It never returns; spawn it.
/// What it settled or expired, and what it could not, is reported to
/// `report`, one line each.
pub async fn sweep(
    journal: Arc<dyn Journal>,
    options: SettleOptions,
    report: impl Fn(String) + Send + Sync + 'static,
) {
    let interval = sweep_interval(options.lease());
    loop {
        sweep_once(journal.as_ref(), &options, &report).await;
        options.clock().sleep_in_background(interval).await;
    }
}

/// One look of [`sweep`]'s: settles the calls whose lease ran out
/// ([`settle_expired`]), then expires the approvals past their expiry — for
/// a server that does more at each look (an MCP proxy first sends the
/// approved calls it holds the server of).
pub async fn sweep_once(journal: &dyn Journal, options: &SettleOptions, report: &impl Fn(String)) {
    settle_expired(journal, options, report).await;
    match expire_due(journal, options.clock().wall()).await {
        Ok(0) => {}
        Ok(n) => report(format!(
            "expired {n} approval(s) nobody decided in time; their calls failed, nothing sent"
        )),
        Err(e) => report(format!("recourse: could not expire approvals: {e}")),
    }
}

/// One sweep: settles every in-flight call whose lease has run out (at most
/// [`MAX_LIST`] of them), through [`settle_with`]; how many it settled.
pub async fn settle_expired(
    journal: &dyn Journal,
    options: &SettleOptions,
    report: &impl Fn(String),
) -> usize {
    let query = ListQuery {
        state: Some(CallState::InFlight),
        limit: Some(MAX_LIST),
        ..ListQuery::default()
    };
    let entries = match journal.list(&query).await {
        Ok(entries) => entries,
        Err(e) => {
            report(format!(
                "recourse: could not read the journal to settle abandoned calls: {e}"
            ));
            return 0;
        }
    };
    let mut settled = 0;
    let now = options.clock().wall();
    for entry in entries.iter().filter(|e| !e.is_leased(now)) {
        match settle_with(journal, entry, options).await {
            Ok(s) if !s.held => {
                settled += 1;
                report(format!(
                    "settled call {} left in flight when its lease ran out: {} ({})",
                    s.call_id, s.state, s.note
                ));
            }
            Ok(_) => {}
            Err(e) => report(format!(
                "recourse: could not settle call {}: {e}",
                entry.call_id
            )),
        }
    }
    settled
}
