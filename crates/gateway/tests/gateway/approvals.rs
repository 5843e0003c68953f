//! Approvals through the gateway: a call that needs a person waits in the
//! journal, sending nothing, answered `202`; an approver decides it
//! (`POST /v1/approvals/{id}`); approved, it is dispatched once with exactly
//! the approved payload — no correction may change it; rejected or expired,
//! it fails with nothing sent. Each test runs on SQLite, and on PostgreSQL
//! when `RECOURSE_TEST_POSTGRES_URL` is set.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::Request;
use recourse::ManualClock;
use recourse::journal::{CallState, open_journal};
use recourse_gateway::{Callers, GatewayConfig};
use recourse_test_support::{PostgresSchema, check_openapi, export, keyed, service_var, tools};
use serde_json::{Value, json};
use support::{Answer, TestGateway, config, journal_path};

const AGENT: &str = "agent-token-0123456789";
const LEAD: &str = "lead-token-0123456789";

/// A journal for one test: a SQLite file in `dir`, or a private PostgreSQL
/// schema (removed by the test when it is done).
enum Store {
    Sqlite(tempfile::TempDir),
    Postgres(PostgresSchema),
}

impl Store {
    fn sqlite() -> Self {
        Self::Sqlite(tempfile::tempdir().unwrap())
    }

    /// `None` (the test skipped, saying so) without a configured server.
    async fn postgres() -> Option<Self> {
        let url = service_var("RECOURSE_TEST_POSTGRES_URL")?;
        Some(Self::Postgres(PostgresSchema::create(&url).await))
    }

    fn location(&self) -> String {
        match self {
            Self::Sqlite(dir) => journal_path(dir.path()),
            Self::Postgres(schema) => schema.url.clone(),
        }
    }

    async fn remove(self) {
        if let Self::Postgres(schema) = self {
            schema.remove().await;
        }
    }
}

/// One gateway on `store`, timed by `clock`, in the two seats it is called
/// from: the agent's and the lead's (an approver).
struct Seats {
    agent: TestGateway,
    lead: TestGateway,
}

async fn gateway(store: &Store, clock: Option<ManualClock>) -> Seats {
    let callers = Callers::parse(&format!(
        r#"{{"callers": [
            {{"name": "agent", "token": "{AGENT}"}},
            {{"name": "lead", "token": "{LEAD}", "approver": true}}
        ]}}"#
    ))
    .unwrap();
    let journal = open_journal(&store.location()).await.unwrap();
    let mut config = GatewayConfig::new(support::config())
        .with_journal(journal)
        .with_callers(callers);
    if let Some(clock) = clock {
        config = config.with_clock(Arc::new(clock));
    }
    let gw = TestGateway::new(config, None);
    let as_caller = |token: &str| TestGateway {
        gateway: Arc::clone(&gw.gateway),
        token: Some(token.to_owned()),
    };
    Seats {
        agent: as_caller(AGENT),
        lead: as_caller(LEAD),
    }
}

/// `body` asking for `approval`.
fn needing_approval(mut body: Value, approval: Value) -> Value {
    body["approval"] = approval;
    body
}

async fn decide(gw: &TestGateway, approval_id: &str, body: &Value) -> Answer {
    gw.raw(
        "POST",
        &format!("/v1/approvals/{approval_id}"),
        body.to_string(),
    )
    .await
}

/// `GET /v1/calls/{id}` with `Prefer: wait=N`.
async fn wait_for_call(gw: &TestGateway, id: &str, secs: u64) -> Answer {
    let request = Request::get(format!("/v1/calls/{id}"))
        .header("Prefer", format!("wait={secs}"))
        .body(Body::empty())
        .unwrap();
    gw.send(request).await
}

/// Returns once a request waits on the gateway (`Prefer: wait`).
async fn until_one_waits(gw: &TestGateway) {
    let started = std::time::Instant::now();
    while gw.gateway.waiting() == 0 {
        assert!(started.elapsed() < Duration::from_secs(10), "nobody waits");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn approval_of(answer: &Value) -> (String, String) {
    let approval = &answer["approval"];
    (
        approval["id"].as_str().unwrap().to_owned(),
        approval["request_sha256"].as_str().unwrap().to_owned(),
    )
}

/// The whole way of one approved call: asked (202, nothing sent), asked
/// again under its key (the same approval), refused to a non-approver and
/// to a stale hash, approved while the agent waits on it, dispatched once
/// with exactly the approved payload, and never decided twice.
async fn approved_once_with_the_approved_payload(store: Store) {
    let t = tools(&[], Duration::ZERO).await;
    let gw = gateway(&store, None).await;
    let (_, doc) = gw.agent.get("/openapi.json").await;
    let body = keyed(
        needing_approval(
            export(&t),
            json!({"reason": "exports leave the building", "expires_in": "1h"}),
        ),
        "export-approved",
    );

    let asked = gw.agent.post_answer(&body, &[]).await;
    assert_eq!(asked.status, 202, "{}", asked.body);
    let record = &asked.body;
    assert_eq!(record["outcome"], "awaiting_approval");
    assert_eq!(record["replayed"], false);
    assert_eq!(record["next"]["step"], "ask_user");
    let question = record["next"]["question"].as_str().unwrap();
    assert!(
        question.contains("exports leave the building"),
        "{question}"
    );
    assert_eq!(record["approval"]["state"], "pending");
    assert_eq!(record["approval"]["reason"], "exports leave the building");
    assert!(
        record["approval"]["expires_at"]
            .as_str()
            .unwrap()
            .ends_with('Z')
    );
    assert_eq!(record["http_calls"], 0);
    check_openapi(&doc, "post", "/v1/calls", 202, record);
    let id = record["call_id"].as_str().unwrap().to_owned();
    assert_eq!(
        asked.header("location"),
        Some(format!("/v1/calls/{id}").as_str())
    );
    let (approval_id, hash) = approval_of(record);
    assert_eq!(hash.len(), 64, "{hash}");
    assert_eq!(t.exports_committed(), 0, "nothing is sent before approval");

    // The same request again under its key: the same approval, never a second.
    let again = gw.agent.post_answer(&body, &[]).await;
    assert_eq!(again.status, 202, "{}", again.body);
    assert_eq!(again.body["replayed"], true);
    assert_eq!(again.body["call_id"], id.as_str());
    assert_eq!(again.body["approval"]["id"], approval_id.as_str());
    let mut other = body.clone();
    other["payload"]["format"] = json!("csv");
    let (status, reused) = gw.agent.post(&other).await;
    assert_eq!(status, 422, "{reused}");
    assert_eq!(reused["error"]["code"], "IDEMPOTENCY_KEY_REUSED");

    // The agent follows its call; an approver sees every call awaiting one.
    let (status, one) = gw.agent.get(&format!("/v1/calls/{id}")).await;
    assert_eq!(status, 200, "{one}");
    assert_eq!(one["state"], "awaiting_approval");
    check_openapi(&doc, "get", "/v1/calls/{call_id}", 200, &one);
    let (status, page) = gw.lead.get("/v1/calls?state=awaiting_approval").await;
    assert_eq!(status, 200, "{page}");
    let listed = page["calls"].as_array().unwrap();
    assert_eq!(listed.len(), 1, "{page}");
    assert_eq!(listed[0]["caller"], "agent");
    assert_eq!(listed[0]["approval"]["id"], approval_id.as_str());
    check_openapi(&doc, "get", "/v1/calls", 200, &page);

    // Only an approver decides, and only what they read.
    let refused = decide(&gw.agent, &approval_id, &json!({"decision": "approve"})).await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    assert_eq!(refused.body["error"]["code"], "NOT_APPROVER");
    let stale = decide(
        &gw.lead,
        &approval_id,
        &json!({"decision": "approve", "request_sha256": "0".repeat(64)}),
    )
    .await;
    assert_eq!(stale.status, 409, "{}", stale.body);
    assert_eq!(stale.body["error"]["code"], "APPROVAL_STALE");
    assert_eq!(stale.body["error"]["details"]["state"], "pending");
    for bad in [
        json!({"decision": "maybe"}),
        json!({"decision": "approve", "why": "x"}),
        json!({"decision": "approve", "note": "n".repeat(2001)}),
    ] {
        let refused = decide(&gw.lead, &approval_id, &bad).await;
        assert_eq!(refused.status, 400, "{bad}: {}", refused.body);
    }
    let unknown = decide(
        &gw.lead,
        "no-such-approval",
        &json!({"decision": "approve"}),
    )
    .await;
    assert_eq!(unknown.status, 404, "{}", unknown.body);
    assert_eq!(unknown.body["error"]["code"], "APPROVAL_NOT_FOUND");
    assert_eq!(t.exports_committed(), 0, "refusals send nothing");

    // The agent waits on its call; the lead approves it meanwhile.
    let waiting = {
        let (agent, id) = (gw.agent.clone(), id.clone());
        tokio::spawn(async move { wait_for_call(&agent, &id, 30).await })
    };
    until_one_waits(&gw.agent).await;
    let approved = decide(
        &gw.lead,
        &approval_id,
        &json!({"decision": "approve", "note": "checked with finance", "request_sha256": hash}),
    )
    .await;
    assert_eq!(approved.status, 200, "{}", approved.body);
    assert_eq!(approved.body["state"], "approved");
    assert_eq!(approved.body["decided_by"], "lead");
    assert_eq!(approved.body["note"], "checked with finance");
    check_openapi(
        &doc,
        "post",
        "/v1/approvals/{approval_id}",
        200,
        &approved.body,
    );

    let waited = waiting.await.unwrap();
    assert_eq!(waited.status, 200, "{}", waited.body);
    assert_eq!(waited.header("preference-applied"), Some("wait=30"));
    assert_eq!(waited.body["state"], "succeeded", "{}", waited.body);
    let done = &waited.body["record"];
    assert_eq!(done["outcome"], "succeeded");
    assert_eq!(done["approval"]["state"], "approved");
    let attempts = done["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 1, "{done}");
    assert_eq!(
        attempts[0]["payload"], body["payload"],
        "exactly the approved payload"
    );
    assert_eq!(done["data"]["format"], "pdf");
    assert_eq!(t.exports_committed(), 1, "one dispatch");
    check_openapi(&doc, "get", "/v1/calls/{call_id}", 200, &waited.body);

    // Decided once: a second decision changes nothing; a resend replays.
    let twice = decide(&gw.lead, &approval_id, &json!({"decision": "reject"})).await;
    assert_eq!(twice.status, 409, "{}", twice.body);
    assert_eq!(twice.body["error"]["code"], "APPROVAL_DECIDED");
    assert_eq!(twice.body["error"]["details"]["state"], "approved");
    let (status, replay) = gw.agent.post(&body).await;
    assert_eq!(status, 200, "{replay}");
    assert_eq!(replay["replayed"], true);
    assert_eq!(replay["outcome"], "succeeded");
    assert_eq!(t.exports_committed(), 1, "never a second dispatch");
    store.remove().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_call_is_dispatched_once_with_the_approved_payload_on_sqlite() {
    approved_once_with_the_approved_payload(Store::sqlite()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_call_is_dispatched_once_with_the_approved_payload_on_postgres() {
    let Some(store) = Store::postgres().await else {
        return;
    };
    approved_once_with_the_approved_payload(store).await;
}

/// A format the tool wants in lower case: without approval, repair fixes
/// it; approved as written, nothing may change it, and the call stops.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_correction_that_would_change_an_approved_value_is_refused() {
    let t = tools(&[], Duration::ZERO).await;
    let store = Store::sqlite();
    let gw = gateway(&store, None).await;
    let mut upper = export(&t);
    upper["payload"]["format"] = json!("PDF");

    // Unapproved, the tool's allowed values repair it.
    let (status, repaired) = gw.agent.post(&upper).await;
    assert_eq!(status, 200, "{repaired}");
    assert_eq!(repaired["outcome"], "succeeded", "{repaired}");
    assert_eq!(repaired["attempts"][1]["payload"]["format"], "pdf");
    assert_eq!(t.exports_committed(), 1);

    let body = needing_approval(upper.clone(), json!({"reason": "r"}));
    let (status, asked) = gw.agent.post(&body).await;
    assert_eq!(status, 202, "{asked}");
    let id = asked["call_id"].as_str().unwrap().to_owned();
    let (approval_id, _) = approval_of(&asked);
    let approved = decide(&gw.lead, &approval_id, &json!({"decision": "approve"})).await;
    assert_eq!(approved.status, 200, "{}", approved.body);
    let waited = wait_for_call(&gw.agent, &id, 30).await;
    assert_eq!(waited.body["state"], "failed", "{}", waited.body);
    let record = &waited.body["record"];
    assert_eq!(record["reason"], "nothing_mutable", "{record}");
    assert_eq!(record["next"]["step"], "ask_user");
    let attempts = record["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 1, "no corrected resend: {record}");
    assert_eq!(
        attempts[0]["payload"]["format"], "PDF",
        "the approved value, unchanged"
    );
    assert_eq!(t.exports_committed(), 1, "the refused export wrote nothing");

    // A read the tool answers with a suggestion (its ticker for a company
    // name): taken unapproved; approved as written, it stops and the
    // suggestion becomes a question for the user.
    let quote = json!({"url": format!("{}/api/stock/quote", t.base_url()), "payload": {"symbol": "MSFT Inc"}});
    let (_, taken) = gw.agent.post(&quote).await;
    assert_eq!(taken["outcome"], "succeeded", "{taken}");
    assert_eq!(taken["attempts"][1]["payload"]["symbol"], "MSFT");
    let (status, asked) = gw
        .agent
        .post(&needing_approval(quote, json!({"reason": "r"})))
        .await;
    assert_eq!(status, 202, "{asked}");
    let (approval_id, _) = approval_of(&asked);
    let approved = decide(&gw.lead, &approval_id, &json!({"decision": "approve"})).await;
    assert_eq!(approved.status, 200, "{}", approved.body);
    let waited = wait_for_call(&gw.agent, asked["call_id"].as_str().unwrap(), 30).await;
    let record = &waited.body["record"];
    assert_eq!(
        waited.body["state"], "failed",
        "a read that needed approval is journaled too: {record}"
    );
    let attempts = record["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 1, "{record}");
    assert_eq!(attempts[0]["payload"]["symbol"], "MSFT Inc");
    assert_eq!(record["next"]["step"], "ask_user");
    let question = record["next"]["question"].as_str().unwrap();
    assert!(question.contains("MSFT"), "{question}");
}

/// Rejected, or not decided in time (on the gateway's clock): the call
/// fails with nothing sent, `stop_kind: policy`; a late decision is refused;
/// the sweeper expires what nobody reads; no prune removes either.
async fn rejected_or_expired_sends_nothing(store: Store) {
    let t = tools(&[], Duration::ZERO).await;
    let clock = ManualClock::new();
    let gw = gateway(&store, Some(clock.clone())).await;
    let ask = |approval: Value| {
        let gw = gw.agent.clone();
        let body = needing_approval(export(&t), approval);
        async move {
            let (status, asked) = gw.post(&body).await;
            assert_eq!(status, 202, "{asked}");
            let id = asked["call_id"].as_str().unwrap().to_owned();
            (id, approval_of(&asked).0)
        }
    };

    let (rejected, approval_id) = ask(json!({"reason": "r"})).await;
    let no = decide(
        &gw.lead,
        &approval_id,
        &json!({"decision": "reject", "note": "not this quarter"}),
    )
    .await;
    assert_eq!(no.status, 200, "{}", no.body);
    assert_eq!(no.body["state"], "rejected");
    let (_, call) = gw.agent.get(&format!("/v1/calls/{rejected}")).await;
    assert_eq!(call["state"], "failed", "{call}");
    assert_eq!(call["record"]["reason"], "approval_rejected");
    assert_eq!(call["record"]["stop_kind"], "policy");
    assert_eq!(call["record"]["next"]["step"], "explain_refusal");
    assert_eq!(call["record"]["approval"]["note"], "not this quarter");
    assert_eq!(call["record"]["http_calls"], 0);

    // 90 s to decide, then read as the clock passes it: expired.
    let (expired, approval_id) = ask(json!({"reason": "r", "expires_in": "90s"})).await;
    clock.advance(Duration::from_secs(89));
    let (_, call) = gw.agent.get(&format!("/v1/calls/{expired}")).await;
    assert_eq!(call["state"], "awaiting_approval", "not yet: {call}");
    clock.advance(Duration::from_secs(1));
    let (_, call) = gw.agent.get(&format!("/v1/calls/{expired}")).await;
    assert_eq!(call["state"], "failed", "{call}");
    assert_eq!(call["record"]["reason"], "approval_expired");
    assert_eq!(call["record"]["stop_kind"], "policy");
    assert_eq!(call["record"]["approval"]["state"], "expired");
    let late = decide(&gw.lead, &approval_id, &json!({"decision": "approve"})).await;
    assert_eq!(late.status, 409, "{}", late.body);
    assert_eq!(late.body["error"]["code"], "APPROVAL_DECIDED");
    assert_eq!(late.body["error"]["details"]["state"], "expired");

    // Due before anyone reads it (seconds as a bare number): a decision
    // finds it expired; so does the sweeper for one nobody reads at all.
    let (decided_late, approval_id) = ask(json!({"reason": "r", "expires_in": 60})).await;
    let (swept, _) = ask(json!({"reason": "r", "expires_in": "60"})).await;
    clock.advance(Duration::from_secs(60));
    let late = decide(&gw.lead, &approval_id, &json!({"decision": "approve"})).await;
    assert_eq!(late.status, 409, "{}", late.body);
    assert_eq!(late.body["error"]["details"]["state"], "expired");
    let journal = Arc::clone(gw.agent.gateway.journal().unwrap());
    let entry = journal.get(&decided_late).await.unwrap().unwrap();
    assert_eq!(entry.state, CallState::Failed);
    assert_eq!(
        journal.get(&swept).await.unwrap().unwrap().state,
        CallState::AwaitingApproval,
        "nobody read it yet"
    );
    gw.agent.gateway.sweep(|line| eprintln!("{line}"));
    let started = std::time::Instant::now();
    while journal.get(&swept).await.unwrap().unwrap().state != CallState::Failed {
        assert!(started.elapsed() < Duration::from_secs(10), "never swept");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (_, call) = gw.agent.get(&format!("/v1/calls/{swept}")).await;
    assert_eq!(call["record"]["reason"], "approval_expired", "{call}");

    // A decision kept is never pruned.
    let pruned = recourse::journal::prune_older_than(journal.as_ref(), Duration::ZERO)
        .await
        .unwrap();
    assert_eq!(pruned, 0);
    for id in [&rejected, &expired, &decided_late, &swept] {
        assert!(journal.get(id).await.unwrap().is_some(), "{id} kept");
    }
    assert_eq!(t.exports_committed(), 0, "nothing was ever sent");
    store.remove().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rejected_or_expired_call_fails_with_nothing_sent_on_sqlite() {
    rejected_or_expired_sends_nothing(Store::sqlite()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rejected_or_expired_call_fails_with_nothing_sent_on_postgres() {
    let Some(store) = Store::postgres().await else {
        return;
    };
    rejected_or_expired_sends_nothing(store).await;
}

/// Two gateways sharing a journal decide one approval at once, one
/// approving and one rejecting: exactly one wins, and the tool sees a
/// write only if the approval won.
async fn one_of_two_decisions_wins(store: Store) {
    let t = tools(&[], Duration::ZERO).await;
    for round in 0..4 {
        let (first, second) = (gateway(&store, None).await, gateway(&store, None).await);
        let before = t.exports_committed();
        let body = keyed(
            needing_approval(export(&t), json!({"reason": "r"})),
            &format!("race-{round}"),
        );
        let (status, asked) = first.agent.post(&body).await;
        assert_eq!(status, 202, "{asked}");
        let id = asked["call_id"].as_str().unwrap().to_owned();
        let (approval_id, _) = approval_of(&asked);
        let (yes, no) = (
            json!({"decision": "approve"}),
            json!({"decision": "reject"}),
        );
        let (approve, reject) = tokio::join!(
            decide(&first.lead, &approval_id, &yes),
            decide(&second.lead, &approval_id, &no),
        );
        let statuses = [approve.status, reject.status];
        assert!(
            statuses == [200, 409] || statuses == [409, 200],
            "{statuses:?}: {} / {}",
            approve.body,
            reject.body
        );
        let loser = if approve.status == 409 {
            &approve
        } else {
            &reject
        };
        assert_eq!(loser.body["error"]["code"], "APPROVAL_DECIDED");
        let waited = wait_for_call(&first.agent, &id, 30).await;
        let (state, writes) = if approve.status == 200 {
            ("succeeded", 1)
        } else {
            ("failed", 0)
        };
        assert_eq!(waited.body["state"], state, "{}", waited.body);
        assert_eq!(t.exports_committed() - before, writes);
    }
    store.remove().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn of_two_decisions_at_once_one_wins_on_sqlite() {
    one_of_two_decisions_wins(Store::sqlite()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn of_two_decisions_at_once_one_wins_on_postgres() {
    let Some(store) = Store::postgres().await else {
        return;
    };
    one_of_two_decisions_wins(store).await;
}

/// A wait that nothing ends: answered after it, still awaiting, the
/// preference applied; without `Prefer`, answered at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_ends_with_its_time_and_says_it_was_applied() {
    let t = tools(&[], Duration::ZERO).await;
    let store = Store::sqlite();
    let gw = gateway(&store, None).await;
    let (_, asked) = gw
        .agent
        .post(&needing_approval(export(&t), json!({"reason": "r"})))
        .await;
    let id = asked["call_id"].as_str().unwrap();
    let waited = wait_for_call(&gw.agent, id, 1).await;
    assert_eq!(waited.status, 200);
    assert_eq!(waited.header("preference-applied"), Some("wait=1"));
    assert_eq!(waited.body["state"], "awaiting_approval");
    let plain = gw
        .agent
        .send(
            Request::get(format!("/v1/calls/{id}"))
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(plain.header("preference-applied"), None);
}

/// A tool whose manifest entry asks for approval: its calls wait without
/// asking themselves; approved, one write.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tools_manifest_can_require_approval() {
    let tool = RefundTool::start().await;
    let store = Store::sqlite();
    let gw = gateway(&store, None).await;
    let body = json!({"url": format!("{}/api/refunds", tool.base), "payload": {"order_id": "ORD-7", "amount": 750}});
    let (status, asked) = gw.agent.post(&body).await;
    assert_eq!(status, 202, "{asked}");
    assert_eq!(asked["approval"]["reason"], "refunds need a person");
    assert_eq!(tool.writes(), 0);
    let (approval_id, _) = approval_of(&asked);
    let approved = decide(&gw.lead, &approval_id, &json!({"decision": "approve"})).await;
    assert_eq!(approved.status, 200, "{}", approved.body);
    let waited = wait_for_call(&gw.agent, asked["call_id"].as_str().unwrap(), 30).await;
    assert_eq!(waited.body["state"], "succeeded", "{}", waited.body);
    assert_eq!(tool.writes(), 1);
    assert_eq!(tool.last(), json!({"order_id": "ORD-7", "amount": 750}));
}

/// Approvals need a journal, and a usable `approval`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_that_cannot_wait_is_refused() {
    let t = tools(&[], Duration::ZERO).await;
    let plain = TestGateway::new(GatewayConfig::new(config()).allow_self_approval(), None);
    let (status, refused) = plain
        .post(&needing_approval(export(&t), json!({"reason": "r"})))
        .await;
    assert_eq!(status, 400, "{refused}");
    assert_eq!(refused["error"]["code"], "JOURNAL_REQUIRED");
    let store = Store::sqlite();
    let gw = gateway(&store, None).await;
    for (approval, field) in [
        (json!({"reason": " "}), Some("approval.reason")),
        (
            json!({"reason": "r", "expires_in": "31d"}),
            Some("approval.expires_in"),
        ),
        (json!({"reason": "r", "expires_in": "soon"}), None),
        (json!({"why": "r"}), None),
    ] {
        let (status, refused) = gw
            .agent
            .post(&needing_approval(export(&t), approval.clone()))
            .await;
        assert_eq!(status, 400, "{approval}: {refused}");
        if let Some(field) = field {
            assert_eq!(refused["error"]["details"]["field"], field, "{refused}");
        }
    }
    assert_eq!(t.exports_committed(), 0);
}

/// A refund endpoint whose manifest says a person approves every refund.
struct RefundTool {
    base: String,
    seen: Arc<std::sync::Mutex<Vec<Value>>>,
}

impl RefundTool {
    async fn start() -> Self {
        use axum::routing::{get, post};
        let seen: Arc<std::sync::Mutex<Vec<Value>>> = Arc::default();
        let log = Arc::clone(&seen);
        let app = axum::Router::new()
            .route(
                "/api/capabilities",
                get(|| async {
                    axum::Json(json!({"success": true, "data": {"capabilities": [
                        {"endpoint": "/api/refunds", "method": "POST", "idempotent": false,
                         "approval": {"reason": "refunds need a person", "expires_in": "1h"}}
                    ]}}))
                }),
            )
            .route(
                "/api/refunds",
                post(move |axum::Json(payload): axum::Json<Value>| {
                    let log = Arc::clone(&log);
                    async move {
                        log.lock().unwrap().push(payload);
                        axum::Json(json!({"success": true, "data": {"refund_id": "rf-1"}}))
                    }
                }),
            );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        Self { base, seen }
    }

    fn writes(&self) -> usize {
        self.seen.lock().unwrap().len()
    }

    fn last(&self) -> Value {
        self.seen
            .lock()
            .unwrap()
            .last()
            .cloned()
            .unwrap_or_default()
    }
}
