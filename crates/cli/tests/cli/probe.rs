//! `recourse probe` as a process: its exit codes (0 when every required
//! check passed, 1 when one failed, 2 for usage errors), the `--json`
//! object and the text table on stdout, and the `--html` file. What the
//! checks find is tested in-process, in `recourse-probe`.

use std::process::{Command, Output};

use axum::Router;
use axum::http::StatusCode;
use axum::routing::{get, post};
use recourse_reference_tools::{ToolsConfig, spawn};
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_recourse");
const EXPORT: &str = r#"exports_create={"source_id":"sales-2024","format":"pdf"}"#;

/// Runs `recourse probe ARGS` off the async runtime (the tools it probes
/// may be served by the test's own runtime).
async fn probe(args: &[&str]) -> Output {
    let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    tokio::task::spawn_blocking(move || {
        Command::new(BIN).arg("probe").args(&args).output().unwrap()
    })
    .await
    .unwrap()
}

fn card(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

#[tokio::test]
async fn usage_errors_exit_2() {
    let cases: [&[&str]; 5] = [
        &[],
        &["--endpoint", "http://127.0.0.1:1/x"],
        &["http://127.0.0.1:1", "--timeout", "0"],
        &["http://127.0.0.1:1", "--payload", "no-equals-sign"],
        &["ftp://127.0.0.1:1"],
    ];
    for args in cases {
        let out = probe(args).await;
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let out = probe(&["http://127.0.0.1:1"]).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr.contains("cannot read the manifest"), "{stderr}");
}

#[tokio::test]
async fn probe_prints_the_scorecard_writes_the_page_and_exits_by_the_required_checks() {
    let tools = spawn(ToolsConfig::default()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("probe.html");
    let out = probe(&[
        &tools.base_url(),
        "--allow-writes",
        "--payload",
        EXPORT,
        "--tool",
        "exports_*",
        "--html",
        page.to_str().unwrap(),
    ])
    .await;
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("required checks failed: 0"), "{text}");
    assert!(
        text.ends_with(&format!("HTML report: {}\n", page.display())),
        "{text}"
    );
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("<code>exports_create</code>"), "{html}");
    tools.shutdown().await;

    // A tool answering a plain-text 500: a required check fails, exit 1.
    let plain = Router::new()
        .route(
            "/api/capabilities",
            get(|| async {
                axum::Json(
                    json!({"capabilities": [{"name": "plain", "endpoint": "/plain",
                    "method": "POST", "idempotent": true,
                    "input_schema": {"type": "object", "required": ["q"],
                                     "properties": {"q": {"type": "string"}}}}]}),
                )
            }),
        )
        .route(
            "/plain",
            post(|| async { (StatusCode::INTERNAL_SERVER_ERROR, "Internal Server Error") }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, plain).await });
    let out = probe(&[&url, "--allow-writes", "--json"]).await;
    let card = card(&out);
    assert_eq!(out.status.code(), Some(1), "{card:#}");
    assert!(card["required_failed"].as_u64().unwrap() > 0, "{card:#}");
}
