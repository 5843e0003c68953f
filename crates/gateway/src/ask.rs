//! `POST /v1/calls` for a call that needs a person's approval before its
//! first dispatch — because its request says so (`approval`) or its tool's
//! manifest entry does: checked as any call is, journaled as
//! `awaiting_approval`, and answered `202` with its record. Nothing is
//! sent until an approver approves it (`POST /v1/approvals/{id}`).
//!
//! A keyed request is asked once per key: a resend before the decision is
//! answered `202` with the same record (`replayed: true`), never a second
//! approval; after it, as any keyed resend is.

use axum::response::{IntoResponse, Response};
use recourse::Method;
use recourse::approval::{AskApproval, Required};
use recourse::timing;
use recourse_door::{Refusal, RequestDigest};

use crate::gateway::Gateway;
use crate::render::{door_answer, fail};
use crate::request::CallRequest;
use crate::resolve::check;
use recourse_door::Caller;

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
            let budget = timing::manifest_budget(config.deadline, config.request_timeout);
            manifests.declaration(url, method, budget).await
        }
    };
    Ok(declared.and_then(|d| d.approval.as_ref().and_then(|a| a.required().ok())))
}

/// Holds `req` for approval: checked (nothing started), journaled as
/// awaiting approval, answered `202` with its record. `digest` is the
/// request's, when it was taken (a keyed request, or one asking for
/// approval itself).
pub(crate) async fn call(
    g: &Gateway,
    caller: &Caller,
    req: CallRequest,
    digest: Option<RequestDigest>,
    required: Required,
) -> Response {
    let checked = match check(g, &req, caller) {
        Ok(checked) => checked,
        Err(refused) => return refused.into_response(),
    };
    // Asked by the manifest alone: the digest is taken now.
    let digest = digest.unwrap_or_else(|| RequestDigest::of(&req));
    let asking = AskApproval {
        call_id: None,
        target: checked.target,
        capability: None,
        caller: Some(caller.name().to_owned()),
        caller_key: checked.key,
        request_hash: digest.as_str().to_owned(),
        request: req,
        required,
    };
    door_answer(g.door.hold(&asking).await)
}
