//! A secret of every form the redactor knows, planted in a tool's error
//! message, its details, a plain-text error body, the payload and the target's
//! query, never reaches `recourse call`'s output (text or `--json`), its
//! standard error, the gateway's response or `/metrics`.

use crate::support;

use support::Gateway;

use axum::Router;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::post;
use recourse_tool::ToolFailure;
use recourse_tool::protocol::ToolError;
use serde_json::{Value, json};

/// Each planted text and the secret in it that must not survive, one per form
/// the redactor knows (`crates/protocol/tests/properties.rs` generates them).
const PLANTED: &[(&str, &str)] = &[
    (
        "https://api.example.com/v1/weather?q=Paris&api_key=QKq1w2e3r4t5y6&units=metric",
        "QKq1w2e3r4t5y6",
    ),
    ("token=TKz9x8c7v6b5n4", "TKz9x8c7v6b5n4"),
    (
        "Authorization: Bearer AUa1b2c3d4e5f6g7h8i9",
        "AUa1b2c3d4e5f6g7h8i9",
    ),
    (
        "authorization=Basic QmFzaWNaWjEyMzQ1Njc4OTA",
        "QmFzaWNaWjEyMzQ1Njc4OTA",
    ),
    ("Bearer BRm1n2b3v4c5x6z7l8k9", "BRm1n2b3v4c5x6z7l8k9"),
    (
        "postgres://admin:UIp4ssw0rdQQ@db.internal:5432/app",
        "UIp4ssw0rdQQ",
    ),
    ("sk-SKa1b2c3d4e5f6g7h8i9j0", "sk-SKa1b2c3d4e5f6g7h8i9j0"),
    ("AKIAQWERTYUIOPASDFGH", "AKIAQWERTYUIOPASDFGH"),
    (
        "ghp_GHa1b2c3d4e5f6g7h8i9j0k1l2m3n4o5p6q7",
        "ghp_GHa1b2c3d4e5f6g7h8i9j0k1l2m3n4o5p6q7",
    ),
    (
        "AIzaGOa1b2c3d4e5f6g7h8i9j0k1l2m3n4o5p6q",
        "AIzaGOa1b2c3d4e5f6g7h8i9j0k1l2m3n4o5p6q",
    ),
    ("xoxb-SLa1b2c3d4e5f6g7", "xoxb-SLa1b2c3d4e5f6g7"),
    (
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJKV1RhbGljZSJ9.JWs1g2n3a4t5u6r7e8",
        "eyJzdWIiOiJKV1RhbGljZSJ9",
    ),
    (
        "aws_secret_access_key=AWa1b2c3d4e5f6g7h8i9j0k1l2m3n4o5p6q7r8s9",
        "AWa1b2c3d4e5f6g7h8i9j0k1l2m3n4o5p6q7r8s9",
    ),
    ("sk_live_STa1b2c3d4e5f6g7h8", "sk_live_STa1b2c3d4e5f6g7h8"),
    ("glpat-GLa1b2c3d4e5f6g7h8i9", "glpat-GLa1b2c3d4e5f6g7h8i9"),
    (
        "npm_NPa1b2c3d4e5f6g7h8i9j0k1l2m3n4o5p6q7",
        "npm_NPa1b2c3d4e5f6g7h8i9j0k1l2m3n4o5p6q7",
    ),
    (
        r#"{"client_secret": "JSa1b2c3d4e5f6", "n": 1}"#,
        "JSa1b2c3d4e5f6",
    ),
    (
        r#"{\"api_key\":\"JEa1b2c3d4e5f6\",\"n\":1}"#,
        "JEa1b2c3d4e5f6",
    ),
    ("db_password: 'PWa1b2c3d4e5f6'", "PWa1b2c3d4e5f6"),
    (
        "redis://:EUa1b2c3d4e5f6@cache.internal:6379/0",
        "EUa1b2c3d4e5f6",
    ),
    ("X-Api-Key: XKa1b2c3d4e5f6", "XKa1b2c3d4e5f6"),
    (
        "Cookie: session=COa1b2c3d4e5f6g7h8; Path=/",
        "COa1b2c3d4e5f6g7h8",
    ),
    (
        "https://api.example.com/v1?q=Paris&X-Amz-Signature=AMa1b2c3d4e5f6&units=metric",
        "AMa1b2c3d4e5f6",
    ),
];

/// Planted outside the forms: under secret-named keys, in the target's query,
/// and straddling the 300-character cut of a plain-text error body.
const PAYLOAD_PASSWORD: &str = "PLa1b2c3d4e5f6";
const DETAIL_TOKEN: &str = "DTa1b2c3d4e5f6";
const TARGET_KEY: &str = "TQa1b2c3d4e5f6";
const STRADDLING: &str = "sk-CUTa1b2c3d4e5f6g7h8i9";

fn every_secret() -> Vec<&'static str> {
    let mut all: Vec<&str> = PLANTED.iter().map(|(_, s)| *s).collect();
    all.extend([PAYLOAD_PASSWORD, DETAIL_TOKEN, TARGET_KEY, STRADDLING]);
    all
}

/// Fails if any secret, or the first ten characters of one, is in `text`.
fn assert_no_secret(text: &str, what: &str) {
    for secret in every_secret() {
        let head: String = secret.chars().take(10).collect();
        assert!(
            !text.contains(secret) && !text.contains(&head),
            "{what} leaks {secret:?}:\n{text}"
        );
    }
}

fn planted_error(error: ToolError) -> ToolFailure {
    let message: Vec<&str> = PLANTED.iter().map(|(text, _)| *text).collect();
    let mut error = ToolError {
        message: format!("upstream said: {}", message.join(" | ")),
        ..error
    };
    for (i, (text, _)) in PLANTED.iter().enumerate() {
        error = error.detail(format!("hint_{i}"), *text);
    }
    error = error.detail("token", DETAIL_TOKEN).detail_value(
        "upstream",
        json!({"headers": PLANTED.iter().map(|(t, _)| *t).collect::<Vec<_>>()}),
    );
    ToolFailure::from(error)
}

/// The tool: `/transient` a retryable 503 envelope, `/input` a correctable
/// 400 envelope, `/plain` a plain-text 500 whose secret straddles the cut.
async fn tool() -> String {
    let app = Router::new()
        .route(
            "/transient",
            post(|| async {
                planted_error(ToolError::service_error("UPSTREAM_DOWN", "").retryable(true))
            }),
        )
        .route(
            "/input",
            post(|| async {
                planted_error(
                    ToolError::input_error("BAD_FIELD", "")
                        .retryable(true)
                        .detail("field", "note"),
                )
            }),
        )
        .route(
            "/plain",
            post(|| async {
                let body = format!("{} {STRADDLING} {}", "x".repeat(289), PLANTED[0].0);
                (
                    StatusCode::INTERNAL_SERVER_ERROR,
                    [(header::CONTENT_TYPE, "text/plain")],
                    body,
                )
                    .into_response()
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}")
}

/// A tool that reads each request and closes the connection without an
/// answer: the HTTP client's own error names the URL it was sending to.
async fn dropping() -> String {
    use tokio::io::AsyncReadExt;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf).await;
        }
    });
    format!("http://{addr}/drop?api_key={TARGET_KEY}&q=1")
}

fn payload() -> Value {
    let text: Vec<&str> = PLANTED.iter().map(|(t, _)| *t).collect();
    json!({
        "password": PAYLOAD_PASSWORD,
        "note": text.join(" "),
        "nested": {"api_key": PAYLOAD_PASSWORD, "items": text},
    })
}

fn routes(base: &str) -> Vec<String> {
    ["transient", "input", "plain"]
        .iter()
        .map(|r| format!("{base}/{r}?api_key={TARGET_KEY}&q=1"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn planted_secrets_never_reach_recourse_call_output() {
    let base = tool().await;
    let payload = payload().to_string();
    let mut urls = routes(&base);
    urls.push(dropping().await);
    for url in urls {
        for json in [false, true] {
            let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_recourse"));
            // Declared idempotent: the tool's plain 500s are then failures, not unknown outcomes.
            cmd.args([
                "call",
                &url,
                "--payload",
                &payload,
                "--max-retries",
                "1",
                "--idempotent",
            ])
            .env("RECOURSE_BACKOFF_MS", "0");
            if json {
                cmd.arg("--json");
            }
            let out = cmd.output().await.unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(!stdout.is_empty(), "{url}: {stderr}");
            assert!(stdout.contains("failed"), "{url}: {stdout}");
            let what = format!("recourse call {url} (json: {json})");
            assert_no_secret(&stdout, &what);
            assert_no_secret(&stderr, &format!("{what}, stderr"));
            if json && url.contains("/transient") {
                let report: Value = serde_json::from_str(&stdout).unwrap();
                assert_eq!(report["attempts"].as_array().unwrap().len(), 2, "{report}");
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn planted_secrets_never_reach_the_gateway_response_or_metrics() {
    let base = tool().await;
    let gw = Gateway::spawn().start();
    let client = reqwest::Client::new();
    for url in routes(&base) {
        // Enough failures to open the endpoint's breaker and label a series.
        for _ in 0..3 {
            let resp = client
                .post(format!("{}/v1/calls", gw.url))
                .json(&json!({"url": url, "payload": payload(), "max_retries": 1, "idempotent": true}))
                .send()
                .await
                .unwrap();
            assert_eq!(resp.status(), 200);
            let body = resp.text().await.unwrap();
            assert!(body.contains("\"failed\""), "{body}");
            assert_no_secret(&body, &format!("the gateway's report for {url}"));
        }
    }
    let metrics = reqwest::get(format!("{}/metrics", gw.url))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(metrics.contains(&format!("{base}/transient")), "{metrics}");
    assert_no_secret(&metrics, "/metrics");
}
