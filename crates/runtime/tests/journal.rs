//! One trait test suite, run against SQLite (file and memory) and — when
//! `RECOURSE_TEST_POSTGRES_URL` is set — PostgreSQL. Unset, that test is
//! skipped with a notice on stderr (a failure under `RECOURSE_TEST_NO_SKIP=1`);
//! set but unreachable, it fails.

use std::sync::Arc;

use recourse::{AttemptResult, CallState, Journal, NewCall, PostgresJournal, SqliteJournal};
use serde_json::json;

fn new_call(id: &str) -> NewCall {
    NewCall {
        call_id: id.to_owned(),
        target: "http://127.0.0.1:1/api/exports".to_owned(),
        capability: Some("exports.create".to_owned()),
        idempotency_key: Some(format!("key-{id}")),
        reconcile: Some("http://127.0.0.1:1/api/exports/{operation_id}".to_owned()),
        payload: json!({"source_id": "sales-2024", "format": "pdf"}),
    }
}

async fn suite(journal: Arc<dyn Journal>) {
    // A call is in flight from before its first dispatch.
    journal.begin_call(&new_call("c1")).await.unwrap();
    journal.begin_call(&new_call("c2")).await.unwrap();
    let in_flight = journal.list(Some(CallState::InFlight)).await.unwrap();
    assert_eq!(in_flight.len(), 2);
    let c1 = in_flight.iter().find(|e| e.call_id == "c1").unwrap();
    assert_eq!(c1.idempotency_key.as_deref(), Some("key-c1"));
    assert_eq!(c1.attempts, 0);
    assert_eq!(c1.payload["source_id"], "sales-2024");
    assert!(c1.started_at.ends_with('Z'));

    // Attempts are counted as they begin.
    journal
        .begin_attempt("c1", 1, &json!({"a": 1}))
        .await
        .unwrap();
    let result = AttemptResult {
        status: Some(503),
        transport_error: None,
        action: recourse::Action::RetrySame {
            wait: std::time::Duration::from_millis(10),
            cause: recourse::WaitCause::Backoff,
        },
    };
    journal.finish_attempt("c1", 1, &result).await.unwrap();
    journal
        .begin_attempt("c1", 2, &json!({"a": 1}))
        .await
        .unwrap();
    let all = journal.list(None).await.unwrap();
    assert_eq!(all.iter().find(|e| e.call_id == "c1").unwrap().attempts, 2);

    // Completion moves the call out of in_flight and keeps the operation id.
    journal
        .set_state("c1", CallState::Succeeded, Some("op-9"))
        .await
        .unwrap();
    let done = journal.list(Some(CallState::Succeeded)).await.unwrap();
    assert_eq!(done.len(), 1);
    assert_eq!(done[0].operation_id.as_deref(), Some("op-9"));
    let in_flight = journal.list(Some(CallState::InFlight)).await.unwrap();
    assert_eq!(
        in_flight
            .iter()
            .map(|e| e.call_id.as_str())
            .collect::<Vec<_>>(),
        vec!["c2"]
    );

    // A later state change without an operation id keeps the earlier one.
    journal
        .set_state("c1", CallState::Unknown, None)
        .await
        .unwrap();
    let unknown = journal.list(Some(CallState::Unknown)).await.unwrap();
    assert_eq!(unknown[0].operation_id.as_deref(), Some("op-9"));

    // Recording the same call twice is an error, not a panic or a silent overwrite.
    assert!(journal.begin_call(&new_call("c1")).await.is_err());
    assert!(journal.begin_attempt("c1", 2, &json!({})).await.is_err());
}

#[tokio::test]
async fn sqlite_in_memory_passes_the_suite() {
    suite(Arc::new(SqliteJournal::in_memory().unwrap())).await;
}

#[tokio::test]
async fn sqlite_file_passes_the_suite_and_survives_reopening() {
    let dir = std::env::temp_dir().join(format!("recourse-journal-{}", uuid::Uuid::now_v7()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("recourse.db");
    suite(Arc::new(SqliteJournal::open(&path).unwrap())).await;
    let reopened = SqliteJournal::open(&path).unwrap();
    let all = reopened.list(None).await.unwrap();
    assert_eq!(all.len(), 2, "migrations are idempotent and data persists");
    std::fs::remove_dir_all(dir).unwrap();
}

#[tokio::test]
async fn postgres_passes_the_suite_when_configured() {
    let Some(url) = recourse_test_support::service_var("RECOURSE_TEST_POSTGRES_URL") else {
        return;
    };
    // A private schema per run, so runs never see each other's rows.
    let schema = format!("recourse_test_{}", uuid::Uuid::now_v7().simple());
    let (admin, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap_or_else(|e| panic!("RECOURSE_TEST_POSTGRES_URL is set but unreachable: {e}"));
    tokio::spawn(conn);
    admin
        .batch_execute(&format!("CREATE SCHEMA {schema}"))
        .await
        .unwrap();
    let sep = if url.contains('?') { '&' } else { '?' };
    let scoped = format!("{url}{sep}options=-csearch_path%3D{schema}");
    let journal = PostgresJournal::connect(&scoped).await.unwrap();
    suite(Arc::new(journal)).await;
    let again = PostgresJournal::connect(&scoped).await.unwrap();
    assert_eq!(
        again.list(None).await.unwrap().len(),
        2,
        "migrations are idempotent"
    );
    admin
        .batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
        .await
        .unwrap();
}
