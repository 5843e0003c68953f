//! Asking the person where they already are: a tool whose policy says
//! `"approval": {…, "via": ["client"]}` has its held call put to the MCP
//! client's user as an elicitation form, for a client that declares form
//! elicitation — a session up to 2025-11-25 is sent `elicitation/create`;
//! a 2026-07-28 client is answered `input_required` with the same form in
//! `inputRequests` and a sealed `requestState` ([`sealed`](crate::sealed)),
//! or, taking tasks, finds it in `tasks/get` ([`tasks`](crate::tasks)).
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
    Approval, ApprovalOf, ApprovalState, Decide, DecideError, Decided, Decision, Required,
    ShownApproval, decide, find,
};
use recourse::journal::{JournalEntry, process_owner};
use rmcp::model::{
    CallToolResult, ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction,
    ElicitationSchema, InputRequest, InputRequests, InputResponses,
};
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
    let approval = entry.asked.approval.clone()?;
    if approval.state != ApprovalState::Pending {
        return None;
    }
    let params = form(&entry, &offered.name)?;
    let wait = required.expires_in.min(MAX_FORM_WAIT);
    let answered = peer
        .create_elicitation_with_timeout(params, Some(wait))
        .await
        .ok()?;
    let decided = decide_answered(shared, offered.upstream, &approval, answer_of(&answered))
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

/// The key an approval's form is asked under in `inputRequests`.
pub(crate) const INPUT_KEY: &str = "approval";

/// The form for the held call `entry` of `tool`: what will be sent, and
/// one choice; `None` when `entry` waits for no approval.
pub(crate) fn form(entry: &JournalEntry, tool: &str) -> Option<ElicitRequestParams> {
    entry.asked.approval.as_ref()?;
    Some(ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: message(&ShownApproval::of(entry), tool),
        requested_schema: schema()?,
    })
}

/// The form as a 2026-07-28 client is asked it: under [`INPUT_KEY`].
pub(crate) fn input_requests(entry: &JournalEntry, tool: &str) -> Option<InputRequests> {
    let request = InputRequest::Elicitation(ElicitRequest::new(form(entry, tool)?));
    Some(InputRequests::from([(INPUT_KEY.to_owned(), request)]))
}

/// The decision in a form's answer: approve only when accepted with
/// `approve`; a decline, a cancel or anything else rejects.
pub(crate) fn answer_of(answered: &ElicitResult) -> Decision {
    match answered.action {
        ElicitationAction::Accept => answered
            .content
            .clone()
            .and_then(|c| serde_json::from_value::<Answered>(c).ok())
            .map_or(Decision::Reject, |a| a.decision),
        // Decline or cancel (or an action this proxy does not know): no.
        _ => Decision::Reject,
    }
}

/// The decision in a 2026-07-28 client's `inputResponses`, or `None` when
/// they hold no answer to the form (nothing is decided then).
pub(crate) fn answer_in(responses: &InputResponses) -> Option<Decision> {
    let answered: ElicitResult = serde_json::from_value(responses.get(INPUT_KEY)?.clone()).ok()?;
    Some(answer_of(&answered))
}

/// Decides `approval` as the client's user answered: an approval puts the
/// call in flight under this process, which holds the upstream (index
/// `upstream`) and sends it — even when another proxy asked.
pub(crate) async fn decide_answered(
    shared: &Arc<Shared>,
    upstream: usize,
    approval: &Approval,
    decision: Decision,
) -> Result<Decided, DecideError> {
    let journal = shared.journal.clone().ok_or(DecideError::NotFound)?;
    let lease = shared.lease(upstream);
    let deciding = Decide {
        approval_id: &approval.id,
        decision,
        by: CLIENT_DECIDER,
        note: Some("decided in the MCP client"),
        request_sha256: Some(&approval.request_sha256),
        self_approval_allowed: false,
        dispatcher: Some(process_owner()),
    };
    decide(journal.as_ref(), &deciding, SystemTime::now(), lease).await
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
