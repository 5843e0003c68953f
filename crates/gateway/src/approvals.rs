//! `POST /v1/approvals/{approval_id}`: an approver decides a call that waits
//! for a person — approves it (this gateway then dispatches it, exactly
//! once) or rejects it (it fails, nothing sent).

use std::sync::Arc;

use axum::Extension;
use axum::Json;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use recourse::approval::{Approval, Decide, DecideError, Decision, decide};
use recourse_tool::ToolJsonBody;
use schemars::JsonSchema;
use serde::Deserialize;

use crate::answer::{fail, journal_unavailable, refuse};
use crate::callers::Caller;
use crate::dispatch;
use crate::gateway::Gateway;
use crate::refusal::Refusal;

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
        return fail(Refusal::NotApprover.error(
            "deciding an approval needs a caller with the approver role (a tokens file's \"approver\": true)",
        ));
    }
    let Some(journal) = g.journal.as_ref() else {
        return fail(Refusal::NoJournal.error("this gateway keeps no journal (--journal none)"));
    };
    let body: DecideBody = match recourse_tool::parse_json(&body) {
        Ok(body) => body,
        Err(refused) => return refused.into_response(),
    };
    let deciding = Decide {
        approval_id: &approval_id,
        decision: body.decision,
        by: caller.name(),
        note: body.note.as_deref(),
        request_sha256: body.request_sha256.as_deref(),
    };
    let lease = g.executor.config().lease;
    let decided = decide(journal.as_ref(), &deciding, g.clock.wall(), lease).await;
    // A decision, an expiry found on the way: whoever waits reads it again.
    g.changed.notify_waiters();
    match decided {
        Ok(decided) => {
            if let Some(spec) = decided.dispatch {
                dispatch::start(&g, decided.entry, spec);
            }
            Json(decided.approval).into_response()
        }
        Err(e) => refused(&approval_id, e),
    }
}

/// A decision not applied, as its refusal.
fn refused(approval_id: &str, e: DecideError) -> Response {
    let message = e.to_string();
    match e {
        DecideError::NotFound => fail(
            Refusal::ApprovalNotFound
                .error(message)
                .detail("approval_id", approval_id),
        ),
        DecideError::BadNote => fail(Refusal::InvalidCall.error(message).detail("field", "note")),
        DecideError::Stale(approval) => conflict(Refusal::ApprovalStale, message, &approval),
        DecideError::AlreadyDecided(approval) => {
            conflict(Refusal::ApprovalDecided, message, &approval)
        }
        DecideError::Journal(e) => journal_unavailable(format!("{e}; nothing was decided")),
    }
}

/// 409: the approval as it stands, named in the details.
fn conflict(refusal: Refusal, message: String, approval: &Approval) -> Response {
    refuse(
        refusal,
        refusal
            .error(message)
            .detail("approval_id", approval.id.as_str())
            .detail("call_id", approval.call_id.as_str())
            .detail("state", approval.state.as_str())
            .detail("request_sha256", approval.request_sha256.as_str()),
    )
}
