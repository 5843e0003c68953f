//! Cancellation: a token stops a call while it waits, and nothing more is sent.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use recourse::transport::RawResponse;
use recourse::{Call, Executor, ExecutorConfig, InProcessTransport, StopReason};
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// A tool that counts its calls, cancels `token` when called, and answers `status`.
fn tool(status: u16, token: CancellationToken) -> (InProcessTransport, Arc<AtomicU32>) {
    let sent = Arc::new(AtomicU32::new(0));
    let counter = Arc::clone(&sent);
    let transport = InProcessTransport::new(move |_req| {
        counter.fetch_add(1, Ordering::SeqCst);
        token.cancel();
        async move {
            Ok(RawResponse {
                status,
                headers: vec![("retry-after".into(), "30".into())],
                body: Vec::new(),
                read: None,
            })
        }
    });
    (transport, sent)
}

#[tokio::test]
async fn a_cancelled_wait_ends_the_call_without_another_dispatch() {
    // The tool cancels the call as it answers 429 / Retry-After: 30, so the
    // cancellation lands during the wait; on the real clock the call would
    // otherwise sleep 30 s.
    let cancel = CancellationToken::new();
    let (transport, sent) = tool(429, cancel.clone());
    let config = ExecutorConfig {
        deadline: None,
        ..ExecutorConfig::default()
    };
    let executor = Executor::builder(transport)
        .with_config(config)
        .unwrap()
        .build();
    let report = executor
        .execute_with_cancel(
            Call::builder("tool", json!({"q": 1})).build().unwrap(),
            cancel,
        )
        .await;
    assert_eq!(report.outcome.reason(), Some(&StopReason::Cancelled));
    assert_eq!(sent.load(Ordering::SeqCst), 1);
    assert_eq!(report.attempts[0].action.name(), "retry_same");
}

#[tokio::test]
async fn a_token_cancelled_before_the_call_dispatches_nothing() {
    let cancel = CancellationToken::new();
    let (transport, sent) = tool(200, CancellationToken::new());
    cancel.cancel();
    let report = Executor::builder(transport)
        .build()
        .execute_with_cancel(Call::builder("tool", json!({})).build().unwrap(), cancel)
        .await;
    assert_eq!(report.outcome.reason(), Some(&StopReason::Cancelled));
    assert_eq!(sent.load(Ordering::SeqCst), 0);
}
