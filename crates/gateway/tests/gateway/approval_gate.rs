//! The approval gate holds: the caller that asked cannot decide, a gateway
//! with nobody else to decide refuses to hold, a manifest that cannot be
//! read keeps writes back instead of opening the gate, a path spelled
//! another way meets the same manifest entry, and guessing tokens is slowed.

use crate::support;

use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::http::Request;
use recourse::ManualClock;
use recourse::journal::open_journal;
use recourse_gateway::{Callers, GatewayConfig};
use serde_json::{Value, json};
use support::{TestGateway, config, journal_path};

const AGENT: &str = "agent-token-0123456789";
const LEAD: &str = "lead-token-0123456789";
const BOSS: &str = "boss-token-0123456789";

/// What the payment endpoint received: each request's path and payload.
type Paid = Arc<Mutex<Vec<(String, Value)>>>;

/// A payment endpoint whose manifest says a person approves every payment;
/// the manifest's status is the test's to set (200: the manifest).
struct PayTool {
    base: String,
    manifest_status: Arc<AtomicU16>,
    paid: Paid,
}

impl PayTool {
    async fn start() -> Self {
        use axum::extract::State;
        use axum::http::StatusCode;
        use axum::response::IntoResponse;
        use axum::routing::{get, post};
        let manifest_status = Arc::new(AtomicU16::new(200));
        let paid: Paid = Arc::default();
        let status = Arc::clone(&manifest_status);
        let log = Arc::clone(&paid);
        let app = axum::Router::new()
            .route(
                "/api/capabilities",
                get(move || {
                    let status = status.load(Ordering::SeqCst);
                    async move {
                        if status != 200 {
                            let code = StatusCode::from_u16(status).unwrap();
                            return (code, "the manifest is not here now").into_response();
                        }
                        axum::Json(json!({"success": true, "data": {"capabilities": [
                            {"endpoint": "/api/pay", "method": "POST", "idempotent": false,
                             "approval": {"reason": "payments need a person", "expires_in": "1h"}}
                        ]}}))
                        .into_response()
                    }
                }),
            )
            .fallback(post(
                |State(log): State<Paid>,
                 uri: axum::http::Uri,
                 axum::Json(payload): axum::Json<Value>| async move {
                    log.lock().unwrap().push((uri.path().to_owned(), payload));
                    axum::Json(json!({"success": true, "data": {"paid": true}}))
                },
            ))
            .with_state(log);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        Self {
            base,
            manifest_status,
            paid,
        }
    }

    fn pay(&self, path: &str) -> Value {
        json!({"url": format!("{}{path}", self.base), "payload": {"amount": 50000, "to": "attacker-iban"}})
    }

    fn paid(&self) -> Vec<(String, Value)> {
        self.paid.lock().unwrap().clone()
    }
}

/// A journaled gateway whose callers are `agent`, and `lead` and `boss`
/// (approvers), timed by `clock`, as `(agent, lead)`.
async fn two_callers(
    dir: &tempfile::TempDir,
    clock: ManualClock,
    self_approval: bool,
) -> (TestGateway, TestGateway) {
    let callers = Callers::parse(&format!(
        r#"{{"callers": [
            {{"name": "agent", "token": "{AGENT}"}},
            {{"name": "lead", "token": "{LEAD}", "approver": true}},
            {{"name": "boss", "token": "{BOSS}", "approver": true}}
        ]}}"#
    ))
    .unwrap();
    let journal = open_journal(&journal_path(dir.path())).await.unwrap();
    let mut config = GatewayConfig::new(config())
        .with_journal(journal)
        .with_callers(callers)
        .with_clock(Arc::new(clock));
    if self_approval {
        config = config.allow_self_approval();
    }
    let gw = TestGateway::new(config, None);
    let seat = |token: &str| TestGateway {
        gateway: Arc::clone(&gw.gateway),
        token: Some(token.to_owned()),
    };
    (seat(AGENT), seat(LEAD))
}

fn approval_id(asked: &Value) -> String {
    asked["approval"]["id"].as_str().unwrap().to_owned()
}

async fn decide(gw: &TestGateway, approval_id: &str, decision: &str) -> support::Answer {
    gw.raw(
        "POST",
        &format!("/v1/approvals/{approval_id}"),
        json!({"decision": decision}).to_string(),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_caller_that_asked_cannot_approve_its_own_call() {
    let tool = PayTool::start().await;
    let dir = tempfile::tempdir().unwrap();
    let (agent, lead) = two_callers(&dir, ManualClock::new(), false).await;
    // The approver asks for a payment, then tries to approve it.
    let (status, asked) = lead.post(&tool.pay("/api/pay")).await;
    assert_eq!(status, 202, "{asked}");
    let own = decide(&lead, &approval_id(&asked), "approve").await;
    assert_eq!(own.status, 403, "{}", own.body);
    assert_eq!(own.body["error"]["code"], "SELF_APPROVAL");
    // Nor may it reject it: the decision is another person's.
    let own = decide(&lead, &approval_id(&asked), "reject").await;
    assert_eq!(own.body["error"]["code"], "SELF_APPROVAL");
    assert!(tool.paid().is_empty());
    // The agent is no approver at all.
    let agent_decides = decide(&agent, &approval_id(&asked), "approve").await;
    assert_eq!(agent_decides.body["error"]["code"], "NOT_APPROVER");
    assert!(tool.paid().is_empty());

    // Where a one-person setup allows it, the record says so.
    let dir = tempfile::tempdir().unwrap();
    let (_, lead) = two_callers(&dir, ManualClock::new(), true).await;
    let (_, asked) = lead.post(&tool.pay("/api/pay")).await;
    let approved = decide(&lead, &approval_id(&asked), "approve").await;
    assert_eq!(approved.status, 200, "{}", approved.body);
    assert_eq!(approved.body["self_approved"], true, "{}", approved.body);
    let call_id = asked["call_id"].as_str().unwrap();
    let done = lead
        .wait_for(&format!("/v1/calls/{call_id}"), |b| {
            b["state"] == "succeeded"
        })
        .await;
    assert_eq!(done["record"]["approval"]["self_approved"], true, "{done}");
    assert_eq!(tool.paid().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_where_only_the_asker_could_approve_refuses_to_hold() {
    let tool = PayTool::start().await;
    for token in [Some("one-operator-token-0123456789"), None] {
        let dir = tempfile::tempdir().unwrap();
        let journal = open_journal(&journal_path(dir.path())).await.unwrap();
        let gw = TestGateway::new(GatewayConfig::new(config()).with_journal(journal), token);
        for body in [
            tool.pay("/api/pay"),
            json!({"url": format!("{}/api/other", tool.base), "payload": {},
                   "approval": {"reason": "the agent asks itself"}}),
        ] {
            let (status, refused) = gw.post(&body).await;
            assert_eq!(status, 403, "{token:?}: {refused}");
            assert_eq!(refused["error"]["code"], "NO_OTHER_APPROVER", "{refused}");
        }
        assert!(tool.paid().is_empty());

        let journal = open_journal(&journal_path(dir.path())).await.unwrap();
        let allowed = TestGateway::new(
            GatewayConfig::new(config())
                .with_journal(journal)
                .allow_self_approval(),
            token,
        );
        let (status, asked) = allowed.post(&tool.pay("/api/pay")).await;
        assert_eq!(status, 202, "{asked}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_manifest_that_cannot_be_read_keeps_writes_back() {
    let tool = PayTool::start().await;
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new();
    let (agent, _) = two_callers(&dir, clock.clone(), false).await;
    for status in [503, 500, 429] {
        tool.manifest_status.store(status, Ordering::SeqCst);
        for _ in 0..3 {
            let answer = agent.post_answer(&tool.pay("/api/pay"), &[]).await;
            assert_eq!(answer.status, 503, "{status}: {}", answer.body);
            assert_eq!(answer.body["error"]["code"], "MANIFEST_UNAVAILABLE");
            assert_eq!(answer.body["error"]["retryable"], true);
            assert_eq!(answer.header("retry-after"), Some("1"));
        }
        clock.advance(Duration::from_secs(1));
    }
    assert!(tool.paid().is_empty(), "nothing was sent");

    // Never remembered as "no manifest": once it answers, the gate holds.
    tool.manifest_status.store(200, Ordering::SeqCst);
    clock.advance(Duration::from_secs(1));
    let (status, asked) = agent.post(&tool.pay("/api/pay")).await;
    assert_eq!(status, 202, "{asked}");
    assert_eq!(asked["approval"]["reason"], "payments need a person");
    assert!(tool.paid().is_empty());

    // A 404 says there is none: writes go on, ungated.
    let dir = tempfile::tempdir().unwrap();
    let (agent, _) = two_callers(&dir, ManualClock::new(), false).await;
    tool.manifest_status.store(404, Ordering::SeqCst);
    let (status, ran) = agent.post(&tool.pay("/api/pay")).await;
    assert_eq!(status, 200, "{ran}");
    assert_eq!(tool.paid().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_path_spelled_another_way_meets_the_same_manifest_entry() {
    let tool = PayTool::start().await;
    let dir = tempfile::tempdir().unwrap();
    let (agent, lead) = two_callers(&dir, ManualClock::new(), false).await;
    for (n, variant) in [
        "//api/pay",
        "/api/pay/",
        "/api/%70ay",
        "/api/./pay",
        "/x/../api/pay",
    ]
    .into_iter()
    .enumerate()
    {
        let (status, asked) = agent.post(&tool.pay(variant)).await;
        assert_eq!(status, 202, "{variant}: {asked}");
        assert_eq!(asked["approval"]["reason"], "payments need a person");
        assert_eq!(tool.paid().len(), n, "{variant}: sent before approval");
        // Approved, the tool receives the path that was matched.
        let approved = decide(&lead, &approval_id(&asked), "approve").await;
        assert_eq!(approved.status, 200, "{}", approved.body);
        let call_id = asked["call_id"].as_str().unwrap();
        agent
            .wait_for(&format!("/v1/calls/{call_id}"), |b| {
                b["state"] == "succeeded"
            })
            .await;
        assert_eq!(tool.paid().last().unwrap().0, "/api/pay", "{variant}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guessing_tokens_is_slowed_and_logged() {
    let dir = tempfile::tempdir().unwrap();
    let (agent, _) = two_callers(&dir, ManualClock::new(), false).await;
    let guess = |n: usize| {
        Request::get("/v1/calls")
            .header("authorization", format!("Bearer guess-{n:04}"))
            .body(Body::empty())
            .unwrap()
    };
    for n in 0..10 {
        let answer = agent.send(guess(n)).await;
        assert_eq!(answer.status, 401, "guess {n}");
    }
    let answer = agent.send(guess(10)).await;
    assert_eq!(answer.status, 429, "{}", answer.body);
    assert_eq!(answer.body["error"]["code"], "AUTH_RATE_LIMITED");
    let wait: u64 = answer.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=60).contains(&wait), "{wait}");
    // While refused, the right token is refused too: a guess that happened
    // to be right would tell nothing.
    let (status, _) = agent.get("/v1/calls").await;
    assert_eq!(status, 429);
    // The open paths stay open.
    let (status, _) = agent.get("/healthz").await;
    assert_eq!(status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approver_reaches_only_what_waits_for_a_person_or_what_it_decided() {
    let tool = PayTool::start().await;
    let dir = tempfile::tempdir().unwrap();
    let (agent, lead) = two_callers(&dir, ManualClock::new(), false).await;
    let boss = TestGateway {
        gateway: Arc::clone(&agent.gateway),
        token: Some(BOSS.to_owned()),
    };
    let (_, asked) = agent.post(&tool.pay("/api/pay")).await;
    let call_id = asked["call_id"].as_str().unwrap().to_owned();
    let path = format!("/v1/calls/{call_id}");
    // While it waits for a person, both approvers see it.
    assert_eq!(lead.get(&path).await.0, 200);
    assert_eq!(boss.get(&path).await.0, 200);
    // The lead waits on it; the boss decides it.
    let waiting = {
        let lead = lead.clone();
        let path = path.clone();
        tokio::spawn(async move {
            let request = Request::get(path)
                .header("Prefer", "wait=30")
                .body(Body::empty())
                .unwrap();
            lead.send(request).await
        })
    };
    while agent.gateway.waiting() == 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let approved = decide(&boss, &approval_id(&asked), "approve").await;
    assert_eq!(approved.status, 200, "{}", approved.body);
    let done = agent.wait_for(&path, |b| b["state"] == "succeeded").await;
    assert_eq!(done["record"]["data"]["paid"], true);
    // The lead's wait ends without another caller's data.
    let waited = waiting.await.unwrap();
    assert_eq!(waited.status, 404, "{}", waited.body);
    assert_eq!(waited.body["error"]["code"], "CALL_NOT_FOUND");
    assert!(!waited.text.contains("paid"), "{}", waited.text);
    // Decided and done, it is the agent's and the boss's to read — and
    // absent to the lead, everywhere: the call, the list, a settle.
    assert_eq!(lead.get(&path).await.0, 404);
    assert_eq!(boss.get(&path).await.0, 200);
    let (_, listed) = lead.get("/v1/calls").await;
    assert!(!listed.to_string().contains(&call_id), "{listed}");
    let (_, listed) = boss.get("/v1/calls").await;
    assert!(listed.to_string().contains(&call_id), "{listed}");
    let settle = lead
        .raw(
            "POST",
            &format!("{path}/settle"),
            json!({"state": "failed", "note": "looking around"}).to_string(),
        )
        .await;
    assert_eq!(settle.status, 404, "{}", settle.body);
    assert!(!settle.text.contains("succeeded"), "{}", settle.text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_is_its_callers_whatever_its_text() {
    let tool = PayTool::start().await;
    tool.manifest_status.store(404, Ordering::SeqCst);
    let dir = tempfile::tempdir().unwrap();
    // Two gateways over one journal: named callers, and one token.
    let (agent, _) = two_callers(&dir, ManualClock::new(), false).await;
    let journal = open_journal(&journal_path(dir.path())).await.unwrap();
    let single = TestGateway::new(
        GatewayConfig::new(config()).with_journal(journal),
        Some("one-operator-token-0123456789"),
    );
    let mut body = tool.pay("/api/pay");
    body["idempotency_key"] = json!("k1");
    let (status, first) = agent.post(&body).await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(tool.paid().len(), 1);
    // The one-token gateway's caller names agent's key by its text.
    body["idempotency_key"] = json!("agent:k1");
    let (status, refused) = single.post(&body).await;
    assert_eq!(status, 422, "{refused}");
    assert_eq!(refused["error"]["code"], "IDEMPOTENCY_KEY_REUSED");
    assert!(!refused.to_string().contains("paid"), "{refused}");
    assert_eq!(tool.paid().len(), 1, "nothing sent again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approver_is_shown_the_request_whole_not_only_its_reason() {
    let tool = PayTool::start().await;
    tool.manifest_status.store(404, Ordering::SeqCst);
    let dir = tempfile::tempdir().unwrap();
    let (agent, lead) = two_callers(&dir, ManualClock::new(), false).await;
    let boss = TestGateway {
        gateway: Arc::clone(&agent.gateway),
        token: Some(BOSS.to_owned()),
    };
    let mut body = tool.pay("/api/transfer");
    body["headers"] = json!([
        ["X-Override", "wire"],
        ["Authorization", "Bearer tool-secret-123456"]
    ]);
    body["approval"] = json!({"reason": "refund of 5 EUR to customer"});
    let (status, asked) = agent.post(&body).await;
    assert_eq!(status, 202, "{asked}");
    let id = approval_id(&asked);

    let (status, pending) = lead.get("/v1/approvals?state=pending").await;
    assert_eq!(status, 200, "{pending}");
    let shown = &pending["approvals"][0];
    assert_eq!(shown["approval"]["id"], id.as_str(), "{pending}");
    assert_eq!(shown["caller"], "agent");
    assert_eq!(
        shown["asked_by"], "request",
        "the reason is the requester's words"
    );
    assert_eq!(shown["approval"]["reason"], "refund of 5 EUR to customer");
    let request = &shown["request"];
    assert_eq!(request["method"], "POST");
    assert_eq!(request["url"], format!("{}/api/transfer", tool.base));
    assert_eq!(
        request["payload"],
        json!({"amount": 50000, "to": "attacker-iban"})
    );
    assert_eq!(
        request["headers"][0],
        json!({"name": "X-Override", "value": "wire"})
    );
    assert_eq!(request["headers"][1]["value"], "[REDACTED]");
    assert!(!pending.to_string().contains("tool-secret-123456"));
    let (status, one) = lead.get(&format!("/v1/approvals/{id}")).await;
    assert_eq!(status, 200);
    assert_eq!(&one, shown);
    // The agent sees its own; the list says nothing of others' to it.
    assert_eq!(agent.get(&format!("/v1/approvals/{id}")).await.0, 200);
    let (status, refused) = lead.get("/v1/approvals?state=approved").await;
    assert_eq!(status, 400, "{refused}");

    // Decided by the boss: the boss still reads it, the lead no longer.
    let approved = decide(&boss, &id, "approve").await;
    assert_eq!(approved.status, 200, "{}", approved.body);
    assert_eq!(boss.get(&format!("/v1/approvals/{id}")).await.0, 200);
    let call_id = asked["call_id"].as_str().unwrap();
    agent
        .wait_for(&format!("/v1/calls/{call_id}"), |b| {
            b["state"] == "succeeded"
        })
        .await;
    assert_eq!(lead.get(&format!("/v1/approvals/{id}")).await.0, 404);
    let (_, pending) = lead.get("/v1/approvals").await;
    assert_eq!(pending["approvals"], json!([]));
}
