//! A journal that fails mid-call, as a database whose connections are cut
//! does (`FaultyJournal` over SQLite), under a caller's key: a call the
//! journal stopped before it sent anything runs when sent again; a call
//! whose tool answered is journaled as answered, its outcome written once
//! the journal takes it; a run whose attempt another run recorded writes
//! nothing over that run's call.

use std::sync::Arc;
use std::time::{Duration, Instant};

use recourse::journal::{CallState, Journal, NewCall, SqliteJournal};
use recourse::keyed::Keyed;
use recourse::record::SettledBy;
use recourse::{Call, Executor, HttpTransport};
use recourse_reference_tools::{RunningTools, ToolsConfig, spawn};
use recourse_test_support::FaultyJournal;
use serde_json::json;

/// A digest standing for the export's request: the same for every send of it.
const REQUEST: &str = "the-export-request";

fn export(tools: &RunningTools, key: &str) -> Call {
    Call::builder(
        format!("{}/api/exports", tools.base_url()),
        json!({"source_id": "sales-2024", "format": "pdf"}),
    )
    .idempotency_key(key)
    .build()
    .unwrap()
}

fn executor(journal: Arc<dyn Journal>) -> Executor {
    Executor::builder(HttpTransport::builder().build().unwrap())
        .with_journal(journal)
        .build()
}

fn sqlite() -> Arc<dyn Journal> {
    Arc::new(SqliteJournal::in_memory().unwrap())
}

/// The record of the first attempt committed, its answer lost: the run
/// stops before sending it. Sent again under its key, the call runs — it
/// is not replayed as the journal's failure for as long as the key is kept.
#[tokio::test]
async fn a_keyed_write_stopped_by_the_journal_before_sending_runs_when_sent_again() {
    let tools = spawn(ToolsConfig::default()).await.unwrap();
    let store = sqlite();
    let journal = Arc::new(FaultyJournal::new(Arc::clone(&store)).losing_attempt_answers(1));
    let executor = executor(journal);

    let Ok(Keyed::Ran(first)) = executor.execute_keyed(export(&tools, "k-1"), REQUEST).await else {
        panic!("the first request runs");
    };
    assert!(first.is_unsent_for_the_journal(), "{}", first.to_json());
    assert_eq!(tools.exports_committed(), 0, "nothing was sent");
    let entry = store.get(&first.call_id).await.unwrap().unwrap();
    assert_eq!(entry.state, CallState::Failed);
    assert_eq!(
        entry.ended.settled_by,
        Some(SettledBy::Journal),
        "nothing was sent"
    );
    assert_eq!(entry.attempts, 1, "the attempt's record committed");

    let Ok(Keyed::Ran(second)) = executor.execute_keyed(export(&tools, "k-1"), REQUEST).await
    else {
        panic!("sent again, it runs")
    };
    assert_eq!(second.outcome.name(), "succeeded", "{}", second.to_json());
    assert_eq!(second.call_id, first.call_id, "under the key's call");
    assert_eq!(tools.exports_committed(), 1);
    let entry = store.get(&first.call_id).await.unwrap().unwrap();
    assert_eq!((entry.state, entry.attempts), (CallState::Succeeded, 1));

    let Ok(Keyed::Replayed { state, .. }) =
        executor.execute_keyed(export(&tools, "k-1"), REQUEST).await
    else {
        panic!("then it is replayed")
    };
    assert_eq!(state, CallState::Succeeded);
    assert_eq!(tools.exports_committed(), 1, "once");
}

/// The journal does not take the outcome while the client waits: it is
/// answered `succeeded`, the call held in flight (a resend is told it is in
/// progress, never `unknown`), and once the journal takes writes again the
/// outcome is written — not left for a sweeper to settle as `unknown`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_whose_tool_answered_is_journaled_as_answered_once_the_journal_takes_it() {
    let tools = spawn(ToolsConfig::default()).await.unwrap();
    let store = sqlite();
    let journal = Arc::new(FaultyJournal::new(Arc::clone(&store)).failing_finishes(u32::MAX));
    let executor = executor(Arc::clone(&journal) as Arc<dyn Journal>);

    let Ok(Keyed::Ran(answered)) = executor.execute_keyed(export(&tools, "k-2"), REQUEST).await
    else {
        panic!("it runs");
    };
    assert_eq!(
        answered.outcome.name(),
        "succeeded",
        "{}",
        answered.to_json()
    );
    let entry = store.get(&answered.call_id).await.unwrap().unwrap();
    assert_eq!(entry.state, CallState::InFlight, "not written yet");
    let resent = executor.execute_keyed(export(&tools, "k-2"), REQUEST).await;
    assert!(matches!(resent, Ok(Keyed::InProgress { .. })), "{resent:?}");

    journal.finish_again();
    let started = Instant::now();
    let entry = loop {
        let entry = store.get(&answered.call_id).await.unwrap().unwrap();
        if entry.state != CallState::InFlight || started.elapsed() > Duration::from_secs(20) {
            break entry;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(entry.state, CallState::Succeeded, "journaled as answered");
    assert_eq!(entry.lease.until, None, "its lease let go");
    let Ok(Keyed::Replayed { state, .. }) =
        executor.execute_keyed(export(&tools, "k-2"), REQUEST).await
    else {
        panic!("then it is replayed")
    };
    assert_eq!(state, CallState::Succeeded);
    assert_eq!(tools.exports_committed(), 1);
}

/// Another run of the call recorded its first attempt (it took the call
/// over while this run's lease had run out): this run sends nothing, and
/// writes nothing over the other's call.
#[tokio::test]
async fn a_run_whose_attempt_another_run_recorded_leaves_the_call_alone() {
    let tools = spawn(ToolsConfig::default()).await.unwrap();
    let store = sqlite();
    // The other run: the call begun, its first attempt recorded.
    let url = format!("{}/api/exports", tools.base_url());
    let payload = json!({"source_id": "sales-2024", "format": "pdf"});
    let begun = NewCall {
        call_id: "c-3".to_owned(),
        target: url.clone(),
        capability: None,
        idempotency_key: Some("k-3".to_owned()),
        reconcile: None,
        verification: None,
        payload: payload.clone(),
        owner: "another-process".to_owned(),
        lease: Duration::from_secs(60),
        caller: None,
    };
    store.begin_call(&begun).await.unwrap();
    store.begin_attempt("c-3", 1, None).await.unwrap();

    let call = Call::builder(url, payload).call_id("c-3").build().unwrap();
    let report = executor(Arc::clone(&store)).execute(call).await;
    assert!(report.is_unsent_for_the_journal(), "{}", report.to_json());
    assert_eq!(tools.exports_committed(), 0, "nothing sent");
    let entry = store.get("c-3").await.unwrap().unwrap();
    assert_eq!(
        (entry.state, entry.attempts, entry.ended.record),
        (CallState::InFlight, 1, None),
        "the other run's call, as it left it"
    );
}
