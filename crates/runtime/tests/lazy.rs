//! A call's future is lazy, as an `async fn`'s would be: nothing is sent
//! until it is polled, and the call's deadline counts from then, not from when
//! the future was made.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use recourse::{Call, Executor, ExecutorConfig, InProcessTransport, ManualClock, Outcome};
use recourse_protocol::ToolResponse;
use serde_json::json;

#[tokio::test]
async fn a_call_polled_late_sends_nothing_before_and_keeps_its_whole_deadline() {
    let sent = Arc::new(AtomicU32::new(0));
    let counter = Arc::clone(&sent);
    let transport = InProcessTransport::from_tool(move |_payload| {
        counter.fetch_add(1, Ordering::SeqCst);
        async { ToolResponse::ok(json!({"ok": true})) }
    });
    let clock = ManualClock::new();
    let config = ExecutorConfig {
        deadline: Some(Duration::from_secs(5)),
        ..ExecutorConfig::default()
    };
    let executor = Executor::builder(transport)
        .with_config(config)
        .unwrap()
        .with_clock(Arc::new(clock.clone()))
        .build();
    let running = executor.execute(Call::builder("tool", json!({})).build().unwrap());
    // Longer than the deadline passes between making the future and polling it.
    clock.advance(Duration::from_secs(60));
    assert_eq!(sent.load(Ordering::SeqCst), 0);
    let report = running.await;
    assert!(
        matches!(report.outcome, Outcome::Succeeded { .. }),
        "{report:?}"
    );
    assert_eq!(sent.load(Ordering::SeqCst), 1);
    assert_eq!(report.elapsed, Duration::ZERO);
}
