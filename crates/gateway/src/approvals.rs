//! `POST /v1/approvals/{approval_id}`: an approver decides a call that waits
//! for a person — approves it (this gateway then dispatches it, exactly
//! once) or rejects it (it fails, nothing sent). `GET /v1/approvals` and
//! `GET /v1/approvals/{approval_id}` show what is decided: the request
//! whole ([`ShownApproval`]), not only its reason.

use std::sync::Arc;

use axum::Extension;
use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use recourse::approval::{
    Approval, ApprovalOf, ApprovalState, Decide, DecideError, Decision, ShownApproval, decide, find,
};
use recourse::journal::{CallState, ListQuery};
use recourse_tool::{ToolFailure, ToolJsonBody};
use schemars::JsonSchema;
use serde::Deserialize;
use serde::Serialize;

use crate::dispatch;
use crate::gateway::Gateway;
use crate::render::journal_unavailable;
use recourse_door::Caller;
use recourse_door::Refusal;

/// The most approvals one `GET /v1/approvals` answers.
const MAX_LISTED: u32 = 200;

/// The query of `GET /v1/approvals`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ApprovalsQuery {
    /// Only `pending` (the default): the approvals waiting for a decision.
    state: Option<String>,
}

/// `GET /v1/approvals`: the approvals pending that the caller sees, each
/// with the request it lets go.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ApprovalList {
    /// Oldest last; at most 200.
    approvals: Vec<ShownApproval>,
}

/// `GET /v1/approvals?state=pending`: the calls waiting for a person that
/// the caller sees (an approver: every caller's), each shown whole.
pub(crate) async fn list(
    State(g): State<Arc<Gateway>>,
    Extension(caller): Extension<Arc<Caller>>,
    query: Result<Query<ApprovalsQuery>, QueryRejection>,
) -> Response {
    let Some(journal) = g.journal.as_ref() else {
        return no_journal().into_response();
    };
    match query.as_ref().map(|Query(q)| q.state.as_deref()) {
        Ok(None | Some("pending")) => {}
        Ok(Some(_)) | Err(_) => {
            return ToolFailure::from(
                Refusal::InvalidQuery
                    .error("the query takes state=pending (the default) only")
                    .detail("field", "state"),
            )
            .into_response();
        }
    }
    let listed = ListQuery {
        state: Some(CallState::AwaitingApproval),
        limit: Some(MAX_LISTED),
        before: None,
        seen: caller.seen(),
    };
    let entries = match journal.list(&listed).await {
        Ok(entries) => entries,
        Err(e) => return journal_unavailable(&e.to_string()),
    };
    let entries =
        match crate::records::expired_as_listed(&g, journal.as_ref(), entries, &listed).await {
            Ok(entries) => entries,
            Err(e) => return journal_unavailable(&e.to_string()),
        };
    let approvals = entries
        .iter()
        .filter(|e| {
            e.asked
                .approval
                .as_ref()
                .is_some_and(|a| a.state == ApprovalState::Pending)
        })
        .map(ShownApproval::of)
        .collect();
    Json(ApprovalList { approvals }).into_response()
}

/// `GET /v1/approvals/{approval_id}`: the approval with the request it lets
/// go, for a caller who sees its call (else 404, as an absent one).
pub(crate) async fn show(
    State(g): State<Arc<Gateway>>,
    Extension(caller): Extension<Arc<Caller>>,
    Path(approval_id): Path<String>,
) -> Response {
    let Some(journal) = g.journal.as_ref() else {
        return no_journal().into_response();
    };
    match find(
        journal.as_ref(),
        ApprovalOf::Approval(&approval_id),
        g.clock.wall(),
    )
    .await
    {
        Ok(Some(entry)) if caller.seen().admits_entry(&entry) => {
            Json(ShownApproval::of(&entry)).into_response()
        }
        Ok(_) => ToolFailure::from(
            Refusal::ApprovalNotFound
                .error("no approval with this id in the journal")
                .detail("approval_id", approval_id.as_str()),
        )
        .into_response(),
        Err(e) => journal_unavailable(&e.to_string()),
    }
}

/// The body of `POST /v1/approvals/{approval_id}`: the decision.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "ApprovalDecision")]
pub(crate) struct DecideBody {
    /// `approve` (send the request, exactly as it is) or `reject` (the call
    /// fails; nothing is sent).
    decision: Decision,
    /// What the approver says (at most 2,000 characters; stored redacted).
    note: Option<String>,
    /// The `request_sha256` of the approval the approver read: when it is
    /// not the pending request's, nothing is decided (409 `APPROVAL_STALE`).
    request_sha256: Option<String>,
}

/// Decides the approval (an approver only): `200` with the approval as
/// decided. An approved call is dispatched by this gateway.
pub(crate) async fn decide_one(
    State(g): State<Arc<Gateway>>,
    Extension(caller): Extension<Arc<Caller>>,
    Path(approval_id): Path<String>,
    ToolJsonBody(body): ToolJsonBody,
) -> Response {
    if !caller.is_approver() {
        return not_approver().into_response();
    }
    if g.journal.is_none() {
        return no_journal().into_response();
    }
    let body: DecideBody = match recourse_tool::parse_json(&body) {
        Ok(body) => body,
        Err(refused) => return refused.into_response(),
    };
    let deciding = Deciding {
        decision: body.decision,
        note: body.note.as_deref(),
        request_sha256: body.request_sha256.as_deref(),
    };
    match decide_by(&g, &caller, &approval_id, &deciding).await {
        Ok(approval) => Json(approval).into_response(),
        Err(refused) => refused.into_response(),
    }
}

/// What a person decides, as the API's body and the console's form both say it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Deciding<'a> {
    /// Approve or reject.
    pub(crate) decision: Decision,
    /// What the approver says, if anything.
    pub(crate) note: Option<&'a str>,
    /// The hash of the request the approver read, if they say.
    pub(crate) request_sha256: Option<&'a str>,
}

/// Decides `approval_id` as `caller` says: what `POST /v1/approvals/{id}`
/// and the console's approve/reject form both run. An approver only; an
/// approved call is dispatched by this gateway, exactly once.
pub(crate) async fn decide_by(
    g: &Arc<Gateway>,
    caller: &Caller,
    approval_id: &str,
    deciding: &Deciding<'_>,
) -> Result<Approval, NotDecided> {
    if !caller.is_approver() {
        return Err(NotDecided::Refused(Refusal::NotApprover, not_approver()));
    }
    let Some(journal) = g.journal.as_ref() else {
        return Err(NotDecided::Refused(Refusal::NoJournal, no_journal()));
    };
    let decide_it = Decide {
        approval_id,
        decision: deciding.decision,
        by: caller.name(),
        note: deciding.note,
        request_sha256: deciding.request_sha256,
        self_approval_allowed: g.callers.self_approval_allowed,
        dispatcher: None,
    };
    let lease = g.executor.config().lease;
    let decided = decide(journal.as_ref(), &decide_it, g.clock.wall(), lease).await;
    // A decision, an expiry found on the way: whoever waits reads it again.
    g.waiting.changed.notify_waiters();
    match decided {
        Ok(decided) => {
            if let Some(spec) = decided.dispatch {
                dispatch::start(g, decided.entry, spec);
            }
            Ok(decided.approval)
        }
        Err(e) => Err(refused(approval_id, e)),
    }
}

/// Why an approval was not decided.
#[derive(Debug)]
pub(crate) enum NotDecided {
    /// The gateway refused: which refusal, and its envelope with its status.
    Refused(Refusal, ToolFailure),
    /// The journal did not answer (503 with `Retry-After`); nothing was decided.
    JournalUnavailable(String),
}

impl NotDecided {
    /// The refusal, when the gateway refused (not when the journal failed).
    pub(crate) fn refusal(&self) -> Option<Refusal> {
        match self {
            Self::Refused(refusal, _) => Some(*refusal),
            Self::JournalUnavailable(_) => None,
        }
    }

    /// The HTTP status the API answers with.
    pub(crate) fn status(&self) -> u16 {
        match self {
            Self::Refused(_, failure) => failure.http_status(),
            Self::JournalUnavailable(_) => Refusal::JournalUnavailable.status(),
        }
    }

    /// Why, in words.
    pub(crate) fn message(&self) -> String {
        match self {
            Self::Refused(_, failure) => failure.error().message.clone(),
            Self::JournalUnavailable(message) => message.clone(),
        }
    }
}

impl IntoResponse for NotDecided {
    fn into_response(self) -> Response {
        match self {
            Self::Refused(_, failure) => failure.into_response(),
            Self::JournalUnavailable(message) => journal_unavailable(&message),
        }
    }
}

fn not_approver() -> ToolFailure {
    ToolFailure::from(Refusal::NotApprover.error(
        "deciding an approval needs a caller with the approver role (a tokens file's \"approver\": true)",
    ))
}

fn no_journal() -> ToolFailure {
    ToolFailure::from(Refusal::NoJournal.error("this gateway keeps no journal (--journal none)"))
}

/// A decision not applied, as its refusal.
fn refused(approval_id: &str, e: DecideError) -> NotDecided {
    let message = e.to_string();
    let (refusal, failure) = match e {
        DecideError::NotFound => (
            Refusal::ApprovalNotFound,
            ToolFailure::from(
                Refusal::ApprovalNotFound
                    .error(message)
                    .detail("approval_id", approval_id),
            ),
        ),
        DecideError::SelfApproval => (
            Refusal::SelfApproval,
            ToolFailure::from(
                Refusal::SelfApproval
                    .error(message)
                    .detail("approval_id", approval_id),
            ),
        ),
        DecideError::BadNote => (
            Refusal::InvalidCall,
            ToolFailure::from(Refusal::InvalidCall.error(message).detail("field", "note")),
        ),
        DecideError::Stale(approval) => (
            Refusal::ApprovalStale,
            conflict(Refusal::ApprovalStale, message, &approval),
        ),
        DecideError::AlreadyDecided(approval) => (
            Refusal::ApprovalDecided,
            conflict(Refusal::ApprovalDecided, message, &approval),
        ),
        DecideError::Journal(e) => {
            return NotDecided::JournalUnavailable(format!("{e}; nothing was decided"));
        }
    };
    NotDecided::Refused(refusal, failure)
}

/// 409: the approval as it stands, named in the details.
fn conflict(refusal: Refusal, message: String, approval: &Approval) -> ToolFailure {
    ToolFailure::from(
        refusal
            .error(message)
            .detail("approval_id", approval.id.as_str())
            .detail("call_id", approval.call_id.as_str())
            .detail("state", approval.state.as_str())
            .detail("request_sha256", approval.request_sha256.as_str()),
    )
    .with_status(refusal.status())
}
