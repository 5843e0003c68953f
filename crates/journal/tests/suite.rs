//! One trait test suite, run against SQLite (file and memory) and — when
//! `RECOURSE_TEST_POSTGRES_URL` is set — PostgreSQL. Unset, that test is
//! skipped with a notice on stderr (a failure under `RECOURSE_TEST_NO_SKIP=1`);
//! set but unreachable, it fails.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use recourse_core::approval::ApprovalState;
use recourse_core::journal::{
    ApprovalDecision, AttemptResult, AwaitingCall, CallState, Claimed, DecidedTo, Journal,
    JournalErrorKind, KeyClaim, ListQuery, NewCall, RecordJson, Seen,
};
use recourse_core::policy::Action;
use recourse_core::record::SettledBy;
use recourse_journal::{PostgresJournal, SqliteJournal};
use recourse_test_support::PostgresSchema;
use serde_json::json;

const LONG: Duration = Duration::from_secs(600);

fn new_call(id: &str) -> NewCall {
    NewCall {
        call_id: id.to_owned(),
        target: "http://127.0.0.1:1/api/exports".to_owned(),
        capability: Some("exports.create".to_owned()),
        idempotency_key: Some(format!("key-{id}")),
        reconcile: Some("http://127.0.0.1:1/api/exports/{operation_id}".to_owned()),
        verification: Some(json!({"url": "http://127.0.0.1:1/api/exports/lookup",
                                  "args": {"source_id": "{{payload.source_id}}"},
                                  "expect": ["/latest exists"]})),
        payload: json!({"source_id": "sales-2024", "format": "pdf"}),
        owner: "owner-a".to_owned(),
        lease: LONG,
        caller: None,
    }
}

fn claim(id: &str, key: &str, hash: &str, owner: &str) -> KeyClaim {
    KeyClaim {
        call_id: id.to_owned(),
        caller_key: key.to_owned(),
        request_hash: hash.to_owned(),
        target: "http://127.0.0.1:1/api/exports".to_owned(),
        owner: owner.to_owned(),
        lease: LONG,
        caller: None,
    }
}

fn state(s: CallState) -> ListQuery {
    ListQuery {
        state: Some(s),
        ..ListQuery::default()
    }
}

async fn suite(journal: Arc<dyn Journal>) {
    // A call is in flight from before its first dispatch, leased to its owner.
    journal.begin_call(&new_call("c1")).await.unwrap();
    journal.begin_call(&new_call("c2")).await.unwrap();
    let in_flight = journal.list(&state(CallState::InFlight)).await.unwrap();
    assert_eq!(in_flight.len(), 2);
    let c1 = in_flight.iter().find(|e| e.call_id == "c1").unwrap();
    assert_eq!(c1.idempotency_key.as_deref(), Some("key-c1"));
    assert_eq!(c1.attempts, 0);
    assert_eq!(c1.payload["source_id"], "sales-2024");
    assert_eq!(
        c1.declared.verification.as_ref().unwrap()["expect"][0],
        "/latest exists",
        "the verification spec is kept with the call"
    );
    assert!(c1.times.started_at.ends_with('Z'));
    assert_eq!(c1.lease.owner.as_deref(), Some("owner-a"));
    assert!(c1.is_leased(SystemTime::now()));

    // Attempts are counted as they begin.
    journal
        .begin_attempt("c1", 1, Some(&json!({"a": 1})))
        .await
        .unwrap();
    let result = AttemptResult {
        status: Some(503),
        transport_error: None,
        action: Action::RetrySame {
            wait: std::time::Duration::from_millis(10),
            cause: recourse_core::record::WaitCause::Backoff,
        },
    };
    journal.finish_attempt("c1", 1, &result).await.unwrap();
    journal
        .begin_attempt("c1", 2, Some(&json!({"a": 1})))
        .await
        .unwrap();
    assert_eq!(journal.get("c1").await.unwrap().unwrap().attempts, 2);
    assert!(journal.get("nope").await.unwrap().is_none());
    // An attempt recorded twice is a conflict: another run of the call.
    let twice = journal
        .begin_attempt("c1", 2, Some(&json!({"a": 1})))
        .await
        .unwrap_err();
    assert_eq!(twice.kind(), JournalErrorKind::Conflict, "{twice}");

    // Finishing moves the call out of in_flight, keeps the operation id and the
    // record, and releases the lease.
    let record = json!({"record_version": 1, "outcome": "succeeded"});
    journal
        .finish_call(
            "c1",
            CallState::Succeeded,
            Some("op-9"),
            Some(&RecordJson::from(&record)),
        )
        .await
        .unwrap();
    let done = journal.list(&state(CallState::Succeeded)).await.unwrap();
    assert_eq!(done.len(), 1);
    assert_eq!(done[0].operation_id.as_deref(), Some("op-9"));
    assert_eq!(done[0].ended.record, Some(record.clone()));
    assert!(!done[0].is_leased(SystemTime::now()) && done[0].lease.until.is_none());
    let in_flight = journal.list(&state(CallState::InFlight)).await.unwrap();
    let ids: Vec<_> = in_flight.iter().map(|e| e.call_id.as_str()).collect();
    assert_eq!(ids, vec!["c2"]);

    // A later state change without an operation id or record keeps the earlier ones.
    journal
        .finish_call("c1", CallState::Unknown, None, None)
        .await
        .unwrap();
    let c1 = journal.get("c1").await.unwrap().unwrap();
    assert_eq!(c1.operation_id.as_deref(), Some("op-9"));
    assert_eq!(c1.ended.record.as_ref(), Some(&record));
    assert_eq!(c1.ended.settled_by, None, "a record with no settlement");

    // What settled a call is read, typed, with its record.
    for by in [SettledBy::Journal, SettledBy::Person] {
        let settled = json!({"outcome": "failed", "settlement": {"by": by.as_str(), "at": "2030-01-01T00:00:00.000Z"}});
        journal
            .finish_call(
                "c1",
                CallState::Failed,
                None,
                Some(&RecordJson::from(&settled)),
            )
            .await
            .unwrap();
        let c1 = journal.get("c1").await.unwrap().unwrap();
        assert_eq!(c1.ended.settled_by, Some(by));
        let listed = journal.list(&state(CallState::Failed)).await.unwrap();
        assert_eq!(listed[0].ended.settled_by, Some(by), "listed as got");
    }
    journal
        .finish_call(
            "c1",
            CallState::Unknown,
            None,
            Some(&RecordJson::from(&record)),
        )
        .await
        .unwrap();

    // Attempts are recorded once.
    assert!(
        journal
            .begin_attempt("c1", 2, Some(&json!({})))
            .await
            .is_err()
    );

    leases(&journal).await;
    keys(&journal).await;
    pages(&journal).await;
    callers(&journal).await;
    secrets(&journal).await;
}

/// A secret is kept once: the first kept is what every later reader gets,
/// whatever it offers; names keep theirs apart.
async fn secrets(journal: &Arc<dyn Journal>) {
    let first = journal.secret("seal", &[0, 1, 0xfe, 0xff]).await.unwrap();
    assert_eq!(first, [0, 1, 0xfe, 0xff]);
    let again = journal.secret("seal", &[9; 32]).await.unwrap();
    assert_eq!(again, first, "the first kept wins");
    let other = journal.secret("other", &[7; 32]).await.unwrap();
    assert_eq!(other, [7; 32]);
}

/// Each call records its caller; a list shows a viewer what it may see —
/// and exactly what [`Seen::admits`] says of each call.
async fn callers(journal: &Arc<dyn Journal>) {
    for (id, caller) in [("w-a", Some("alice")), ("w-b", Some("bob")), ("w-n", None)] {
        journal
            .begin_call(&NewCall {
                caller: caller.map(str::to_owned),
                ..new_call(id)
            })
            .await
            .unwrap();
    }
    journal
        .finish_call("w-b", CallState::Unknown, None, None)
        .await
        .unwrap();
    journal
        .claim_key(&KeyClaim {
            caller: Some("alice".to_owned()),
            ..claim("w-k", "alice:k", "h", "owner-a")
        })
        .await
        .unwrap();
    let entry = journal.get("w-k").await.unwrap().unwrap();
    assert_eq!(entry.caller.as_deref(), Some("alice"));
    assert_eq!(
        journal.get("w-n").await.unwrap().unwrap().caller(),
        "default"
    );
    let everyone = journal.list(&ListQuery::default()).await.unwrap();
    for seen in [
        Seen::All,
        Seen::Own("alice".into()),
        Seen::Own("default".into()),
        Seen::OwnAndInDoubt("carol".into()),
        Seen::Own("nobody".into()),
    ] {
        let listed: Vec<String> = journal
            .list(&ListQuery {
                seen: seen.clone(),
                ..ListQuery::default()
            })
            .await
            .unwrap()
            .into_iter()
            .map(|e| e.call_id)
            .collect();
        let admitted: Vec<String> = everyone
            .iter()
            .filter(|e| seen.admits_entry(e))
            .map(|e| e.call_id.clone())
            .collect();
        assert_eq!(listed, admitted, "{seen:?}");
        // Counted as listed: the same calls, by state.
        let counts = journal.count(&seen).await.unwrap();
        for (state, n) in counts.by_state() {
            let listed = everyone
                .iter()
                .filter(|e| e.state == state && seen.admits_entry(e))
                .count();
            assert_eq!(n, listed as u64, "{seen:?} {state}");
        }
        assert_eq!(counts.total(), admitted.len() as u64, "{seen:?}");
    }
    let alice: Vec<_> = journal
        .list(&ListQuery {
            seen: Seen::Own("alice".into()),
            ..ListQuery::default()
        })
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.call_id)
        .collect();
    assert_eq!(alice, ["w-k", "w-a"]);
    let in_doubt = journal
        .list(&ListQuery {
            seen: Seen::OwnAndInDoubt("carol".into()),
            ..ListQuery::default()
        })
        .await
        .unwrap();
    assert!(in_doubt.iter().any(|e| e.call_id == "w-b"));
    assert!(in_doubt.iter().all(|e| e.state == CallState::Unknown));
}

/// A running call's lease keeps others off it; an expired one lets them in.
/// Finished calls go, with their attempts; calls in flight or unknown stay.
async fn prunes(journal: &Arc<dyn Journal>) {
    for (id, state) in [
        ("p-done", Some(CallState::Succeeded)),
        ("p-failed", Some(CallState::Failed)),
        ("p-unknown", Some(CallState::Unknown)),
        ("p-running", None),
    ] {
        journal.begin_call(&new_call(id)).await.unwrap();
        journal
            .begin_attempt(id, 1, Some(&json!({})))
            .await
            .unwrap();
        if let Some(state) = state {
            // The attempt's end and the call's, in one write where the journal can.
            let ended = AttemptResult {
                status: Some(200),
                transport_error: None,
                action: Action::Succeed,
            };
            let record = RecordJson::from(&json!({"call_id": id}));
            journal
                .finish_attempt_and_call((1, &ended), id, state, Some("op-1"), Some(&record))
                .await
                .unwrap();
            let entry = journal.get(id).await.unwrap().unwrap();
            assert_eq!((entry.state, entry.attempts), (state, 1), "{id}");
            assert_eq!(entry.operation_id.as_deref(), Some("op-1"));
            assert_eq!(entry.ended.record.unwrap()["call_id"], id);
            assert_eq!(entry.lease.until, None);
        }
    }
    assert_eq!(
        journal.prune("2000-01-01T00:00:00Z", 100).await.unwrap(),
        0,
        "none so old"
    );
    assert_eq!(
        journal.prune("9999-01-01T00:00:00Z", 1).await.unwrap(),
        1,
        "at most the limit"
    );
    assert_eq!(journal.prune("9999-01-01T00:00:00Z", 100).await.unwrap(), 1);
    for (id, kept) in [
        ("p-done", false),
        ("p-failed", false),
        ("p-unknown", true),
        ("p-running", true),
    ] {
        assert_eq!(journal.get(id).await.unwrap().is_some(), kept, "{id}");
    }
}

async fn leases(journal: &Arc<dyn Journal>) {
    // c2 is leased to owner-a: nobody else may take it over, its owner may renew.
    assert!(!journal.take_over("c2", "owner-b", LONG).await.unwrap());
    assert!(journal.renew_lease("c2", "owner-a", LONG).await.unwrap());
    assert!(!journal.renew_lease("c2", "owner-b", LONG).await.unwrap());
    // A lease that ran out: another process takes the call over, and the old
    // owner can no longer renew it.
    let mut short = new_call("c3");
    short.lease = Duration::from_millis(1);
    journal.begin_call(&short).await.unwrap();
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert!(
        !journal
            .get("c3")
            .await
            .unwrap()
            .unwrap()
            .is_leased(SystemTime::now())
    );
    assert!(journal.take_over("c3", "owner-b", LONG).await.unwrap());
    assert!(!journal.renew_lease("c3", "owner-a", LONG).await.unwrap());
    assert_eq!(
        journal
            .get("c3")
            .await
            .unwrap()
            .unwrap()
            .lease
            .owner
            .as_deref(),
        Some("owner-b")
    );
    // A finished call holds no lease: anyone may take it over to settle it.
    assert!(journal.take_over("c1", "owner-c", LONG).await.unwrap());
    // A lease that ends this very millisecond is over, for the entry and the
    // take-over alike: a settler that reads a call as unleased takes it over.
    // (A lease renewed for zero ends when it is written; most rounds below
    // read it and take it over within that millisecond, the boundary a
    // strict `<` missed.)
    for round in 0..50 {
        assert!(
            journal
                .renew_lease("c3", "owner-b", Duration::ZERO)
                .await
                .unwrap()
        );
        let entry = journal.get("c3").await.unwrap().unwrap();
        if entry.is_leased(SystemTime::now()) {
            continue; // the clock stepped back: not this round's question
        }
        assert!(
            journal
                .take_over("c3", "owner-b", Duration::ZERO)
                .await
                .unwrap(),
            "round {round}: read as unleased, yet not taken over"
        );
    }
    assert!(journal.take_over("c3", "owner-b", LONG).await.unwrap());
}

/// One call per key, whoever claims first; the key's call is found by the second.
async fn keys(journal: &Arc<dyn Journal>) {
    let first = claim("k1", "agent-7", "hash-1", "owner-a");
    assert_eq!(journal.claim_key(&first).await.unwrap(), Claimed::New);
    let Claimed::Exists(entry) = journal
        .claim_key(&claim("k2", "agent-7", "hash-1", "owner-b"))
        .await
        .unwrap()
    else {
        panic!("the key was claimed twice")
    };
    assert_eq!(entry.call_id, "k1");
    assert_eq!(entry.replay.request_hash.as_deref(), Some("hash-1"));
    assert_eq!(entry.state, CallState::InFlight);
    assert!(
        journal.get("k2").await.unwrap().is_none(),
        "nothing recorded for the loser"
    );
    // The claimed call then begins like any other, keeping its key.
    let mut call = new_call("k1");
    call.idempotency_key = Some("agent-7".to_owned());
    journal.begin_call(&call).await.unwrap();
    let k1 = journal.get("k1").await.unwrap().unwrap();
    assert_eq!(k1.replay.caller_key.as_deref(), Some("agent-7"));
    assert_eq!(k1.target, "http://127.0.0.1:1/api/exports");

    // Begun again while in flight (another run took it over), it keeps its
    // attempts: the same attempt recorded twice is a conflict.
    journal.begin_attempt("k1", 1, None).await.unwrap();
    journal.begin_call(&call).await.unwrap();
    assert_eq!(journal.get("k1").await.unwrap().unwrap().attempts, 1);
    let twice = journal.begin_attempt("k1", 1, None).await.unwrap_err();
    assert_eq!(twice.kind(), JournalErrorKind::Conflict, "{twice}");
    // Its run stopped before it sent attempt 1 (whose record committed as
    // the answer was lost) and ended `failed`: begun again by the run that
    // takes it over, it starts with no attempt.
    let unsent = json!({"record_version": 1, "outcome": "failed",
        "settlement": {"by": "journal", "at": "2026-12-07T10:00:00Z"}});
    journal
        .finish_call(
            "k1",
            CallState::Failed,
            None,
            Some(&RecordJson::from(&unsent)),
        )
        .await
        .unwrap();
    assert!(journal.take_over("k1", "owner-b", LONG).await.unwrap());
    call.owner = "owner-b".to_owned();
    journal.begin_call(&call).await.unwrap();
    let again = journal.get("k1").await.unwrap().unwrap();
    assert_eq!((again.state, again.attempts), (CallState::InFlight, 0));
    journal.begin_attempt("k1", 1, None).await.unwrap();
    assert_eq!(journal.get("k1").await.unwrap().unwrap().attempts, 1);
}

/// Newest first, a page at a time.
async fn pages(journal: &Arc<dyn Journal>) {
    let all = journal.list(&ListQuery::default()).await.unwrap();
    let ids: Vec<_> = all.iter().map(|e| e.call_id.clone()).collect();
    let mut sorted = ids.clone();
    sorted.sort();
    sorted.reverse();
    assert_eq!(ids, sorted, "newest (largest id) first");
    let first = journal
        .list(&ListQuery {
            limit: Some(2),
            ..ListQuery::default()
        })
        .await
        .unwrap();
    assert_eq!(first.len(), 2);
    let next = journal
        .list(&ListQuery {
            limit: Some(2),
            before: Some(first[1].call_id.clone()),
            ..ListQuery::default()
        })
        .await
        .unwrap();
    assert_eq!(next[0].call_id, ids[2]);
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
    let all = reopened.list(&ListQuery::default()).await.unwrap();
    assert_eq!(all.len(), 8, "migrations are idempotent and data persists");
    std::fs::remove_dir_all(dir).unwrap();
}

#[tokio::test]
async fn postgres_passes_the_suite_when_configured() {
    let Some(schema) = private_postgres().await else {
        return;
    };
    let journal = PostgresJournal::connect(&schema.url).await.unwrap();
    suite(Arc::new(journal)).await;
    let again = PostgresJournal::connect(&schema.url).await.unwrap();
    assert_eq!(
        again.list(&ListQuery::default()).await.unwrap().len(),
        8,
        "migrations are idempotent"
    );
    schema.remove().await;
}

#[tokio::test]
#[cfg(unix)]
async fn a_new_sqlite_journal_and_its_wal_are_the_owners_only() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.db");
    let journal = SqliteJournal::open(&path).unwrap();
    journal.begin_call(&new_call("c-private")).await.unwrap();
    for name in ["journal.db", "journal.db-wal", "journal.db-shm"] {
        let mode = std::fs::metadata(dir.path().join(name))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "{name}: {:o}", mode & 0o777);
    }
}

#[tokio::test]
async fn opening_a_journal_to_read_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.db");
    let location = path.to_str().unwrap();
    let missing = recourse_journal::open_existing(location)
        .await
        .err()
        .unwrap();
    assert!(
        missing.to_string().contains("opening SQLite journal"),
        "{missing}"
    );
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(left.is_empty(), "a reader left {left:?}");

    let written = SqliteJournal::open(&path).unwrap();
    written.begin_call(&new_call("c-read")).await.unwrap();
    let read = recourse_journal::open_existing(location).await.unwrap();
    assert!(read.get("c-read").await.unwrap().is_some());
}

/// A private schema on the configured server, so runs never see each
/// other's rows; `None` when no server is configured.
async fn private_postgres() -> Option<PostgresSchema> {
    let url = recourse_test_support::service_var("RECOURSE_TEST_POSTGRES_URL")?;
    Some(PostgresSchema::create(&url).await)
}

#[tokio::test]
async fn postgres_comes_back_after_its_backends_are_terminated() {
    let app = format!("recourse-reconnect-{}", uuid::Uuid::now_v7().simple());
    let Some(schema) = private_postgres().await else {
        return;
    };
    let journal = PostgresJournal::connect(&schema.url_as(&app))
        .await
        .unwrap();
    journal.begin_call(&new_call("c-before")).await.unwrap();

    // A failover, as the journal sees it: every connection it holds is cut.
    assert!(
        schema.cut(&app).await >= 1,
        "the journal's connections were found"
    );

    // Without a restart, the journal works again (an operation that met a
    // dead connection may fail; the next takes a new one).
    let started = std::time::Instant::now();
    loop {
        match journal.get("c-before").await {
            Ok(Some(entry)) => {
                assert_eq!(entry.call_id, "c-before");
                break;
            }
            Ok(None) => panic!("the call vanished"),
            Err(e) => assert!(
                started.elapsed() < Duration::from_secs(10),
                "still failing: {e}"
            ),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    journal.begin_call(&new_call("c-after")).await.unwrap();
    schema.remove().await;
}

#[tokio::test]
async fn postgres_fails_in_seconds_when_its_table_is_locked() {
    let Some(schema) = private_postgres().await else {
        return;
    };
    let journal = PostgresJournal::connect(&schema.url).await.unwrap();
    schema.lock("recourse_calls").await;
    let started = std::time::Instant::now();
    let refused = tokio::time::timeout(
        Duration::from_secs(20),
        journal.begin_call(&new_call("c-locked")),
    )
    .await
    .expect("the journal gave up on its own (lock_timeout)");
    assert!(refused.is_err(), "a locked table is an error, not a wait");
    eprintln!("a locked table failed the write in {:?}", started.elapsed());
    schema.unlock().await;
    journal.begin_call(&new_call("c-unlocked")).await.unwrap();
    schema.remove().await;
}

#[tokio::test]
async fn sqlite_prunes_finished_calls_only() {
    prunes(&(Arc::new(SqliteJournal::in_memory().unwrap()) as Arc<dyn Journal>)).await;
}

#[tokio::test]
async fn postgres_prunes_finished_calls_only() {
    let Some(schema) = private_postgres().await else {
        return;
    };
    let journal: Arc<dyn Journal> = Arc::new(PostgresJournal::connect(&schema.url).await.unwrap());
    prunes(&journal).await;
    schema.remove().await;
}

fn awaiting(id: &str, approval_id: &str) -> AwaitingCall {
    AwaitingCall {
        call_id: id.to_owned(),
        target: "http://127.0.0.1:1/api/exports".to_owned(),
        capability: None,
        payload: json!({"source_id": "sales-2024", "format": "pdf"}),
        request: json!({"url": "http://127.0.0.1:1/api/exports", "payload": {"source_id": "sales-2024", "format": "pdf"}}),
        request_hash: format!("hash-{id}"),
        caller: Some("agent".to_owned()),
        approval_id: approval_id.to_owned(),
        reason: "moves data out".to_owned(),
        expires_at: EXPIRES.to_owned(),
        dispatcher: None,
    }
}

const EXPIRES: &str = "2030-01-01T00:00:00.000Z";
const BEFORE: &str = "2029-12-31T23:59:59.999Z";

fn decision(approval_id: &str, at: &str, to: DecidedTo) -> ApprovalDecision {
    ApprovalDecision {
        approval_id: approval_id.to_owned(),
        by: Some("lead".to_owned()),
        note: Some("fine".to_owned()),
        at: at.to_owned(),
        to,
    }
}

fn approved() -> DecidedTo {
    DecidedTo::Approved {
        owner: "owner-d".to_owned(),
        lease: LONG,
    }
}

fn ended() -> RecordJson {
    RecordJson::from(&json!({"call_id": "x", "outcome": "failed"}))
}

/// A call awaiting approval: recorded with its request and no lease,
/// found by its approval, seen by approvers, never taken over or pruned;
/// decided once, atomically, and only on the right side of its expiry.
async fn approvals(journal: &Arc<dyn Journal>) {
    journal
        .await_approval(&awaiting("a1", "ap-1"))
        .await
        .unwrap();
    let a1 = journal.get("a1").await.unwrap().unwrap();
    assert_eq!(a1.state, CallState::AwaitingApproval);
    assert_eq!((a1.attempts, a1.lease.until.as_deref()), (0, None));
    let approval = a1.asked.approval.clone().unwrap();
    assert_eq!(approval.state, ApprovalState::Pending);
    assert_eq!(approval.request_sha256, "hash-a1");
    assert_eq!(approval.expires_at, EXPIRES);
    assert_eq!(approval.reason, "moves data out");
    assert_eq!(
        a1.asked.request.as_ref().unwrap()["payload"]["format"],
        "pdf"
    );
    let record = a1.record_json();
    assert_eq!(record["outcome"], "awaiting_approval");
    assert_eq!(record["approval"]["id"], "ap-1");
    let by_approval = journal.get_by_approval("ap-1").await.unwrap().unwrap();
    assert_eq!(by_approval.call_id, "a1");
    assert!(journal.get_by_approval("ap-none").await.unwrap().is_none());

    // Nobody settles or sweeps a call that waits for a person.
    assert!(!journal.take_over("a1", "owner-x", LONG).await.unwrap());
    let listed = journal
        .list(&state(CallState::AwaitingApproval))
        .await
        .unwrap();
    assert_eq!(listed.len(), 1);
    for (seen, sees) in [
        (Seen::OwnAndInDoubt("lead".into()), true),
        (Seen::Own("lead".into()), false),
        (Seen::Own("agent".into()), true),
    ] {
        let query = ListQuery {
            seen: seen.clone(),
            ..ListQuery::default()
        };
        let ids: Vec<_> = journal
            .list(&query)
            .await
            .unwrap()
            .into_iter()
            .map(|e| e.call_id)
            .collect();
        assert_eq!(ids.contains(&"a1".to_owned()), sees, "{seen:?}");
    }

    // An approval after the expiry, or an expiry before it, does not apply.
    let late = decision("ap-1", EXPIRES, approved());
    assert!(!journal.decide_approval(&late).await.unwrap());
    let early = decision("ap-1", BEFORE, DecidedTo::Expired(ended()));
    assert!(!journal.decide_approval(&early).await.unwrap());

    // Two decisions at once: exactly one applies.
    let (approve, reject) = (
        decision("ap-1", BEFORE, approved()),
        decision("ap-1", BEFORE, DecidedTo::Rejected(ended())),
    );
    let (a, b) = tokio::join!(
        journal.decide_approval(&approve),
        journal.decide_approval(&reject)
    );
    assert!(a.unwrap() ^ b.unwrap(), "exactly one decision applies");
    assert!(!journal.decide_approval(&approve).await.unwrap(), "once");

    // Approved: in flight, held by its dispatcher, its request kept until it ends.
    journal
        .await_approval(&awaiting("a2", "ap-2"))
        .await
        .unwrap();
    assert!(
        journal
            .decide_approval(&decision("ap-2", BEFORE, approved()))
            .await
            .unwrap()
    );
    let a2 = journal.get("a2").await.unwrap().unwrap();
    assert_eq!(a2.state, CallState::InFlight);
    assert_eq!(a2.lease.owner.as_deref(), Some("owner-d"));
    assert!(a2.is_leased(SystemTime::now()));
    let decided = a2.asked.approval.clone().unwrap();
    assert_eq!(decided.state, ApprovalState::Approved);
    assert_eq!(decided.decided_by.as_deref(), Some("lead"));
    assert_eq!(decided.decided_at.as_deref(), Some(BEFORE));
    assert_eq!(decided.note.as_deref(), Some("fine"));
    assert!(a2.asked.request.is_some());
    journal
        .finish_call("a2", CallState::Succeeded, None, None)
        .await
        .unwrap();
    let a2 = journal.get("a2").await.unwrap().unwrap();
    assert!(
        a2.asked.request.is_none(),
        "the request goes when the call ends"
    );
    assert_eq!(a2.record_json()["approval"]["state"], "approved");

    // Expired on time: failed, its request gone; kept by every prune, as a
    // rejected one is, and as one still waiting is.
    journal
        .await_approval(&awaiting("a3", "ap-3"))
        .await
        .unwrap();
    let expired = decision("ap-3", EXPIRES, DecidedTo::Expired(ended()));
    assert!(journal.decide_approval(&expired).await.unwrap());
    let a3 = journal.get("a3").await.unwrap().unwrap();
    assert_eq!(a3.state, CallState::Failed);
    assert_eq!(a3.asked.approval.unwrap().state, ApprovalState::Expired);
    assert!(a3.asked.request.is_none() && a3.lease.until.is_none());
    journal
        .await_approval(&awaiting("a4", "ap-4"))
        .await
        .unwrap();
    journal.prune("9999-01-01T00:00:00Z", 100).await.unwrap();
    for id in ["a1", "a3", "a4"] {
        assert!(journal.get(id).await.unwrap().is_some(), "{id} kept");
    }
    assert!(
        journal.get("a2").await.unwrap().is_none(),
        "a dispatched call goes as any"
    );

    // A claimed key's call waits for approval in the key's entry, its
    // claim's lease let go; its key finds it.
    journal
        .claim_key(&claim("k-a", "agent:approve-me", "hash-k-a", "owner-a"))
        .await
        .unwrap();
    let mut keyed = awaiting("k-a", "ap-k");
    keyed.request_hash = "hash-k-a".to_owned();
    journal.await_approval(&keyed).await.unwrap();
    let by_key = journal
        .get_by_key("agent:approve-me")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(by_key.call_id, "k-a");
    assert_eq!(by_key.state, CallState::AwaitingApproval);
    assert_eq!(
        (by_key.lease.owner.as_deref(), by_key.lease.until.as_deref()),
        (None, None)
    );
    // A key whose call sent something cannot be made to wait.
    journal
        .claim_key(&claim("k-b", "agent:sent", "hash-k-b", "owner-a"))
        .await
        .unwrap();
    journal.begin_attempt("k-b", 1, None).await.unwrap();
    assert!(
        journal
            .await_approval(&awaiting("k-b", "ap-kb"))
            .await
            .is_err()
    );
}

#[tokio::test]
async fn sqlite_keeps_approvals() {
    approvals(&(Arc::new(SqliteJournal::in_memory().unwrap()) as Arc<dyn Journal>)).await;
}

#[tokio::test]
async fn postgres_keeps_approvals() {
    let Some(schema) = private_postgres().await else {
        return;
    };
    let journal: Arc<dyn Journal> = Arc::new(PostgresJournal::connect(&schema.url).await.unwrap());
    approvals(&journal).await;
    schema.remove().await;
}
