//! A `recourse call` killed mid-call (SIGKILL) loses nothing and writes nothing twice:
//! the journal shows the call in flight with its key, and `journal reconcile`
//! settles it through the export lookup.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use recourse::Journal;
use recourse::journal::{CallState, SqliteJournal};
use recourse_reference_tools::{RunningTools, ToolsConfig, spawn};
use serde_json::Value;

const LATENCY: Duration = Duration::from_millis(300);
/// The call's lease: renewed while it runs, expired soon after it is killed.
const LEASE_MS: u64 = 600;

async fn slow_exports() -> RunningTools {
    let config = ToolsConfig::default()
        .with_fault("exports:slow".parse().unwrap())
        .with_slow_latency(LATENCY);
    spawn(config).await.unwrap()
}

fn temp_journal() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("recourse-crash-{}", uuid::Uuid::now_v7()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("journal.db")
}

fn start_call(tools: &RunningTools, journal: &Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_recourse"))
        .args(["call", &format!("{}/api/exports", tools.base_url())])
        .args([
            "--payload",
            r#"{"source_id":"sales-2024","format":"csv"}"#,
            "--non-idempotent",
        ])
        .args([
            "--reconcile",
            &format!("{}/api/exports/{{operation_id}}", tools.base_url()),
        ])
        .args(["--journal", journal.to_str().unwrap(), "--json"])
        .args(["--lease-ms", &LEASE_MS.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

fn recourse(args: &[&str]) -> (i32, Value) {
    let out = Command::new(env!("CARGO_BIN_EXE_recourse"))
        .args(args)
        .output()
        .unwrap();
    let json = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out.status.code().unwrap_or(-1), json)
}

async fn attempts_recorded(journal: &Path) -> u32 {
    let Ok(j) = SqliteJournal::open(journal) else {
        return 0;
    };
    j.list(&recourse::journal::ListQuery::default())
        .await
        .map(|l| l.first().map_or(0, |e| e.attempts))
        .unwrap_or(0)
}

/// Lets the tool finish a write it started: it does, even after the client is gone.
async fn settle_writes() {
    tokio::time::sleep(LATENCY + Duration::from_millis(150)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_call_is_in_flight_then_reconciled_without_a_second_write() {
    let tools = slow_exports().await;
    let journal = temp_journal();
    let mut child = start_call(&tools, &journal);
    // Wait until the attempt is recorded (it is, before dispatch), then until
    // the tool reports the write under way: the kill lands while it holds the request.
    for _ in 0..500 {
        if attempts_recorded(&journal).await >= 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let key = SqliteJournal::open(&journal)
        .unwrap()
        .list(&recourse::journal::ListQuery::default())
        .await
        .unwrap()[0]
        .idempotency_key
        .clone()
        .unwrap();
    let lookup = format!("{}/api/exports/{key}", tools.base_url());
    let mut pending = false;
    for _ in 0..500 {
        let state: Value = reqwest::get(&lookup).await.unwrap().json().await.unwrap();
        if state["data"]["state"] == "pending" {
            pending = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(pending, "the export never started");
    let j = journal.to_str().unwrap();
    // While the call runs, its process holds the lease: reconcile leaves it alone.
    let (code, early) = recourse(&["journal", "reconcile", "--journal", j, "--json"]);
    assert_eq!(code, 3, "{early}");
    assert_eq!(early[0]["held"], true, "{early}");
    assert_eq!(early[0]["state"], "in_flight", "{early}");
    child.kill().unwrap();
    child.wait().unwrap();

    let (code, listed) = recourse(&[
        "journal",
        "list",
        "--journal",
        j,
        "--state",
        "in_flight",
        "--json",
    ]);
    assert_eq!(code, 0);
    let calls = listed.as_array().unwrap();
    assert_eq!(calls.len(), 1, "{listed}");
    assert_eq!(calls[0]["state"], "in_flight");
    assert!(calls[0]["idempotency_key"].is_string());
    assert_eq!(calls[0]["attempts"], 1);

    settle_writes().await;
    // The killed process renews nothing: once its lease runs out, reconcile settles the call.
    tokio::time::sleep(Duration::from_millis(LEASE_MS + 100)).await;
    let (code, settled) = recourse(&["journal", "reconcile", "--journal", j, "--json"]);
    assert_eq!(code, 0, "{settled}");
    assert_eq!(settled[0]["state"], "succeeded");
    assert_eq!(tools.exports_committed(), 1, "exactly one write");
    let (_, listed) = recourse(&["journal", "list", "--journal", j, "--json"]);
    assert_eq!(listed[0]["state"], "succeeded");
    std::fs::remove_dir_all(journal.parent().unwrap()).unwrap();
}

/// One run with the kill at `kill_after`; returns (exports written, lost calls).
async fn kill_run(kill_after: Duration) -> (usize, usize) {
    let tools = slow_exports().await;
    let journal = temp_journal();
    let mut child = start_call(&tools, &journal);
    tokio::time::sleep(kill_after).await;
    let _ = child.kill();
    child.wait().unwrap();
    settle_writes().await;
    tokio::time::sleep(Duration::from_millis(LEASE_MS + 100)).await;
    let j = journal.to_str().unwrap();
    let _ = recourse(&["journal", "reconcile", "--journal", j]);
    let written = tools.exports_committed();
    let entries = match SqliteJournal::open(&journal) {
        Ok(jr) => jr
            .list(&recourse::journal::ListQuery::default())
            .await
            .unwrap_or_default(),
        Err(_) => Vec::new(),
    };
    // A write with no succeeded record in the journal would be a lost call.
    let recorded = entries
        .iter()
        .filter(|e| e.state == CallState::Succeeded)
        .count();
    let lost = written.saturating_sub(recorded);
    std::fs::remove_dir_all(journal.parent().unwrap()).unwrap();
    (written, lost)
}

/// Kill points: the first few before the request can have left the process,
/// the rest pseudo-random (SplitMix64) across [0, 2 × latency + 200 ms).
fn kill_points(runs: u64) -> Vec<Duration> {
    let span = 2 * LATENCY.as_millis() as u64 + 200;
    let early = [0u64, 2, 5, 10, 20];
    (0..runs)
        .map(|i| match early.get(i as usize) {
            Some(ms) => Duration::from_millis(*ms),
            None => {
                let mut z = (i + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
                z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
                Duration::from_millis((z ^ (z >> 31)) % span)
            }
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn randomised_kill_points_lose_nothing_and_never_write_twice() {
    for at in kill_points(7) {
        let (written, lost) = kill_run(at).await;
        assert!(written <= 1, "kill at {at:?}: {written} exports");
        assert_eq!(lost, 0, "kill at {at:?}");
    }
}

/// The soak of BENCHMARKS.md: `cargo test -p recourse-cli --test cli journal_crash:: -- --ignored`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "soak: 60 killed processes, about a minute"]
async fn soak_sixty_random_kills() {
    let (mut duplicates, mut lost, mut committed) = (0, 0, 0);
    let points = kill_points(60);
    for at in &points {
        let (w, l) = kill_run(*at).await;
        duplicates += w.saturating_sub(1);
        lost += l;
        committed += w;
    }
    let never_sent = points.len() - committed;
    eprintln!(
        "60 runs: {committed} committed once, {never_sent} killed before any write, {duplicates} duplicates, {lost} lost"
    );
    assert_eq!((duplicates, lost), (0, 0));
}
