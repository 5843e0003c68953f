//! Writes through `recourse serve`, the binary: what it resends (nothing it
//! cannot know is harmless) and where it journals by default, a call left in
//! flight by a killed gateway, and a stopping gateway that finishes the calls
//! whose clients left. (Keyed retries, the reconcile and journal routes are
//! tested in-process, in `recourse-gateway`'s tests.)

use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support;

use recourse_test_support::{export, keyed, tools, tools_without_lookups, wait_until_the_tool_has};
use support::Gateway;

fn journal_path(dir: &std::path::Path) -> String {
    dir.join("journal.db").display().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_nobody_declared_idempotent_is_sent_once_and_left_unknown() {
    let t = tools_without_lookups(&["exports:crash_after_commit:1.0"]).await;
    let state = tempfile::tempdir().unwrap();
    let gw = Gateway::start(state.path(), &[]);

    let (status, record) = gw.post(&export(&t)).await;
    assert_eq!(status, 200, "{record}");
    assert_eq!(record["outcome"], "unknown", "{record}");
    assert_eq!(record["reason"], "outcome_unknown");
    assert_eq!(
        record["idempotency"],
        json!({"idempotent": false, "from": "manifest"}),
        "the tool's manifest said so, not a gateway default"
    );
    assert_eq!(record["http_calls"], 1);
    assert_eq!(record["replayed"], false);
    assert_eq!(t.exports_committed(), 1, "sent once, never resent");
    assert!(
        state.path().join("recourse/gateway.db").exists(),
        "journaled in the default place"
    );
    let (status, listed) = gw.get("/v1/calls?state=unknown").await;
    assert_eq!(status, 200);
    assert_eq!(listed["calls"][0]["call_id"], record["call_id"], "{listed}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_left_in_flight_by_a_killed_gateway_is_settled_by_the_next() {
    let t = tools(&["exports:slow:1.0"], Duration::from_millis(800)).await;
    let state = tempfile::tempdir().unwrap();
    let journal = journal_path(state.path());
    let args = ["--journal", journal.as_str(), "--lease-ms", "300"];
    let mut body = export(&t);
    body["reconcile"] = json!(format!("{}/api/exports/{{operation_id}}", t.base_url()));

    let first = Arc::new(Gateway::start(state.path(), &args));
    let pending = {
        let (gw, body) = (Arc::clone(&first), body.clone());
        tokio::spawn(async move {
            let _ = reqwest::Client::new()
                .post(format!("{}/v1/calls", gw.url))
                .json(&body)
                .send()
                .await;
        })
    };
    let listed = first
        .wait_for("/v1/calls?state=in_flight", |b| {
            b["calls"].as_array().is_some_and(|c| !c.is_empty())
        })
        .await;
    let id = listed["calls"][0]["call_id"].as_str().unwrap().to_owned();
    let key = listed["calls"][0]["idempotency_key"]
        .as_str()
        .unwrap()
        .to_owned();
    wait_until_the_tool_has(&t, &key).await;
    Command::new("kill")
        .args(["-KILL", &first.child.id().to_string()])
        .status()
        .unwrap();
    let _ = pending.await;

    // The tool finishes its write; the lease runs out; the next gateway looks.
    let started = Instant::now();
    while t.exports_committed() == 0 {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the write never committed"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(400)).await;
    let second = Gateway::start(state.path(), &args);
    let settled = second
        .wait_for(&format!("/v1/calls/{id}"), |b| b["state"] != "in_flight")
        .await;
    assert_eq!(settled["state"], "succeeded", "{settled}");
    assert_eq!(t.exports_committed(), 1);
}

/// Sends `body` from a client that waits 200 ms for the answer, then goes.
async fn give_up_waiting(gw: &Gateway, body: &Value) {
    let impatient = reqwest::Client::builder()
        .timeout(Duration::from_millis(200))
        .build()
        .unwrap();
    let gave_up = impatient
        .post(format!("{}/v1/calls", gw.url))
        .json(body)
        .send()
        .await;
    assert!(gave_up.is_err(), "the client stopped waiting");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopping_gateway_finishes_the_calls_whose_clients_left() {
    let t = tools(&["exports:slow:1.0"], Duration::from_millis(1000)).await;
    let state = tempfile::tempdir().unwrap();
    let mut gw = Gateway::start(state.path(), &["--lease-ms", "60000"]);
    let body = keyed(export(&t), "left-then-stopped");
    give_up_waiting(&gw, &body).await;
    // SIGTERM with no connection open: the gateway still waits for the call.
    let status = Command::new("kill")
        .args(["-TERM", &gw.child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let exited = gw.child.wait().unwrap();
    assert!(exited.success(), "{exited}");
    assert_eq!(t.exports_committed(), 1);
    // The next gateway on the same journal has the finished record (a call
    // left in flight would be refused with 409 for the 60 s lease).
    let next = Gateway::start(state.path(), &["--lease-ms", "60000"]);
    let (status, record) = next.post(&body).await;
    assert_eq!(status, 200, "{record}");
    assert_eq!(record["replayed"], true);
    assert_eq!(record["outcome"], "succeeded", "{record}");
    assert_eq!(t.exports_committed(), 1);
}
