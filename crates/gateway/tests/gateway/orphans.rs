//! Calls left in flight by a process that died mid-write: a keyed retry of
//! one gets a full record (its outcome unknown, `stop_kind` and `next`
//! included) and never a second dispatch, and the sweeper settles it through
//! its lookup while the gateway runs — the record then says what settled it.

use std::time::Duration;

use recourse::journal::{Journal, KeyClaim, NewCall, open_journal};
use recourse::keyed::request_hash;
use recourse_reference_tools::RunningTools;
use recourse_test_support::{PostgresSchema, check_openapi, export, keyed, service_var, tools};
use serde_json::{Value, json};

use crate::support::{TestGateway, journal_path};

/// What a process that died while its export was at the tool leaves in
/// `journal`: the caller's key claimed, the call begun, one attempt sent,
/// a lease that has run out. The tool committed the write (under the key
/// the call sent) before the process died.
async fn leave_an_orphan(journal: &dyn Journal, t: &RunningTools, body: &Value) -> String {
    let call_id = "c-orphan-1".to_owned();
    let mut hashed = body.clone();
    hashed.as_object_mut().unwrap().remove("idempotency_key");
    let dead = "recourse-died-mid-write";
    journal
        .claim_key(&KeyClaim {
            call_id: call_id.clone(),
            caller_key: body["idempotency_key"].as_str().unwrap().to_owned(),
            request_hash: request_hash(&hashed),
            target: body["url"].as_str().unwrap().to_owned(),
            owner: dead.to_owned(),
            lease: Duration::ZERO,
            caller: None,
        })
        .await
        .unwrap();
    journal
        .begin_call(&NewCall {
            call_id: call_id.clone(),
            target: body["url"].as_str().unwrap().to_owned(),
            capability: None,
            idempotency_key: Some("k-orphan-1".to_owned()),
            reconcile: body["reconcile"].as_str().map(str::to_owned),
            verification: None,
            payload: body["payload"].clone(),
            owner: dead.to_owned(),
            lease: Duration::ZERO,
            caller: None,
        })
        .await
        .unwrap();
    journal
        .begin_attempt(&call_id, 1, Some(&body["payload"]))
        .await
        .unwrap();
    let committed = reqwest::Client::new()
        .post(format!("{}/api/exports", t.base_url()))
        .header("Idempotency-Key", "k-orphan-1")
        .json(&body["payload"])
        .send()
        .await
        .unwrap();
    assert!(committed.status().is_success());
    assert_eq!(t.exports_committed(), 1);
    call_id
}

async fn an_orphan_is_answered_in_full_then_settled(location: &str) {
    let t = tools(&[], Duration::ZERO).await;
    let mut body = keyed(export(&t), "order-9-export");
    body["reconcile"] = json!(format!("{}/api/exports/{{key}}", t.base_url()));
    let journal = open_journal(location).await.unwrap();
    let id = leave_an_orphan(journal.as_ref(), &t, &body).await;

    let gw = TestGateway::journaled_with_lease(location, 1000).await;
    let (_, doc) = gw.get("/openapi.json").await;

    // Before any settler ran: the journal's record, whole, and nothing sent.
    let (status, replayed) = gw.post(&body).await;
    assert_eq!(status, 200, "{replayed}");
    assert_eq!(replayed["replayed"], true);
    assert_eq!(replayed["call_id"], id.as_str());
    assert_eq!(replayed["outcome"], "unknown");
    assert_eq!(replayed["reason"], "outcome_unknown");
    assert_eq!(replayed["stop_kind"], "unknown_outcome");
    assert_eq!(replayed["next"]["step"], "do_not_repeat");
    assert_eq!(
        replayed["http_calls"], 1,
        "the attempt the journal recorded"
    );
    assert_eq!(replayed["settlement"], Value::Null);
    check_openapi(&doc, "post", "/v1/calls", 200, &replayed);

    // The sweeper finds the lease run out and looks the write up.
    gw.gateway.sweep(|_| {});
    let path = format!("/v1/calls/{id}");
    let settled = gw.wait_for(&path, |b| b["state"] != "in_flight").await;
    check_openapi(&doc, "get", "/v1/calls/{call_id}", 200, &settled);
    assert_eq!(settled["state"], "succeeded", "{settled}");
    let record = &settled["record"];
    assert_eq!(record["outcome"], "succeeded");
    assert_eq!(record["stop_kind"], Value::Null);
    assert_eq!(record["next"]["step"], "use_result");
    assert_eq!(record["settlement"]["by"], "lookup");
    assert!(record["settlement"]["at"].as_str().unwrap().ends_with('Z'));
    assert_eq!(
        record["data"]["file_name"], "sales-2024-v3.pdf",
        "the data is what the lookup found: {record}"
    );

    // A retry now gets the settled record; the tool still has one write.
    let (status, again) = gw.post(&body).await;
    assert_eq!(status, 200, "{again}");
    assert_eq!(again["replayed"], true);
    assert_eq!(again["settlement"]["by"], "lookup");
    check_openapi(&doc, "post", "/v1/calls", 200, &again);
    assert_eq!(
        t.exports_committed(),
        1,
        "settled by looking, never by resending"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_orphan_is_answered_in_full_then_settled_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    an_orphan_is_answered_in_full_then_settled(&journal_path(dir.path())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_orphan_is_answered_in_full_then_settled_on_postgres() {
    let Some(url) = service_var("RECOURSE_TEST_POSTGRES_URL") else {
        return;
    };
    let schema = PostgresSchema::create(&url).await;
    an_orphan_is_answered_in_full_then_settled(&schema.url).await;
    schema.remove().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_never_sent_is_settled_failed_by_the_journal() {
    let t = tools(&[], Duration::ZERO).await;
    let dir = tempfile::tempdir().unwrap();
    let location = journal_path(dir.path());
    let journal = open_journal(&location).await.unwrap();
    let body = export(&t);
    journal
        .begin_call(&NewCall {
            call_id: "c-never-sent".to_owned(),
            target: body["url"].as_str().unwrap().to_owned(),
            capability: None,
            idempotency_key: Some("k-never-sent".to_owned()),
            reconcile: None,
            verification: None,
            payload: body["payload"].clone(),
            owner: "recourse-died-before-sending".to_owned(),
            lease: Duration::ZERO,
            caller: None,
        })
        .await
        .unwrap();

    let gw = TestGateway::journaled_with_lease(&location, 1000).await;
    gw.gateway.sweep(|_| {});
    let settled = gw
        .wait_for("/v1/calls/c-never-sent", |b| b["state"] != "in_flight")
        .await;
    assert_eq!(settled["state"], "failed", "{settled}");
    let record = &settled["record"];
    assert_eq!(record["settlement"]["by"], "journal");
    assert_eq!(record["reason"], "not_committed");
    assert_eq!(record["http_calls"], 0);
    assert_eq!(t.exports_committed(), 0);
}
