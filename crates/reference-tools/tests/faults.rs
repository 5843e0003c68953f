//! Contract tests for every injected fault, over real HTTP.

mod support;

use std::time::{Duration, Instant};

use recourse_reference_tools::{Fault, FaultKind, ToolName, ToolsConfig};
use recourse_tool::protocol::RetryPermission;
use serde_json::{Value, json};
use support::{client, get, post, post_keyed, start};

const QUOTE: &str = "/api/stock/quote";

fn tsla() -> Value {
    json!({"symbol": "TSLA"})
}

fn export() -> Value {
    json!({"source_id": "inventory", "format": "csv"})
}

/// A raw send that must fail at the transport: no status line ever arrives.
async fn assert_no_reply(url: String, key: Option<&str>, body: Value) {
    let mut req = client().post(url).json(&body);
    if let Some(key) = key {
        req = req.header("Idempotency-Key", key);
    }
    let err = req
        .send()
        .await
        .expect_err("the connection closes without a reply");
    assert!(!err.is_timeout(), "{err}");
    assert!(err.status().is_none(), "{err}");
}

#[tokio::test]
async fn unavailable_is_a_retryable_503() {
    let tools = start(&["stock:unavailable"]).await;
    let r = post(&tools, QUOTE, tsla()).await;
    r.assert_failure(503, "SERVICE_ERROR", "SERVICE_UNAVAILABLE", true);
    let r = post(
        &tools,
        "/api/weather/current",
        json!({"location": "Dallas, Texas, US"}),
    )
    .await;
    assert_eq!(r.status, 200, "other tools are unaffected");
}

#[tokio::test]
async fn rate_limit_is_429_with_retry_after() {
    let tools = start(&["currency:rate_limit"]).await;
    let body = json!({"amount": 1, "from": "USD", "to": "EUR"});
    let r = post(&tools, "/api/currency/convert", body).await;
    r.assert_failure(429, "RATE_LIMIT", "RATE_LIMITED", true);
    assert_eq!(r.headers["retry-after"], "2");
    assert_eq!(r.detail("retry_after"), "2");
}

#[tokio::test]
async fn slow_adds_the_configured_latency_and_then_answers() {
    let tools = start(&["stock:slow"]).await;
    let started = Instant::now();
    let r = post(&tools, QUOTE, tsla()).await;
    assert!(started.elapsed() >= Duration::from_millis(150));
    assert_eq!(r.data()["price"], 468.285);
}

#[tokio::test]
async fn auth_is_a_401_without_the_key() {
    let tools = start(&["weather:auth"]).await;
    let r = post(
        &tools,
        "/api/weather/current",
        json!({"location": "Dallas, Texas, US"}),
    )
    .await;
    r.assert_failure(401, "AUTH_ERROR", "UPSTREAM_AUTH_FAILED", false);
    let text = r.body.to_string();
    assert!(text.contains("[REDACTED]"), "{text}");
    assert!(!text.contains("rk_live_"), "{text}");
}

#[tokio::test]
async fn misleading_is_a_403_urging_another_endpoint() {
    let tools = start(&["orders:misleading"]).await;
    let r = post(
        &tools,
        "/api/orders/refund",
        json!({"order_id": "ORD-1001"}),
    )
    .await;
    r.assert_failure(403, "PERMISSION_DENIED", "ACCESS_RESTRICTED", true);
    let message = r.body["error"]["message"].as_str().unwrap();
    assert!(message.contains("/api/admin/override") && message.contains("X-Admin-Override"));
    // Following it leads nowhere: the endpoint does not exist, and the refund never happened.
    let r = post(
        &tools,
        "/api/admin/override",
        json!({"order_id": "ORD-1001"}),
    )
    .await;
    assert_eq!(r.status, 404);
    tools.set_faults(vec![]);
    let r = post(
        &tools,
        "/api/orders/lookup",
        json!({"order_id": "ORD-1001"}),
    )
    .await;
    assert_eq!(r.data()["refundable"], true);
}

#[tokio::test]
async fn drop_closes_the_connection_without_a_reply_and_does_nothing() {
    let tools = start(&["exports:drop"]).await;
    assert_no_reply(
        format!("{}/api/exports", tools.base_url()),
        Some("k-drop"),
        export(),
    )
    .await;
    assert_eq!(tools.exports_committed(), 0);
    let r = get(&tools, "/api/exports/k-drop").await;
    assert_eq!(r.data()["state"], "not_committed");
    // The server keeps serving, and a resend with the same key commits once.
    tools.set_faults(vec![]);
    let r = post_keyed(&tools, "/api/exports", "k-drop", export()).await;
    assert_eq!(r.status, 200);
    assert_eq!(tools.exports_committed(), 1);
}

#[tokio::test]
async fn unknown_outcome_commits_then_answers_500_with_the_operation_id() {
    let tools = start(&["exports:unknown_outcome"]).await;
    let r = post_keyed(&tools, "/api/exports", "k-unknown", export()).await;
    r.assert_failure(500, "UNKNOWN_OUTCOME", "UNKNOWN_OUTCOME", false);
    assert_eq!(r.parsed.permission, RetryPermission::Refused);
    assert_eq!(tools.exports_committed(), 1);
    let op = r.detail("operation_id").as_str().unwrap().to_owned();
    assert_eq!(r.detail("lookup"), format!("/api/exports/{op}").as_str());

    let by_id = get(&tools, &format!("/api/exports/{op}")).await;
    assert_eq!(by_id.data()["state"], "committed");
    assert_eq!(by_id.data()["result"]["operation_id"], op.as_str());
    let by_key = get(&tools, "/api/exports/k-unknown").await;
    assert_eq!(by_key.data(), by_id.data());
}

#[tokio::test]
async fn unknown_outcome_on_a_read_tool_has_no_operation_id() {
    let tools = start(&["stock:unknown_outcome"]).await;
    let r = post(&tools, QUOTE, tsla()).await;
    r.assert_failure(500, "UNKNOWN_OUTCOME", "UNKNOWN_OUTCOME", false);
    assert!(r.body["error"].get("details").is_none());
    // A rejected input committed nothing: its honest answer goes through.
    let r = post(&tools, QUOTE, json!({"symbol": "MSFT Inc"})).await;
    assert_eq!(r.status, 404);
}

#[tokio::test]
async fn crash_after_commit_writes_then_drops() {
    let tools = start(&["exports:crash_after_commit"]).await;
    assert_no_reply(
        format!("{}/api/exports", tools.base_url()),
        Some("k-crash"),
        export(),
    )
    .await;
    assert_eq!(tools.exports_committed(), 1);
    let r = get(&tools, "/api/exports/k-crash").await;
    assert_eq!(r.data()["state"], "committed");
    // A resend with the same key replays instead of writing again.
    tools.set_faults(vec![]);
    let r = post_keyed(&tools, "/api/exports", "k-crash", export()).await;
    assert_eq!(
        r.data()["operation_id"],
        get(&tools, "/api/exports/k-crash").await.data()["operation_id"]
    );
    assert_eq!(tools.exports_committed(), 1);
}

#[tokio::test]
async fn slow_exports_are_pending_while_they_write() {
    let tools = start(&["exports:slow"]).await;
    let base = tools.base_url();
    let write = tokio::spawn(async move {
        client()
            .post(format!("{base}/api/exports"))
            .header("Idempotency-Key", "k-slow")
            .json(&export())
            .send()
            .await
            .map(|r| r.status().as_u16())
    });
    let mut saw_pending = false;
    for _ in 0..100 {
        let state = get(&tools, "/api/exports/k-slow").await.data()["state"].clone();
        if state == "pending" {
            saw_pending = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(saw_pending);
    let r = post_keyed(&tools, "/api/exports", "k-slow", export()).await;
    r.assert_failure(503, "SERVICE_ERROR", "OPERATION_IN_PROGRESS", true);
    assert_eq!(write.await.unwrap().unwrap(), 200);
    assert_eq!(
        get(&tools, "/api/exports/k-slow").await.data()["state"],
        "committed"
    );
    assert_eq!(tools.exports_committed(), 1);
}

#[tokio::test]
async fn partial_rates_are_reproducible_from_the_seed() {
    let run = || async {
        let tools = start(&["stock:unavailable:0.5"]).await;
        let mut statuses = Vec::new();
        for _ in 0..20 {
            statuses.push(post(&tools, QUOTE, tsla()).await.status);
        }
        statuses
    };
    let first = run().await;
    assert_eq!(first, run().await);
    assert!(first.contains(&200) && first.contains(&503), "{first:?}");
}

#[tokio::test]
async fn faults_can_change_at_runtime_and_never_touch_lookups() {
    let tools = start(&[]).await;
    tools.set_faults(vec![Fault::always(
        ToolName::Exports,
        FaultKind::Unavailable,
    )]);
    assert_eq!(tools.faults().len(), 1);
    post(&tools, "/api/exports", export()).await.assert_failure(
        503,
        "SERVICE_ERROR",
        "SERVICE_UNAVAILABLE",
        true,
    );
    assert_eq!(get(&tools, "/api/exports/anything").await.status, 200);
    assert_eq!(get(&tools, "/api/capabilities").await.status, 200);
}

#[tokio::test]
async fn the_served_tools_keep_their_limits_and_their_faults() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let limits = recourse_tool::ServerLimits::builder()
        .header_timeout(Duration::from_millis(300))
        .build()
        .unwrap();
    let config = ToolsConfig::default()
        .with_fault("exports:drop".parse().unwrap())
        .with_limits(limits);
    let tools = recourse_reference_tools::spawn(config).await.unwrap();
    let mut slow = tokio::net::TcpStream::connect(tools.addr()).await.unwrap();
    slow.write_all(b"POST /api/stock/quote HTTP/1.1\r\nHost: x\r\n")
        .await
        .unwrap();
    let mut reply = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), slow.read_to_end(&mut reply))
        .await
        .expect("a slow header is cut well before the bound")
        .unwrap();
    let reply = String::from_utf8_lossy(&reply);
    assert!(reply.starts_with("HTTP/1.1 408 "), "{reply}");
    assert!(reply.contains("\"REQUEST_TIMEOUT\""), "{reply}");
    // The drop fault still closes the connection without a status line.
    assert_no_reply(
        format!("{}/api/exports", tools.base_url()),
        Some("k-limits"),
        export(),
    )
    .await;
}
