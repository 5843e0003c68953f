//! Asking the person where they already are: a tool whose policy says
//! `"approval": {…, "via": ["client"]}` has its held call put to the MCP
//! client's user as an elicitation form (protocol versions up to
//! 2025-11-25), for a client that declares form elicitation.
//!
//! The form shows what the console shows — the tool, its server, the
//! arguments (redacted), the operator's reason, the expiry — and asks one
//! thing: approve or reject. Approved, the proxy that holds the upstream
//! sends the call now, once, with exactly those arguments (no correction
//! may change them); rejected, declined or cancelled, the call fails and
//! nothing is sent. The decision is the journal's one conditional write,
//! so a decision made meanwhile in the console wins and the form's is
//! refused. A client that does not answer before the form's time leaves
//! the call waiting, for the console.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use recourse::approval::{
    ApprovalOf, ApprovalState, Decide, Decision, Required, ShownApproval, decide, find,
};
use rmcp::model::{CallToolResult, ElicitRequestParams, ElicitationAction, ElicitationSchema};
use rmcp::service::{ElicitationMode, Peer, RoleServer};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::answer;
use crate::approved;
use crate::catalog::Offered;
use crate::proxy::Shared;

/// Who decides, as the approval records it: the person at the MCP client
/// (a space keeps it from ever being a gateway caller's name).
pub(crate) const CLIENT_DECIDER: &str = "mcp client user";

/// The longest a form is waited for; the call then waits for the console.
const MAX_FORM_WAIT: Duration = Duration::from_secs(15 * 60);

/// The client's user, when the client can be asked: it declared form
/// elicitation (and speaks a version that lets a server ask).
pub(crate) fn askable(peer: &Peer<RoleServer>) -> Option<Peer<RoleServer>> {
    peer.supported_elicitation_modes()
        .contains(&ElicitationMode::Form)
        .then(|| peer.clone())
}

/// The form's answer, read by its type.
#[derive(Debug, Deserialize)]
struct Answered {
    decision: Decision,
}

/// What the call came to once the client's user decided it, or `None`
/// when they did not (no answer in time, the client could not be asked, a
/// decision made elsewhere first): then the call waits, as answered.
pub(crate) async fn decide_in_client(
    shared: &Arc<Shared>,
    peer: &Peer<RoleServer>,
    offered: &Offered,
    required: &Required,
    caller_key: &str,
) -> Option<CallToolResult> {
    let journal = shared.journal.clone()?;
    let entry = find(
        journal.as_ref(),
        ApprovalOf::Key(caller_key),
        SystemTime::now(),
    )
    .await
    .ok()??;
    let approval = entry.approval.clone()?;
    if approval.state != ApprovalState::Pending {
        return None;
    }
    let params = ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: message(&ShownApproval::of(&entry), &offered.name),
        requested_schema: schema()?,
    };
    let wait = required.expires_in.min(MAX_FORM_WAIT);
    let answered = peer
        .create_elicitation_with_timeout(params, Some(wait))
        .await
        .ok()?;
    let decision = match answered.action {
        ElicitationAction::Accept => answered
            .content
            .and_then(|c| serde_json::from_value::<Answered>(c).ok())
            .map_or(Decision::Reject, |a| a.decision),
        // Decline or cancel (or an action this proxy does not know): no.
        _ => Decision::Reject,
    };
    let lease = shared.upstreams[offered.upstream].executor.config().lease;
    let deciding = Decide {
        approval_id: &approval.id,
        decision,
        by: CLIENT_DECIDER,
        note: Some("decided in the MCP client"),
        request_sha256: Some(&approval.request_sha256),
        self_approval_allowed: false,
    };
    let decided = decide(journal.as_ref(), &deciding, SystemTime::now(), lease)
        .await
        .ok()?;
    if decided.dispatch.is_none() {
        // Rejected (or its request unreadable): how the call ended.
        return Some(answer::ended(
            &decided.entry.record_json(),
            offered.output.as_ref(),
        ));
    }
    // Approved: this proxy holds the upstream, and sends it now, once.
    approved::send(shared, &decided.entry).await
}

/// The form's text: what will be sent, and why it waits.
fn message(shown: &ShownApproval, tool: &str) -> String {
    let reason = shown.approval.as_ref().map_or("", |a| a.reason.as_str());
    let expires = shown
        .approval
        .as_ref()
        .map_or("", |a| a.expires_at.as_str());
    let (server, arguments) = shown.request.as_ref().map_or((None, Value::Null), |r| {
        (r.mcp_server.clone(), r.payload.clone())
    });
    let arguments = serde_json::to_string_pretty(&arguments).unwrap_or_default();
    let server = server.map(|s| format!(" on {s}")).unwrap_or_default();
    format!(
        "Approve this call before it is sent?\n\nTool: {tool}{server}\nArguments:\n{arguments}\n\n\
         Why it needs a person (the operator's policy): {reason}\nUntil: {expires}\n\n\
         Approved, it is sent exactly as shown, once; rejected, it fails and nothing is sent."
    )
}

/// One field: approve or reject.
fn schema() -> Option<ElicitationSchema> {
    serde_json::from_value(json!({
        "type": "object",
        "properties": {
            "decision": {
                "type": "string",
                "title": "Decision",
                "enum": ["approve", "reject"],
                "description": "approve sends the call exactly as shown, once; reject fails it"
            }
        },
        "required": ["decision"]
    }))
    .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_form_asks_one_choice_of_two() {
        let schema = serde_json::to_value(schema().unwrap()).unwrap();
        assert_eq!(
            schema["properties"]["decision"]["enum"],
            json!(["approve", "reject"])
        );
        assert_eq!(schema["required"], json!(["decision"]));
        for (content, decision) in [
            (json!({"decision": "approve"}), Some(Decision::Approve)),
            (json!({"decision": "reject"}), Some(Decision::Reject)),
            (json!({"decision": "Approve"}), None),
            (json!({"decision": "yes"}), None),
            (json!({}), None),
        ] {
            assert_eq!(
                serde_json::from_value::<Answered>(content.clone())
                    .ok()
                    .map(|a| a.decision),
                decision,
                "{content}"
            );
        }
    }
}
