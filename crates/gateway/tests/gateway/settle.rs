//! Settlement by hand: an approver records what a person found about an
//! open call — `POST /v1/calls/{call_id}/settle` — and every later answer
//! (the call's record, a keyed retry's replay) says a person settled it,
//! who, and why. Nothing is ever sent.

use crate::support;

use std::sync::Arc;

use recourse::journal::open_journal;
use recourse_gateway::{Callers, GatewayConfig};
use recourse_test_support::{export, keyed, tools, tools_without_lookups};
use serde_json::{Value, json};
use support::{TestGateway, config, journal_path};

const AGENT: &str = "agent-token-0123456789";
const LEAD: &str = "lead-token-0123456789";

async fn gateway(dir: &std::path::Path) -> (TestGateway, TestGateway) {
    let callers = Callers::parse(&format!(
        r#"{{"callers": [
            {{"name": "agent", "token": "{AGENT}"}},
            {{"name": "lead", "token": "{LEAD}", "approver": true}}
        ]}}"#
    ))
    .unwrap();
    let journal = open_journal(&journal_path(dir)).await.unwrap();
    let gw = TestGateway::new(
        GatewayConfig::new(config())
            .with_journal(journal)
            .with_callers(callers),
        None,
    );
    let as_caller = |token: &str| TestGateway {
        gateway: Arc::clone(&gw.gateway),
        token: Some(token.to_owned()),
    };
    (as_caller(AGENT), as_caller(LEAD))
}

async fn settle(gw: &TestGateway, id: &str, body: &Value) -> (u16, Value) {
    let a = gw
        .raw("POST", &format!("/v1/calls/{id}/settle"), body.to_string())
        .await;
    (a.status, a.body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approver_settles_an_unknown_call_and_every_answer_says_who_and_why() {
    let t = tools_without_lookups(&["exports:crash_after_commit:1.0"]).await;
    let dir = tempfile::tempdir().unwrap();
    let (agent, lead) = gateway(dir.path()).await;
    let body = keyed(export(&t), "hand-1");
    let (_, first) = agent.post(&body).await;
    assert_eq!(first["outcome"], "unknown", "{first}");
    let id = first["call_id"].as_str().unwrap();
    let found =
        json!({"state": "succeeded", "note": "the tool's console lists export sales-2024-v3.pdf"});

    let (status, refused) = settle(&agent, id, &found).await;
    assert_eq!(status, 403, "{refused}");
    assert_eq!(refused["error"]["code"], "NOT_APPROVER");

    for bad in [
        json!({"state": "unknown", "note": "n"}),
        json!({"state": "succeeded", "note": "  "}),
        json!({"state": "succeeded"}),
        json!({"state": "succeeded", "note": "n", "who": "someone else"}),
        json!({"state": "succeeded", "note": "n".repeat(2001)}),
    ] {
        let (status, refused) = settle(&lead, id, &bad).await;
        assert_eq!(status, 400, "{bad}: {refused}");
    }

    let (status, settled) = settle(&lead, id, &found).await;
    assert_eq!(status, 200, "{settled}");
    assert_eq!(settled["state"], "succeeded");
    assert_eq!(settled["caller"], "agent", "still the agent's call");
    let record = &settled["record"];
    assert_eq!(record["outcome"], "succeeded");
    assert_eq!(record["settlement"]["by"], "person");
    assert_eq!(record["settlement"]["who"], "lead");
    assert_eq!(record["settlement"]["note"], found["note"]);
    assert_eq!(
        record["attempts"].as_array().unwrap().len(),
        1,
        "history kept"
    );
    let message = record["next"]["model_message"].as_str().unwrap();
    assert!(message.contains("a person"), "{message}");

    // The agent's retry with its key gets the settled record; nothing is sent.
    let (status, replay) = agent.post(&body).await;
    assert_eq!(status, 200, "{replay}");
    assert_eq!(replay["replayed"], true);
    assert_eq!(replay["settlement"]["who"], "lead");

    // Settled, the agent's call no longer waits for a person: to the lead,
    // it is absent — no state of another caller's call is told.
    let (status, again) = settle(&lead, id, &found).await;
    assert_eq!(status, 404, "{again}");
    assert_eq!(again["error"]["code"], "CALL_NOT_FOUND");
    assert!(again["error"]["details"].get("state").is_none(), "{again}");
    let (status, _) = settle(&lead, "c-never-was", &found).await;
    assert_eq!(status, 404);
    assert_eq!(t.exports_committed(), 1, "settling sends nothing");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finished_call_is_not_settled_by_hand() {
    let t = tools(&[], std::time::Duration::ZERO).await;
    let dir = tempfile::tempdir().unwrap();
    let (agent, lead) = gateway(dir.path()).await;
    // The lead's own call, finished: seen, and not settled.
    let (_, done) = lead.post(&keyed(export(&t), "done-1")).await;
    assert_eq!(done["outcome"], "succeeded");
    let id = done["call_id"].as_str().unwrap();
    let (status, refused) = settle(&lead, id, &json!({"state": "failed", "note": "n"})).await;
    assert_eq!(status, 409, "{refused}");
    assert_eq!(refused["error"]["code"], "CALL_NOT_SETTLEABLE");
    // The agent's finished call is absent to the lead, as GET says.
    let (_, done) = agent.post(&keyed(export(&t), "done-2")).await;
    let id = done["call_id"].as_str().unwrap();
    let (status, refused) = settle(&lead, id, &json!({"state": "failed", "note": "n"})).await;
    assert_eq!(status, 404, "{refused}");
    assert_eq!(lead.get(&format!("/v1/calls/{id}")).await.0, 404);
}
