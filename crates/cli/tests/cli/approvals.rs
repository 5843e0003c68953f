//! `recourse approvals`: a person reads what a call would send and decides
//! it from a terminal, as their own caller; the asker cannot.

use crate::support;

use std::process::Command;

use recourse_reference_tools::{ToolsConfig, spawn};
use serde_json::{Value, json};
use support::Gateway;

const AGENT: &str = "agent-token-0123456789";
const LEAD: &str = "lead-token-0123456789";

/// `recourse approvals ARGS` as the caller whose token is `token`.
fn approvals(gw: &Gateway, token: &str, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_recourse"))
        .arg("approvals")
        .args(args)
        .args(["--gateway", &gw.url])
        .env("RECOURSE_GATEWAY_TOKEN", token)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The callers most tests need: `agent`, and `lead` who approves.
fn agent_and_lead() -> Value {
    json!([
        {"name": "agent", "token": AGENT},
        {"name": "lead", "token": LEAD, "approver": true}
    ])
}

/// `recourse serve` journaling in `dir`, its callers `callers` (`{"name",
/// "token", …}` each) in a tokens file readable by its owner alone, with
/// `flags` besides.
fn gateway_of(dir: &std::path::Path, callers: Value, flags: &[&str]) -> Gateway {
    let tokens = dir.join("tokens.json");
    std::fs::write(&tokens, json!({ "callers": callers }).to_string()).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&tokens, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    let journal = dir.join("journal.db");
    let mut args = vec![
        "--tokens",
        tokens.to_str().unwrap(),
        "--journal",
        journal.to_str().unwrap(),
    ];
    args.extend_from_slice(flags);
    Gateway::spawn().args(&args).start()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_reads_the_request_and_decides_it_from_a_terminal() {
    let tools = spawn(ToolsConfig::default()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway_of(dir.path(), agent_and_lead(), &[]);
    let asked: Value = reqwest::Client::new()
        .post(format!("{}/v1/calls", gw.url))
        .bearer_auth(AGENT)
        .json(&json!({
            "url": format!("{}/api/exports", tools.base_url()),
            "payload": {"source_id": "sales-2024", "format": "pdf"},
            "headers": [["X-Override", "wire"]],
            "approval": {"reason": "a routine export"}
        }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = asked["approval"]["id"].as_str().unwrap().to_owned();

    let (code, listed, _) = approvals(&gw, LEAD, &["list"]);
    assert_eq!(code, 0);
    for shown in [
        id.as_str(),
        "asked by  agent",
        "a routine export (the requester's words, unchecked)",
        &format!("sends     POST {}/api/exports", tools.base_url()),
        "header    X-Override: wire",
        "\"source_id\": \"sales-2024\"",
    ] {
        assert!(listed.contains(shown), "{shown}: {listed}");
    }
    let (code, json_list, _) = approvals(&gw, LEAD, &["list", "--json"]);
    assert_eq!(code, 0);
    let parsed: Value = serde_json::from_str(&json_list).unwrap();
    assert_eq!(
        parsed["approvals"][0]["request"]["payload"]["format"],
        "pdf"
    );

    // The agent is no approver: refused, exit 1, nothing decided.
    let (code, _, said) = approvals(&gw, AGENT, &["approve", &id]);
    assert_eq!(code, 1, "{said}");
    assert!(said.contains("NOT_APPROVER"), "{said}");
    assert_eq!(tools.exports_committed(), 0);

    let (code, decided, said) = approvals(&gw, LEAD, &["approve", &id, "--note", "checked"]);
    assert_eq!(code, 0, "{said}");
    assert!(
        decided.contains("payload"),
        "what was approved is printed: {decided}"
    );
    assert!(
        decided.contains(&format!("{id}: approved by lead")),
        "{decided}"
    );
    let (code, _, said) = approvals(&gw, LEAD, &["reject", &id]);
    assert_eq!(code, 1);
    assert!(said.contains("APPROVAL_DECIDED"), "{said}");
    let started = std::time::Instant::now();
    while tools.exports_committed() == 0 {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(15),
            "never sent"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(tools.exports_committed(), 1);
    let (code, _, said) = approvals(&gw, LEAD, &["show", "no-such-approval"]);
    assert_eq!(code, 1);
    assert!(said.contains("APPROVAL_NOT_FOUND"), "{said}");
}

/// A gateway that may start an MCP server holds the tools the proxy's
/// policy file holds: calling it directly is no way around an approval.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateway_holds_what_the_proxys_policy_holds() {
    let bin = env!("CARGO_BIN_EXE_recourse");
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.json");
    std::fs::write(
        &policy,
        r#"{"tools": {"orders_refund": {"approval": {"reason": "refunds move money"}}}}"#,
    )
    .unwrap();
    let pattern = format!("'{bin}' tools serve --mcp --port *");
    let mcp_policy = format!("{pattern}={}", policy.display());
    let gw = gateway_of(
        dir.path(),
        agent_and_lead(),
        &["--allow-mcp-command", &pattern, "--mcp-policy", &mcp_policy],
    );
    let call = |tool: &str, payload: Value| {
        let url = format!("{}/v1/calls", gw.url);
        let body = json!({
            "mcp": {"command": format!("{bin} tools serve --mcp --port 0"), "tool": tool},
            "payload": payload
        });
        async move {
            let answer = reqwest::Client::new()
                .post(url)
                .bearer_auth(AGENT)
                .json(&body)
                .send()
                .await
                .unwrap();
            (
                answer.status().as_u16(),
                answer.json::<Value>().await.unwrap(),
            )
        }
    };
    let (status, held) = call("orders_refund", json!({"order_id": "ORD-2002"})).await;
    assert_eq!(status, 202, "{held}");
    assert_eq!(held["approval"]["reason"], "refunds move money");
    let id = held["approval"]["id"].as_str().unwrap().to_owned();
    let (code, shown, _) = approvals(&gw, LEAD, &["show", &id]);
    assert_eq!(code, 0);
    assert!(shown.contains("operator's policy file's words"), "{shown}");
    assert!(shown.contains("tool      orders_refund"), "{shown}");
    assert!(shown.contains("tools serve --mcp --port 0"), "{shown}");
    // A tool the file does not hold runs at once.
    let (status, ran) = call("orders_lookup", json!({"order_id": "ORD-2002"})).await;
    assert_eq!(status, 200, "{ran}");
    assert_ne!(ran["outcome"], "awaiting_approval", "{ran}");

    // A policy file that cannot be read stops the gateway before it serves, named.
    let out = Command::new(bin)
        .args(["serve", "--port", "0", "--check", "--mcp-policy"])
        .arg(format!(
            "{pattern}={}",
            dir.path().join("missing.json").display()
        ))
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(
        said.contains("--mcp-policy") && said.contains("missing.json"),
        "{said}"
    );
}

/// A proxy's held call approved on a gateway in another process: the
/// gateway starts no copy of the proxy's server; the proxy that holds the
/// upstream sends it, once, when its client calls again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_proxy_call_is_sent_by_the_proxy_not_a_second_server() {
    use crate::mcp_stdio_proxy::StdioProxy;
    let bin = env!("CARGO_BIN_EXE_recourse");
    let dir = tempfile::tempdir().unwrap();
    let args = held_exports_proxy(dir.path(), bin, &[]);
    // The gateway may start the very server the proxy runs: it must not.
    let pattern = format!("'{bin}' tools serve --mcp **");
    let gw = gateway_of(
        dir.path(),
        json!([{"name": "lead", "token": LEAD, "approver": true}]),
        &["--allow-mcp-command", &pattern],
    );
    let mut proxy = StdioProxy::start(&args);
    let export = json!({"source_id": "sales-2024", "format": "pdf"});
    let call = |proxy: &mut StdioProxy, tool: &str| {
        proxy.request(
            "tools/call",
            json!({"name": tool, "arguments": export,
                   "_meta": {"recourse/idempotency-key": "held-1"}}),
        )
    };
    let held = call(&mut proxy, "exports_create");
    let meta = &held["_meta"]["recourse/call"];
    assert_eq!(meta["outcome"], "awaiting_approval", "{held}");
    let approval_id = meta["approval_id"].as_str().unwrap().to_owned();
    let call_id = meta["call_id"].as_str().unwrap().to_owned();

    let (code, decided, said) = approvals(&gw, LEAD, &["approve", &approval_id]);
    assert_eq!(code, 0, "{said}");
    assert!(decided.contains("approved by lead"), "{decided}");
    // The gateway sent nothing: the call waits, in flight, for the proxy.
    let seen: Value = reqwest::Client::new()
        .get(format!("{}/v1/calls/{call_id}", gw.url))
        .bearer_auth(LEAD)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        seen["record"]["attempts"].as_array().map_or(0, Vec::len),
        0,
        "{seen}"
    );

    // The client calls again: the proxy sends it now, to its own server.
    let done = call(&mut proxy, "exports_create");
    assert_eq!(done["isError"], false, "{done}");
    assert_eq!(done["_meta"]["recourse/call"]["call_id"], call_id.as_str());
    let found = proxy.request(
        "tools/call",
        json!({"name": "exports_lookup", "arguments": export}),
    );
    assert_eq!(found["structuredContent"]["count"], 1, "{found}");
    // Once: the same call again is its result, nothing sent.
    let again = call(&mut proxy, "exports_create");
    assert_eq!(again["_meta"]["recourse/call"]["replayed"], true, "{again}");
    let found = proxy.request(
        "tools/call",
        json!({"name": "exports_lookup", "arguments": export}),
    );
    assert_eq!(found["structuredContent"]["count"], 1, "{found}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_approved_after_its_proxy_stopped_is_sent_by_the_next_proxy_of_its_server() {
    use crate::mcp_stdio_proxy::StdioProxy;
    let bin = env!("CARGO_BIN_EXE_recourse");
    let dir = tempfile::tempdir().unwrap();
    let args = held_exports_proxy(dir.path(), bin, &["--lease-ms", "1000"]);
    let export = json!({"source_id": "sales-2024", "format": "pdf"});
    let call = |proxy: &mut StdioProxy, tool: &str| {
        proxy.request(
            "tools/call",
            json!({"name": tool, "arguments": export,
                   "_meta": {"recourse/idempotency-key": "held-after"}}),
        )
    };
    let mut asker = StdioProxy::start(&args);
    let held = call(&mut asker, "exports_create");
    let meta = &held["_meta"]["recourse/call"];
    assert_eq!(meta["outcome"], "awaiting_approval", "{held}");
    let approval_id = meta["approval_id"].as_str().unwrap().to_owned();
    // The proxy that asked stops before anybody decides.
    asker.kill();
    drop(asker);

    // A person approves on a gateway of the same journal (which then stops:
    // its own sweep would end the call unsent once the lease runs out).
    let gw = gateway_of(
        dir.path(),
        json!([{"name": "lead", "token": LEAD, "approver": true}]),
        &["--lease-ms", "1000"],
    );
    let (code, decided, said) = approvals(&gw, LEAD, &["approve", &approval_id]);
    assert_eq!(code, 0, "{said}");
    assert!(decided.contains("approved by lead"), "{decided}");
    drop(gw);

    // The next proxy of the same server takes the call over once the
    // stopped one's lease runs out, and sends it, once.
    let mut next = StdioProxy::start(&args);
    let started = std::time::Instant::now();
    let done = loop {
        let answer = call(&mut next, "exports_create");
        if answer["_meta"]["recourse/call"]["outcome"] == "succeeded" {
            break answer;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(30),
            "never sent: {answer}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    };
    assert_eq!(done["isError"], false, "{done}");
    let found = next.request(
        "tools/call",
        json!({"name": "exports_lookup", "arguments": export}),
    );
    assert_eq!(found["structuredContent"]["count"], 1, "{found}");
}

/// `recourse mcp proxy` with `flags`, journaling in `dir`, in front of the
/// reference tools over MCP, its policy holding `exports_create` for a person.
fn held_exports_proxy(dir: &std::path::Path, bin: &str, flags: &[&str]) -> Vec<String> {
    let policy = dir.join("policy.json");
    std::fs::write(
        &policy,
        r#"{"tools": {"exports_create": {"approval": {"reason": "exports leave the building"}}}}"#,
    )
    .unwrap();
    let journal = dir.join("journal.db");
    let mut args = vec![
        "mcp".to_owned(),
        "proxy".to_owned(),
        "--journal".to_owned(),
        journal.to_str().unwrap().to_owned(),
        "--tools".to_owned(),
        policy.to_str().unwrap().to_owned(),
    ];
    args.extend(flags.iter().map(|f| (*f).to_owned()));
    args.extend(["--", bin, "tools", "serve", "--mcp"].map(str::to_owned));
    args
}
