//! `recourse mcp proxy` with a tool whose policy needs a person's approval,
//! and `recourse serve` on the same journal, where an approver decides: the
//! client is told `approval_required` with the call's id and nothing is
//! sent; an approval has the gateway send the call once, and the client's
//! next identical call gets its result; a rejection reaches the client as
//! the call's end, nothing written. All real processes.

use crate::mcp_http_tools::McpHttpTools;
use crate::mcp_stdio_proxy::StdioProxy;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::Gateway;

const BIN: &str = env!("CARGO_BIN_EXE_recourse");
const AGENT: &str = "agent-token-0123456789abcdef0123456789";
const LEAD: &str = "lead-token-0123456789abcdef0123456789ab";
const POLICY: &str = r#"{"tools": {"exports_create": {"approval":
  {"reason": "an export leaves the building", "expires_in": "1h"}}}}"#;

fn export() -> Value {
    json!({"source_id": "sales-2024", "format": "pdf"})
}

/// A journal, the policy file and the tokens file (the agent, and the lead:
/// an approver who also reads every call).
struct Setup {
    dir: tempfile::TempDir,
}

impl Setup {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("tools.json"), POLICY).unwrap();
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

    fn path(&self, name: &str) -> String {
        self.dir.path().join(name).display().to_string()
    }

    fn journal(&self) -> String {
        self.path("journal.db")
    }

    /// `recourse serve` on the journal, starting MCP servers only for `allow`.
    fn gateway(&self, allow: &[&str]) -> Gateway {
        let (journal, tokens) = (self.journal(), self.path("tokens.json"));
        let mut args = vec!["--journal", &journal, "--tokens", &tokens];
        for pattern in allow {
            args.extend(["--allow-mcp-command", pattern]);
        }
        Gateway::start(self.dir.path(), &args)
    }

    /// The proxy's arguments on the journal with the policy, then `upstream`.
    fn proxy(&self, upstream: &[&str]) -> StdioProxy {
        let mut args = vec![
            "mcp".to_owned(),
            "proxy".to_owned(),
            "--journal".to_owned(),
            self.journal(),
            "--tools".to_owned(),
            self.path("tools.json"),
        ];
        args.extend(upstream.iter().map(|a| (*a).to_owned()));
        StdioProxy::start(&args)
    }
}

/// How many exports of [`export`] the proxy's upstream has.
fn exports(proxy: &mut StdioProxy) -> u64 {
    let found = proxy.call("exports_lookup", &export(), None);
    assert_eq!(found["isError"], false, "{found}");
    found["structuredContent"]["count"].as_u64().unwrap()
}

/// What an `approval_required` answer says: the call's id and its approval's.
fn awaiting(result: &Value) -> (String, String) {
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

async fn decide(gateway: &Gateway, token: &str, approval_id: &str, decision: &str) -> (u16, Value) {
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
async fn ended(gateway: &Gateway, call_id: &str) -> Value {
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

#[tokio::test]
async fn an_approved_call_is_written_once_and_the_same_call_then_gets_its_result() {
    let tools = McpHttpTools::start(&[]);
    let setup = Setup::new();
    let gateway = setup.gateway(&[]);
    let upstream = format!("tools={}", tools.mcp_url);
    let mut proxy = setup.proxy(&["--upstream", &upstream]);

    let first = proxy.call("exports_create", &export(), Some("export-1"));
    let (call_id, approval_id) = awaiting(&first);
    assert_eq!(
        exports(&mut proxy),
        0,
        "nothing is sent before a person decides"
    );
    // Asking again asks nothing new: the same call, the same approval.
    let again = proxy.call("exports_create", &export(), Some("export-1"));
    assert_eq!(awaiting(&again), (call_id.clone(), approval_id.clone()));
    assert_eq!(again["_meta"]["recourse/call"]["replayed"], true);
    let other = json!({"source_id": "sales-2025", "format": "pdf"});
    let reused = proxy.call("exports_create", &other, Some("export-1"));
    assert_eq!(
        reused["_meta"]["io.modelcontextprotocol/toolFailure"]["code"], "IDEMPOTENCY_KEY_REUSED",
        "{reused}"
    );

    // The agent may not decide; the lead may, once.
    assert_eq!(
        decide(&gateway, AGENT, &approval_id, "approve").await.0,
        403
    );
    let (status, approval) = decide(&gateway, LEAD, &approval_id, "approve").await;
    assert_eq!(
        (status, &approval["state"]),
        (200, &json!("approved")),
        "{approval}"
    );
    let record = ended(&gateway, &call_id).await;
    assert_eq!(record["outcome"], "succeeded", "{record}");

    let done = proxy.call("exports_create", &export(), Some("export-1"));
    assert_eq!(done["isError"], false, "{done}");
    assert_eq!(done["_meta"]["recourse/call"]["call_id"], call_id.as_str());
    assert_eq!(done["_meta"]["recourse/call"]["replayed"], true, "{done}");
    assert_eq!(
        done["structuredContent"]["source_id"], "sales-2024",
        "{done}"
    );
    assert_eq!(exports(&mut proxy), 1, "one write, the gateway's");
    let once_more = proxy.call("exports_create", &export(), Some("export-1"));
    assert_eq!(once_more["isError"], false, "{once_more}");
    assert_eq!(exports(&mut proxy), 1, "a repeat is answered, never sent");
}

#[tokio::test]
async fn a_rejected_call_is_never_written_and_identical_calls_without_a_key_are_one() {
    let tools = McpHttpTools::start(&[]);
    let setup = Setup::new();
    let gateway = setup.gateway(&[]);
    let upstream = format!("tools={}", tools.mcp_url);
    let mut proxy = setup.proxy(&["--upstream", &upstream]);

    let (call_id, approval_id) = awaiting(&proxy.call("exports_create", &export(), None));
    // No key: the request's own hash finds the same call.
    let again = proxy.call("exports_create", &export(), None);
    assert_eq!(awaiting(&again), (call_id.clone(), approval_id.clone()));
    let (status, approval) = decide(&gateway, LEAD, &approval_id, "reject").await;
    assert_eq!(
        (status, &approval["state"]),
        (200, &json!("rejected")),
        "{approval}"
    );

    let rejected = proxy.call("exports_create", &export(), None);
    assert_eq!(rejected["isError"], true, "{rejected}");
    let failure = &rejected["_meta"]["io.modelcontextprotocol/toolFailure"];
    assert_eq!(failure["class"], "governance", "{rejected}");
    assert_eq!(failure["code"], "approval_rejected", "{rejected}");
    assert_eq!(failure["retryable"], false, "{rejected}");
    assert_eq!(failure["correlationId"], call_id.as_str());
    assert_eq!(rejected["_meta"]["recourse/call"]["outcome"], "failed");
    assert_eq!(exports(&mut proxy), 0, "nothing was ever sent");
}

#[tokio::test]
async fn the_gateway_starts_the_proxys_own_upstream_command_to_send_an_approved_call() {
    let setup = Setup::new();
    let command = format!("{BIN} tools serve --mcp");
    let gateway = setup.gateway(&[&command]);
    let mut proxy = setup.proxy(&["--", BIN, "tools", "serve", "--mcp"]);

    let (call_id, approval_id) = awaiting(&proxy.call("exports_create", &export(), Some("k-9")));
    let (status, _) = decide(&gateway, LEAD, &approval_id, "approve").await;
    assert_eq!(status, 200);
    let record = ended(&gateway, &call_id).await;
    assert_eq!(record["outcome"], "succeeded", "{record}");
    assert_eq!(record["attempts"].as_array().unwrap().len(), 1, "{record}");

    let done = proxy.call("exports_create", &export(), Some("k-9"));
    assert_eq!(done["isError"], false, "{done}");
    assert_eq!(done["_meta"]["recourse/call"]["call_id"], call_id.as_str());
    // The gateway's own server wrote it: the proxy's (another process,
    // exports kept in memory) never received the call.
    assert_eq!(exports(&mut proxy), 0);
}

#[test]
fn a_proxy_without_a_journal_refuses_a_tool_that_needs_approval() {
    let setup = Setup::new();
    let policy: PathBuf = Path::new(&setup.path("tools.json")).to_owned();
    let out = Command::new(BIN)
        .args(["mcp", "proxy", "--journal", "none", "--tools"])
        .arg(&policy)
        .args(["--", BIN, "tools", "serve", "--mcp"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success(), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("tools.exports_create.approval") && stderr.contains("--journal"),
        "{stderr}"
    );
}
