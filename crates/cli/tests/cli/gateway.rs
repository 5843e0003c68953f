//! `recourse serve` over HTTP: same reports as `recourse call`, one shared
//! budget, secure defaults, and a graceful drain on SIGTERM.

use crate::held;
use crate::support;

use std::process::Command;

use held::held_tool;
use recourse_reference_tools::{RunningTools, ToolsConfig, spawn};
use serde_json::{Value, json};
use support::Gateway;

/// `recourse serve` with `args`, and `token` as its RECOURSE_GATEWAY_TOKEN.
fn start(args: &[&str], token: Option<&str>) -> Gateway {
    start_with_env(args, token, &[])
}

fn start_with_env(args: &[&str], token: Option<&str>, env: &[(&str, &str)]) -> Gateway {
    let token = token.map(|t| ("RECOURSE_GATEWAY_TOKEN", t));
    Gateway::spawn()
        .args(args)
        .env(env)
        .env(token.as_slice())
        .start()
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
    let gw = start(&[], None);
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
    let gw = start(&[], None);
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
    let gw = start(&[], Some("s3cret"));
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
    let gw = start(&["--allow-target", "*.invalid"], None);
    let (status, body) = post(
        &gw,
        json!({"url": "http://tool.invalid/x", "method": "GET", "payload": {}, "max_retries": 0}),
        None,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert!(body["attempts"][0]["transport_error"].is_string());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_drains_in_flight_calls() {
    let (url, mut arrived, release) = held_tool().await;
    let mut gw = start(&[], None);
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
    let closed = start(&[], None);
    let (status, refused) = post(&closed, body.clone(), None).await;
    assert_eq!(status, 403);
    assert_eq!(refused["error"]["code"], "COMMAND_NOT_ALLOWED");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("--allow-mcp-command")
    );

    let bare = start(&["--allow-mcp-command", bin], None);
    let (status, refused) = post(&bare, body.clone(), None).await;
    assert_eq!(
        status, 403,
        "a bare program allows it only without arguments"
    );
    assert_eq!(refused["error"]["code"], "COMMAND_NOT_ALLOWED");

    let pattern = format!("'{bin}' tools serve --mcp --port *");
    let open = start(&["--allow-mcp-command", &pattern], None);
    let (status, report) = post(&open, body, None).await;
    assert_eq!(status, 200, "{report}");
    assert_eq!(report["outcome"], "failed");
    assert_eq!(report["error"]["category"], "POLICY_REJECTION");
    assert_eq!(report["attempts"][0]["retry_permission"], "refused");
    assert_eq!(report["http_calls"], 1);
}

/// A loopback listener that counts the connections it is offered: proof that
/// a refused request dialled nothing here.
async fn canary() -> (u16, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = std::sync::Arc::new(AtomicUsize::new(0));
    let counter = std::sync::Arc::clone(&seen);
    tokio::spawn(async move {
        while let Ok((_conn, _)) = listener.accept().await {
            counter.fetch_add(1, Ordering::SeqCst);
        }
    });
    (port, seen)
}

/// The gateway's own refusal: a 403 envelope, not a call report (which has
/// `attempts`, and which a dispatched call would have produced).
fn assert_refused(status: u16, body: &Value, what: &str) {
    assert_eq!(status, 403, "{what}: {body}");
    assert_eq!(body["success"], false, "{what}: {body}");
    assert_eq!(
        body["error"]["code"], "TARGET_NOT_ALLOWED",
        "{what}: {body}"
    );
    assert_eq!(
        body["error"]["category"], "PERMISSION_DENIED",
        "{what}: {body}"
    );
    assert!(body.get("attempts").is_none(), "{what}: {body}");
}

// Every address below is a documentation address (192.0.2.0/24) or an
// `.invalid` name: even with the allowlist broken, nothing leaves the host.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backslash_before_at_cannot_smuggle_a_host_past_the_loopback_check() {
    let (port, seen) = canary().await;
    let gw = start(&[], None);
    for url in [
        format!(r"http://192.0.2.2:9101\@127.0.0.1:{port}/ok"),
        format!(r"http://host.invalid\@127.0.0.1:{port}/ok"),
        format!("http://192.0.2.2:9101\t\\@127.0.0.1:{port}/ok"),
    ] {
        let (status, body) = post(&gw, json!({"url": url, "payload": {}}), None).await;
        assert_refused(status, &body, &url);
        assert_eq!(body["error"]["details"]["field"], "url");
    }
    let mcp = json!({"mcp": {"url": format!(r"http://192.0.2.2:9101\@127.0.0.1:{port}/mcp"), "tool": "t"}, "payload": {}});
    let (status, body) = post(&gw, mcp, None).await;
    assert_refused(status, &body, "mcp.url");
    let reconcile = json!({
        "url": format!("http://127.0.0.1:{port}/tool"),
        "reconcile": r"http://192.0.2.2:9101\@127.0.0.1:9101/exports/{key}",
        "payload": {},
    });
    let (status, body) = post(&gw, reconcile, None).await;
    assert_refused(status, &body, "reconcile");
    assert_eq!(body["error"]["details"]["field"], "reconcile");
    let (status, body) = post(
        &gw,
        json!({"url": "http://u:p@127.0.0.1:1/x", "payload": {}}),
        None,
    )
    .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (400, Some("INVALID_TARGET"))
    );
    assert_eq!(
        seen.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "nothing was dialled"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_patterns_match_hosts_and_path_patterns_resolved_paths() {
    let gw = start(
        &[
            "--allow-target",
            "*.example.invalid",
            "--allow-target",
            "https://api.other.invalid/v1/*",
        ],
        None,
    );
    for url in [
        "http://192.0.2.2:9101/.example.invalid",
        "http://192.0.2.2:9101/x?q=.example.invalid",
        "http://192.0.2.2:9101/x#.example.invalid",
        "http://evil.invalid/a.example.invalid",
        "https://api.other.invalid/v1/../../admin",
        "https://api.other.invalid/v1/%2e%2e/admin",
        "https://api.other.invalid/v1/..%2fadmin",
    ] {
        let (status, body) = post(&gw, json!({"url": url, "payload": {}}), None).await;
        assert_refused(status, &body, url);
    }
    let template = json!({
        "url": "http://127.0.0.1:1/x",
        "reconcile": "https://api.other.invalid/{key}",
        "payload": {},
    });
    let (status, body) = post(&gw, template, None).await;
    assert_refused(status, &body, "a placeholder outside the allowed prefix");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_allow_patterns_stop_the_gateway_at_startup() {
    for (args, why) in [
        (
            &["--allow-target", "api.*.invalid"][..],
            "`*` may stand only",
        ),
        (
            &["--allow-target", "https://x.invalid/v1*"][..],
            "last path segment",
        ),
        (&["--allow-mcp-command", "node ** x"][..], "last word"),
        (&["--mcp-env", "RECOURSE_GATEWAY_TOKEN"][..], "never passed"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_recourse"))
            .args(["serve", "--port", "0", "--journal", "none"])
            .args(args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?}");
        assert!(stderr.contains(why), "{args:?}: {stderr}");
    }
}

/// A megabyte of URL is refused promptly, and the gateway keeps answering
/// meanwhile (matching used to be quadratic in the URL's length). The time is
/// printed, not asserted; the generous bound only stops a regression from
/// hanging the suite.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_megabyte_url_is_refused_promptly() {
    let gw = start(
        &[
            "--allow-target",
            "*.example.invalid",
            "--allow-target",
            "https://*.api.invalid/v1/*",
        ],
        None,
    );
    let url = format!(
        "http://192.0.2.2/{}?{}",
        "a.example.invalid/".repeat(30_000),
        "*".repeat(400_000)
    );
    let started = std::time::Instant::now();
    let refused = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        post(&gw, json!({"url": url, "payload": {}}), None),
    );
    let health = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        reqwest::get(format!("{}/healthz", gw.url)),
    );
    let (refused, health) = tokio::join!(refused, health);
    let ((status, body), health) = (refused.expect("answered"), health.expect("answered"));
    eprintln!(
        "a {} byte URL was refused in {:?}",
        url.len(),
        started.elapsed()
    );
    assert_refused(status, &body, "the long URL");
    assert_eq!(health.unwrap().status(), 200);
}

const ENV_SERVER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/support/env_mcp.sh");

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_allowed_mcp_server_sees_only_the_base_and_named_environment() {
    let pattern = format!("sh '{ENV_SERVER}'");
    let gw = start_with_env(
        &[
            "--allow-mcp-command",
            &pattern,
            "--mcp-env",
            "RECOURSE_TEST_PASSED",
        ],
        Some("s3cret-token"),
        &[
            ("RECOURSE_TEST_SECRET", "sk-not-for-children"),
            ("RECOURSE_TEST_PASSED", "yes"),
        ],
    );
    let call = |command: String| json!({"mcp": {"command": command, "tool": "env"}, "payload": {}});
    let (status, report) = post(
        &gw,
        call(format!("sh '{ENV_SERVER}'")),
        Some("s3cret-token"),
    )
    .await;
    assert_eq!(status, 200, "{report}");
    assert_eq!(report["outcome"], "succeeded", "{report}");
    let names: Vec<&str> = report["data"]["names"]
        .as_array()
        .unwrap_or_else(|| panic!("the server lists its environment: {report}"))
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(names.contains(&"PATH"), "{names:?}");
    assert!(names.contains(&"RECOURSE_TEST_PASSED"), "{names:?}");
    for secret in [
        "RECOURSE_GATEWAY_TOKEN",
        "RECOURSE_TEST_SECRET",
        "RECOURSE_BACKOFF_MS",
    ] {
        assert!(!names.contains(&secret), "{secret} leaked: {names:?}");
    }

    for refused in [
        format!("sh '{ENV_SERVER}' extra"),
        "sh -c 'echo pwned > /dev/null'".to_owned(),
        format!("/bin/sh '{ENV_SERVER}'"),
    ] {
        let (status, body) = post(&gw, call(refused.clone()), Some("s3cret-token")).await;
        assert_eq!(status, 403, "{refused}: {body}");
        assert_eq!(body["error"]["code"], "COMMAND_NOT_ALLOWED", "{refused}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_verify_object_settles_a_lost_reply_and_its_url_passes_the_allowlist() {
    let t = tools(&["exports:crash_after_commit"]).await;
    let gw = start(&[], None);
    let verify = json!({
        "url": format!("{}/api/exports/lookup", t.base_url()),
        "args": {"source_id": "{{payload.source_id}}", "format": "{{payload.format}}"},
        "expect": ["/latest exists"],
    });
    let call = |verify: Value| {
        json!({"url": format!("{}/api/exports", t.base_url()), "idempotent": false,
               "payload": {"source_id": "inventory", "format": "csv"}, "verify": verify})
    };
    let (status, report) = post(&gw, call(verify.clone()), None).await;
    assert_eq!(status, 200, "{report}");
    assert_eq!(report["outcome"], "succeeded", "{report:#}");
    assert_eq!(report["verification"], "verified");
    assert_eq!(t.exports_committed(), 1);

    let mut elsewhere = verify.clone();
    elsewhere["url"] = json!("http://192.0.2.2:9101/lookup");
    let (status, body) = post(&gw, call(elsewhere), None).await;
    assert_refused(status, &body, "verify.url");
    assert_eq!(body["error"]["details"]["field"], "verify.url");

    let mut unknown_field = verify.clone();
    unknown_field["headers"] = json!({"Authorization": "x"});
    let (status, _) = post(&gw, call(unknown_field), None).await;
    assert_eq!(status, 400);
    assert_eq!(t.exports_committed(), 1, "refused calls write nothing");

    // A template the payload cannot fill: the write is sent as one without
    // a verification would be (settled by the lookup the tool's manifest
    // declares), and its record says the verification did not apply.
    let mut missing = verify;
    missing["expect"] = json!(["/latest/version == {{payload.version}}"]);
    let (status, report) = post(&gw, call(missing), None).await;
    assert_eq!(status, 200, "{report}");
    assert_eq!(report["verification"], "not_applicable", "{report:#}");
    let events = report["attempts"][0]["events"].as_array().unwrap();
    assert!(
        events.iter().all(|e| e["kind"] != "verify"),
        "no read: {report:#}"
    );
    assert!(events.iter().any(|e| e["kind"] == "lookup"), "{report:#}");
    assert_eq!(t.exports_committed(), 2, "sent once");
}
