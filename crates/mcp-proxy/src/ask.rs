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

use recourse::CallSpec;
use recourse_mcp::McpTarget;
use serde_json::{Value, json};

use crate::catalog::Offered;

/// The key of a call without one whose tool needs approval: the same for
/// the same request (its digest), so that calling again finds the call
/// asked for.
pub(crate) fn derived_key(request_hash: &str) -> String {
    format!("recourse-request-{request_hash}")
}

/// A call of `offered`, on the upstream at `target`, as a door describes
/// it: the same MCP server and tool, the arguments, the operator's policy
/// for it. Its digest is what a keyed resend is told apart by and what an
/// approval is bound to; it is also the request this proxy sends once a
/// person approves it ([`approved`](crate::approved)).
pub(crate) fn spec(offered: &Offered, target: &McpTarget, payload: &Value) -> CallSpec {
    let tool = &offered.tool.name;
    let mcp = match target {
        McpTarget::Url(url) => json!({"url": url, "tool": tool}),
        command => json!({"command": command.to_command_line(), "tool": tool}),
    };
    let mut spec = CallSpec {
        mcp: Some(mcp),
        ..CallSpec::new(payload.clone())
    };
    if let Some(policy) = &offered.policy {
        spec.idempotent = policy.idempotent;
        spec.verify.clone_from(&policy.verify);
        spec.protect.clone_from(&policy.protect);
        spec.limits.max_retries = policy.max_retries;
        // The approval is the operator's, not the request's: a person sees
        // it asked by the policy file.
    }
    spec
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_derived_key_is_a_key_and_the_same_for_the_same_request() {
        let hash = "ab".repeat(32);
        let key = derived_key(&hash);
        assert_eq!(key, derived_key(&hash));
        assert!(key.len() <= 255 && key.bytes().all(|b| b.is_ascii_graphic()));
    }
}
