//! `recourse call --verify-…` and `recourse journal reconcile --header`:
//! settling lost replies by reading back, over HTTP and over MCP.

use std::process::{Command, Output};
use std::time::Duration;

use axum::Json;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use recourse::Journal;
use recourse::journal::{NewCall, SqliteJournal};
use recourse_reference_tools::{RunningTools, ToolsConfig, spawn};
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_recourse");
const EXPORT: &str = r#"{"source_id":"inventory","format":"csv"}"#;
const BY_INPUTS: &str = r#"{"source_id":"{{payload.source_id}}","format":"{{payload.format}}"}"#;

async fn tools(seed: u64, faults: &[&str]) -> RunningTools {
    let mut config = ToolsConfig::default().with_seed(seed);
    for f in faults {
        config = config.with_fault(f.parse().unwrap());
    }
    spawn(config).await.unwrap()
}

fn recourse(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .env_remove("RECOURSE_JOURNAL")
        .output()
        .unwrap()
}

fn report(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn export_verified(t: &RunningTools) -> Output {
    let lookup = format!("{}/api/exports/lookup", t.base_url());
    recourse(&[
        "call",
        &format!("{}/api/exports", t.base_url()),
        "--payload",
        EXPORT,
        "--non-idempotent",
        "--backoff-ms",
        "0",
        "--verify-url",
        &lookup,
        "--verify-args",
        BY_INPUTS,
        "--verify-expect",
        "/latest exists",
        "--json",
    ])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_whose_connection_dropped_is_verified_over_http() {
    let t = tools(0, &["exports:crash_after_commit"]).await;
    let out = export_verified(&t);
    assert_eq!(out.status.code(), Some(0));
    let r = report(&out);
    assert_eq!(r["outcome"], "succeeded");
    assert_eq!(r["verification"], "verified");
    assert_eq!(r["attempts"].as_array().unwrap().len(), 1);
    assert_eq!(t.exports_committed(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_dropped_before_it_ran_is_resent_once_then_verified_over_http() {
    // Seed 2 drops the first export and lets the second through.
    let t = tools(2, &["exports:drop:0.5"]).await;
    let out = export_verified(&t);
    assert_eq!(out.status.code(), Some(0));
    let r = report(&out);
    assert_eq!(r["verification"], "verified", "{r:#}");
    let attempts = r["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 2);
    assert_eq!(
        attempts[0]["transport_error"]
            .as_str()
            .map(|t| t.starts_with("failed_after_send")),
        Some(true)
    );
    assert_eq!(attempts[0]["action"], "reconcile");
    assert_eq!(t.exports_committed(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_mcp_reply_is_verified_through_the_servers_read_tool() {
    let line = format!("{BIN} tools serve --mcp --port 0 --fault exports:crash_after_commit");
    let out = recourse(&[
        "call",
        "--mcp-command",
        &line,
        "--tool",
        "exports_create",
        "--payload",
        EXPORT,
        "--verify-tool",
        "exports_lookup",
        "--verify-args",
        BY_INPUTS,
        "--verify-expect",
        "/latest exists",
        "--json",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = report(&out);
    assert_eq!(r["verification"], "verified");
    assert_eq!(r["data"]["count"], 1, "one export: {r:#}");
    assert_eq!(r["attempts"].as_array().unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_tool_the_server_lacks_is_refused_before_the_write() {
    let line = format!("{BIN} tools serve --mcp --port 0");
    let out = recourse(&[
        "call",
        "--mcp-command",
        &line,
        "--tool",
        "exports_create",
        "--payload",
        EXPORT,
        "--verify-tool",
        "exports_find",
        "--verify-expect",
        "/latest exists",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("\"exports_find\"") && err.contains("exports_lookup"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_verification_exits_2_and_writes_nothing() {
    let t = tools(0, &[]).await;
    let url = format!("{}/api/exports", t.base_url());
    let lookup = format!("{}/api/exports/lookup", t.base_url());
    let base = ["call", url.as_str(), "--payload", EXPORT];
    for extra in [
        vec!["--verify-expect", "/latest exists"],
        vec!["--verify-url", lookup.as_str()],
        vec![
            "--verify-url",
            lookup.as_str(),
            "--verify-expect",
            "latest exists",
        ],
        vec![
            "--verify-url",
            lookup.as_str(),
            "--verify-expect",
            "/latest ~ 1",
        ],
        vec![
            "--verify-url",
            lookup.as_str(),
            "--verify-expect",
            "/v == {{payload.version}}",
        ],
        vec![
            "--verify-tool",
            "exports_lookup",
            "--verify-expect",
            "/latest exists",
        ],
        vec![
            "--verify-tool",
            "x",
            "--verify-method",
            "GET",
            "--verify-expect",
            "/a exists",
        ],
        vec![
            "--verify-url",
            lookup.as_str(),
            "--verify-tool",
            "x",
            "--verify-expect",
            "/a exists",
        ],
        vec![
            "--verify-url",
            lookup.as_str(),
            "--verify-method",
            "PUT",
            "--verify-expect",
            "/a exists",
        ],
    ] {
        let mut args = base.to_vec();
        args.extend(&extra);
        let out = recourse(&args);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{extra:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert_eq!(t.exports_committed(), 0, "nothing was sent");
}

/// An order service whose cancel answers 200 and changes nothing, and whose
/// read needs a bearer token.
async fn no_op_service() -> String {
    let app = axum::Router::new()
        .route(
            "/cancel",
            post(|| async { Json(json!({"success": true, "data": {"status": "cancelled"}})) }),
        )
        .route(
            "/get",
            post(|headers: HeaderMap| async move {
                if headers.get("authorization").and_then(|v| v.to_str().ok()) != Some("Bearer t") {
                    let e = json!({"success": false, "error": {"code": "NO_TOKEN", "message": "token", "category": "AUTH_ERROR"}});
                    return (StatusCode::UNAUTHORIZED, Json(e));
                }
                (StatusCode::OK, Json(json!({"success": true, "data": {"status": "pending"}})))
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    base
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_no_op_fails_not_applied_with_verify_always() {
    let base = no_op_service().await;
    let out = recourse(&[
        "call",
        &format!("{base}/cancel"),
        "--payload",
        r#"{"order_id":"W7"}"#,
        "--non-idempotent",
        "--header",
        "Authorization: Bearer t",
        "--verify-url",
        &format!("{base}/get"),
        "--verify-args",
        r#"{"order_id":"{{payload.order_id}}"}"#,
        "--verify-expect",
        r#"/status == "cancelled""#,
        "--verify-always",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let r = report(&out);
    assert_eq!(r["outcome"], "failed");
    assert_eq!(r["reason"], "not_applied");
    assert_eq!(r["verification"], "not_applied");
    assert_eq!(r["next"]["step"], "do_not_repeat");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn journal_reconcile_reads_back_with_the_headers_it_is_given() {
    let base = no_op_service().await;
    let dir = std::env::temp_dir().join(format!("recourse-verify-{}", uuid::Uuid::now_v7()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("journal.db");
    let journal = SqliteJournal::open(&path).unwrap();
    let payload = json!({"order_id": "W7"});
    let spec = json!({"url": format!("{base}/get"), "args": {"order_id": "{{payload.order_id}}"},
                      "expect": ["/status == \"pending\""]});
    let call = NewCall {
        call_id: "c-1".to_owned(),
        target: format!("{base}/cancel"),
        capability: None,
        idempotency_key: Some("k-1".to_owned()),
        reconcile: None,
        verification: Some(spec),
        payload: payload.clone(),
        owner: "a-process-that-died".to_owned(),
        lease: Duration::from_millis(1),
        caller: None,
    };
    journal.begin_call(&call).await.unwrap();
    journal
        .begin_attempt("c-1", 1, Some(&payload))
        .await
        .unwrap();
    drop(journal);
    tokio::time::sleep(Duration::from_millis(20)).await;
    let at = path.to_str().unwrap();
    let bare = recourse(&[
        "journal",
        "reconcile",
        "--journal",
        at,
        "--lease-ms",
        "1",
        "--json",
    ]);
    assert_eq!(
        bare.status.code(),
        Some(3),
        "no token: the read cannot tell"
    );
    assert_eq!(report(&bare)[0]["state"], "unknown");
    tokio::time::sleep(Duration::from_millis(20)).await;
    let out = recourse(&[
        "journal",
        "reconcile",
        "--journal",
        at,
        "--lease-ms",
        "1",
        "--json",
        "--header",
        "Authorization: Bearer t",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let settled = report(&out);
    assert_eq!(settled[0]["state"], "succeeded", "{settled:#}");
    let _ = std::fs::remove_dir_all(&dir);
}
