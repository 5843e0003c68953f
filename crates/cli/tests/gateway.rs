//! `recourse serve` over HTTP: same reports as `recourse call`, one shared
//! budget, secure defaults, and a graceful drain on SIGTERM.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use recourse_reference_tools::{RunningTools, ToolsConfig, spawn};
use serde_json::{Value, json};

struct Gateway {
    child: Child,
    url: String,
}

impl Gateway {
    fn start(args: &[&str], token: Option<&str>) -> Self {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_recourse"));
        cmd.args(["serve", "--port", "0"])
            .args(args)
            .env("RECOURSE_BACKOFF_MS", "0");
        match token {
            Some(t) => cmd.env("RECOURSE_GATEWAY_TOKEN", t),
            None => cmd.env_remove("RECOURSE_GATEWAY_TOKEN"),
        };
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let url = line.trim().rsplit(' ').next().unwrap().to_owned();
        assert!(url.starts_with("http://127.0.0.1:"), "{line}");
        Self { child, url }
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn tools(faults: &[&str]) -> RunningTools {
    let mut config =
        ToolsConfig::default().with_slow_latency(std::time::Duration::from_millis(400));
    for f in faults {
        config = config.with_fault(f.parse().unwrap());
    }
    spawn(config).await.unwrap()
}

async fn post(gw: &Gateway, body: Value, token: Option<&str>) -> (u16, Value) {
    let mut req = reqwest::Client::new()
        .post(format!("{}/v1/calls", gw.url))
        .json(&body);
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    let resp = req.send().await.unwrap();
    (
        resp.status().as_u16(),
        resp.json().await.unwrap_or(Value::Null),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_through_the_gateway_matches_recourse_call() {
    let t = tools(&[]).await;
    let gw = Gateway::start(&[], None);
    let url = format!("{}/api/orders/refund", t.base_url());
    let (status, via_gateway) = post(
        &gw,
        json!({"url": url, "payload": {"order_id": "ORD-2002"}}),
        None,
    )
    .await;
    assert_eq!(status, 200);
    let out = Command::new(env!("CARGO_BIN_EXE_recourse"))
        .args([
            "call",
            &url,
            "--payload",
            r#"{"order_id":"ORD-2002"}"#,
            "--json",
        ])
        .output()
        .unwrap();
    let via_cli: Value = serde_json::from_slice(&out.stdout).unwrap();
    for field in [
        "outcome",
        "reason",
        "error",
        "http_calls",
        "llm_calls",
        "data",
    ] {
        assert_eq!(via_gateway[field], via_cli[field], "{field}");
    }
    assert_eq!(
        via_gateway["attempts"].as_array().unwrap().len(),
        via_cli["attempts"].as_array().unwrap().len()
    );

    let health = reqwest::get(format!("{}/healthz", gw.url)).await.unwrap();
    assert_eq!(health.status(), 200);
    let openapi: Value = reqwest::get(format!("{}/openapi.json", gw.url))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(openapi["openapi"], "3.1.0");
    assert!(openapi["paths"]["/v1/calls"]["post"].is_object());
    let metrics = reqwest::get(format!("{}/metrics", gw.url))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains("recourse_calls_total{outcome=\"failed\"} 1"),
        "{metrics}"
    );
    assert!(
        metrics.contains("recourse_attempts_total{action=\"stop\"} 1"),
        "{metrics}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_calls_share_one_retry_budget_and_breaker_set() {
    let t = tools(&["stock:unavailable"]).await;
    let gw = Gateway::start(&[], None);
    let url = format!("{}/api/stock/quote", t.base_url());
    let endpoint = format!("{}/v1/calls", gw.url);
    let tasks: Vec<_> = (0..40)
        .map(|_| {
            let (endpoint, body) = (
                endpoint.clone(),
                json!({"url": url, "payload": {"symbol": "TSLA"}}),
            );
            tokio::spawn(async move {
                let resp = reqwest::Client::new()
                    .post(endpoint)
                    .json(&body)
                    .send()
                    .await
                    .unwrap();
                resp.json::<Value>().await.unwrap()
            })
        })
        .collect();
    let mut reports = Vec::new();
    for task in tasks {
        reports.push(task.await.unwrap());
    }
    let dispatches: u64 = reports
        .iter()
        .map(|r| r["http_calls"].as_u64().unwrap())
        .sum();
    // Without sharing, 40 calls × (1 + 3 retries) = 160 dispatches.
    assert!(dispatches < 80, "{dispatches} dispatches");
    let metrics = reqwest::get(format!("{}/metrics", gw.url))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let exhausted = metric(&metrics, "recourse_retry_budget_exhausted_total");
    let fast_failed = reports
        .iter()
        .filter(|r| r["reason"] == "circuit_open")
        .count();
    assert!(exhausted > 0 || fast_failed > 0, "{metrics}");
    assert!(metrics.contains("recourse_breaker_state"), "{metrics}");
}

fn metric(text: &str, name: &str) -> u64 {
    text.lines()
        .find(|l| l.starts_with(name) && !l.starts_with('#'))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_allowlist_token_and_size_cap_refuse_with_envelopes() {
    let gw = Gateway::start(&[], Some("s3cret"));
    let (status, body) = post(
        &gw,
        json!({"url": "http://127.0.0.1:1/x", "payload": {}}),
        None,
    )
    .await;
    assert_eq!(
        (status, body["error"]["category"].as_str()),
        (401, Some("AUTH_ERROR"))
    );
    let (status, body) = post(
        &gw,
        json!({"url": "http://example.com/x", "payload": {}}),
        Some("s3cret"),
    )
    .await;
    assert_eq!(status, 403);
    assert_eq!(body["error"]["code"], "TARGET_NOT_ALLOWED");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("--allow-target")
    );
    let big = "x".repeat(2 * 1024 * 1024);
    let (status, body) = post(
        &gw,
        json!({"url": "http://127.0.0.1:1/x", "payload": {"blob": big}}),
        Some("s3cret"),
    )
    .await;
    assert_eq!(status, 413);
    assert_eq!(body["success"], false);
    let (status, body) = post(&gw, json!({"payload": {}}), Some("s3cret")).await;
    assert_eq!(status, 400);
    assert_eq!(body["error"]["details"]["field"], "url");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allow_target_patterns_open_more_hosts() {
    let gw = Gateway::start(&["--allow-target", "*.invalid"], None);
    let (status, body) = post(
        &gw,
        json!({"url": "http://tool.invalid/x", "payload": {}, "max_retries": 0}),
        None,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert!(body["attempts"][0]["transport_error"].is_string());
}

/// A tool that tells the test when a request has arrived, then holds it
/// until the test lets it answer: the call is provably in flight.
async fn held_tool() -> (
    String,
    tokio::sync::mpsc::Receiver<()>,
    tokio::sync::oneshot::Sender<()>,
) {
    use axum::routing::post;
    let (arrived_tx, arrived_rx) = tokio::sync::mpsc::channel(1);
    let (release_tx, release_rx) = tokio::sync::oneshot::channel::<()>();
    let release = std::sync::Arc::new(tokio::sync::Mutex::new(Some(release_rx)));
    let app = axum::Router::new().route(
        "/tool",
        post(move || {
            let (arrived, release) = (arrived_tx.clone(), std::sync::Arc::clone(&release));
            async move {
                let _ = arrived.send(()).await;
                if let Some(rx) = release.lock().await.take() {
                    let _ = rx.await;
                }
                axum::Json(json!({"success": true, "data": {"held": true}}))
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/tool", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, arrived_rx, release_tx)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_drains_in_flight_calls() {
    let (url, mut arrived, release) = held_tool().await;
    let mut gw = Gateway::start(&[], None);
    let body = json!({"url": url, "payload": {"symbol": "TSLA"}});
    let endpoint = format!("{}/v1/calls", gw.url);
    let in_flight = tokio::spawn(async move {
        reqwest::Client::new()
            .post(endpoint)
            .json(&body)
            .send()
            .await
    });
    arrived.recv().await.expect("the call reaches the tool");
    let pid = gw.child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    // Wait until the gateway has begun shutting down (it stops accepting),
    // so the call is answered while draining, not before the signal lands.
    let addr = gw.url.trim_start_matches("http://").to_owned();
    let mut closed = false;
    for _ in 0..500 {
        if tokio::net::TcpStream::connect(&addr).await.is_err() {
            closed = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert!(closed, "the gateway kept accepting after SIGTERM");
    release.send(()).unwrap();
    let resp = in_flight
        .await
        .unwrap()
        .expect("the in-flight call is answered");
    let report: Value = resp.json().await.unwrap();
    assert_eq!(report["outcome"], "succeeded", "{report}");
    assert_eq!(report["data"]["held"], true);
    let status = gw.child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_commands_run_only_when_allowed() {
    let bin = env!("CARGO_BIN_EXE_recourse");
    let body = json!({
        "mcp": {"command": format!("{bin} tools serve --mcp --port 0"), "tool": "orders_refund"},
        "payload": {"order_id": "ORD-2002"}
    });
    let closed = Gateway::start(&[], None);
    let (status, refused) = post(&closed, body.clone(), None).await;
    assert_eq!(status, 403);
    assert_eq!(refused["error"]["code"], "COMMAND_NOT_ALLOWED");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("--allow-mcp-command")
    );

    let open = Gateway::start(&["--allow-mcp-command", bin], None);
    let (status, report) = post(&open, body, None).await;
    assert_eq!(status, 200, "{report}");
    assert_eq!(report["outcome"], "failed");
    assert_eq!(report["error"]["category"], "POLICY_REJECTION");
    assert_eq!(report["attempts"][0]["retry_permission"], "refused");
    assert_eq!(report["http_calls"], 1);
}
