//! A journal, a policy file whose `exports_create` needs a person's
//! approval, and a tokens file (the agent, and the lead: an approver who
//! also reads every call); the gateway where the lead decides, and what
//! the client is told while a call waits.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use recourse_mcp_proxy::{ToolPolicies, Upstream};
use serde_json::{Value, json};

use super::duplex::StdioClient;
use super::gateway::GatewayOnLoopback;

pub const AGENT: &str = "agent-token-0123456789abcdef0123456789";
pub const LEAD: &str = "lead-token-0123456789abcdef0123456789ab";
pub const POLICY: &str = r#"{"tools": {"exports_create": {"approval":
  {"reason": "an export leaves the building", "expires_in": "1h"}}}}"#;

/// The files a proxy and a gateway share.
pub struct ApprovalSetup {
    dir: tempfile::TempDir,
}

impl ApprovalSetup {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let tokens = json!({"callers": [
            {"name": "agent", "token": AGENT},
            {"name": "lead", "token": LEAD, "approver": true, "admin": true},
        ]});
        let path = dir.path().join("tokens.json");
        std::fs::write(&path, tokens.to_string()).unwrap();
        // A file of plain tokens is read only when no one else may read it.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        }
        Self { dir }
    }

    pub fn journal(&self) -> PathBuf {
        self.dir.path().join("journal.db")
    }

    /// A gateway on the journal, starting MCP servers only for `allow`.
    pub async fn gateway(&self, allow: &[&str]) -> GatewayOnLoopback {
        GatewayOnLoopback::start(&self.journal(), &self.dir.path().join("tokens.json"), allow).await
    }

    /// The proxy on the journal with the policy, in front of `upstream`,
    /// over its stdio front.
    pub async fn proxy(&self, upstream: Upstream) -> StdioClient {
        let proxy = super::builder()
            .upstream(upstream)
            .with_policies(ToolPolicies::from_json(POLICY.as_bytes()).unwrap())
            .with_journal(super::journal_at(&self.journal()).await)
            .connect()
            .await
            .expect("the proxy starts");
        StdioClient::start(proxy).await
    }
}

/// What an `approval_required` answer says: the call's id and its approval's.
pub fn awaiting(result: &Value) -> (String, String) {
    assert_eq!(result["isError"], true, "{result}");
    let failure = &result["_meta"]["io.modelcontextprotocol/toolFailure"];
    assert_eq!(failure["class"], "governance", "{result}");
    assert_eq!(failure["code"], "approval_required", "{result}");
    assert_eq!(failure["retryable"], false, "{result}");
    let call = &result["_meta"]["recourse/call"];
    assert_eq!(call["outcome"], "awaiting_approval", "{result}");
    assert_eq!(call["stop_kind"], "policy", "{result}");
    assert_eq!(call["step"], "ask_user", "{result}");
    assert_eq!(failure["correlationId"], call["call_id"], "{result}");
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("an export leaves the building"), "{text}");
    assert!(text.contains("call this tool again"), "{text}");
    (
        call["call_id"].as_str().unwrap().to_owned(),
        call["approval_id"].as_str().unwrap().to_owned(),
    )
}

/// `POST /v1/approvals/{id}` with `decision`, as `token`'s caller.
pub async fn decide(
    gateway: &GatewayOnLoopback,
    token: &str,
    approval_id: &str,
    decision: &str,
) -> (u16, Value) {
    let resp = reqwest::Client::new()
        .post(format!("{}/v1/approvals/{approval_id}", gateway.url))
        .bearer_auth(token)
        .json(&json!({"decision": decision}))
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(Value::Null))
}

/// Follows the call on the gateway (`Prefer: wait=10`) until it has ended.
pub async fn ended(gateway: &GatewayOnLoopback, call_id: &str) -> Value {
    let started = Instant::now();
    loop {
        let resp = reqwest::Client::new()
            .get(format!("{}/v1/calls/{call_id}", gateway.url))
            .bearer_auth(LEAD)
            .header("Prefer", "wait=10")
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status().as_u16(), 200);
        let call: Value = resp.json().await.unwrap();
        if ["succeeded", "failed", "unknown"].contains(&call["state"].as_str().unwrap_or("")) {
            return call["record"].clone();
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the call never ended: {call}"
        );
    }
}
