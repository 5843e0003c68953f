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
use recourse::manifest::{Entry, MANIFEST_PATH};
use recourse::timing;
use recourse_door::{Refusal, Refused, RequestDigest};

use crate::gateway::Gateway;
use crate::render::{door_answer, fail, refusal};
use crate::request::CallRequest;
use crate::resolve::check;
use recourse_door::Caller;

/// What approval `req` needs before it is sent: its own `approval`; for an
/// MCP server the gateway starts, its tool's entry in the `--mcp-policy`
/// file whose pattern matches the command line; else its tool's manifest
/// entry's (an HTTP target, asked within a
/// quarter of the deadline and never longer than an attempt may take);
/// `None` when it needs none. A manifest that cannot be read now refuses a
/// call that may write (503 `MANIFEST_UNAVAILABLE`, nothing sent): whether
/// it needs approval is not known. A manifest not known yet is fetched only for
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
    if let Some(mcp) = &req.mcp {
        return Ok(mcp_policy(g, mcp));
    }
    let Some(url) = req.url.as_deref() else {
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
    let entry = match manifests.cached_entry(url, method) {
        Some(known) => known,
        None => {
            check(g, req, caller).map_err(IntoResponse::into_response)?;
            let config = g.executor.config();
            let budget = timing::manifest_budget(config.deadline, config.request_timeout);
            manifests.entry(url, method, budget).await
        }
    };
    match entry {
        Entry::Declared(declared) => Ok(declared.approval.as_ref().and_then(|a| a.required().ok())),
        Entry::Silent => Ok(None),
        // Whether a person must approve it is not known: a call that may
        // write waits until it is; a read goes on.
        Entry::Unavailable if method.is_safe() => Ok(None),
        Entry::Unavailable => Err(refusal(
            Refused::new(
                Refusal::ManifestUnavailable,
                format!(
                    "the tool's capability manifest ({}) cannot be read now, so whether this call \
                     needs a person's approval is not known; nothing was sent: send it again later",
                    manifest_url(url)
                ),
            )
            .with_retry_after(timing::MANIFEST_RETRY_AFTER),
        )),
    }
}

/// The approval an MCP call needs under the policy files of `--mcp-policy`:
/// a server started by a command line a pattern matches, a tool its file
/// holds for a person. What cannot be started is refused where the call is
/// resolved.
fn mcp_policy(g: &Gateway, mcp: &serde_json::Value) -> Option<Required> {
    // Without policy files there is no command line to read here.
    if g.mcp.policies.is_empty() {
        return None;
    }
    let (line, tool) = (mcp["command"].as_str()?, mcp["tool"].as_str()?);
    match recourse_mcp::McpTarget::command_line(line).ok()? {
        recourse_mcp::McpTarget::Command { program, args, .. } => {
            g.mcp_policy_approval(&program, &args, tool)
        }
        _ => None,
    }
}

/// Where `url`'s origin keeps its manifest, for a message.
fn manifest_url(url: &recourse::target::Url) -> String {
    let mut at = url.clone();
    at.set_path(MANIFEST_PATH);
    at.set_query(None);
    at.set_fragment(None);
    recourse_protocol::redact(at.as_str())
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
    if !g.someone_may_approve(caller.name()) {
        return fail(Refusal::NoOtherApprover.error(
            "this call needs a person's approval, and on this gateway only its own caller could \
             give it (one token, or none): serve named callers with another approver (--tokens), \
             or allow self-approval for a one-person setup (--allow-self-approval)",
        ));
    }
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
        dispatched_by_asker: false,
    };
    door_answer(g.door.hold(&asking).await)
}
