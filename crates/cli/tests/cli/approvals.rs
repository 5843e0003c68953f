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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_reads_the_request_and_decides_it_from_a_terminal() {
    let tools = spawn(ToolsConfig::default()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens.json");
    std::fs::write(
        &tokens,
        json!({"callers": [
            {"name": "agent", "token": AGENT},
            {"name": "lead", "token": LEAD, "approver": true}
        ]})
        .to_string(),
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&tokens, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    let journal = dir.path().join("journal.db");
    let gw = Gateway::spawn()
        .args(&[
            "--tokens",
            tokens.to_str().unwrap(),
            "--journal",
            journal.to_str().unwrap(),
        ])
        .start();
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
