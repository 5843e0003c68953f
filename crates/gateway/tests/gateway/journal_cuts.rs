//! The PostgreSQL journal losing its connections under load: every backend
//! of the gateway's journal terminated every 30 to 50 ms (as a flapping
//! failover, or an operator's `pg_terminate_backend`, does), while ten
//! writers send keyed exports and send each again on any answer but 200.
//!
//! Every key's write must run, once: a request refused because the journal
//! was away ("nothing was sent") runs when sent again, rather than replay a
//! failure for as long as the key is kept. And every call whose client was
//! told `succeeded` is `succeeded` in the journal, not left `in_flight` for
//! a sweeper to settle as `unknown`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use recourse::ExecutorConfig;
use recourse::journal::{CallState, Journal, ListQuery, PostgresJournal, open_journal};
use recourse_gateway::GatewayConfig;
use recourse_test_support::{PostgresSchema, export, keyed, service_var, tools};
use serde_json::Value;

use crate::support::{self, TestGateway};

const WRITERS: usize = 10;
const KEYS_PER_WRITER: usize = 13;
/// How long one key may take to get its 200 while the connections are cut.
const PER_KEY: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn keyed_writes_under_terminated_backends_each_run_once_and_are_journaled_as_answered() {
    let Some(url) = service_var("RECOURSE_TEST_POSTGRES_URL") else {
        return;
    };
    let t = tools(&[], Duration::ZERO).await;
    let schema = Arc::new(PostgresSchema::create(&url).await);
    let app = format!("recourse-cuts-{}", uuid::Uuid::now_v7().simple());
    let journal = open_journal(&schema.url_as(&app)).await.unwrap();
    // A short lease: a claim whose answer was lost holds its key no longer.
    let config = ExecutorConfig {
        lease: Duration::from_secs(2),
        ..support::config()
    };
    let gw = TestGateway::new(GatewayConfig::new(config).with_journal(journal), None);

    let cutting = Arc::new(AtomicBool::new(true));
    let cuts = Arc::new(AtomicU64::new(0));
    let cutter = tokio::spawn({
        let (schema, app) = (Arc::clone(&schema), app.clone());
        let (cutting, cuts) = (Arc::clone(&cutting), Arc::clone(&cuts));
        async move {
            for pause in [30, 42, 35, 50, 38, 46].into_iter().cycle() {
                if !cutting.load(Ordering::SeqCst) {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(pause)).await;
                let cut = schema.cut(&app).await;
                cuts.fetch_add(u64::try_from(cut).unwrap_or(0), Ordering::SeqCst);
            }
        }
    });

    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let (gw, body) = (gw.clone(), export(&t));
            tokio::spawn(async move {
                let (mut told, mut refused) = (BTreeMap::new(), 0);
                for k in 0..KEYS_PER_WRITER {
                    let key = format!("cut-{w}-{k}");
                    let (answer, refusals) = until_200(&gw, &keyed(body.clone(), &key)).await;
                    told.insert(key, answer);
                    refused += refusals;
                }
                (told, refused)
            })
        })
        .collect();
    let (mut told, mut refused) = (BTreeMap::new(), 0);
    for writer in writers {
        let (answers, refusals) = writer.await.unwrap();
        told.extend(answers);
        refused += refusals;
    }
    cutting.store(false, Ordering::SeqCst);
    cutter.await.unwrap();
    let cut = cuts.load(Ordering::SeqCst);
    eprintln!(
        "{} keys written while {cut} connections were cut; {refused} answer(s) said to send again",
        told.len()
    );
    assert!(cut >= 20, "the connections were cut ({cut})");

    // Every key ran: its client was told `succeeded`, never a replayed failure.
    let blocked: Vec<String> = told
        .iter()
        .filter(|(_, answer)| answer["outcome"] != "succeeded")
        .map(|(key, answer)| format!("{key}: {answer}"))
        .collect();

    // The journal holds each as its client was told: `succeeded`, none left
    // in flight (an outcome write may land after its answer, as it is retried).
    let reader = PostgresJournal::connect(&schema.url).await.unwrap();
    let started = Instant::now();
    let states = loop {
        let query = ListQuery::default();
        let entries = reader.list(&query).await.unwrap();
        let states: BTreeMap<String, CallState> =
            entries.into_iter().map(|e| (e.call_id, e.state)).collect();
        let settled = states.values().all(|s| *s == CallState::Succeeded);
        if settled || started.elapsed() > Duration::from_secs(20) {
            break states;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let mislabelled: Vec<String> = told
        .iter()
        .filter(|(_, answer)| answer["outcome"] == "succeeded")
        .filter_map(|(key, answer)| {
            let call_id = answer["call_id"].as_str().unwrap_or_default();
            let state = states.get(call_id);
            (state != Some(&CallState::Succeeded)).then(|| format!("{key}: journaled {state:?}"))
        })
        .collect();
    assert!(
        blocked.is_empty() && mislabelled.is_empty(),
        "{} blocked: {blocked:#?}\n{} told succeeded, journaled otherwise: {mislabelled:#?}",
        blocked.len(),
        mislabelled.len()
    );
    let astray: Vec<_> = states
        .iter()
        .filter(|(_, state)| **state != CallState::Succeeded)
        .collect();
    assert!(astray.is_empty(), "calls journaled otherwise: {astray:?}");
    assert_eq!(t.exports_committed(), told.len(), "one export per key");
    drop(gw);
    if let Ok(schema) = Arc::try_unwrap(schema) {
        schema.remove().await;
    }
}

/// Sends `body` until the gateway answers 200: what it answered then, and
/// how many answers before it said to send it again (the only other answer
/// expected).
async fn until_200(gw: &TestGateway, body: &Value) -> (Value, u32) {
    let started = Instant::now();
    let mut refusals = 0;
    loop {
        let (status, answer) = gw.post(body).await;
        if status == 200 {
            return (answer, refusals);
        }
        refusals += 1;
        let code = answer["error"]["code"].as_str().unwrap_or_default();
        assert!(
            matches!(code, "JOURNAL_UNAVAILABLE" | "CALL_IN_PROGRESS"),
            "{status} {answer}"
        );
        assert!(started.elapsed() < PER_KEY, "never answered 200: {answer}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
