//! Named callers (a tokens file): each sees only its own calls, its keys
//! are its own, another caller's call id answers exactly as an absent one;
//! an approver also sees every call in doubt, an admin everything; the one
//! `RECOURSE_GATEWAY_TOKEN` is caller `default` beside them.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use recourse::journal::open_journal;
use recourse_gateway::{Callers, GatewayConfig};
use recourse_test_support::{export, keyed, tools, tools_without_lookups};
use serde_json::{Value, json};
use support::{TestGateway, config, journal_path};

const ALICE: &str = "alice-token-0123456789";
const BOB: &str = "bob-token-0123456789";
const LEAD: &str = "lead-token-0123456789";
const ROOT: &str = "root-token-0123456789";
const SINGLE: &str = "the-single-token";

/// A gateway of four callers (two plain, an approver, an admin) and the
/// single token, journaling in `dir`.
async fn gateway(dir: &std::path::Path) -> TestGateway {
    let callers = Callers::parse(&format!(
        r#"{{"callers": [
            {{"name": "alice", "token": "{ALICE}"}},
            {{"name": "bob", "token": "{BOB}"}},
            {{"name": "lead", "token": "{LEAD}", "approver": true}},
            {{"name": "root", "token": "{ROOT}", "admin": true}}
        ]}}"#
    ))
    .unwrap();
    let journal = open_journal(&journal_path(dir)).await.unwrap();
    let config = GatewayConfig::new(config())
        .with_journal(journal)
        .with_callers(callers);
    TestGateway::new(config, Some(SINGLE))
}

/// The same gateway, asked as the caller whose token is `token`.
fn as_caller(gw: &TestGateway, token: &str) -> TestGateway {
    TestGateway {
        gateway: Arc::clone(&gw.gateway),
        token: Some(token.to_owned()),
    }
}

fn ids(page: &Value) -> Vec<String> {
    page["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["call_id"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caller_sees_only_its_own_calls_and_cannot_learn_anothers_id() {
    let t = tools(&[], Duration::ZERO).await;
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(dir.path()).await;
    let (alice, bob, root) = (
        as_caller(&gw, ALICE),
        as_caller(&gw, BOB),
        as_caller(&gw, ROOT),
    );

    let (status, a) = alice.post(&keyed(export(&t), "order-1")).await;
    assert_eq!(status, 200, "{a}");
    assert_eq!(a["outcome"], "succeeded");
    assert_eq!(
        a["idempotency_key"], "alice:order-1",
        "a caller's key is its own, at the tool too"
    );
    let alice_call = a["call_id"].as_str().unwrap().to_owned();

    // Bob's same key, with another request: his own call, not a refusal
    // that would name Alice's.
    let mut other = keyed(export(&t), "order-1");
    other["payload"]["format"] = json!("csv");
    let (status, b) = bob.post(&other).await;
    assert_eq!(status, 200, "{b}");
    assert_eq!(b["replayed"], false);
    assert_ne!(b["call_id"], a["call_id"]);
    assert_eq!(b["idempotency_key"], "bob:order-1");
    // And with Alice's very request: run for him, not her record replayed.
    let (status, b2) = bob.post(&keyed(export(&t), "order-1")).await;
    assert_eq!(status, 422, "his own key, his own request before: {b2}");
    assert_eq!(b2["error"]["details"]["call_id"], b["call_id"]);
    assert_eq!(t.exports_committed(), 2);

    // Alice's call is absent for Bob: answered exactly as an id never used.
    let (status, hidden) = bob.get(&format!("/v1/calls/{alice_call}")).await;
    assert_eq!(status, 404, "{hidden}");
    let (_, absent) = bob.get("/v1/calls/c-never-was").await;
    assert_eq!(hidden["error"]["code"], "CALL_NOT_FOUND");
    assert_eq!(hidden["error"]["message"], absent["error"]["message"]);
    let reconcile = bob
        .raw("POST", &format!("/v1/calls/{alice_call}/reconcile"), "")
        .await;
    assert_eq!(reconcile.status, 404, "{}", reconcile.text);
    assert!(!reconcile.text.contains("alice"));

    // Each list holds its caller's calls, each entry naming its caller.
    let (_, page) = bob.get("/v1/calls").await;
    assert_eq!(ids(&page), [b["call_id"].as_str().unwrap()]);
    assert_eq!(page["calls"][0]["caller"], "bob");
    let (status, own) = alice.get(&format!("/v1/calls/{alice_call}")).await;
    assert_eq!(status, 200, "{own}");
    assert_eq!(own["caller"], "alice");
    let (_, everything) = root.get("/v1/calls").await;
    assert_eq!(ids(&everything).len(), 2, "an admin sees every call");

    // A token nobody holds is refused.
    let stranger = as_caller(&gw, "nobody-0123456789");
    assert_eq!(stranger.get("/v1/calls").await.0, 401);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approver_sees_every_call_in_doubt_and_no_other() {
    let ok = tools(&[], Duration::ZERO).await;
    let crash = tools_without_lookups(&["exports:crash_after_commit:1.0"]).await;
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(dir.path()).await;
    let (alice, lead) = (as_caller(&gw, ALICE), as_caller(&gw, LEAD));

    let (_, done) = alice.post(&keyed(export(&ok), "fine")).await;
    let (_, doubt) = alice.post(&keyed(export(&crash), "crashed")).await;
    assert_eq!(doubt["outcome"], "unknown", "{doubt}");

    let (_, page) = lead.get("/v1/calls").await;
    assert_eq!(ids(&page), [doubt["call_id"].as_str().unwrap()]);
    assert_eq!(page["calls"][0]["caller"], "alice");
    let (status, _) = lead
        .get(&format!("/v1/calls/{}", doubt["call_id"].as_str().unwrap()))
        .await;
    assert_eq!(status, 200);
    let (status, _) = lead
        .get(&format!("/v1/calls/{}", done["call_id"].as_str().unwrap()))
        .await;
    assert_eq!(
        status, 404,
        "a finished call of another caller is not in doubt"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_single_token_is_caller_default_with_both_roles() {
    let t = tools(&[], Duration::ZERO).await;
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(dir.path()).await;
    let (_, a) = as_caller(&gw, ALICE).post(&keyed(export(&t), "k")).await;
    let (status, d) = gw.post(&keyed(export(&t), "k")).await;
    assert_eq!(status, 200, "{d}");
    assert_eq!(d["idempotency_key"], "default:k");
    let (_, page) = gw.get("/v1/calls").await;
    assert_eq!(ids(&page).len(), 2, "default is an admin");
    let (_, theirs) = gw
        .get(&format!("/v1/calls/{}", a["call_id"].as_str().unwrap()))
        .await;
    assert_eq!(theirs["caller"], "alice");

    // With one token alone, keys are as given and every call is default's.
    std::fs::create_dir_all(dir.path().join("b")).unwrap();
    let alone = TestGateway::new(
        GatewayConfig::new(config()).with_journal(
            open_journal(&journal_path(dir.path().join("b").as_path()))
                .await
                .unwrap(),
        ),
        Some(SINGLE),
    );
    let (_, one) = alone.post(&keyed(export(&t), "k")).await;
    assert_eq!(one["idempotency_key"], "k");
    let (_, page) = alone.get("/v1/calls").await;
    assert_eq!(page["calls"][0]["caller"], "default");
}

/// `/metrics` and the console's breakers name only the endpoints a caller
/// called; an admin's show every one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caller_sees_the_breakers_of_its_own_endpoints_only() {
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(dir.path()).await;
    let (alice, bob, root) = (
        as_caller(&gw, ALICE),
        as_caller(&gw, BOB),
        as_caller(&gw, ROOT),
    );
    // Alice's calls to a port nobody listens on: her endpoint's breaker counts.
    let secret_path = "http://127.0.0.1:9/alice-private-endpoint";
    for _ in 0..2 {
        let (status, answer) = alice
            .post(&json!({"url": secret_path, "method": "GET", "payload": {}}))
            .await;
        assert_eq!(status, 200, "{answer}");
    }
    let metrics = |gw: TestGateway| async move {
        let answer = gw.raw("GET", "/metrics", "").await;
        assert_eq!(answer.status, 200);
        answer.text
    };
    assert!(
        metrics(alice.clone())
            .await
            .contains("alice-private-endpoint")
    );
    assert!(
        metrics(root.clone())
            .await
            .contains("alice-private-endpoint")
    );
    let bobs = metrics(bob.clone()).await;
    assert!(!bobs.contains("alice-private-endpoint"), "{bobs}");
    assert!(
        bobs.contains("recourse_breakers"),
        "the families are there, empty"
    );
}
