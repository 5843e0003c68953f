//! Every loop that waits — the lease keeper, the key claim's give-back, the
//! sweeper, the pruner, the shared state's background check — waits on the
//! clock it is given, and on nothing else: on a
//! [`ManualClock`](recourse::ManualClock) each takes its next turn when the
//! test moves time past its wait, and not a moment before (a loop's wait
//! never moves the clock itself: `Clock::sleep_in_background`).

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use recourse::journal::{
    CallState, Journal, LeaseKeeper, NewCall, SettleOptions, SqliteJournal, process_owner, prune,
    sweep,
};
use recourse::timing::{claim_give_back, prune_every, renew_every, sweep_every};
use recourse::transport::RawResponse;
use recourse::{Call, Executor, InProcessTransport, ManualClock};
use recourse_test_support::FaultyJournal;
use serde_json::json;

const MS: Duration = Duration::from_millis(1);

fn journal() -> Arc<SqliteJournal> {
    let dir = std::env::temp_dir().join(format!("recourse-loops-{}", uuid::Uuid::now_v7()));
    std::fs::create_dir_all(&dir).unwrap();
    Arc::new(SqliteJournal::open(dir.join("recourse.db")).unwrap())
}

/// A call in flight under this process, its lease `lease` from now.
async fn in_flight(journal: &SqliteJournal, call_id: &str, lease: Duration) {
    let call = NewCall {
        call_id: call_id.into(),
        target: "http://127.0.0.1:9/api/exports".into(),
        capability: None,
        idempotency_key: Some(format!("k-{call_id}")),
        reconcile: None,
        verification: None,
        payload: json!({}),
        owner: process_owner().into(),
        lease,
        caller: None,
    };
    journal.begin_call(&call).await.unwrap();
}

/// The turns a loop took on `clock`: every wait it began.
fn turns(clock: &ManualClock) -> usize {
    clock.background_sleeps().len()
}

/// Lets the loops run until `done` holds (failing after ten seconds of real
/// time: a loop that never gets there).
async fn until(what: &str, done: impl Fn() -> bool) {
    let waited = tokio::time::timeout(Duration::from_secs(10), async {
        while !done() {
            tokio::time::sleep(MS).await;
        }
    })
    .await;
    assert!(waited.is_ok(), "never: {what}");
}

/// Lets the loops run a while; a loop that is due would take its turn.
async fn a_while() {
    for _ in 0..20 {
        tokio::task::yield_now().await;
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
}

#[tokio::test]
async fn the_lease_keeper_renews_only_as_its_clock_moves() {
    let journal = journal();
    in_flight(&journal, "c-1", Duration::from_secs(1)).await;
    let lease_until = || {
        let journal = Arc::clone(&journal);
        async move { journal.get("c-1").await.unwrap().unwrap().lease.until }
    };
    let first = lease_until().await;
    let clock = ManualClock::new();
    let hour = Duration::from_secs(3600);
    let keeper = LeaseKeeper::start(journal.clone(), "c-1".into(), hour, Arc::new(clock.clone()));
    until("the keeper waits for its first turn", || turns(&clock) == 1).await;
    clock.advance(renew_every(hour) - MS);
    a_while().await;
    assert_eq!(turns(&clock), 1, "not a turn before its time");
    assert_eq!(lease_until().await, first, "not renewed yet");
    clock.advance(MS);
    until("the keeper takes its turn", || turns(&clock) == 2).await;
    let renewed = lease_until().await;
    assert!(
        renewed > first,
        "renewed for an hour: {renewed:?} after {first:?}"
    );
    assert_eq!(clock.background_sleeps(), vec![renew_every(hour); 2]);
    drop(keeper);
    clock.advance(hour);
    a_while().await;
    assert_eq!(turns(&clock), 2, "dropped, it renews no more");
}

/// A keyed call the journal could not record gives its claim back in the
/// background, trying again on the executor's clock as `claim_give_back`
/// schedules it, until the journal answers.
#[tokio::test]
async fn a_claim_is_given_back_on_the_executor_s_clock() {
    let journal = Arc::new(
        FaultyJournal::new(journal())
            .failing_begins(u32::MAX)
            .failing_renewals(2),
    );
    let clock = ManualClock::new();
    let tool = InProcessTransport::new(|_| async {
        Ok(RawResponse {
            status: 200,
            headers: Vec::new(),
            body: br#"{"success":true,"data":1}"#.to_vec(),
            read: None,
        })
    });
    let executor = Executor::builder(tool)
        .with_clock(Arc::new(clock.clone()))
        .with_journal(Arc::clone(&journal) as Arc<dyn Journal>)
        .build();
    let call = Call::builder("tool", json!({"q": 1}))
        .non_idempotent()
        .idempotency_key("give-back-1")
        .build()
        .unwrap();
    let keyed = executor.execute_keyed(call, "digest").await.unwrap();
    assert!(
        format!("{keyed:?}").contains("JOURNAL_UNAVAILABLE"),
        "{keyed:?}"
    );
    let renewals = || journal.renewals();
    let schedule: Vec<Duration> = claim_give_back().collect();
    until("the first try, then a wait", || turns(&clock) == 1).await;
    assert_eq!(
        (renewals(), clock.background_sleeps()),
        (1, schedule[..1].to_vec())
    );
    clock.advance(schedule[0] - MS);
    a_while().await;
    assert_eq!(renewals(), 1, "no try before its wait is over");
    clock.advance(MS);
    until("the second try, then a longer wait", || turns(&clock) == 2).await;
    assert_eq!(
        (renewals(), clock.background_sleeps()),
        (2, schedule[..2].to_vec())
    );
    clock.advance(schedule[1]);
    until("the third try, which the journal answers", || {
        renewals() == 3
    })
    .await;
    a_while().await;
    assert_eq!(
        clock.background_sleeps(),
        schedule[..2].to_vec(),
        "given back: no more waits"
    );
}

/// The sweeper settles what is due at once, then once every sweep interval
/// of its options' clock — an orphan left in between waits for the turn.
#[tokio::test]
async fn the_sweeper_looks_again_only_as_its_clock_moves() {
    let journal = journal();
    in_flight(&journal, "orphan-1", Duration::ZERO).await;
    // Past its lease by the journal's clock too (it takes no lease that
    // ends this very millisecond).
    tokio::time::sleep(Duration::from_millis(5)).await;
    let clock = ManualClock::new();
    let lease = Duration::from_secs(30);
    let options = SettleOptions::new(lease).with_clock(Arc::new(clock.clone()));
    let state = |id: &'static str| {
        let journal = Arc::clone(&journal);
        async move { journal.get(id).await.unwrap().unwrap().state }
    };
    let sweeper = tokio::spawn(sweep(journal.clone(), options, |_| {}));
    until("the first sweep, then a wait", || turns(&clock) == 1).await;
    assert_eq!(
        state("orphan-1").await,
        CallState::Failed,
        "never sent: failed"
    );
    in_flight(&journal, "orphan-2", Duration::ZERO).await;
    tokio::time::sleep(Duration::from_millis(5)).await;
    clock.advance(sweep_every(lease) - MS);
    a_while().await;
    assert_eq!(
        state("orphan-2").await,
        CallState::InFlight,
        "not before its turn"
    );
    clock.advance(MS);
    until("the second sweep", || turns(&clock) == 2).await;
    assert_eq!(state("orphan-2").await, CallState::Failed);
    sweeper.abort();
}

/// The pruner removes what is older than its retention by its clock's wall
/// time, at once and then every prune interval of that clock.
#[tokio::test]
async fn the_pruner_prunes_by_its_clock_and_only_as_it_moves() {
    let journal = journal();
    in_flight(&journal, "done-1", Duration::from_secs(30)).await;
    journal
        .finish_call("done-1", CallState::Succeeded, None, None)
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(5)).await;
    let clock = ManualClock::new();
    let retain = Duration::from_secs(100);
    let pruned = Arc::new(AtomicU32::new(0));
    let counted = Arc::clone(&pruned);
    let pruner = tokio::spawn(prune(
        journal.clone(),
        retain,
        Arc::new(clock.clone()),
        move |_| {
            counted.fetch_add(1, Ordering::SeqCst);
        },
    ));
    until("the first prune, then a wait", || turns(&clock) == 1).await;
    let kept = || {
        let journal = Arc::clone(&journal);
        async move { journal.get("done-1").await.unwrap().is_some() }
    };
    assert!(kept().await, "not old yet");
    clock.advance(prune_every(retain) - MS);
    a_while().await;
    assert_eq!(turns(&clock), 1, "not a turn before its time");
    clock.advance(MS);
    until("the second prune", || turns(&clock) == 2).await;
    assert!(kept().await, "ten seconds on, not old yet");
    assert_eq!(pruned.load(Ordering::SeqCst), 0);
    clock.advance(retain);
    until("the third prune", || turns(&clock) == 3).await;
    assert!(
        !kept().await,
        "older than its retention by the clock: pruned"
    );
    assert_eq!(pruned.load(Ordering::SeqCst), 1, "and reported");
    pruner.abort();
}

/// The shared state's background check (a `PING`, or a reconnection in
/// fallback) comes round every `check_every` of its clock.
#[tokio::test]
async fn the_shared_state_checks_redis_only_as_its_clock_moves() {
    use recourse::shared::{RedisSharedState, SharedMode, SharedState};
    let Some(url) = recourse_test_support::shared_redis() else {
        return;
    };
    let clock = ManualClock::new();
    let every = Duration::from_secs(1);
    let state = RedisSharedState::builder(&url)
        .unwrap()
        .with_prefix(&recourse_test_support::redis_prefix("watch"))
        .unwrap()
        .with_check_every(every)
        .with_clock(Arc::new(clock.clone()))
        .connect()
        .await;
    assert_eq!(state.mode(), SharedMode::Shared);
    until("the check waits for its first turn", || turns(&clock) == 1).await;
    clock.advance(every - MS);
    a_while().await;
    assert_eq!(turns(&clock), 1, "not a turn before its time");
    clock.advance(MS);
    until("the check takes its turn", || turns(&clock) == 2).await;
    assert_eq!(clock.background_sleeps(), vec![every; 2]);
}
