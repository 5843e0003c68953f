//! Gateway replicas on one PostgreSQL journal: a keyed write runs once
//! whichever replica is asked, and a replica killed mid-write is settled by
//! another once its lease has run out — by looking, never by resending.
//!
//! Each test uses its own PostgreSQL schema; without
//! `RECOURSE_TEST_POSTGRES_URL` they skip (and fail under `RECOURSE_TEST_NO_SKIP`).

use std::sync::Arc;
use std::time::Duration;

use recourse_test_support::{PostgresSchema, service_var, tools_without_lookups};
use serde_json::{Value, json};

use crate::support;

use recourse_test_support::{export, keyed, tools, wait_until_the_tool_has};
use support::Gateway;

/// A gateway replica on the shared journal at `journal`.
fn replica(state: &std::path::Path, journal: &str, lease_ms: &str) -> Gateway {
    Gateway::start(state, &["--journal", journal, "--lease-ms", lease_ms])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_keyed_retry_on_another_replica_is_replayed_not_dispatched() {
    let Some(url) = service_var("RECOURSE_TEST_POSTGRES_URL") else {
        return;
    };
    let schema = PostgresSchema::create(&url).await;
    let t = tools_without_lookups(&["exports:crash_after_commit:1.0"]).await;
    let state = tempfile::tempdir().unwrap();
    let (one, two) = (
        replica(state.path(), &schema.url, "30000"),
        replica(state.path(), &schema.url, "30000"),
    );
    let body = keyed(export(&t), "fleet-retry-1");

    let (status, first) = one.post(&body).await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(first["outcome"], "unknown");
    // The client timed out on replica 1 and its retry lands on replica 2.
    let (status, second) = two.post(&body).await;
    assert_eq!(status, 200, "{second}");
    assert_eq!(second["replayed"], true, "{second}");
    assert_eq!(second["call_id"], first["call_id"]);
    assert_eq!(t.exports_committed(), 1, "one dispatch across the fleet");
    schema.remove().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_keyed_retry_while_another_replica_runs_it_is_told_to_wait() {
    let Some(url) = service_var("RECOURSE_TEST_POSTGRES_URL") else {
        return;
    };
    let schema = PostgresSchema::create(&url).await;
    let t = tools(&["exports:slow:1.0"], Duration::from_millis(1500)).await;
    let state = tempfile::tempdir().unwrap();
    let one = Arc::new(replica(state.path(), &schema.url, "30000"));
    let two = replica(state.path(), &schema.url, "30000");
    let body = keyed(export(&t), "fleet-busy-1");

    let running = {
        let (one, body) = (Arc::clone(&one), body.clone());
        tokio::spawn(async move { one.post(&body).await })
    };
    wait_until_the_tool_has(&t, "fleet-busy-1").await;
    let ((status, busy), retry_after) = two.post_with(&body, &[]).await;
    assert_eq!(status, 409, "{busy}");
    assert_eq!(busy["error"]["code"], "CALL_IN_PROGRESS");
    assert!(retry_after.is_some());
    let (status, done) = running.await.unwrap();
    assert_eq!((status, done["outcome"].clone()), (200, json!("succeeded")));
    let (_, replayed) = two.post(&body).await;
    assert_eq!(replayed["replayed"], true);
    assert_eq!(t.exports_committed(), 1);
    schema.remove().await;
}

/// `kills` times: a write sent to a fresh replica 2, which is SIGKILLed once
/// the tool has the request; after its lease, replica 3's reconcile route
/// settles the call from the tool's lookup. Returns (settled succeeded,
/// exports committed, reconciles refused while a lease held).
async fn kill_mid_write(kills: usize) -> (usize, usize, usize) {
    let url = service_var("RECOURSE_TEST_POSTGRES_URL").expect("checked by the caller");
    let schema = PostgresSchema::create(&url).await;
    let t = tools(&["exports:slow:1.0"], Duration::from_millis(250)).await;
    let state = tempfile::tempdir().unwrap();
    const LEASE_MS: u64 = 300;
    let lease = LEASE_MS.to_string();
    let three = replica(state.path(), &schema.url, &lease);
    let (mut settled, mut held) = (0, 0);
    for n in 0..kills {
        let key = format!("kill-{n}");
        let mut body = keyed(export(&t), &key);
        body["reconcile"] = json!(format!("{}/api/exports/{{operation_id}}", t.base_url()));
        let two = Arc::new(replica(state.path(), &schema.url, &lease));
        let sent = {
            let (two, body) = (Arc::clone(&two), body.clone());
            tokio::spawn(async move {
                let _ = reqwest::Client::new()
                    .post(format!("{}/v1/calls", two.url))
                    .json(&body)
                    .send()
                    .await;
            })
        };
        wait_until_the_tool_has(&t, &key).await;
        // Listed in any state: on a loaded machine replica 2 may finish the
        // write before replica 3 lists it, and the kill then finds it done —
        // which must settle the same way (nothing lost, nothing twice).
        let listed = three
            .wait_for("/v1/calls", |b| {
                b["calls"]
                    .as_array()
                    .is_some_and(|c| c.iter().any(|e| e["caller_key"] == key.as_str()))
            })
            .await;
        let id = listed["calls"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["caller_key"] == key.as_str())
            .unwrap()["call_id"]
            .as_str()
            .unwrap()
            .to_owned();
        std::process::Command::new("kill")
            .args(["-KILL", &two.child.id().to_string()])
            .status()
            .unwrap();
        let _ = sent.await;

        // While the lease holds, replica 3 leaves the call alone.
        let settle = || async {
            let resp = reqwest::Client::new()
                .post(format!("{}/v1/calls/{id}/reconcile", three.url))
                .send()
                .await
                .unwrap();
            let status = resp.status().as_u16();
            (status, resp.json::<Value>().await.unwrap_or(Value::Null))
        };
        let mut answer = settle().await;
        let started = std::time::Instant::now();
        while answer.0 == 409 || answer.1["state"] != "succeeded" {
            held += usize::from(answer.0 == 409);
            assert!(
                started.elapsed() < Duration::from_secs(15),
                "kill {n}: never settled: {answer:?}"
            );
            tokio::time::sleep(Duration::from_millis(LEASE_MS / 3)).await;
            answer = settle().await;
        }
        settled += 1;
    }
    let committed = t.exports_committed();
    schema.remove().await;
    (settled, committed, held)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_killed_mid_write_is_settled_by_another_after_its_lease() {
    if service_var("RECOURSE_TEST_POSTGRES_URL").is_none() {
        return;
    }
    let kills = 20;
    let (settled, committed, held) = kill_mid_write(kills).await;
    assert_eq!(settled, kills, "0 lost");
    assert_eq!(committed, kills, "0 duplicates");
    assert!(held > 0, "a live lease was respected at least once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "200 kills, about two minutes; run by hand for BENCHMARKS.md"]
async fn soak_two_hundred_replica_kills() {
    if service_var("RECOURSE_TEST_POSTGRES_URL").is_none() {
        return;
    }
    let kills = 200;
    let started = std::time::Instant::now();
    let (settled, committed, held) = kill_mid_write(kills).await;
    eprintln!(
        "{kills} kills: {settled} settled succeeded, {committed} exports committed, {held} \
         reconciles refused while a lease held, in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    assert_eq!((settled, committed), (kills, kills));
}
