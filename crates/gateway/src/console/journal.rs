//! `GET /console/journal?state=…&before=…`: the journal's size — how many
//! calls it holds in each state — and its calls, newest first, a page at a
//! time; only what the viewer may see, as `GET /v1/calls` answers it.

use std::sync::Arc;
use std::time::SystemTime;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use maud::{Markup, html};
use recourse::journal::{CallState, JournalEntry, ListQuery, StateCounts};
use serde::Deserialize;

use super::html::{call_href, segment};
use super::viewer::Viewer;
use crate::gateway::Gateway;

/// Calls on a page.
const PAGE: u32 = 50;
/// The longest `before` read: a call id is far shorter.
const MAX_ID: usize = 200;

/// The page's query.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct JournalQuery {
    state: Option<String>,
    before: Option<String>,
}

/// `GET /console/journal`.
pub(crate) async fn page(
    State(g): State<Arc<Gateway>>,
    viewer: Viewer,
    query: Result<Query<JournalQuery>, QueryRejection>,
) -> Response {
    let bad = |message: &str| viewer.error(StatusCode::BAD_REQUEST, "Journal", message);
    let Ok(Query(query)) = query else {
        return bad("This page takes `state` and `before` only.");
    };
    let state = match query.state.as_deref().filter(|s| !s.is_empty()) {
        None => None,
        Some(name) => match CallState::parse(name) {
            Some(state) => Some(state),
            None => return bad("No calls are in that state."),
        },
    };
    if query.before.as_ref().is_some_and(|b| b.len() > MAX_ID) {
        return bad("That is not a call id.");
    }
    let Some(journal) = g.journal.as_deref() else {
        return viewer.page("Journal", no_journal());
    };
    let seen = viewer.caller().seen();
    let listed = ListQuery {
        state,
        limit: Some(PAGE),
        before: query.before,
        seen: seen.clone(),
    };
    let found = async {
        Ok::<_, recourse::journal::JournalError>((
            journal.count(&seen).await?,
            journal.list(&listed).await?,
        ))
    };
    match found.await {
        Ok((counts, calls)) => {
            viewer.page("Journal", render(&counts, &calls, state, g.clock.wall()))
        }
        Err(e) => viewer.error(
            StatusCode::SERVICE_UNAVAILABLE,
            "The journal does not answer",
            &e.to_string(),
        ),
    }
}

fn render(
    counts: &StateCounts,
    calls: &[JournalEntry],
    state: Option<CallState>,
    now: SystemTime,
) -> Markup {
    let next = (calls.len() == PAGE as usize)
        .then(|| calls.last())
        .flatten()
        .map(|last| {
            let state = state.map(|s| format!("state={s}&")).unwrap_or_default();
            format!("/console/journal?{state}before={}", segment(&last.call_id))
        });
    html! {
        section #size {
            h2 { "Size" }
            table.counts {
                thead { tr { th { "State" } th { "Calls" } } }
                tbody {
                    @for (state, n) in counts.by_state() {
                        tr {
                            td { a href={ "/console/journal?state=" (state) } { (state) } }
                            td.n { (n) }
                        }
                    }
                    @if counts.other() > 0 {
                        tr { td { "in a state this gateway does not know" } td.n { (counts.other()) } }
                    }
                }
                tfoot { tr { th { a href="/console/journal" { "all" } } th.n { (counts.total()) } } }
            }
            p.hint { "Finished calls are pruned after the retention period; in-flight and unknown ones never are." }
        }
        section #calls {
            h2 {
                @match state {
                    Some(state) => { "Calls " (state) }
                    None => "Calls",
                }
            }
            @if calls.is_empty() {
                p.empty { "No calls." }
            } @else {
                (calls_table(calls.iter(), now))
            }
            @if let Some(next) = next {
                p { a href=(next) { "Older calls" } }
            }
        }
    }
}

/// A table of calls, each linked to its page.
pub(crate) fn calls_table<'a>(
    calls: impl Iterator<Item = &'a JournalEntry>,
    now: SystemTime,
) -> Markup {
    html! {
        table.calls {
            thead {
                tr { th { "Call" } th { "State" } th { "Caller" } th { "Target" } th { "Attempts" } th { "Started" } }
            }
            tbody {
                @for entry in calls {
                    tr {
                        td { a href=(call_href(&entry.call_id)) { code { (entry.call_id) } } }
                        td { span class={ "state " (entry.state) } { (state_words(entry, now)) } }
                        td { (entry.caller()) }
                        td { code { (entry.target) } }
                        td.n { (entry.attempts) }
                        td { (entry.times.started_at) }
                    }
                }
            }
        }
    }
}

/// The state as a person reads it: an in-flight call no process holds is
/// in doubt, not running.
pub(crate) fn state_words(entry: &JournalEntry, now: SystemTime) -> String {
    if entry.state == CallState::InFlight && !entry.is_leased(now) {
        "in_flight, lease expired".to_owned()
    } else {
        entry.state.to_string()
    }
}

/// What a page says on a gateway without a journal.
pub(crate) fn no_journal() -> Markup {
    html! {
        p.empty {
            "This gateway keeps no journal (" code { "--journal none" } "): no call is recorded, so none can be in doubt."
        }
    }
}
