//! An approval as a person is shown it before deciding: what will be sent,
//! whole — the method and URL, or the MCP server and tool; the header names
//! (secret values redacted); the payload, redacted — beside the approval,
//! the caller that asked, what asked for it, and whose words its reason is.
//!
//! ```
//! use recourse::approval::{AskedBy, ShownApproval};
//! use recourse::journal::{CallState, JournalEntry};
//! use serde_json::json;
//!
//! let mut entry = JournalEntry::new("c-1", CallState::AwaitingApproval);
//! entry.caller = Some("agentA".into());
//! entry.asked.request = Some(json!({
//!     "url": "http://127.0.0.1:8700/api/pay",
//!     "headers": [["X-Override", "wire"], ["Authorization", "Bearer s3cret-value"]],
//!     "payload": {"amount": 50000, "to": "attacker-iban", "api_key": "k-123"},
//!     "approval": {"reason": "refund of 5 EUR to customer"}
//! }));
//! let shown = ShownApproval::of(&entry);
//! assert_eq!(shown.asked_by, AskedBy::Request);
//! assert_eq!(shown.caller, "agentA");
//! let request = serde_json::to_value(&shown.request).unwrap();
//! assert_eq!(request["method"], "POST");
//! assert_eq!(request["payload"]["amount"], 50000);
//! assert_eq!(request["payload"]["api_key"], "[REDACTED]");
//! assert_eq!(request["headers"][0], json!({"name": "X-Override", "value": "wire"}));
//! assert_eq!(request["headers"][1]["value"], "[REDACTED]");
//! ```

use recourse_core::journal::JournalEntry;
use recourse_protocol::{REDACTED, is_secret_key, redact, redact_value};
use serde::Serialize;
use serde_json::Value;

use crate::call::CallSpec;

/// What asked for a person's approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum AskedBy {
    /// The request itself (its `approval`): the reason is the requester's words.
    Request,
    /// The tool's capability manifest entry: the reason is the tool's words.
    Manifest,
    /// The operator's policy file for an MCP tool (`recourse mcp proxy`):
    /// the reason is the operator's words.
    Policy,
}

/// What will be sent once approved, as a person reads it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ShownRequest {
    /// The HTTP method, for an HTTP call.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// The URL (a secret query value redacted), for an HTTP call.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The MCP server — its command line or URL, redacted — for an MCP call.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mcp_server: Option<String>,
    /// The MCP tool, for an MCP call.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// The headers sent with it, each value redacted when its name is a
    /// secret's (and any credential in it otherwise).
    pub headers: Vec<ShownHeader>,
    /// The payload, redacted.
    pub payload: Value,
}

/// One header of a request shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ShownHeader {
    /// Its name.
    pub name: String,
    /// Its value, redacted.
    pub value: String,
}

/// An approval with the request it lets go (`GET /v1/approvals/{id}`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ShownApproval {
    /// The approval: its id, state, reason, expiry, request hash, and who
    /// decided it.
    pub approval: Option<recourse_core::approval::Approval>,
    /// The call it holds back.
    pub call_id: String,
    /// The caller that asked.
    pub caller: String,
    /// What asked for approval; `reason` is its words.
    pub asked_by: AskedBy,
    /// What will be sent: `null` when the journal no longer holds it (the
    /// call was dispatched, or ended).
    pub request: Option<ShownRequest>,
}

impl ShownApproval {
    /// The approval of `entry`, shown with the request the journal keeps
    /// for it.
    pub fn of(entry: &JournalEntry) -> Self {
        let spec = entry
            .asked
            .request
            .clone()
            .and_then(|request| serde_json::from_value::<CallSpec>(request).ok());
        let asked_by = match &spec {
            Some(spec) if spec.approval.is_some() => AskedBy::Request,
            Some(spec) if spec.mcp.is_some() => AskedBy::Policy,
            _ => AskedBy::Manifest,
        };
        Self {
            approval: entry.asked.approval.clone(),
            call_id: entry.call_id.clone(),
            caller: entry.caller().to_owned(),
            asked_by,
            request: spec.as_ref().map(shown),
        }
    }
}

fn shown(spec: &CallSpec) -> ShownRequest {
    let mcp = spec.mcp.as_ref();
    let server = mcp.and_then(|m| {
        m.get("command")
            .or_else(|| m.get("url"))
            .and_then(Value::as_str)
            .map(redact)
    });
    let tool = mcp
        .and_then(|m| m.get("tool"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    let http = spec.url.is_some() && mcp.is_none();
    ShownRequest {
        method: http.then(|| {
            spec.method
                .as_deref()
                .map_or_else(|| "POST".to_owned(), str::to_ascii_uppercase)
        }),
        url: spec.url.as_deref().filter(|_| http).map(redact),
        mcp_server: server,
        tool,
        headers: spec
            .headers
            .iter()
            .map(|(name, value)| ShownHeader {
                name: name.clone(),
                value: if is_secret_key(name) {
                    REDACTED.to_owned()
                } else {
                    redact(value)
                },
            })
            .collect(),
        payload: redact_value(&spec.payload),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use recourse_core::journal::CallState;
    use serde_json::json;

    fn entry(request: Value) -> JournalEntry {
        let mut entry = JournalEntry::new("c-1", CallState::AwaitingApproval);
        entry.asked.request = Some(request);
        entry
    }

    #[test]
    fn an_mcp_call_shows_its_server_and_tool() {
        let shown = ShownApproval::of(&entry(json!({
            "mcp": {"command": "node /opt/fs.js --token=abcd1234abcd1234abcd", "tool": "write_file"},
            "payload": {"path": "/tmp/x", "content": "hi"}
        })));
        assert_eq!(shown.asked_by, AskedBy::Policy);
        assert_eq!(shown.caller, "default");
        let request = shown.request.unwrap();
        assert_eq!(request.tool.as_deref(), Some("write_file"));
        let server = request.mcp_server.unwrap();
        assert!(server.starts_with("node /opt/fs.js"), "{server}");
        assert!(!server.contains("abcd1234abcd1234abcd"), "{server}");
        assert!(request.method.is_none() && request.url.is_none());
        assert_eq!(request.payload["path"], "/tmp/x");
    }

    #[test]
    fn a_manifests_approval_and_a_request_gone_are_said() {
        let shown = ShownApproval::of(&entry(json!({
            "url": "http://127.0.0.1:8700/api/pay?api_key=s3cretvalue", "method": "put",
            "payload": {"amount": 1}
        })));
        assert_eq!(shown.asked_by, AskedBy::Manifest);
        let request = shown.request.unwrap();
        assert_eq!(request.method.as_deref(), Some("PUT"));
        assert!(!request.url.unwrap().contains("s3cretvalue"));
        let mut gone = entry(Value::Null);
        gone.asked.request = None;
        assert!(ShownApproval::of(&gone).request.is_none());
    }
}
