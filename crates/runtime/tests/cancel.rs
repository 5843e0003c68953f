//! Cancellation: a token stops a call while it waits, and nothing more is sent.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use recourse::{Call, Executor, ExecutorConfig, InProcessTransport, RawResponse, StopReason};
use serde_json::json;
use tokio_util::sync::CancellationToken;

#[tokio::test]
async fn a_cancelled_wait_ends_the_call_without_another_dispatch() {
    let sent = Arc::new(AtomicU32::new(0));
    let counter = Arc::clone(&sent);
    let tool = InProcessTransport::new(move |_req| {
        counter.fetch_add(1, Ordering::SeqCst);
        async {
            Ok(RawResponse {
                status: 429,
                headers: vec![("retry-after".into(), "30".into())],
                body: Vec::new(),
            })
        }
    });
    let config = ExecutorConfig {
        deadline: None,
        ..ExecutorConfig::default()
    };
    // Real clock: the call would sleep 30 s if the token did not cut it short.
    let executor = Executor::builder(tool).with_config(config).unwrap().build();
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(20)).await;
        trigger.cancel();
    });
    let report = executor
        .execute_with_cancel(Call::new("tool", json!({"q": 1})), cancel)
        .await;
    assert_eq!(report.outcome.reason(), Some(&StopReason::Cancelled));
    assert_eq!(sent.load(Ordering::SeqCst), 1);
    assert_eq!(report.attempts[0].action, "retry_same");
}

#[tokio::test]
async fn a_token_cancelled_before_the_call_dispatches_nothing() {
    let sent = Arc::new(AtomicU32::new(0));
    let counter = Arc::clone(&sent);
    let tool = InProcessTransport::new(move |_req| {
        counter.fetch_add(1, Ordering::SeqCst);
        async {
            Ok(RawResponse {
                status: 200,
                headers: vec![],
                body: b"{}".to_vec(),
            })
        }
    });
    let cancel = CancellationToken::new();
    cancel.cancel();
    let report = Executor::builder(tool)
        .build()
        .execute_with_cancel(Call::new("tool", json!({})), cancel)
        .await;
    assert_eq!(report.outcome.reason(), Some(&StopReason::Cancelled));
    assert_eq!(sent.load(Ordering::SeqCst), 0);
}
