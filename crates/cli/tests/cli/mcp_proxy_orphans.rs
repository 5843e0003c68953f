//! `recourse mcp proxy` killed with SIGKILL during a journaled write, then
//! started again on the same journal: the call is listed in flight, and once
//! its lease has run out the proxy's sweeper settles it by reading the
//! export back — never by resending it.

use crate::mcp_http_tools::McpHttpTools;
use crate::mcp_stdio_proxy::StdioProxy;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use recourse_mcp::{McpTarget, McpTransport};
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_recourse");
const WAIT: Duration = Duration::from_secs(60);
/// How long the upstream's export write takes (the `slow` fault).
const SLOW_MS: &str = "1000";
/// The proxy's lease: short, so that an orphan is the sweeper's soon, and
/// longer than the write, as a lease must be: a write read back before it
/// commits reads as not committed.
const LEASE_MS: &str = "2500";
/// Reads the export back by its inputs: there is one once the write took effect.
const VERIFY: &str = r#"{"tools": {"exports_create": {"verify": {"tool": "exports_lookup",
  "args": {"source_id": "{{payload.source_id}}", "format": "{{payload.format}}"},
  "expect": ["/latest exists"]}}}}"#;

fn export() -> Value {
    json!({"source_id": "sales-2024", "format": "pdf"})
}

/// The proxy's arguments: the journal, the lease, the policy, the upstream.
fn proxy_args(dir: &Path, tools: &McpHttpTools) -> Vec<String> {
    let policy = dir.join("tools.json");
    std::fs::write(&policy, VERIFY).unwrap();
    let upstream = format!("tools={}", tools.mcp_url);
    [
        "mcp",
        "proxy",
        "--journal",
        &dir.join("proxy.db").display().to_string(),
        "--lease-ms",
        LEASE_MS,
        "--tools",
        &policy.display().to_string(),
        "--upstream",
        &upstream,
    ]
    .map(str::to_owned)
    .to_vec()
}

/// `recourse journal --journal DIR/proxy.db list --json`.
pub(crate) fn listed(dir: &Path) -> Vec<Value> {
    let journal = dir.join("proxy.db").display().to_string();
    let out = Command::new(BIN)
        .args(["journal", "--journal", &journal, "list", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    serde_json::from_slice::<Vec<Value>>(&out.stdout).unwrap()
}

/// The journal's calls once `settled` holds for them, within `within`.
fn listed_once(dir: &Path, within: Duration, settled: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let started = Instant::now();
    loop {
        let calls = listed(dir);
        if settled(&calls) || started.elapsed() > within {
            return calls;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_proxy_killed_mid_write_settles_its_call_after_a_restart_without_resending() {
    let tools = McpHttpTools::start(&["--fault", "exports:slow", "--slow-ms", SLOW_MS]);
    let dir = tempfile::tempdir().unwrap();
    let args = proxy_args(dir.path(), &tools);

    // The write is sent and journaled; the proxy is killed before it ends.
    let mut killed = StdioProxy::start(&args);
    killed.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "exports_create", "arguments": export()}}));
    let calls = listed_once(dir.path(), WAIT, |calls| {
        calls
            .first()
            .is_some_and(|c| c["attempts"].as_u64() >= Some(1))
    });
    assert_eq!(calls.len(), 1, "{calls:?}");
    killed.kill();

    let call_id = calls[0]["call_id"].as_str().unwrap().to_owned();
    let calls = listed(dir.path());
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0]["call_id"], call_id.as_str());
    assert_eq!(calls[0]["state"], "in_flight", "{calls:?}");

    // Started again on the same journal, the proxy settles the orphan once
    // its lease has run out: the export is read back.
    let restarted = McpTransport::new(McpTarget::Command {
        program: BIN.to_owned(),
        args: args.clone(),
        pass_env: Vec::new(),
        env: recourse_mcp::ChildEnv::Cleared,
    });
    restarted.listed_tools(WAIT).await.unwrap();
    let calls = listed_once(dir.path(), WAIT, |calls| {
        calls.first().is_some_and(|c| c["state"] != "in_flight")
    });
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0]["call_id"], call_id.as_str());
    assert_eq!(calls[0]["state"], "succeeded", "{calls:?}");

    // Never resent: the tool committed one export.
    let read = restarted
        .forward(
            "tools/call",
            Some(json!({"name": "exports_lookup", "arguments": export()})),
            WAIT,
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(read["structuredContent"]["count"], 1, "{read}");
}
