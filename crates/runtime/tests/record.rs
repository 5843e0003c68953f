//! The call record as consumers see it: documented JSON fields, typed
//! events, and the executor details it reports (jitter, requests never sent).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use recourse::record::{Event, WaitCause};
use recourse::transport::{RawResponse, TransportFailureKind};
use recourse::{
    Call, Executor, ExecutorConfig, HttpTransport, InProcessTransport, ManualClock, StopReason,
};
use serde_json::{Value, json};

fn answer(status: u16, body: Value) -> RawResponse {
    RawResponse {
        status,
        headers: vec![("content-type".into(), "application/json".into())],
        body: body.to_string().into_bytes(),
        read: None,
    }
}

fn down() -> RawResponse {
    answer(
        503,
        json!({"success": false, "error": {"code": "DOWN", "message": "down", "category": "SERVICE_ERROR"}}),
    )
}

/// A tool that is down for the first `failures` requests of each call (by payload), then answers.
fn flaky(failures: usize) -> InProcessTransport {
    let seen: Arc<Mutex<Vec<Value>>> = Arc::default();
    InProcessTransport::new(move |request: recourse::transport::Request| {
        let mut seen = seen.lock().unwrap();
        seen.push(request.payload.clone());
        let n = seen.iter().filter(|p| **p == request.payload).count();
        let reply = if n <= failures {
            down()
        } else {
            answer(200, json!({"success": true, "data": {"ok": true}}))
        };
        async move { Ok(reply) }
    })
}

fn executor(transport: InProcessTransport, clock: &ManualClock) -> Executor {
    let config = ExecutorConfig {
        deadline: None,
        backoff_base: Duration::from_millis(1000),
        ..ExecutorConfig::default()
    };
    Executor::builder(transport)
        .with_config(config)
        .unwrap()
        .with_clock(Arc::new(clock.clone()))
        .with_jitter_seed(42)
        .without_retry_budget()
        .without_circuit_breakers()
        .build()
}

#[tokio::test]
async fn every_documented_field_keeps_its_name() {
    let clock = ManualClock::new();
    let exec = executor(flaky(1), &clock);
    let call = Call::builder("tool", json!({"i": 1})).build().unwrap();
    let r = exec.execute(call).await.to_json();
    for field in [
        "record_version",
        "call_id",
        "outcome",
        "data",
        "error",
        "reason",
        "reason_text",
        "http_calls",
        "llm_calls",
        "tokens",
        "llm_ms",
        "idempotency_key",
        "operation_id",
        "elapsed_ms",
        "attempts",
    ] {
        assert!(r.get(field).is_some(), "the record lacks {field}: {r:#}");
    }
    assert_eq!(r["record_version"], 1);
    let first = &r["attempts"][0];
    for field in [
        "n",
        "payload",
        "status",
        "transport_error",
        "category",
        "code",
        "retry_permission",
        "action",
        "wait_ms",
        "reason",
        "source",
        "timeout_ms",
        "events",
    ] {
        assert!(
            first.get(field).is_some(),
            "an attempt lacks {field}: {first:#}"
        );
    }
    assert_eq!(first["action"], "retry_same");
    assert_eq!(first["category"], "SERVICE_ERROR");
    assert!(first["wait_ms"].is_u64());
    assert_eq!(first["events"][0]["kind"], "waited");
    assert_eq!(first["events"][0]["cause"], "backoff");
}

#[tokio::test]
async fn each_call_draws_its_own_jitter_even_with_a_fixed_seed() {
    let clock = ManualClock::new();
    let exec = executor(flaky(3), &clock);
    let mut schedules = Vec::new();
    for i in 0..4 {
        let call = Call::builder("tool", json!({"i": i})).build().unwrap();
        let report = exec.execute(call).await;
        assert_eq!(report.outcome.name(), "succeeded");
        let waits: Vec<u64> = report
            .attempts
            .iter()
            .flat_map(|a| &a.events)
            .filter_map(|e| match e {
                Event::Waited {
                    ms,
                    cause: WaitCause::Backoff,
                } => Some(*ms),
                _ => None,
            })
            .collect();
        assert_eq!(waits.len(), 3);
        schedules.push(waits);
    }
    schedules.sort();
    schedules.dedup();
    assert_eq!(schedules.len(), 4, "identical schedules: {schedules:?}");

    // The same seed and order replay the same schedules.
    let again = executor(flaky(3), &ManualClock::new());
    let call = Call::builder("tool", json!({"i": 0})).build().unwrap();
    let replay = again.execute(call).await;
    let first: Vec<_> = replay.attempts.iter().filter_map(|a| a.wait_ms()).collect();
    let call = Call::builder("tool", json!({"i": 0})).build().unwrap();
    let original = executor(flaky(3), &ManualClock::new()).execute(call).await;
    let expected: Vec<_> = original
        .attempts
        .iter()
        .filter_map(|a| a.wait_ms())
        .collect();
    assert_eq!(first, expected);
}

#[tokio::test]
async fn a_request_that_cannot_be_built_is_never_sent() {
    // A tool name is not an HTTP target: the HTTP transport cannot build a request for it.
    let exec = Executor::builder(HttpTransport::builder().build().unwrap())
        .with_clock(Arc::new(ManualClock::new()))
        .build();
    let call = Call::builder("stock.quote", json!({"symbol": "TSLA"}))
        .non_idempotent()
        .build()
        .unwrap();
    let report = exec.execute(call).await;
    assert_eq!(report.outcome.reason(), Some(&StopReason::InvalidCall));
    assert_eq!(
        report.outcome.name(),
        "failed",
        "never unknown: nothing was sent"
    );
    assert_eq!(report.http_calls, 0);
    assert_eq!(report.attempts.len(), 1);
    let failure = report.attempts[0].transport_error.as_ref().unwrap();
    assert_eq!(failure.kind, TransportFailureKind::RequestNotBuilt);
}

#[tokio::test]
async fn coercion_is_the_default_admission_and_can_be_turned_off() {
    let sent: Arc<Mutex<Vec<Value>>> = Arc::default();
    let log = Arc::clone(&sent);
    let transport = InProcessTransport::new(move |request: recourse::transport::Request| {
        log.lock().unwrap().push(request.payload.clone());
        async move { Ok(answer(200, json!({"success": true, "data": 1}))) }
    });
    let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}}});
    let call = || {
        Call::builder("tool", json!({"n": "7"}))
            .schema(schema.clone())
            .build()
            .unwrap()
    };
    let coercing = Executor::builder(transport.clone()).build();
    let report = coercing.execute(call()).await;
    assert_eq!(
        report.attempts[0].source,
        recourse::record::PayloadSource::Coercion
    );
    let as_is = Executor::builder(transport).without_coercion().build();
    as_is.execute(call()).await;
    assert_eq!(*sent.lock().unwrap(), [json!({"n": 7}), json!({"n": "7"})]);
}
