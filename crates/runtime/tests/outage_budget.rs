//! A total outage costs ≤ 1.2× the load with the shared budget, and
//! (1 + max_retries)× without it. Deterministic: an injected clock, zero
//! backoff, so time stands still and the budget's floor is exactly one second's worth.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use recourse::budget::RetryBudget;
use recourse::transport::RawResponse;
use recourse::{Call, Executor, ExecutorConfig, InProcessTransport, ManualClock};
use serde_json::json;

const CALLS: u64 = 1_000;
const FLOOR_PER_SEC: f64 = 10.0;

fn outage() -> (InProcessTransport, Arc<AtomicU64>) {
    let dispatches = Arc::new(AtomicU64::new(0));
    let counter = Arc::clone(&dispatches);
    let transport = InProcessTransport::new(move |_req| {
        counter.fetch_add(1, Ordering::SeqCst);
        async {
            Ok(RawResponse {
                status: 503,
                headers: vec![],
                body: b"down".to_vec(),
                read: None,
            })
        }
    });
    (transport, dispatches)
}

async fn run(with_budget: bool) -> u64 {
    let (transport, dispatches) = outage();
    let clock = Arc::new(ManualClock::new());
    let config = ExecutorConfig {
        backoff_base: Duration::ZERO,
        ..ExecutorConfig::default()
    };
    let mut builder = Executor::builder(transport)
        .with_config(config)
        .unwrap()
        .with_clock(clock.clone())
        .without_circuit_breakers();
    builder = if with_budget {
        builder.with_retry_budget(Arc::new(RetryBudget::with_clock(
            0.2,
            FLOOR_PER_SEC,
            Duration::from_secs(10),
            clock,
        )))
    } else {
        builder.without_retry_budget()
    };
    let exec = builder.build();
    for i in 0..CALLS {
        let report = exec
            .execute(Call::builder("tool", json!({"i": i})).build().unwrap())
            .await;
        assert_eq!(report.outcome.name(), "failed");
    }
    dispatches.load(Ordering::SeqCst)
}

#[tokio::test]
async fn the_shared_budget_bounds_outage_load() {
    let with = run(true).await;
    let without = run(false).await;
    eprintln!(
        "{CALLS} calls in total outage: {with} dispatches with the shared budget, {without} without"
    );
    assert_eq!(
        without,
        CALLS * 4,
        "(1 + max_retries) × calls without a budget"
    );
    let bound = (1.2 * CALLS as f64 + FLOOR_PER_SEC) as u64;
    assert!(with <= bound, "{with} dispatches > {bound}");
    assert!(with >= CALLS, "every call is dispatched at least once");
}
