//! A fleet of `recourse serve` processes: three replicas sharing one retry
//! budget and one breaker per endpoint through Redis, a Redis that goes away
//! mid-run, and the readiness a load balancer reads.
//!
//! The Redis tests need `RECOURSE_TEST_REDIS_URL` (skipped, visibly, when it
//! is unset; failing when it is set and Redis does not answer). Each takes a
//! key prefix of its own; the test that stops Redis runs its own
//! `redis-server` on a free port.

use crate::held;
use crate::support;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use held::held_tool;
use recourse_test_support::{OwnedRedis, redis_prefix, shared_redis};
use serde_json::{Value, json};
use support::Gateway;

/// The Redis fleet tests run one at a time: six gateways at once on a
/// two-core machine measure the machine, not the fleet.
static ONE_FLEET_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// One `recourse serve` process of the fleet; what it writes on stderr is kept.
struct Replica {
    gw: Gateway,
    url: String,
}

impl Replica {
    fn start(args: &[&str], env: &[(&str, &str)]) -> Self {
        let gw = Gateway::spawn()
            .args(args)
            .env(&[("RECOURSE_BACKOFF_MS", "1")])
            .env(env)
            .env_remove("RECOURSE_SHARED_STATE")
            .keep_stderr()
            .start();
        let url = gw.url.clone();
        Self { gw, url }
    }

    fn stderr(&self) -> String {
        self.gw.stderr()
    }

    async fn get(&self, path: &str) -> (u16, String) {
        let resp = reqwest::get(format!("{}{path}", self.url)).await.unwrap();
        (resp.status().as_u16(), resp.text().await.unwrap())
    }

    async fn json(&self, path: &str) -> (u16, Value) {
        let (status, text) = self.get(path).await;
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    /// Waits (at most 20 s) until `/healthz` says `mode`.
    async fn wait_for_shared_state(&self, mode: &str) {
        let started = Instant::now();
        loop {
            let (_, health) = self.json("/healthz").await;
            if health["shared_state"] == mode {
                return;
            }
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "{} never {mode}: {health}\n{}",
                self.url,
                self.stderr()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits (at most 20 s) until stderr has said `line` `times` times.
    async fn wait_for_stderr(&self, line: &str, times: usize) {
        let started = Instant::now();
        while self.stderr().matches(line).count() < times {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "{line:?} not said {times} time(s): {}",
                self.stderr()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    async fn call(&self, client: &reqwest::Client, tool: &str, i: usize) -> Value {
        let resp = client
            .post(format!("{}/v1/calls", self.url))
            .json(&json!({"url": tool, "payload": {"i": i}, "idempotent": true}))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        resp.json().await.unwrap()
    }
}

fn fleet(n: usize, args: &[&str]) -> Vec<Replica> {
    (0..n).map(|_| Replica::start(args, &[])).collect()
}

/// A loopback tool answering `status` to everything, counting what reaches it.
async fn counting_tool(status: u16) -> (String, Arc<AtomicU64>) {
    use axum::http::StatusCode;
    let hits = Arc::new(AtomicU64::new(0));
    let counter = Arc::clone(&hits);
    let app = axum::Router::new().route(
        "/tool",
        axum::routing::post(move || {
            counter.fetch_add(1, Ordering::SeqCst);
            async move {
                let code = StatusCode::from_u16(status).unwrap();
                let body = if code.is_success() {
                    json!({"success": true, "data": {"ok": true}})
                } else {
                    json!({"success": false, "error": {"code": "DOWN", "category": "SERVICE_ERROR",
                        "message": "down for maintenance"}})
                };
                (code, axum::Json(body))
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/tool", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, hits)
}

const CALLS: usize = 1_000;

/// `CALLS` calls round-robin over three replicas to a tool answering 503;
/// the dispatches that reached it.
async fn outage(shared: Option<(&str, &str)>) -> u64 {
    let (tool, hits) = counting_tool(503).await;
    let args: Vec<&str> = match shared {
        // A generous bound: on a busy two-core machine a 50 ms one is missed
        // now and then, and this test measures sharing, not the timeout.
        Some((url, prefix)) => vec![
            "--shared-state",
            url,
            "--shared-state-prefix",
            prefix,
            "--shared-state-timeout-ms",
            "500",
        ],
        None => vec![],
    };
    let replicas = fleet(3, &args);
    for replica in &replicas {
        let mode = if shared.is_some() { "shared" } else { "off" };
        replica.wait_for_shared_state(mode).await;
    }
    let client = reqwest::Client::new();
    for i in 0..CALLS {
        let report = replicas[i % 3].call(&client, &tool, i).await;
        assert_eq!(report["outcome"], "failed", "{report}");
    }
    let fallbacks: Vec<String> = replicas
        .iter()
        .flat_map(|r| {
            r.stderr()
                .lines()
                .filter(|l| l.starts_with("shared state: fallback"))
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .collect();
    if !fallbacks.is_empty() {
        eprintln!("replicas fell back to local state during the run: {fallbacks:?}");
    }
    hits.load(Ordering::SeqCst)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outage_across_three_replicas_costs_the_fleet_one_breaker() {
    let Some(redis) = shared_redis() else { return };
    let _alone = ONE_FLEET_AT_A_TIME.lock().await;
    let with = outage(Some((&redis, &redis_prefix("outage")))).await;
    let without = outage(None).await;
    let per_call = |n: u64| n as f64 / CALLS as f64;
    eprintln!(
        "{CALLS} calls over 3 replicas, tool answering 503: {with} dispatches with shared state \
         ({:.3} per call), {without} without ({:.3} per call)",
        per_call(with),
        per_call(without)
    );
    assert!(per_call(with) <= 1.1, "{with} dispatches for {CALLS} calls");
    assert!(
        with < without,
        "one fleet-wide breaker opens sooner than three: {with} ≥ {without}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_keep_succeeding_on_local_state_when_redis_stops_mid_run() {
    if shared_redis().is_none() {
        return;
    }
    let _alone = ONE_FLEET_AT_A_TIME.lock().await;
    let mut redis = OwnedRedis::start();
    let (tool, _) = counting_tool(200).await;
    let (url, prefix) = (redis.url(), redis_prefix("stopped"));
    let replicas = fleet(
        3,
        &["--shared-state", &url, "--shared-state-prefix", &prefix],
    );
    for replica in &replicas {
        replica.wait_for_shared_state("shared").await;
    }
    let client = reqwest::Client::new();
    let mut i = 0;
    let mut calls = async |n: usize| {
        for _ in 0..n {
            let report = replicas[i % 3].call(&client, &tool, i).await;
            assert_eq!(report["outcome"], "succeeded", "call {i}: {report}");
            i += 1;
        }
    };
    calls(30).await;

    redis.stop();
    calls(60).await;
    for replica in &replicas {
        replica.wait_for_shared_state("fallback").await;
        let (status, ready) = replica.json("/readyz").await;
        assert_eq!(status, 200, "a Redis outage keeps replicas in service");
        assert_eq!(ready["shared_state"], "fallback", "{ready}");
        let (_, metrics) = replica.get("/metrics").await;
        assert!(
            metrics.contains("recourse_shared_state{state=\"fallback\"} 1"),
            "{metrics}"
        );
        replica.wait_for_stderr("shared state: fallback", 1).await;
    }
    calls(30).await;

    redis.resume();
    for replica in &replicas {
        replica.wait_for_shared_state("shared").await;
        replica.wait_for_stderr("shared state: shared", 2).await;
        assert!(
            !replica.stderr().contains(&url),
            "the Redis URL is never logged"
        );
    }
    calls(30).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn healthz_and_readyz_answer_without_the_token_and_say_only_status_words() {
    let replica = Replica::start(&[], &[("RECOURSE_GATEWAY_TOKEN", "fleet-secret")]);
    let (status, health) = replica.json("/healthz").await;
    assert_eq!(status, 200);
    assert_eq!(health, json!({"status": "ok", "shared_state": "off"}));
    let (status, ready) = replica.json("/readyz").await;
    assert_eq!(status, 200);
    assert_eq!(ready["status"], "ready");
    for word in ["journal", "shared_state"] {
        assert!(ready[word].is_string(), "{ready}");
    }
    let (status, _) = replica.get("/metrics").await;
    assert_eq!(status, 401, "everything else still needs the token");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_turns_readyz_to_draining_while_in_flight_calls_finish() {
    let (tool, mut arrived, release) = held_tool().await;
    let mut replica = Replica::start(&["--drain-delay", "3"], &[]);
    let endpoint = format!("{}/v1/calls", replica.url);
    let in_flight = tokio::spawn(async move {
        reqwest::Client::new()
            .post(endpoint)
            .json(&json!({"url": tool, "payload": {}}))
            .send()
            .await
    });
    arrived.recv().await.expect("the call reaches the tool");
    let (status, _) = replica.json("/readyz").await;
    assert_eq!(status, 200);

    let pid = replica.gw.child.id().to_string();
    assert!(
        std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    let started = Instant::now();
    let ready = loop {
        let (status, ready) = replica.json("/readyz").await;
        if status == 503 {
            break ready;
        }
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "/readyz still {status} after SIGTERM: {ready}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    assert_eq!(ready["status"], "draining", "{ready}");
    let (status, _) = replica.json("/healthz").await;
    assert_eq!(status, 200, "alive while draining");

    release.send(()).unwrap();
    let report: Value = in_flight
        .await
        .unwrap()
        .expect("the in-flight call is answered")
        .json()
        .await
        .unwrap();
    assert_eq!(report["outcome"], "succeeded", "{report}");
    let status = replica.gw.child.wait().unwrap();
    assert_eq!(status.code(), Some(0), "{}", replica.stderr());
    assert!(
        replica.stderr().contains("draining"),
        "{}",
        replica.stderr()
    );
}
