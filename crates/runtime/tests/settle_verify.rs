//! Settling journaled calls by reading back after their process died: the
//! journal keeps the verification (never headers), and `settle_with` reads
//! it back with the credentials the caller gives it now. The templates the
//! journal keeps — a lookup's `?key={key}`, a read's `{"token":
//! "{{payload.order_id}}"}` — keep their placeholders, and the sweeper
//! settles through them.

use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use recourse::journal::{CallState, NewCall, SettleOptions, SqliteJournal, settle_with};
use recourse::{Call, Executor, HttpTransport, Journal, ManualClock, VerifySpec};
use recourse_reference_tools::{ToolsConfig, spawn};
use serde_json::{Value, json};

const LEASE: Duration = Duration::from_millis(1);

/// A call that was recorded and dispatched once, and whose process died.
async fn died(journal: &SqliteJournal, id: &str, target: &str, payload: Value, spec: &VerifySpec) {
    let call = NewCall {
        call_id: id.to_owned(),
        target: target.to_owned(),
        capability: None,
        idempotency_key: Some(format!("key-{id}")),
        reconcile: None,
        verification: Some(serde_json::to_value(spec).unwrap()),
        payload: payload.clone(),
        owner: "a-process-that-died".to_owned(),
        lease: LEASE,
        caller: None,
    };
    journal.begin_call(&call).await.unwrap();
    journal.begin_attempt(id, 1, Some(&payload)).await.unwrap();
    tokio::time::sleep(Duration::from_millis(20)).await;
}

async fn entry(journal: &SqliteJournal, id: &str) -> recourse::journal::JournalEntry {
    journal.get(id).await.unwrap().unwrap()
}

#[tokio::test]
async fn an_interrupted_export_is_settled_by_reading_it_back() {
    let tools = spawn(ToolsConfig::default()).await.unwrap();
    let journal = SqliteJournal::in_memory().unwrap();
    let spec = VerifySpec::url(format!("{}/api/exports/lookup", tools.base_url()))
        .args(json!({"source_id": "{{payload.source_id}}", "format": "{{payload.format}}"}))
        .expect("/latest exists");
    let target = format!("{}/api/exports", tools.base_url());
    let written = json!({"source_id": "inventory", "format": "csv"});
    died(&journal, "c-written", &target, written.clone(), &spec).await;
    reqwest::Client::new()
        .post(&target)
        .json(&written)
        .send()
        .await
        .unwrap();
    let lost = json!({"source_id": "inventory", "format": "pdf"});
    died(&journal, "c-lost", &target, lost, &spec).await;

    let options = SettleOptions::new(Duration::from_secs(30));
    let s = settle_with(&journal, &entry(&journal, "c-written").await, &options)
        .await
        .unwrap();
    assert_eq!(
        (s.from, s.state),
        (CallState::InFlight, CallState::Succeeded),
        "{}",
        s.note
    );
    assert!(s.note.starts_with("verified"), "{}", s.note);
    let s = settle_with(&journal, &entry(&journal, "c-lost").await, &options)
        .await
        .unwrap();
    assert_eq!(s.state, CallState::Failed, "{}", s.note);
    assert!(s.note.contains("not committed"), "{}", s.note);
    assert_eq!(tools.exports_committed(), 1, "a settler never writes");
}

#[tokio::test]
async fn the_credentials_a_read_needs_come_from_the_settler_never_the_journal() {
    let app = axum::Router::new().route(
        "/orders/get",
        post(|headers: HeaderMap, Json(_): Json<Value>| async move {
            if headers.get("authorization").and_then(|v| v.to_str().ok()) != Some("Bearer t") {
                let error = json!({"success": false, "error": {"code": "NO_TOKEN", "message": "token", "category": "AUTH_ERROR"}});
                return (StatusCode::UNAUTHORIZED, Json(error));
            }
            (StatusCode::OK, Json(json!({"success": true, "data": {"status": "cancelled"}})))
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });

    let journal = SqliteJournal::in_memory().unwrap();
    let spec = VerifySpec::url(format!("{base}/orders/get"))
        .args(json!({"order_id": "{{payload.order_id}}"}))
        .expect(r#"/status == "cancelled""#);
    died(
        &journal,
        "c1",
        &format!("{base}/orders/cancel"),
        json!({"order_id": "W7"}),
        &spec,
    )
    .await;

    let bare = SettleOptions::new(LEASE);
    let s = settle_with(&journal, &entry(&journal, "c1").await, &bare)
        .await
        .unwrap();
    assert_eq!(s.state, CallState::Unknown, "{}", s.note);
    assert!(s.note.contains("401"), "{}", s.note);
    tokio::time::sleep(Duration::from_millis(20)).await;
    let with_token = SettleOptions::new(LEASE)
        .with_header("Authorization", "Bearer t")
        .unwrap();
    let s = settle_with(&journal, &entry(&journal, "c1").await, &with_token)
        .await
        .unwrap();
    assert_eq!(
        (s.from, s.state),
        (CallState::Unknown, CallState::Succeeded),
        "{}",
        s.note
    );
}

#[tokio::test]
async fn a_tool_read_without_its_server_cannot_tell() {
    let journal = SqliteJournal::in_memory().unwrap();
    let spec = VerifySpec::tool("get_order").expect(r#"/status == "cancelled""#);
    died(
        &journal,
        "c1",
        "cancel_order",
        json!({"order_id": "W7"}),
        &spec,
    )
    .await;
    let s = settle_with(
        &journal,
        &entry(&journal, "c1").await,
        &SettleOptions::new(LEASE),
    )
    .await
    .unwrap();
    assert_eq!(s.state, CallState::Unknown);
    assert!(s.note.contains("--mcp-command"), "{}", s.note);
}

#[tokio::test]
async fn the_executor_journals_the_spec_without_headers() {
    let tools = spawn(ToolsConfig::default()).await.unwrap();
    let journal = Arc::new(SqliteJournal::in_memory().unwrap());
    let executor = Executor::builder(HttpTransport::builder().build().unwrap())
        .with_clock(Arc::new(ManualClock::new()))
        .with_journal(Arc::clone(&journal) as Arc<dyn Journal>)
        .build();
    let spec = VerifySpec::url(format!("{}/api/exports/lookup", tools.base_url()))
        .args(json!({"source_id": "{{payload.source_id}}", "format": "{{payload.format}}"}))
        .expect("/latest exists")
        .always();
    let call = Call::builder(
        format!("{}/api/exports", tools.base_url()),
        json!({"source_id": "inventory", "format": "csv"}),
    )
    .non_idempotent()
    .header("Authorization", "Bearer s3cret")
    .verify(spec.clone())
    .build()
    .unwrap();
    let report = executor.execute(call).await;
    assert_eq!(report.outcome.name(), "succeeded", "{}", report.to_json());
    let kept = entry(&journal, &report.call_id).await;
    assert_eq!(
        kept.declared.verification,
        Some(serde_json::to_value(&spec).unwrap())
    );
    assert!(
        !kept
            .declared
            .verification
            .unwrap()
            .to_string()
            .contains("s3cret")
    );
}

/// A lookup server that answers "pending, look again in 2 s" `pending`
/// times, then "committed".
async fn pending_then_committed(pending: usize) -> String {
    let asked = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let app = axum::Router::new().route(
        "/exports/{key}",
        axum::routing::get(move || {
            let n = asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            async move {
                let state = if n < pending { "pending" } else { "committed" };
                (
                    [("retry-after", "2")],
                    Json(
                        json!({"success": true, "data": {"state": state, "result": {"id": "e-1"}}}),
                    ),
                )
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    base
}

/// A write recorded and dispatched once, its lookup at `base`, whose process died.
async fn died_looking_up(journal: &SqliteJournal, id: &str, base: &str) {
    let call = NewCall {
        call_id: id.to_owned(),
        target: format!("{base}/exports"),
        capability: None,
        idempotency_key: Some(format!("key-{id}")),
        reconcile: Some(format!("{base}/exports/{{key}}")),
        verification: None,
        payload: json!({"format": "csv"}),
        owner: "a-process-that-died".to_owned(),
        lease: LEASE,
        caller: None,
    };
    journal.begin_call(&call).await.unwrap();
    journal
        .begin_attempt(id, 1, Some(&call.payload))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(20)).await;
}

#[tokio::test]
async fn a_pending_lookup_is_waited_for_on_the_settlers_clock() {
    let base = pending_then_committed(2).await;
    let journal = SqliteJournal::in_memory().unwrap();
    died_looking_up(&journal, "c-pending", &base).await;

    let clock = ManualClock::new();
    let options = SettleOptions::new(Duration::from_secs(30)).with_clock(Arc::new(clock.clone()));
    let started = std::time::Instant::now();
    let s = settle_with(&journal, &entry(&journal, "c-pending").await, &options)
        .await
        .unwrap();
    assert_eq!(s.state, CallState::Succeeded, "{}", s.note);
    assert_eq!(
        clock.sleeps(),
        vec![Duration::from_secs(2); 2],
        "each pending answer's wait, on the injected clock"
    );
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "no real time was slept"
    );
}

#[tokio::test]
async fn a_write_pending_past_the_settlers_lease_stays_unknown() {
    let base = pending_then_committed(usize::MAX).await;
    let journal = SqliteJournal::in_memory().unwrap();
    died_looking_up(&journal, "c-slow", &base).await;

    let clock = ManualClock::new();
    let options = SettleOptions::new(Duration::from_secs(5)).with_clock(Arc::new(clock.clone()));
    let s = settle_with(&journal, &entry(&journal, "c-slow").await, &options)
        .await
        .unwrap();
    assert_eq!(s.state, CallState::Unknown, "{}", s.note);
    assert_eq!(s.note, "still pending");
    assert_eq!(
        clock.sleeps(),
        vec![Duration::from_secs(2); 2],
        "a third wait of 2 s would end past the 5 s lease"
    );
}

// ---------------------------------------------- templates kept at rest

/// How long the calls below are leased: renewed while their process runs,
/// run out soon after it dies.
const SHORT_LEASE: Duration = Duration::from_millis(300);

/// Runs `call` through an executor journaling in `journal` until its first
/// attempt is recorded, then stops it as a process that died would (its
/// lease no longer renewed), and waits until the lease has run out.
/// (`reached` says when the tool has the write: the run is stopped only then,
/// for a test whose tool must finish it.)
async fn die_mid_call(
    journal: &Arc<SqliteJournal>,
    call: Call,
    reached: impl Fn() -> bool,
) -> String {
    let config = recourse::ExecutorConfig {
        lease: SHORT_LEASE,
        ..recourse::ExecutorConfig::default()
    };
    let executor = Executor::builder(HttpTransport::builder().build().unwrap())
        .with_config(config)
        .unwrap()
        .with_journal(Arc::clone(journal) as Arc<dyn Journal>)
        .build();
    let running = tokio::spawn(async move { executor.execute(call).await });
    let query = recourse::journal::ListQuery::default();
    let started = std::time::Instant::now();
    let id = loop {
        let listed = journal.list(&query).await.unwrap();
        if let Some(e) = listed.iter().find(|e| e.attempts > 0) {
            break e.call_id.clone();
        }
        assert!(!running.is_finished(), "the call ended: it was to hang");
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "never journaled"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    // An attempt is journaled before it is sent: stop the run once the
    // tool has it, not before.
    while !reached() {
        assert!(started.elapsed() < Duration::from_secs(10), "never sent");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    running.abort();
    // Gone for good — its lease keeper with it — before the lease is read.
    let _ = running.await;
    while entry(journal, &id)
        .await
        .is_leased(std::time::SystemTime::now())
    {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    id
}

/// A write that never answers; reads of what it wrote find `token`.
async fn hanging_orders() -> String {
    let app = axum::Router::new()
        .route(
            "/orders/cancel",
            post(|Json(_): Json<Value>| std::future::pending::<Json<Value>>()),
        )
        .route(
            "/orders/get",
            post(|Json(read): Json<Value>| async move {
                let status = if read["token"] == "W7" {
                    "cancelled"
                } else {
                    "unknown order"
                };
                Json(json!({"success": true, "data": {"status": status}}))
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    base
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sweeper_looks_up_through_a_placeholder_under_a_credential_name() {
    let slow = ToolsConfig::default()
        .with_fault("exports:slow".parse().unwrap())
        .with_slow_latency(Duration::from_millis(200));
    let tools = spawn(slow).await.unwrap();
    let lookup = recourse_test_support::KeyLookup::start(&tools).await;
    lookup.switch_on();
    let journal = Arc::new(SqliteJournal::in_memory().unwrap());
    let call = Call::builder(
        format!("{}/api/exports", tools.base_url()),
        json!({"source_id": "sales-2024", "format": "pdf"}),
    )
    .non_idempotent()
    .reconcile_url(&lookup.template)
    .unwrap()
    .build()
    .unwrap();
    // Stopped once the tool has the write (it answers 200 ms later).
    let id = die_mid_call(&journal, call, || tools.exports_started() > 0).await;
    // The tool finishes the write its caller no longer waits for.
    let started = std::time::Instant::now();
    while tools.exports_committed() == 0 {
        assert!(started.elapsed() < Duration::from_secs(10), "never written");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    let settled =
        recourse::journal::settle_expired(journal.as_ref(), &SettleOptions::new(LEASE), &|_| {})
            .await;
    let after = entry(&journal, &id).await;
    assert_eq!((settled, after.state), (1, CallState::Succeeded));
    assert_eq!(after.record_json()["settlement"]["by"], "lookup");
    assert_eq!(
        after.declared.reconcile.as_deref(),
        Some(lookup.template.as_str())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sweeper_reads_back_through_a_reference_under_a_credential_name() {
    let base = hanging_orders().await;
    let journal = Arc::new(SqliteJournal::in_memory().unwrap());
    let spec = VerifySpec::url(format!("{base}/orders/get"))
        .args(json!({"token": "{{payload.order_id}}"}))
        .expect(r#"/status == "cancelled""#)
        .after_only();
    let call = Call::builder(format!("{base}/orders/cancel"), json!({"order_id": "W7"}))
        .non_idempotent()
        .verify(spec.clone())
        .build()
        .unwrap();
    let id = die_mid_call(&journal, call, || true).await;

    let settled =
        recourse::journal::settle_expired(journal.as_ref(), &SettleOptions::new(LEASE), &|_| {})
            .await;
    let after = entry(&journal, &id).await;
    assert_eq!((settled, after.state), (1, CallState::Succeeded));
    assert_eq!(
        after.declared.verification,
        Some(serde_json::to_value(&spec).unwrap())
    );
}

/// A read-back whose arguments reach a value the journal keeps redacted (a
/// credential in the payload) cannot be filled from the journal: the sweeper
/// leaves the call unknown rather than read with `[REDACTED]` in place of
/// the value — which the tool would answer "no such order", and the call
/// would be settled as not written when it was.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sweeper_never_reads_back_with_a_redacted_value() {
    let app = axum::Router::new()
        .route(
            "/orders/cancel",
            post(|Json(_): Json<Value>| std::future::pending::<Json<Value>>()),
        )
        .route(
            "/orders/get",
            post(|Json(read): Json<Value>| async move {
                let mine = read["order"] == "W7" && read["token"] == "t-live-1234567890";
                let status = if mine { "cancelled" } else { "unknown order" };
                Json(json!({"success": true, "data": {"status": status}}))
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    let journal = Arc::new(SqliteJournal::in_memory().unwrap());
    let spec = VerifySpec::url(format!("{base}/orders/get"))
        .args(json!({"order": "{{payload.order_id}}", "token": "{{payload.token}}"}))
        .expect(r#"/status == "cancelled""#)
        .after_only();
    let call = Call::builder(
        format!("{base}/orders/cancel"),
        json!({"order_id": "W7", "token": "t-live-1234567890"}),
    )
    .non_idempotent()
    .verify(spec)
    .build()
    .unwrap();
    let id = die_mid_call(&journal, call, || true).await;
    assert_eq!(entry(&journal, &id).await.payload["token"], "[REDACTED]");

    let lines = std::sync::Mutex::new(Vec::new());
    recourse::journal::settle_expired(journal.as_ref(), &SettleOptions::new(LEASE), &|line| {
        lines.lock().unwrap().push(line)
    })
    .await;
    let after = entry(&journal, &id).await;
    assert_ne!(
        after.state,
        CallState::Failed,
        "{:?}",
        lines.lock().unwrap()
    );
    assert!(
        lines
            .lock()
            .unwrap()
            .iter()
            .any(|l| l.contains("keeps redacted")),
        "{:?}",
        lines.lock().unwrap()
    );
}
