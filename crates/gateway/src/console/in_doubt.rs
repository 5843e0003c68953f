//! `GET /console`: what waits for a person — the calls in doubt (`unknown`,
//! or left `in_flight` past their lease by a process that stopped) and the
//! calls awaiting approval, with their counts.

use std::sync::Arc;
use std::time::SystemTime;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use maud::{Markup, html};
use recourse::journal::{CallState, Journal, JournalEntry, JournalResult, ListQuery, Seen};

use super::approvals::{self, Pending};
use super::journal::{calls_table, no_journal};
use super::viewer::Viewer;
use crate::gateway::Gateway;

/// The most calls of each state the page lists.
const SHOWN: u32 = 200;

/// What the page shows.
struct InDoubt {
    unknown: Vec<JournalEntry>,
    /// How many `unknown` calls there are in all (the list stops at [`SHOWN`]).
    unknown_total: u64,
    /// In flight, no process holding them: their process stopped mid-call.
    orphaned: Vec<JournalEntry>,
    pending: Vec<Pending>,
    /// How many calls await approval in all (the list stops at 200).
    pending_total: u64,
    /// When the page was read (the gateway clock's wall time).
    now: SystemTime,
}

/// `GET /console`.
pub(crate) async fn page(State(g): State<Arc<Gateway>>, viewer: Viewer) -> Response {
    let Some(journal) = g.journal.as_deref() else {
        return viewer.page("Calls in doubt", no_journal());
    };
    match in_doubt(&g, journal, &viewer.caller().seen()).await {
        Ok(found) => viewer.page("Calls in doubt", render(&found, &viewer)),
        Err(e) => viewer.error(
            StatusCode::SERVICE_UNAVAILABLE,
            "The journal does not answer",
            &e.to_string(),
        ),
    }
}

async fn in_doubt(g: &Gateway, journal: &dyn Journal, seen: &Seen) -> JournalResult<InDoubt> {
    let listed = |state| ListQuery {
        state: Some(state),
        limit: Some(SHOWN),
        seen: seen.clone(),
        ..ListQuery::default()
    };
    let unknown = journal.list(&listed(CallState::Unknown)).await?;
    let mut orphaned = journal.list(&listed(CallState::InFlight)).await?;
    let now = g.clock.wall();
    orphaned.retain(|e| !e.is_leased(now));
    // Expiries due are applied first, so that the counts are the list's.
    let pending = approvals::awaiting(g, journal, seen).await?;
    let counts = journal.count(seen).await?;
    Ok(InDoubt {
        unknown,
        unknown_total: counts.get(CallState::Unknown),
        orphaned,
        pending,
        pending_total: counts.get(CallState::AwaitingApproval),
        now,
    })
}

fn render(found: &InDoubt, viewer: &Viewer) -> Markup {
    let in_doubt = found.unknown_total + found.orphaned.len() as u64;
    let caller = viewer.caller();
    html! {
        p.summary {
            span.count #in-doubt-count { (in_doubt) } " in doubt · "
            span.count #awaiting-total { (found.pending_total) } " awaiting approval"
        }
        section #in-doubt {
            h2 { "In doubt " span.count { (in_doubt) } }
            p.hint {
                "A write whose outcome recourse could not establish: no lookup or read-back could tell. "
                "Check with the tool, then settle the call by hand from its page."
                @if !caller.is_approver() {
                    " Settling needs the approver role."
                }
            }
            @if in_doubt == 0 {
                p.empty { "Nothing is in doubt." }
            } @else {
                (calls_table(found.unknown.iter().chain(&found.orphaned), found.now))
                @if found.unknown_total > found.unknown.len() as u64 {
                    p.hint { "The newest " (found.unknown.len()) " unknown calls are shown." }
                }
            }
        }
        (approvals::section(&found.pending, found.pending_total, caller.is_approver()))
    }
}
