//! The executor and a fleet-wide `SharedState`: the shared state decides
//! while it answers, the local budget and breakers whenever it does not, and
//! the local state is fed either way. A scripted shared state, no Redis.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use recourse::breaker::{BreakerState, CircuitBreakers};
use recourse::budget::RetryBudget;
use recourse::shared::{EndpointHealth, SharedMode, SharedState, SharedUnavailable};
use recourse::transport::{BoxFuture, RawResponse};
use recourse::{Call, Executor, ExecutorConfig, InProcessTransport, ManualClock};
use serde_json::json;

/// A shared state answering from a script; `None` answers are unavailable.
#[derive(Debug, Default)]
struct Scripted {
    admit: Option<bool>,
    withdraw: Option<bool>,
    deposits: AtomicU64,
    records: Mutex<Vec<EndpointHealth>>,
}

fn answer<T>(v: Option<T>) -> Result<T, SharedUnavailable> {
    v.ok_or(SharedUnavailable)
}

impl SharedState for Scripted {
    fn mode(&self) -> SharedMode {
        if self.admit.is_some() {
            SharedMode::Shared
        } else {
            SharedMode::Fallback
        }
    }

    fn deposit(&self) -> BoxFuture<'_, Result<(), SharedUnavailable>> {
        self.deposits.fetch_add(1, Ordering::SeqCst);
        Box::pin(async { Ok(()) })
    }

    fn withdraw(&self) -> BoxFuture<'_, Result<bool, SharedUnavailable>> {
        Box::pin(async { answer(self.withdraw) })
    }

    fn admit<'a>(&'a self, _: &'a str) -> BoxFuture<'a, Result<bool, SharedUnavailable>> {
        Box::pin(async { answer(self.admit) })
    }

    fn record<'a>(
        &'a self,
        _: &'a str,
        health: EndpointHealth,
    ) -> BoxFuture<'a, Result<(), SharedUnavailable>> {
        self.records.lock().unwrap().push(health);
        Box::pin(async { answer(self.admit.map(drop)) })
    }
}

/// A tool answering 503 to everything, and its dispatch count.
fn down() -> (InProcessTransport, Arc<AtomicU64>) {
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

struct Setup {
    exec: Executor,
    dispatches: Arc<AtomicU64>,
    budget: Arc<RetryBudget>,
    breakers: Arc<CircuitBreakers>,
}

fn setup(shared: Arc<Scripted>) -> Setup {
    let (transport, dispatches) = down();
    let clock = Arc::new(ManualClock::new());
    let budget = Arc::new(RetryBudget::with_clock(
        0.2,
        10.0,
        Duration::from_secs(10),
        clock.clone(),
    ));
    let breakers = Arc::new(CircuitBreakers::new(
        3,
        Duration::from_secs(5),
        clock.clone(),
    ));
    let config = ExecutorConfig {
        backoff_base: Duration::ZERO,
        ..ExecutorConfig::default()
    };
    let exec = Executor::builder(transport)
        .with_config(config)
        .unwrap()
        .with_clock(clock)
        .with_retry_budget(Arc::clone(&budget))
        .with_circuit_breakers(Arc::clone(&breakers))
        .with_shared_state(shared)
        .build();
    Setup {
        exec,
        dispatches,
        budget,
        breakers,
    }
}

fn call() -> Call {
    Call::builder("tool", json!({"q": 1}))
        .idempotent(true)
        .build()
        .unwrap()
}

#[tokio::test]
async fn an_open_fleet_breaker_stops_the_call_before_any_dispatch() {
    let shared = Arc::new(Scripted {
        admit: Some(false),
        withdraw: Some(true),
        ..Scripted::default()
    });
    let s = setup(Arc::clone(&shared));
    let report = s.exec.execute(call()).await;
    assert_eq!(report.outcome.name(), "failed");
    assert_eq!(
        report.outcome.reason().map(|r| r.code()),
        Some("circuit_open")
    );
    assert_eq!(s.dispatches.load(Ordering::SeqCst), 0);
    assert_eq!(
        s.breakers.state("tool"),
        BreakerState::Closed { failures: 0 },
        "the local breaker would have let it go: the fleet's decided"
    );
    assert_eq!(shared.deposits.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_refusal_by_the_fleet_budget_stops_resends_and_is_counted_here() {
    let shared = Arc::new(Scripted {
        admit: Some(true),
        withdraw: Some(false),
        ..Scripted::default()
    });
    let s = setup(Arc::clone(&shared));
    let report = s.exec.execute(call()).await;
    assert_eq!(
        report.outcome.reason().map(|r| r.code()),
        Some("retry_budget_exhausted"),
        "the local floor had tokens: the fleet's budget decided"
    );
    assert_eq!(s.dispatches.load(Ordering::SeqCst), 1);
    assert_eq!(s.budget.exhausted_count(), 1);
    assert_eq!(
        *shared.records.lock().unwrap(),
        vec![EndpointHealth::TransientFailure]
    );
    assert_eq!(
        s.breakers.state("tool"),
        BreakerState::Closed { failures: 1 },
        "the local breaker is fed while the fleet decides"
    );
}

#[tokio::test]
async fn an_unavailable_shared_state_leaves_every_decision_to_local_state() {
    let shared = Arc::new(Scripted::default());
    assert_eq!(shared.mode(), SharedMode::Fallback);
    let s = setup(Arc::clone(&shared));
    let first = s.exec.execute(call()).await;
    assert_eq!(
        first.outcome.reason().map(|r| r.code()),
        Some("circuit_open"),
        "three local failures open the local breaker (threshold 3)"
    );
    assert_eq!(s.dispatches.load(Ordering::SeqCst), 3);
    let second = s.exec.execute(call()).await;
    assert_eq!(
        second.outcome.reason().map(|r| r.code()),
        Some("circuit_open")
    );
    assert_eq!(
        s.dispatches.load(Ordering::SeqCst),
        3,
        "the local breaker holds"
    );
}
