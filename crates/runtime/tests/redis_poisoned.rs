//! `RedisSharedState` against a real Redis whose values someone else wrote:
//! a field far longer than anything the scripts write is never read (its
//! length is asked first), and each script takes the conservative reading —
//! a breaker open, a budget empty — then overwrites the field, while the
//! state stays shared.
//!
//! Each planted value is 4 MiB of zeros ending in a digit, so a script that
//! read it whole would take it for a small number and decide the other way.
//!
//! The Redis comes from `RECOURSE_TEST_REDIS_URL`; each test takes a key
//! prefix of its own.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use recourse::shared::{EndpointHealth, RedisSharedState, SharedMode, SharedState};
use recourse::transport::RawResponse;
use recourse::{Call, Executor, ExecutorConfig, InProcessTransport};
use recourse_test_support::{redis_prefix, shared_redis};
use redis::aio::MultiplexedConnection;
use serde_json::json;

/// Longer than any field a script reads (64 bytes) by far.
const PLANTED_BYTES: usize = 4 << 20;
const DOWN: &str = "http://127.0.0.1:9/down";

async fn state(url: &str, prefix: &str, threshold: u32) -> Arc<RedisSharedState> {
    let state = RedisSharedState::builder(url)
        .unwrap()
        .with_prefix(prefix)
        .unwrap()
        .with_breakers(threshold, Duration::from_secs(1))
        .with_op_timeout(Duration::from_millis(500))
        .connect()
        .await;
    assert_eq!(state.mode(), SharedMode::Shared, "Redis answers");
    state
}

/// A direct connection, as whoever plants the values has.
async fn hand(url: &str) -> MultiplexedConnection {
    let client = redis::Client::open(url).unwrap();
    client.get_multiplexed_async_connection().await.unwrap()
}

/// The one key under `prefix` whose name holds `kind` (`breaker:`, `budget`).
async fn key(conn: &mut MultiplexedConnection, prefix: &str, kind: &str) -> String {
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{prefix}*"))
        .query_async(conn)
        .await
        .unwrap();
    let mut matching: Vec<String> = keys.into_iter().filter(|k| k.contains(kind)).collect();
    assert_eq!(matching.len(), 1, "one {kind} key: {matching:?}");
    matching.remove(0)
}

/// Sets `field` of `key` to 4 MiB of zeros and then `digit`.
async fn plant(conn: &mut MultiplexedConnection, key: &str, field: &str, digit: char) {
    let mut value = "0".repeat(PLANTED_BYTES);
    value.push(digit);
    let () = redis::cmd("HSET")
        .arg(key)
        .arg(field)
        .arg(value)
        .query_async(conn)
        .await
        .unwrap();
}

async fn field_len(conn: &mut MultiplexedConnection, key: &str, field: &str) -> usize {
    redis::cmd("HSTRLEN")
        .arg(key)
        .arg(field)
        .query_async(conn)
        .await
        .unwrap()
}

/// Admits `DOWN` until one call is let through (the half-open probe).
async fn wait_for_probe(state: &RedisSharedState) {
    let started = Instant::now();
    while !state.admit(DOWN).await.unwrap() {
        assert!(started.elapsed() < Duration::from_secs(10), "no probe");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn an_oversize_open_until_is_not_read_and_the_breaker_counts_as_open() {
    let Some(url) = shared_redis() else { return };
    let prefix = redis_prefix("p-open");
    let state = state(&url, &prefix, 3).await;
    state
        .record(DOWN, EndpointHealth::TransientFailure)
        .await
        .unwrap();
    assert!(state.admit(DOWN).await.unwrap(), "one failure: closed");

    let mut conn = hand(&url).await;
    let breaker = key(&mut conn, &prefix, "breaker:").await;
    // Read whole, it is 1 ms past the epoch: long over, so a probe would go.
    plant(&mut conn, &breaker, "open_until", '1').await;

    assert!(
        !state.admit(DOWN).await.unwrap(),
        "an unreadable open_until is open"
    );
    assert_eq!(state.mode(), SharedMode::Shared, "no error, no fallback");
    let len = field_len(&mut conn, &breaker, "open_until").await;
    assert!(
        len <= 64,
        "overwritten with a number of its own: {len} bytes"
    );
    // Open no longer than its open time (1 s): then the half-open probe.
    wait_for_probe(&state).await;
}

#[tokio::test]
async fn an_oversize_failure_count_is_the_threshold_and_opens_the_breaker() {
    let Some(url) = shared_redis() else { return };
    let prefix = redis_prefix("p-fail");
    let state = state(&url, &prefix, 3).await;
    state
        .record(DOWN, EndpointHealth::TransientFailure)
        .await
        .unwrap();

    let mut conn = hand(&url).await;
    let breaker = key(&mut conn, &prefix, "breaker:").await;
    // Read whole, one failure so far: the next would be the second of three.
    plant(&mut conn, &breaker, "failures", '1').await;

    state
        .record(DOWN, EndpointHealth::TransientFailure)
        .await
        .expect("recorded, not an error from HINCRBY on a non-integer");
    assert_eq!(state.mode(), SharedMode::Shared);
    assert!(!state.admit(DOWN).await.unwrap(), "opened");
    assert!(field_len(&mut conn, &breaker, "failures").await <= 64);
}

#[tokio::test]
async fn an_oversize_budget_grants_nothing_until_its_floor_refills() {
    let Some(url) = shared_redis() else { return };
    let prefix = redis_prefix("p-budget");
    let state = state(&url, &prefix, 3).await;
    assert!(state.withdraw().await.unwrap(), "a fresh budget's floor");

    let mut conn = hand(&url).await;
    let budget = key(&mut conn, &prefix, "budget").await;
    // Read whole, nine resends are left on the floor.
    plant(&mut conn, &budget, "floor", '9').await;

    assert!(
        !state.withdraw().await.unwrap(),
        "an unreadable budget is empty"
    );
    assert_eq!(state.mode(), SharedMode::Shared);
    assert!(field_len(&mut conn, &budget, "floor").await <= 64);
    // The floor refills at 10 a second.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(state.withdraw().await.unwrap(), "refilled");
}

#[tokio::test]
async fn an_executor_meets_a_poisoned_breaker_as_open_and_sends_nothing() {
    let Some(url) = shared_redis() else { return };
    let prefix = redis_prefix("p-exec");
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
    // A threshold no single call reaches: only the planted value opens it.
    let state = state(&url, &prefix, 1000).await;
    let config = ExecutorConfig {
        backoff_base: Duration::ZERO,
        ..ExecutorConfig::default()
    };
    let executor = Executor::builder(transport)
        .with_config(config)
        .unwrap()
        .with_shared_state(state.clone())
        .build();
    let call = || {
        Call::builder("tool", json!({"q": 1}))
            .idempotent(true)
            .build()
            .unwrap()
    };
    let report = executor.execute(call()).await;
    assert_eq!(report.outcome.name(), "failed");
    let before = dispatches.load(Ordering::SeqCst);
    assert!(before >= 1);

    let mut conn = hand(&url).await;
    let breaker = key(&mut conn, &prefix, "breaker:").await;
    plant(&mut conn, &breaker, "open_until", '1').await;

    let report = executor.execute(call()).await;
    assert_eq!(report.outcome.name(), "failed");
    assert_eq!(
        dispatches.load(Ordering::SeqCst),
        before,
        "the breaker is taken as open: nothing sent"
    );
    assert_eq!(state.mode(), SharedMode::Shared);
}
