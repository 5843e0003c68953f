//! What the gateway tells the model: each record's `next` through
//! `POST /v1/calls`, for the failures an agent meets most — a 401, a policy
//! refusal, a missing version, a write whose outcome is unknown and a rate
//! limit longer than the call may wait. Each gets the step the policy's stop
//! calls for, and a `model_message` that is short, names no secret and
//! carries no stack text.

use crate::support;

use std::time::Duration;

use recourse_reference_tools::{ToolsConfig, spawn};
use recourse_test_support::{export, tools, tools_without_lookups};
use serde_json::{Value, json};
use support::{TestGateway, journal_path};

/// A credential the caller sends, in a header and in the URL's query.
const SECRET: &str = "sk-live-9fQ2xW7vB4nM8kL3pR6tY1uZ";

fn message(record: &Value) -> &str {
    record["next"]["model_message"].as_str().unwrap_or_default()
}

/// What every model message must be, whatever the failure.
fn check_message(record: &Value) {
    let text = message(record);
    assert!(!text.is_empty(), "{record}");
    assert!(text.chars().count() < 600, "{} chars: {text}", text.len());
    assert!(!text.contains(SECRET), "{text}");
    assert!(!text.contains("sk-live"), "{text}");
    for stack in ["Traceback", "panicked at", "stack backtrace", ".rs:"] {
        assert!(!text.contains(stack), "{stack} in {text}");
    }
}

async fn call(gateway: &TestGateway, body: Value) -> Value {
    let (status, record) = gateway
        .post_with(&body, &[("Authorization", &format!("Bearer {SECRET}"))])
        .await
        .0;
    assert_eq!(status, 200, "{record}");
    check_message(&record);
    record
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_failure_tells_the_model_the_one_thing_to_do_now() {
    let state = tempfile::tempdir().unwrap();
    let gateway = TestGateway::journaled(&journal_path(state.path())).await;

    // A 401: the credentials are wrong, which the model cannot fix by retrying.
    let auth = tools(&["stock:auth"], Duration::ZERO).await;
    let r = call(
        &gateway,
        json!({"url": format!("{}/api/stock/quote?api_key={SECRET}", auth.base_url()),
               "payload": {"symbol": "TSLA"}}),
    )
    .await;
    assert_eq!(r["stop_kind"], "auth", "{r}");
    assert_eq!(r["next"]["step"], "fix_configuration", "{r}");

    // A business rule: explained to the user, not worked around.
    let healthy = tools(&[], Duration::ZERO).await;
    let r = call(
        &gateway,
        json!({"url": format!("{}/api/orders/refund", healthy.base_url()),
               "payload": {"order_id": "ORD-2002"}}),
    )
    .await;
    assert_eq!(r["stop_kind"], "policy", "{r}");
    assert_eq!(r["next"]["step"], "explain_refusal", "{r}");
    assert!(message(&r).contains("do not retry"), "{r}");

    // A version that does not exist: the user decides, asked the question.
    let r = call(
        &gateway,
        json!({"url": format!("{}/api/exports", healthy.base_url()),
               "payload": {"source_id": "sales-2024", "format": "pdf", "version": 7}}),
    )
    .await;
    assert_eq!(r["stop_kind"], "input", "{r}");
    assert_eq!(r["next"]["step"], "ask_user", "{r}");
    assert_eq!(
        r["next"]["question"],
        "The tool has no version 7; the latest is 3. Should I use 3 instead?",
        "{r}"
    );

    // A write whose answer was lost after it committed: not to be repeated.
    let lossy = tools_without_lookups(&["exports:crash_after_commit:1.0"]).await;
    let r = call(&gateway, export(&lossy)).await;
    assert_eq!(r["outcome"], "unknown", "{r}");
    assert_eq!(r["stop_kind"], "unknown_outcome", "{r}");
    assert_eq!(r["next"]["step"], "do_not_repeat", "{r}");
    assert_eq!(lossy.exports_committed(), 1, "one write, never resent");

    // A rate limit that lasts past the call's deadline: when to try again.
    let limited = spawn(
        ToolsConfig::default()
            .with_fault("stock:rate_limit".parse().unwrap())
            .with_retry_after(Duration::from_secs(30)),
    )
    .await
    .unwrap();
    let r = call(
        &gateway,
        json!({"url": format!("{}/api/stock/quote", limited.base_url()),
               "payload": {"symbol": "TSLA"}, "deadline_secs": 2}),
    )
    .await;
    assert_eq!(r["reason"], "rate_limited", "{r}");
    assert_eq!(r["next"]["step"], "give_up", "{r}");
    assert!(r["next"]["retry_after_ms"].as_u64().unwrap() > 0, "{r}");
}
