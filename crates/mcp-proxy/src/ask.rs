//! A call to a tool whose policy needs a person's approval: held in the
//! journal as `awaiting_approval`, with a request a gateway sharing the
//! journal can dispatch, and nothing sent.
//!
//! # Why the gateway dispatches, and the client asks again
//!
//! An MCP `tools/call` is answered once, and a person may take hours to
//! decide; no client waits that long. So the proxy answers at once — an
//! `isError` result, `approval_required`, with the call's id — and keeps the
//! call in the journal under its key. A person decides it on a gateway
//! sharing that journal (`POST /v1/approvals/{id}`); on approval that gateway
//! dispatches the kept request, exactly once, to the same MCP server: the
//! command line this proxy starts (`mcp.command`, which the gateway starts
//! only when an `--allow-mcp-command` pattern matches it) or the same URL.
//! The client's next identical call under the same key finds the key's call
//! — waiting still, decided, running or ended — and gets where it stands;
//! the proxy never sends an approval's call itself.
//!
//! The key is the client's (scoped to its caller as any key is), else one
//! derived from the request's hash: identical calls without a key are one
//! call, asked once and answered alike, for as long as the journal keeps it.

use std::time::{Duration, SystemTime};

use recourse::CallSpec;
use recourse::approval::{ApprovalSpec, AskApproval, Asked, Required, ask};
use recourse::journal::{Journal, JournalError};
use recourse_mcp::McpTarget;
use serde_json::{Value, json};

use crate::catalog::Offered;

/// The key of a call without one whose tool needs approval: the same for
/// the same request (`{tool, arguments}`'s hash), so that calling again
/// finds the call asked for.
pub(crate) fn derived_key(request_hash: &str) -> String {
    format!("recourse-request-{request_hash}")
}

/// A call of `offered`, on the upstream at `target`, to hold for approval.
pub(crate) struct Asking<'a> {
    /// The tool as offered, its policy with it.
    pub(crate) offered: &'a Offered,
    /// Where its upstream is.
    pub(crate) target: &'a McpTarget,
    /// What the policy asks of the approval, as written (kept with the request).
    pub(crate) approval: &'a ApprovalSpec,
    /// The same, checked.
    pub(crate) required: &'a Required,
    /// The id a new call gets.
    pub(crate) call_id: &'a str,
    /// The arguments.
    pub(crate) payload: &'a Value,
    /// Its caller, when the HTTP front names one.
    pub(crate) caller: Option<&'a str>,
    /// Its key, as claimed (in its caller's space).
    pub(crate) key: &'a str,
    /// `{tool, arguments}`'s hash: what the approval is bound to.
    pub(crate) request_hash: &'a str,
}

/// Holds the call for approval — or, under a key already claimed, what the
/// key's call has come to.
///
/// # Errors
/// The journal cannot be read or written: nothing was asked.
pub(crate) async fn held(
    journal: &dyn Journal,
    asking: &Asking<'_>,
    now: SystemTime,
    lease: Duration,
) -> Result<Asked, JournalError> {
    let request = AskApproval {
        call_id: Some(asking.call_id.to_owned()),
        target: asking.offered.tool.name.clone(),
        capability: None,
        caller: asking.caller.map(str::to_owned),
        caller_key: Some(asking.key.to_owned()),
        request_hash: asking.request_hash.to_owned(),
        request: dispatchable(asking),
        required: asking.required.clone(),
    };
    ask(journal, &request, now, lease).await
}

/// The request a gateway dispatches once the call is approved: the same
/// MCP server and tool, the arguments, the operator's policy for it.
fn dispatchable(asking: &Asking<'_>) -> CallSpec {
    let tool = &asking.offered.tool.name;
    let mcp = match asking.target {
        McpTarget::Url(url) => json!({"url": url, "tool": tool}),
        command => json!({"command": command.to_command_line(), "tool": tool}),
    };
    let mut spec = CallSpec {
        mcp: Some(mcp),
        approval: Some(asking.approval.clone()),
        ..CallSpec::new(asking.payload.clone())
    };
    if let Some(policy) = &asking.offered.policy {
        spec.idempotent = policy.idempotent;
        spec.verify.clone_from(&policy.verify);
        spec.protect.clone_from(&policy.protect);
        spec.max_retries = policy.max_retries;
    }
    spec
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_derived_key_is_a_key_and_the_same_for_the_same_request() {
        let hash = recourse::keyed::request_hash(&json!({"tool": "w", "arguments": {"a": 1}}));
        let key = derived_key(&hash);
        assert_eq!(key, derived_key(&hash));
        assert!(key.len() <= 255 && key.bytes().all(|b| b.is_ascii_graphic()));
    }
}
