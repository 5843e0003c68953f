//! The console's approvals: the "Awaiting approval" section of
//! `GET /console`, a call's approval on its page, and
//! `POST /console/approvals/{approval_id}`, the approve/reject form.
//!
//! The list is what `GET /v1/calls?state=awaiting_approval` answers the
//! same caller — an approval past its expiry expired as it is read, so a
//! call nobody may decide any more is never offered — oldest first, the
//! one waiting longest on top. The list decides nothing: each call's page
//! shows what will be sent — the method and URL or the MCP server and tool,
//! the headers, the payload — beside the reason (labelled with whose words
//! it is), and only there is the form. The form runs the very code
//! `POST /v1/approvals/{approval_id}` runs, as the viewer's caller
//! ([`decide_by`]): the approver role, `APPROVAL_STALE` and
//! `APPROVAL_DECIDED` come from there, and an approved call is dispatched
//! by this gateway exactly as when approved through the API.
//!
//! The form carries the request's hash, so that an approval is bound to
//! the exact request the approver saw: a request that changed since the
//! page was read is not decided, and the page says so.

use std::sync::Arc;
use std::time::SystemTime;

use axum::Form;
use axum::extract::rejection::FormRejection;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use maud::{Markup, html};
use recourse::approval::{Approval, ApprovalState, AskedBy, Decision, ShownApproval};
use recourse::journal::{
    CallState, Journal, JournalEntry, JournalResult, ListQuery, Seen, rfc3339,
};
use serde::Deserialize;

use super::form::Guarded;
use super::html::{call_href, see_other, segment};
use super::viewer::Viewer;
use crate::approvals::{Deciding, NotDecided, decide_by};
use crate::gateway::Gateway;
use crate::records::expired_as_listed;
use recourse_door::Caller;
use recourse_door::Refusal;

/// The most calls awaiting approval the section lists.
const SHOWN: u32 = 200;

/// A call waiting for a person's approval, as the console lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Pending {
    /// The approval's id (what the decision is posted to).
    pub(crate) approval_id: String,
    /// The call waiting for it.
    pub(crate) call_id: String,
    /// Whose call it is.
    pub(crate) caller: String,
    /// What it would call.
    pub(crate) target: String,
    /// Why it needs approval, as its tool or policy said.
    pub(crate) reason: String,
    /// The keyed-request hash the approval is bound to.
    pub(crate) request_sha256: String,
    /// When it expires (RFC 3339, UTC).
    pub(crate) expires_at: String,
}

impl Pending {
    /// `entry`'s pending approval; `None` when it has none pending.
    fn of(entry: &JournalEntry) -> Option<Self> {
        let approval = entry.asked.approval.as_ref()?;
        (entry.state == CallState::AwaitingApproval && approval.state == ApprovalState::Pending)
            .then(|| Self {
                approval_id: approval.id.clone(),
                call_id: entry.call_id.clone(),
                caller: entry.caller().to_owned(),
                target: entry.target.clone(),
                reason: approval.reason.clone(),
                request_sha256: approval.request_sha256.clone(),
                expires_at: approval.expires_at.clone(),
            })
    }
}

/// The approve/reject form's fields.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct DecisionForm {
    csrf: String,
    /// `approve` or `reject`: anything else is not read.
    decision: Decision,
    request_sha256: String,
    #[serde(default)]
    note: String,
}

impl Guarded for DecisionForm {
    fn csrf(&self) -> &str {
        &self.csrf
    }
}

/// The calls awaiting approval that `seen` admits, oldest first, as the
/// API lists them at `g`'s clock: one past its expiry is expired, and left out.
pub(crate) async fn awaiting(
    g: &Gateway,
    journal: &dyn Journal,
    seen: &Seen,
) -> JournalResult<Vec<Pending>> {
    let query = ListQuery {
        state: Some(CallState::AwaitingApproval),
        limit: Some(SHOWN),
        seen: seen.clone(),
        ..ListQuery::default()
    };
    let listed = journal.list(&query).await?;
    let listed = expired_as_listed(g, journal, listed, &query).await?;
    // The journal lists newest first; the one waiting longest goes on top.
    Ok(listed.iter().rev().filter_map(Pending::of).collect())
}

/// `POST /console/approvals/{approval_id}`: decided by the viewer's caller,
/// then back to the call's page (or the list, when the viewer no longer
/// sees the call: an approver's view of another's call ends with its wait).
pub(crate) async fn decide(
    State(g): State<Arc<Gateway>>,
    viewer: Viewer,
    headers: HeaderMap,
    Path(approval_id): Path<String>,
    sent: Result<Form<DecisionForm>, FormRejection>,
) -> Response {
    let sent = match viewer.accept(&headers, sent) {
        Ok(sent) => sent,
        Err(refused) => return refused,
    };
    let deciding = Deciding {
        decision: sent.decision,
        note: Some(sent.note.as_str()),
        request_sha256: Some(sent.request_sha256.as_str()),
    };
    let approval = match decide_by(&g, viewer.caller(), &approval_id, &deciding).await {
        Ok(approval) => approval,
        Err(refused) => return not_decided(&viewer, &refused),
    };
    let seen = viewer.caller().seen();
    match g.journal.as_deref().map(|j| j.get(&approval.call_id)) {
        Some(found) => match found.await {
            Ok(Some(entry)) if seen.admits_entry(&entry) => see_other(&call_href(&entry.call_id)),
            _ => see_other("/console"),
        },
        None => see_other("/console"),
    }
}

/// The page of a decision not applied: what happened, in words.
fn not_decided(viewer: &Viewer, refused: &NotDecided) -> Response {
    let title = match refused.refusal() {
        Some(Refusal::ApprovalStale) => "Not decided: the request changed",
        Some(Refusal::ApprovalDecided) => "Not decided: decided already",
        Some(Refusal::NotApprover) => "Not decided: an approver decides",
        Some(Refusal::ApprovalNotFound) => "No such approval",
        _ => "Not decided",
    };
    let status = StatusCode::from_u16(refused.status()).unwrap_or(StatusCode::BAD_REQUEST);
    viewer.error(status, title, &refused.message())
}

/// The "Awaiting approval" section: each call, and a link to its page,
/// where a person reads the request whole and decides it. `total` is how
/// many there are (the list stops at [`SHOWN`]).
pub(crate) fn section(pending: &[Pending], total: u64, may_decide: bool) -> Markup {
    html! {
        section #approvals {
            h2 { "Awaiting approval " span.count #awaiting-count { (total) } }
            @if pending.is_empty() {
                p.empty { "No call is waiting for a person's approval." }
            } @else {
                @if !may_decide {
                    p.hint { "Deciding needs the approver role." }
                }
                table {
                    thead { tr { th { "Call" } th { "Caller" } th { "Target" } th { "Why" } th { "Expires" } th {} } }
                    tbody {
                        @for p in pending {
                            tr {
                                td { a href=(call_href(&p.call_id)) { code { (p.call_id) } } }
                                td { (p.caller) }
                                td { code { (p.target) } }
                                td { (p.reason) }
                                td { (p.expires_at) }
                                td {
                                    a.review href=(call_href(&p.call_id)) {
                                        @if may_decide { "Review the request and decide" } @else { "Review" }
                                    }
                                }
                            }
                        }
                    }
                }
                @if total > pending.len() as u64 {
                    p.hint { "The " (pending.len()) " newest are shown." }
                }
            }
        }
    }
}

/// A call's approval, on its page: where it stands, who decided it, when
/// and why; while it is pending, the form that decides it, for an approver.
pub(crate) fn on_call_page(
    entry: &JournalEntry,
    approval: &Approval,
    now: SystemTime,
    caller: &Caller,
    csrf: &str,
) -> Markup {
    let state = approval.state_at(&rfc3339(now));
    let open = state == ApprovalState::Pending && entry.state == CallState::AwaitingApproval;
    html! {
        section #approval {
            h2 { "Approval" }
            dl.call {
                dt { "State" } dd { span class={ "state " (state) } #approval-state { (state) } }
                dt { "Asked by" } dd #approval-caller { (entry.caller()) }
                dt { "Why" } dd {
                    span.whose #approval-whose { (whose_words(ShownApproval::of(entry).asked_by)) }
                    " "
                    span.tool-text #approval-reason { (approval.reason) }
                }
                dt { "Request SHA-256" } dd { code { (approval.request_sha256) } }
                dt { "Expires" } dd { (approval.expires_at) }
                @if let Some(by) = &approval.decided_by { dt { "Decided by" } dd #approval-by { (by) } }
                @if let Some(at) = &approval.decided_at {
                    dt { @if state == ApprovalState::Expired { "Expired" } @else { "Decided" } }
                    dd { (at) }
                }
                @if let Some(note) = &approval.note { dt { "Note" } dd { blockquote #approval-note { (note) } } }
            }
            (shown_request(&ShownApproval::of(entry)))
            @if open {
                p.hint {
                    "Approved, the request above is sent exactly as it is, once, and no correction may "
                    "change what was approved; rejected, the call fails and nothing is sent."
                }
                @if caller.is_approver() {
                    (decision_form(&approval.id, &approval.request_sha256, csrf))
                } @else {
                    p.problem { "Deciding needs the approver role; you are " (caller.name()) "." }
                }
            }
        }
    }
}

/// Whose words an approval's reason is, as its page labels them.
fn whose_words(asked_by: AskedBy) -> &'static str {
    match asked_by {
        AskedBy::Request => "The requester's words (the agent's, unchecked):",
        AskedBy::Manifest => "The tool's manifest's words:",
        AskedBy::Policy => "The operator's policy file's words:",
    }
}

/// What will be sent once approved: the method and URL, or the MCP server
/// and tool; the headers; the payload, pretty-printed — all redacted.
fn shown_request(shown: &ShownApproval) -> Markup {
    html! {
        @if let Some(request) = &shown.request {
            h3 { "What will be sent" }
            dl.call #approval-request {
                @if let (Some(method), Some(url)) = (&request.method, &request.url) {
                    dt { "Request" } dd #request-target { code { (method) " " (url) } }
                }
                @if let Some(server) = &request.mcp_server {
                    dt { "MCP server" } dd #request-server { code { (server) } }
                }
                @if let Some(tool) = &request.tool {
                    dt { "Tool" } dd #request-tool { code { (tool) } }
                }
                dt { "Headers" }
                dd #request-headers {
                    @if request.headers.is_empty() {
                        "none"
                    } @else {
                        table {
                            @for header in &request.headers {
                                tr { th { code { (header.name) } } td { code { (header.value) } } }
                            }
                        }
                    }
                }
                dt { "Payload" }
                dd { pre #request-payload {
                    (serde_json::to_string_pretty(&request.payload).unwrap_or_default())
                } }
            }
        } @else {
            p.hint { "The journal no longer holds the request: the call was dispatched or ended." }
        }
    }
}

fn decision_form(approval_id: &str, request_sha256: &str, csrf: &str) -> Markup {
    html! {
        form.decide method="post" action={ "/console/approvals/" (segment(approval_id)) } {
            input type="hidden" name="csrf" value=(csrf);
            input type="hidden" name="request_sha256" value=(request_sha256);
            input type="text" name="note" maxlength="2000" placeholder="Note (optional)";
            button type="submit" name="decision" value="approve" { "Approve" }
            button type="submit" name="decision" value="reject" { "Reject" }
        }
    }
}

#[cfg(test)]
mod tests;
