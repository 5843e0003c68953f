//! `RedisSharedState` against a real Redis: one budget and one breaker per
//! endpoint for several processes (here several states, each with its own
//! connection, as replicas have), and fallback and rejoin when Redis goes.
//!
//! The shared Redis comes from `RECOURSE_TEST_REDIS_URL`; each test takes a
//! key prefix of its own. Tests that stop or freeze Redis run their own
//! `redis-server` on a free port.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use recourse::shared::{EndpointHealth, RedisSharedState, SharedMode, SharedState};
use recourse::transport::RawResponse;
use recourse::{Call, Executor, ExecutorConfig, InProcessTransport};
use recourse_test_support::{OwnedRedis, redis_prefix, shared_redis};
use serde_json::json;

async fn replicas(url: &str, prefix: &str, n: usize) -> Vec<Arc<RedisSharedState>> {
    let mut states = Vec::new();
    for _ in 0..n {
        let state = RedisSharedState::builder(url)
            .unwrap()
            .with_prefix(prefix)
            .unwrap()
            .with_breakers(3, Duration::from_secs(1))
            .connect()
            .await;
        assert_eq!(state.mode(), SharedMode::Shared, "Redis answers");
        states.push(state);
    }
    states
}

#[tokio::test]
async fn the_floor_is_the_fleets_not_each_replicas() {
    let Some(url) = shared_redis() else { return };
    let fleet = replicas(&url, &redis_prefix("floor"), 3).await;
    let started = Instant::now();
    let mut granted = 0u32;
    for _ in 0..20 {
        for replica in &fleet {
            granted += u32::from(replica.withdraw().await.unwrap());
        }
    }
    let secs = started.elapsed().as_secs_f64();
    eprintln!("60 withdrawals across 3 replicas, no deposits: {granted} granted in {secs:.2}s");
    // Three local budgets would grant 30; the fleet's floor is 10 a second.
    let bound = 10.0 + 10.0 * secs;
    assert!(f64::from(granted) <= bound + 1e-9, "{granted} > {bound}");
    assert!(granted >= 10, "the floor's first second: {granted}");
}

#[tokio::test]
async fn resends_are_bounded_by_the_ratio_of_the_fleets_calls() {
    let Some(url) = shared_redis() else { return };
    let fleet = replicas(&url, &redis_prefix("ratio"), 3).await;
    let started = Instant::now();
    let mut granted = 0u32;
    for i in 0..600 {
        let replica = &fleet[i % fleet.len()];
        replica.deposit().await.unwrap();
        for _ in 0..3 {
            granted += u32::from(replica.withdraw().await.unwrap());
        }
    }
    let secs = started.elapsed().as_secs_f64();
    eprintln!("600 calls across 3 replicas asking 3 resends each: {granted} granted in {secs:.2}s");
    let bound = 0.2 * 600.0 + 10.0 * (1.0 + secs);
    assert!(f64::from(granted) <= bound, "{granted} > {bound}");
    assert!(
        granted >= 100,
        "the ratio's, less a little decay: {granted}"
    );
}

#[tokio::test]
async fn failures_from_three_replicas_open_one_breaker_with_one_probe() {
    let Some(url) = shared_redis() else { return };
    let fleet = replicas(&url, &redis_prefix("breaker"), 3).await;
    let down = "http://127.0.0.1:9/down";
    for replica in &fleet {
        assert!(replica.admit(down).await.unwrap());
        replica
            .record(down, EndpointHealth::TransientFailure)
            .await
            .unwrap();
    }
    for replica in &fleet {
        assert!(
            !replica.admit(down).await.unwrap(),
            "open for every replica"
        );
    }
    assert!(fleet[0].admit("http://127.0.0.1:9/up").await.unwrap());

    // After the open time, exactly one replica gets the probe.
    let probe = wait_for_probe(&fleet, down).await;
    for (i, replica) in fleet.iter().enumerate() {
        assert!(
            !replica.admit(down).await.unwrap(),
            "replica {i}: one probe across the fleet (replica {probe} has it)"
        );
    }
    fleet[probe]
        .record(down, EndpointHealth::TransientFailure)
        .await
        .unwrap();
    assert!(
        !fleet[0].admit(down).await.unwrap(),
        "a failed probe reopens"
    );

    let probe = wait_for_probe(&fleet, down).await;
    fleet[probe]
        .record(down, EndpointHealth::Healthy)
        .await
        .unwrap();
    for replica in &fleet {
        assert!(replica.admit(down).await.unwrap(), "a good probe closes it");
    }
}

/// Which replica's `admit` wins the probe, once the breaker's wait is over.
async fn wait_for_probe(fleet: &[Arc<RedisSharedState>], endpoint: &str) -> usize {
    let started = Instant::now();
    loop {
        for (i, replica) in fleet.iter().enumerate() {
            if replica.admit(endpoint).await.unwrap() {
                return i;
            }
        }
        assert!(started.elapsed() < Duration::from_secs(10), "no probe");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_breaker_poisoned_far_into_the_future_stays_open_no_longer_than_its_open_time() {
    let Some(url) = shared_redis() else { return };
    let prefix = redis_prefix("poisoned");
    let fleet = replicas(&url, &prefix, 1).await;
    let down = "http://127.0.0.1:9/down";
    for _ in 0..3 {
        fleet[0]
            .record(down, EndpointHealth::TransientFailure)
            .await
            .unwrap();
    }
    assert!(!fleet[0].admit(down).await.unwrap(), "open");

    // Someone who can write to Redis keeps the endpoint shut for centuries.
    let client = redis::Client::open(url.as_str()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{prefix}*"))
        .query_async(&mut conn)
        .await
        .unwrap();
    let mut poisoned = 0;
    for key in keys {
        let kind: String = redis::cmd("TYPE")
            .arg(&key)
            .query_async(&mut conn)
            .await
            .unwrap();
        if kind != "hash" {
            continue;
        }
        let open: bool = redis::cmd("HEXISTS")
            .arg(&key)
            .arg("open_until")
            .query_async(&mut conn)
            .await
            .unwrap();
        if open {
            let () = redis::cmd("HSET")
                .arg(&key)
                .arg("open_until")
                .arg("9000000000000000")
                .query_async(&mut conn)
                .await
                .unwrap();
            poisoned += 1;
        }
    }
    assert_eq!(poisoned, 1, "the endpoint's breaker");

    // Its open time (1 s) on, the breaker lets a probe through.
    assert_eq!(wait_for_probe(&fleet, down).await, 0);
}

#[tokio::test]
async fn prefixes_keep_fleets_apart() {
    let Some(url) = shared_redis() else { return };
    let a = replicas(&url, &redis_prefix("apart-a"), 1).await;
    let b = replicas(&url, &redis_prefix("apart-b"), 1).await;
    let down = "http://127.0.0.1:9/down";
    for _ in 0..3 {
        a[0].record(down, EndpointHealth::TransientFailure)
            .await
            .unwrap();
    }
    assert!(!a[0].admit(down).await.unwrap());
    assert!(
        b[0].admit(down).await.unwrap(),
        "another prefix, another fleet"
    );
}

/// A tool answering 503, counting what reaches it.
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

/// Three executors, each with its own local budget and breakers, calling a
/// tool that is down round-robin; with `shared`, through one fleet state.
async fn outage_dispatches(shared: Option<(&str, &str)>) -> u64 {
    let (transport, dispatches) = outage();
    let transport = Arc::new(transport);
    let config = ExecutorConfig {
        backoff_base: Duration::ZERO,
        ..ExecutorConfig::default()
    };
    let mut executors = Vec::new();
    for _ in 0..3 {
        let mut builder = Executor::builder_arc(transport.clone())
            .with_config(config.clone())
            .unwrap();
        if let Some((url, prefix)) = shared {
            // A generous bound: this measures sharing, not the timeout.
            let state = RedisSharedState::builder(url)
                .unwrap()
                .with_prefix(prefix)
                .unwrap()
                .with_op_timeout(Duration::from_millis(500))
                .connect()
                .await;
            builder = builder.with_shared_state(state);
        }
        executors.push(builder.build());
    }
    for i in 0..300 {
        let call = Call::builder("tool", json!({"i": i}))
            .idempotent(true)
            .build()
            .unwrap();
        let report = executors[i % 3].execute(call).await;
        assert_eq!(report.outcome.name(), "failed");
    }
    dispatches.load(Ordering::SeqCst)
}

#[tokio::test]
async fn three_executors_on_one_shared_state_open_one_breaker() {
    let Some(url) = shared_redis() else { return };
    let with = outage_dispatches(Some((&url, &redis_prefix("executors")))).await;
    let without = outage_dispatches(None).await;
    eprintln!("300 calls over 3 executors, tool down: {with} dispatches shared, {without} alone");
    assert!(with < without, "{with} ≥ {without}");
    assert!(with <= 10, "about one threshold (5) for the fleet: {with}");
}

async fn owned(redis: &OwnedRedis) -> Arc<RedisSharedState> {
    RedisSharedState::builder(&redis.url())
        .unwrap()
        .with_prefix(&redis_prefix("owned"))
        .unwrap()
        .with_check_every(Duration::from_millis(100))
        .connect()
        .await
}

async fn wait_for(state: &RedisSharedState, mode: SharedMode) {
    let mut changes = state.subscribe();
    tokio::time::timeout(Duration::from_secs(20), changes.wait_for(|m| *m == mode))
        .await
        .unwrap_or_else(|_| panic!("never {mode}"))
        .unwrap();
}

#[tokio::test]
async fn a_stopped_redis_is_left_at_once_and_rejoined_when_it_returns() {
    if shared_redis().is_none() {
        return;
    }
    let mut redis = OwnedRedis::start();
    let state = owned(&redis).await;
    assert_eq!(state.mode(), SharedMode::Shared);
    state.deposit().await.unwrap();

    redis.stop();
    let asked = Instant::now();
    let first = state.withdraw().await;
    let waited = asked.elapsed();
    // The operation (or the background ping before it) found Redis gone.
    assert!(first.is_err() || state.mode() == SharedMode::Fallback);
    assert!(waited < Duration::from_secs(2), "{waited:?}");
    wait_for(&state, SharedMode::Fallback).await;
    assert!(state.admit("http://127.0.0.1:9/x").await.is_err());

    redis.resume();
    wait_for(&state, SharedMode::Shared).await;
    assert!(state.admit("http://127.0.0.1:9/x").await.unwrap());
}

#[tokio::test]
async fn a_hung_redis_costs_at_most_three_operations_their_timeout() {
    if shared_redis().is_none() {
        return;
    }
    let redis = OwnedRedis::start();
    let state = owned(&redis).await;
    assert_eq!(state.mode(), SharedMode::Shared);

    redis.freeze();
    for n in 1..=3 {
        let asked = Instant::now();
        assert!(state.deposit().await.is_err(), "no answer within 50 ms");
        let waited = asked.elapsed();
        assert!(waited < Duration::from_secs(2), "{waited:?}");
        // Shared until the third timeout in a row, unless the background
        // ping found Redis hung first.
        if n < 3 && state.mode() == SharedMode::Fallback {
            eprintln!("the background check fell back after {n} timeout(s)");
        }
    }
    assert_eq!(
        state.mode(),
        SharedMode::Fallback,
        "three timeouts in a row"
    );
    assert_eq!(state.last_cause(), "timed_out");
    assert!(
        state.withdraw().await.is_err(),
        "in fallback until it answers"
    );

    redis.thaw();
    wait_for(&state, SharedMode::Shared).await;
    state.deposit().await.unwrap();
}

#[tokio::test]
async fn an_unreachable_redis_at_start_is_fallback_not_an_error() {
    if shared_redis().is_none() {
        return;
    }
    let mut redis = OwnedRedis::start();
    redis.stop();
    let state = owned(&redis).await;
    assert_eq!(state.mode(), SharedMode::Fallback);
    assert!(state.deposit().await.is_err());
    redis.resume();
    wait_for(&state, SharedMode::Shared).await;
}
