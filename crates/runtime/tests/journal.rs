//! What the executor writes to the journal of a call it records.

use std::sync::Arc;

use recourse::journal::SqliteJournal;
use recourse::{Call, Executor, HttpTransport, Journal, ManualClock};
use recourse_reference_tools::{ToolsConfig, spawn};
use serde_json::json;

/// An attempt's row in the journal.
struct AttemptRow {
    n: u32,
    status: Option<u16>,
    action: Option<String>,
    finished_at: Option<String>,
}

/// What the executor journals of a call it records: every attempt's end
/// (the last one's in the same commit as the outcome) and the outcome with
/// the record the caller got.
#[tokio::test]
async fn the_executor_journals_each_attempts_end_and_the_outcome() {
    let tools = spawn(
        ToolsConfig::default()
            .with_seed(1)
            .with_fault("stock:unavailable:1.0".parse().unwrap()),
    )
    .await
    .unwrap();
    let dir = std::env::temp_dir().join(format!("recourse-journal-{}", uuid::Uuid::now_v7()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("recourse.db");
    let journal = Arc::new(SqliteJournal::open(&path).unwrap());
    let executor = Executor::builder(HttpTransport::builder().build().unwrap())
        .with_clock(Arc::new(ManualClock::new()))
        .with_journal(journal as Arc<dyn Journal>)
        .build();
    let call = Call::builder(
        format!("{}/api/stock/quote", tools.base_url()),
        json!({"symbol": "TSLA"}),
    )
    .idempotency_key("quote-1")
    .max_retries(2)
    .build()
    .unwrap();
    let report = executor.execute(call).await;
    assert_eq!(report.attempts.len(), 3, "{}", report.to_json());

    let db = rusqlite::Connection::open(&path).unwrap();
    let mut attempts = db
        .prepare("SELECT n, status, action, finished_at FROM recourse_attempts WHERE call_id = ?1 ORDER BY n")
        .unwrap();
    let rows: Vec<AttemptRow> = attempts
        .query_map([&report.call_id], |r| {
            Ok(AttemptRow {
                n: r.get(0)?,
                status: r.get(1)?,
                action: r.get(2)?,
                finished_at: r.get(3)?,
            })
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(rows.len(), 3);
    for (row, attempt) in rows.iter().zip(&report.attempts) {
        assert_eq!(row.status, attempt.status, "attempt {}", row.n);
        assert_eq!(
            row.action.as_deref(),
            Some(attempt.action.name()),
            "attempt {}",
            row.n
        );
        assert!(row.finished_at.is_some(), "attempt {} has no end", row.n);
    }
    let (state, record, lease): (String, String, Option<String>) = db
        .query_row(
            "SELECT state, record, lease_until FROM recourse_calls WHERE call_id = ?1",
            [&report.call_id],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    assert_eq!(state, "failed");
    assert_eq!(lease, None, "the lease is released");
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&record).unwrap(),
        serde_json::to_value(&report).unwrap(),
        "the journal keeps the record the caller got"
    );
    drop(attempts);
    drop(db);
    std::fs::remove_dir_all(dir).unwrap();
}
