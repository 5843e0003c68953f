//! `POST /v1/calls` for a call that needs a person's approval before its
//! first dispatch — because its request says so (`approval`) or its tool's
//! manifest entry does: checked as any call is, journaled as
//! `awaiting_approval`, and answered `202` with its record. Nothing is
//! sent until an approver approves it (`POST /v1/approvals/{id}`).
//!
//! A keyed request is asked once per key: a resend before the decision is
//! answered `202` with the same record (`replayed: true`), never a second
//! approval; after it, as any keyed resend is.

use std::time::Duration;

use axum::response::{IntoResponse, Response};
use recourse::Method;
use recourse::approval::{AskApproval, Asked, Required, ask};
use recourse::keyed::Keyed;

use crate::answer::{awaiting, fail, in_progress, journal_unavailable, key_reused, replayed};
use crate::callers::Caller;
use crate::gateway::Gateway;
use crate::refusal::Refusal;
use crate::request::{self, CallRequest};
use crate::resolve::check;

/// What approval `req` needs before it is sent: its own `approval`, else
/// its tool's manifest entry's (an HTTP target only, asked within a
/// quarter of the deadline and never longer than an attempt may take);
/// `None` when it needs none. A manifest not known yet is fetched only for
/// a request that passes `caller`'s checks: a refused request dials nothing.
///
/// # Errors
/// An `approval` that cannot be used, answered `400 INVALID_CALL`; a
/// request refused before its tool's manifest is fetched, as it is refused.
pub(crate) async fn needed(
    g: &Gateway,
    caller: &Caller,
    req: &CallRequest,
) -> Result<Option<Required>, Response> {
    if let Some(spec) = &req.approval {
        return spec.required().map(Some).map_err(|e| {
            fail(
                Refusal::InvalidCall
                    .error(e.to_string())
                    .detail("field", format!("approval.{}", e.field())),
            )
        });
    }
    let (Some(url), None) = (req.url.as_deref(), &req.mcp) else {
        return Ok(None);
    };
    // What cannot be called is refused where the call is resolved.
    let Ok(target) = g.targets.call_target("url", url) else {
        return Ok(None);
    };
    let method = match req.method.as_deref().map(str::parse::<Method>) {
        None => Method::Post,
        Some(Ok(method)) => method,
        Some(Err(_)) => return Ok(None),
    };
    let (Some(manifests), Some(url)) = (g.executor.manifests(), target.url()) else {
        return Ok(None);
    };
    let declared = match manifests.cached_declaration(url, method) {
        Some(known) => known,
        None => {
            check(g, req, caller).map_err(IntoResponse::into_response)?;
            let config = g.executor.config();
            let budget = recourse::timing::manifest_budget(config.deadline, config.request_timeout);
            manifests.declaration(url, method, budget).await
        }
    };
    Ok(declared.and_then(|d| d.approval.as_ref().and_then(|a| a.required().ok())))
}

/// Holds `req` for approval: checked (nothing started), journaled as
/// awaiting approval, answered `202` with its record. `hash` is the keyed
/// request's hash when the gateway computed one (empty otherwise).
pub(crate) async fn call(
    g: &Gateway,
    caller: &Caller,
    req: CallRequest,
    hash: String,
    required: Required,
) -> Response {
    let Some(journal) = g.journal.as_ref() else {
        return fail(
            Refusal::JournalRequired
                .error(
                    "this call needs a person's approval, and waits for it in the journal: this \
                     gateway keeps none (--journal none); run it with a journal",
                )
                .detail("field", "approval"),
        );
    };
    let checked = match check(g, &req, caller) {
        Ok(checked) => checked,
        Err(refused) => return refused.into_response(),
    };
    let request_hash = if hash.is_empty() {
        // Asked by the manifest alone: the digest of the request as kept.
        request::hash(serde_json::to_value(&req).unwrap_or_default())
    } else {
        hash
    };
    let asking = AskApproval {
        call_id: None,
        target: checked.target,
        capability: None,
        caller: Some(caller.name().to_owned()),
        caller_key: checked.key,
        request_hash,
        request: req,
        required,
    };
    let lease = g.executor.config().lease;
    match ask(journal.as_ref(), &asking, g.clock.wall(), lease).await {
        Ok(Asked::Awaiting(entry)) => awaiting(&entry.call_id, entry.record_json(), false),
        Ok(Asked::Keyed(keyed)) => keyed_answer(keyed, lease),
        Err(e) => journal_unavailable(format!("{e}; nothing was sent")),
    }
}

/// What a keyed request gets when its key's call exists: its record
/// replayed (`202` while it awaits approval), or the key's refusals.
pub(crate) fn keyed_answer(keyed: Keyed, lease: Duration) -> Response {
    match keyed {
        Keyed::Replayed { state, record } => replayed(state, *record),
        Keyed::InProgress { call_id } => in_progress(&call_id, lease),
        Keyed::KeyReused { call_id } => key_reused(call_id),
        // Asking never runs a call.
        Keyed::Ran(report) => fail(Refusal::CallAborted.error(format!(
            "call {} ran where it should have waited for approval; check it before writing again",
            report.call_id
        ))),
    }
}
