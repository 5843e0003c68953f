//! `GET /console/calls/{call_id}`: one call — what the journal knows of it,
//! its approval (and, while it is pending, the form that decides it), its
//! record as a timeline, and for an open call the form that settles it by
//! hand; an approval past its expiry is expired as the call is read, as
//! `GET /v1/calls/{call_id}` does; `POST /console/calls/{call_id}/settle` runs that form through
//! the code `POST /v1/calls/{call_id}/settle` runs.

use std::sync::Arc;
use std::time::SystemTime;

use axum::Form;
use axum::extract::rejection::FormRejection;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use maud::{Markup, html};
use recourse::approval::refreshed;
use recourse::journal::{CallState, JournalEntry, JournalError, settleable};
use recourse::record::view::RecordView;
use serde::Deserialize;

use super::approvals;
use super::form::Guarded;
use super::html::{call_href, see_other};
use super::journal::state_words;
use super::timeline;
use super::viewer::Viewer;
use crate::gateway::Gateway;
use crate::records::{SettledState, settle_by};

/// The longest call id looked up: ids are far shorter.
const MAX_ID: usize = 200;

/// The settle form's fields.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SettleForm {
    csrf: String,
    state: SettledState,
    note: String,
}

impl Guarded for SettleForm {
    fn csrf(&self) -> &str {
        &self.csrf
    }
}

/// `GET /console/calls/{call_id}`: a call the viewer may not see is
/// answered exactly as one that does not exist.
pub(crate) async fn page(
    State(g): State<Arc<Gateway>>,
    viewer: Viewer,
    Path(call_id): Path<String>,
) -> Response {
    let not_found = || {
        viewer.error(
            StatusCode::NOT_FOUND,
            "No such call",
            "There is no call with this id in the journal.",
        )
    };
    let Some(journal) = g.journal.as_deref() else {
        return not_found();
    };
    if call_id.len() > MAX_ID {
        return not_found();
    }
    let unavailable = |e: JournalError| {
        viewer.error(
            StatusCode::SERVICE_UNAVAILABLE,
            "The journal does not answer",
            &e.to_string(),
        )
    };
    let entry = match journal.get(&call_id).await {
        Ok(Some(entry)) if viewer.caller().seen().admits_entry(&entry) => entry,
        Ok(_) => return not_found(),
        Err(e) => return unavailable(e),
    };
    // Once seen, shown whatever it becomes (as the API's wait answers it).
    let now = g.clock.wall();
    match refreshed(journal, entry, now).await {
        Ok(entry) => viewer.page("Call", render(&entry, now, &viewer)),
        Err(e) => unavailable(e),
    }
}

fn render(entry: &JournalEntry, now: SystemTime, viewer: &Viewer) -> Markup {
    let record = entry.record_json();
    let view = RecordView::read(&record);
    html! {
        dl.call {
            dt { "Id" } dd { code #call-id { (entry.call_id) } }
            dt { "State" } dd { span class={ "state " (entry.state) } #call-state { (state_words(entry, now)) } }
            dt { "Caller" } dd { (entry.caller()) }
            dt { "Target" } dd { code { (entry.target) } }
            @if let Some(c) = &entry.capability { dt { "Capability" } dd { code { (c) } } }
            dt { "Started" } dd { (entry.times.started_at) }
            dt { "Last changed" } dd { (entry.times.updated_at) }
            dt { "Attempts recorded" } dd { (entry.attempts) }
        }
        @if let Some(approval) = &entry.asked.approval {
            (approvals::on_call_page(entry, approval, now, viewer.caller(), viewer.csrf()))
        }
        @if settleable(entry, now) {
            (settle_form(entry, viewer))
        }
        @match &view {
            Some(view) => {
                section #ending { h2 { (ending_heading(entry.state)) } (timeline::ending(view)) }
                section #timeline { h2 { "Timeline" } (timeline::timeline(view)) }
            }
            None => {
                section #raw { h2 { "Record" } pre { (serde_json::to_string_pretty(&record).unwrap_or_default()) } }
            }
        }
    }
}

/// The heading over what the record says of a call's end: a call still
/// running or waiting for a person has not ended.
fn ending_heading(state: CallState) -> &'static str {
    match state {
        CallState::InFlight | CallState::AwaitingApproval => "Where it stands",
        CallState::Succeeded | CallState::Failed | CallState::Unknown => "How it ended",
    }
}

fn settle_form(entry: &JournalEntry, viewer: &Viewer) -> Markup {
    html! {
        section #settle {
            h2 { "Settle by hand" }
            p.hint {
                "recourse cannot tell whether this write took effect, and will not send it again. "
                "Check with the tool, then record what you found: the call's record, and every retry "
                "of it with the same idempotency key, will say a person settled it, who, and why. "
                "Nothing is sent to the tool."
            }
            @if viewer.caller().is_approver() {
                form.settle method="post" action={ (call_href(&entry.call_id)) "/settle" } {
                    input type="hidden" name="csrf" value=(viewer.csrf());
                    fieldset {
                        legend { "What did you find?" }
                        label { input type="radio" name="state" value="succeeded" required; " It took effect (succeeded)" }
                        label { input type="radio" name="state" value="failed"; " It did not (failed)" }
                    }
                    label for="note" { "How you know" }
                    textarea #note name="note" required maxlength="2000" rows="3" placeholder="e.g. the tool's admin page lists export sales-2024-v3.pdf" {}
                    button type="submit" { "Settle" }
                }
            } @else {
                p.problem { "Settling a call needs the approver role; you are " (viewer.caller().name()) "." }
            }
        }
    }
}

/// `POST /console/calls/{call_id}/settle`: settled by the viewer's caller,
/// then back to the call's page (or the list, when the viewer sees the
/// call only while it is in doubt).
pub(crate) async fn settle(
    State(g): State<Arc<Gateway>>,
    viewer: Viewer,
    headers: HeaderMap,
    Path(call_id): Path<String>,
    sent: Result<Form<SettleForm>, FormRejection>,
) -> Response {
    let sent = match viewer.accept(&headers, sent) {
        Ok(sent) => sent,
        Err(refused) => return refused,
    };
    match settle_by(&g, viewer.caller(), &call_id, sent.state, sent.note).await {
        Ok(entry) if viewer.caller().seen().admits_entry(&entry) => see_other(&call_href(&call_id)),
        Ok(_) => see_other("/console"),
        Err(refused) => viewer.error(
            StatusCode::from_u16(refused.status()).unwrap_or(StatusCode::BAD_REQUEST),
            "Not settled",
            &refused.message(),
        ),
    }
}
