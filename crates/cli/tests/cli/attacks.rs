//! The gateway and `recourse call` as an attacker would use them: credentials
//! in targets, endless distinct failing endpoints, a tool that accepts the
//! connection and never answers. Real binaries, real loopback sockets.

use crate::support;

use support::Gateway;

use std::time::{Duration, Instant};

use axum::Router;
use axum::http::StatusCode;
use serde_json::{Value, json};
use tokio::net::TcpListener;

/// Asks `gw` to call `url`: the status and the body.
/// (A read: a write to a tool whose manifest cannot be read is refused
/// before it runs, `MANIFEST_UNAVAILABLE`, and these calls are to be run.)
async fn call(gw: &Gateway, client: &reqwest::Client, url: &str) -> (u16, String) {
    let resp = client
        .post(format!("{}/v1/calls", gw.url))
        .json(&json!({"url": url, "method": "GET", "payload": {"q": 1}}))
        .send()
        .await
        .unwrap();
    (resp.status().as_u16(), resp.text().await.unwrap())
}

/// `gw`'s `/metrics` text.
async fn metrics(gw: &Gateway) -> String {
    reqwest::get(format!("{}/metrics", gw.url))
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

/// A tool that answers every path with a plain 503; its base URL.
async fn unavailable_tool() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = Router::new().fallback(|| async { (StatusCode::SERVICE_UNAVAILABLE, "down") });
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}")
}

fn metric(text: &str, line_start: &str) -> u64 {
    text.lines()
        .find_map(|l| l.strip_prefix(line_start))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("{line_start} missing from\n{text}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_hold_no_credential_after_calls_to_credentialed_urls() {
    let tool = unavailable_tool().await;
    let gw = Gateway::spawn().start();
    let client = reqwest::Client::new();
    let secrets = [
        "QUERYSECRET0123456789",
        "sk-PATHSECRET0123456789abcdef",
        "USERINFOSECRET0123",
    ];
    for url in [
        format!("{tool}/api/weather?api_key={}&q=Paris", secrets[0]),
        format!("{tool}/api/keys/{}/rotate?token={}", secrets[1], secrets[0]),
    ] {
        let (status, body) = call(&gw, &client, &url).await;
        assert_eq!(status, 200, "{body}");
        for secret in secrets {
            assert!(!body.contains(secret), "the report leaks {secret}: {body}");
        }
    }
    let with_userinfo =
        tool.replacen("http://", &format!("http://admin:{}@", secrets[2]), 1) + "/api/x";
    let (status, body) = call(&gw, &client, &with_userinfo).await;
    assert_eq!(status, 400, "userinfo is refused at the door: {body}");
    assert!(!body.contains(secrets[2]), "{body}");

    let metrics = metrics(&gw).await;
    for secret in secrets {
        assert!(
            !metrics.contains(secret),
            "/metrics leaks {secret}:\n{metrics}"
        );
    }
    assert!(
        metrics.contains(&format!(
            "recourse_breaker_state{{endpoint=\"{tool}/api/weather\"}}"
        )),
        "the endpoint template labels the series:\n{metrics}"
    );
}

/// VmRSS of `pid` in KiB.
fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_stay_small_after_two_thousand_distinct_failing_urls() {
    const URLS: usize = 2000;
    let tool = unavailable_tool().await;
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", l.local_addr().unwrap())
    };
    let gw = Gateway::spawn().start();
    let rss_before = rss_kib(gw.child.id());
    let client = reqwest::Client::new();
    let started = Instant::now();
    for chunk in (0..URLS).collect::<Vec<_>>().chunks(16) {
        let mut calls = tokio::task::JoinSet::new();
        for &i in chunk {
            // Half to a tool answering 503, half to a port nobody listens on.
            let base = if i % 2 == 0 { &tool } else { &closed };
            let url = format!("{base}/api/{i}/{}?token=t{i}", "p".repeat(i % 200));
            let (client, gw_url) = (client.clone(), gw.url.clone());
            calls.spawn(async move {
                let resp = client
                    .post(format!("{gw_url}/v1/calls"))
                    .json(&json!({"url": url, "method": "GET", "payload": {}}))
                    .send()
                    .await
                    .unwrap();
                let report: Value = resp.json().await.unwrap();
                assert_eq!(report["outcome"], "failed", "{report}");
            });
        }
        while let Some(done) = calls.join_next().await {
            done.unwrap();
        }
    }
    let elapsed = started.elapsed();
    let metrics = metrics(&gw).await;
    let rss_after = rss_kib(gw.child.id());
    eprintln!(
        "{URLS} failing calls in {elapsed:?}; /metrics is {} bytes with {} breaker series; \
         gateway VmRSS {rss_before} KiB before, {rss_after} KiB after",
        metrics.len(),
        metrics.matches("recourse_breaker_state{").count()
    );
    assert!(metrics.len() < 1_000_000, "{} bytes", metrics.len());
    assert!(metrics.matches("recourse_breaker_state{").count() <= 101);
    assert!(metrics.contains("recourse_breaker_state{endpoint=\"other\"}"));
    let tracked: u64 = ["closed", "half_open", "open"]
        .iter()
        .map(|s| metric(&metrics, &format!("recourse_breakers{{state=\"{s}\"}}")))
        .sum();
    assert!(tracked <= 1024, "the breaker table is bounded: {tracked}");
    assert_eq!(
        metric(&metrics, "recourse_calls_total{outcome=\"failed\"}"),
        URLS as u64
    );
}

/// A tool that accepts connections and never sends a byte back.
async fn silent_tool() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    format!("http://{addr}/api/slow")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_tool_cannot_hold_a_call_past_its_deadline() {
    let url = silent_tool().await;
    let started = Instant::now();
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_recourse"))
        // Declared idempotent, so the attempts are all that the deadline pays
        // for (an undeclared call first asks the tool's manifest, and ends unknown).
        .args([
            "call",
            &url,
            "--payload",
            "{}",
            "--deadline",
            "3",
            "--json",
            "--idempotent",
        ])
        .env("RECOURSE_BACKOFF_MS", "0")
        .output()
        .await
        .unwrap();
    let elapsed = started.elapsed();
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    eprintln!("--deadline 3 against a silent tool returned after {elapsed:?}: {report}");
    let attempts = report["attempts"].as_array().unwrap();
    let first = attempts[0]["timeout_ms"].as_u64().unwrap();
    assert!(
        (1..=3000).contains(&first),
        "the attempt's timeout is the time left to the deadline, not the 30 s default: {first}"
    );
    let total: u64 = attempts
        .iter()
        .map(|a| a["timeout_ms"].as_u64().unwrap())
        .sum();
    assert!(
        total <= 3000,
        "attempts together stay within the deadline: {total}"
    );
    assert_eq!(report["outcome"], "failed", "{report}");
    assert!(elapsed < Duration::from_secs(10), "{elapsed:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_server_that_never_shakes_hands_cannot_hold_a_call_past_its_deadline() {
    // `sleep` reads nothing and writes nothing: the handshake never finishes.
    let started = Instant::now();
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_recourse"))
        .args(["call", "--mcp-command", "sleep 20", "--tool", "t"])
        .args(["--payload", "{}", "--deadline", "2"])
        .output()
        .await
        .unwrap();
    let elapsed = started.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("--deadline 2 against a silent MCP server returned after {elapsed:?}: {stderr}");
    assert!(stderr.contains("handshake"), "{stderr}");
    assert_ne!(out.status.code(), Some(0));
    assert!(elapsed < Duration::from_secs(10), "{elapsed:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caller_cannot_raise_the_gateways_limits() {
    let tool = unavailable_tool().await;
    let gw = Gateway::spawn().start();
    let resp = reqwest::Client::new()
        .post(format!("{}/v1/calls", gw.url))
        .json(&json!({
            "url": format!("{tool}/api/x"),
            "method": "GET",
            "payload": {},
            "max_retries": 1000,
            "max_corrections": 1000,
            "deadline_secs": 3600
        }))
        .send()
        .await
        .unwrap();
    let report: Value = resp.json().await.unwrap();
    let attempts = report["attempts"].as_array().unwrap().len();
    assert!(
        attempts <= 4,
        "the gateway's 3 resends, not the caller's 1000: {attempts} attempts"
    );
}
