//! What the executor writes to the journal of a call it records.

use std::sync::Arc;

use recourse::journal::SqliteJournal;
use recourse::{Call, Executor, HttpTransport, Journal, ManualClock, Outcome};
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
    // The payload is stored once, with the call: not in the attempts (each
    // sent it unchanged), not in the record — which reads back whole.
    let stored_payloads: u32 = db
        .query_row(
            "SELECT COUNT(*) FROM recourse_attempts WHERE call_id = ?1 AND payload IS NOT NULL",
            [&report.call_id],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(stored_payloads, 0);
    assert!(!record.contains(r#""payload""#), "{record}");
    let read = SqliteJournal::open(&path)
        .unwrap()
        .get(&report.call_id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        read.record_json(),
        serde_json::to_value(&report).unwrap(),
        "the journal keeps the record the caller got"
    );
    drop(attempts);
    drop(db);
    std::fs::remove_dir_all(dir).unwrap();
}

/// Bytes the SQLite journal holds per journaled write, for BENCHMARKS.md:
/// `cargo test --release -p recourse --test journal bytes_per_journaled_call -- --ignored --nocapture`.
/// Each call is a keyed export through the reference tools (one attempt,
/// succeeded), its payload a `note` of the given size; the figure is the
/// file's size after `VACUUM`, less the empty journal's, over the calls.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement: run by hand, figures in BENCHMARKS.md"]
async fn bytes_per_journaled_call() {
    const CALLS: usize = 200;
    let tools = spawn(ToolsConfig::default()).await.unwrap();
    for note in [0usize, 1024, 16 * 1024, 256 * 1024] {
        let dir = std::env::temp_dir().join(format!("recourse-bytes-{}", uuid::Uuid::now_v7()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("recourse.db");
        let journal = Arc::new(SqliteJournal::open(&path).unwrap());
        let size = |path: &std::path::Path| {
            let db = rusqlite::Connection::open(path).unwrap();
            db.execute_batch("PRAGMA wal_checkpoint(TRUNCATE); VACUUM;")
                .unwrap();
            std::fs::metadata(path).unwrap().len()
        };
        let empty = size(&path);
        let executor = Executor::builder(HttpTransport::builder().build().unwrap())
            .with_journal(Arc::clone(&journal) as Arc<dyn Journal>)
            .build();
        for i in 0..CALLS {
            let call = Call::builder(
                format!("{}/api/exports", tools.base_url()),
                json!({"source_id": "sales-2024", "format": "pdf", "note": "x".repeat(note)}),
            )
            .non_idempotent()
            .idempotency_key(format!("bytes-{note}-{i}"))
            .build()
            .unwrap();
            let report = executor.execute(call).await;
            assert!(
                matches!(report.outcome, Outcome::Succeeded { .. }),
                "{}",
                report.to_json()
            );
        }
        drop(executor);
        drop(journal);
        let per_call = (size(&path) - empty) / CALLS as u64;
        println!(
            "payload note {note:>6} B: {per_call:>7} B per journaled call ({:.2}x the payload)",
            per_call as f64 / (note + 60) as f64
        );
        std::fs::remove_dir_all(dir).unwrap();
    }
}
