//! Workflows (protocol §6) over an in-process tool: readiness order, real
//! overlap, skips, references, approvals and cancellation.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use recourse::correction::{Correction, CorrectionRequest};
use recourse::record::{CorrectionLayer, Event, GateRule, Verdict};
use recourse::transport::{RawResponse, Request};
use recourse::workflow::{
    ApprovalRequest, Approver, Catalogue, Plan, StepApproval, Workflow, WorkflowReport,
    WorkflowRunner,
};
use recourse::{Corrector, Executor, InProcessTransport, ManualClock};
use recourse_protocol::{ToolError, ToolResponse};
use serde_json::{Value, json};
use tokio::sync::Barrier;
use tokio_util::sync::CancellationToken;

/// What the tool saw: (tool name, payload) in order of arrival, and events.
#[derive(Default)]
struct Log {
    requests: Mutex<Vec<(String, Value)>>,
    events: Mutex<Vec<String>>,
}

impl Log {
    fn names(&self) -> Vec<String> {
        self.requests
            .lock()
            .unwrap()
            .iter()
            .map(|(n, _)| n.clone())
            .collect()
    }
    fn payload_of(&self, name: &str) -> Option<Value> {
        let requests = self.requests.lock().unwrap();
        requests
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, p)| p.clone())
    }
    fn event(&self, e: String) {
        self.events.lock().unwrap().push(e);
    }
}

type Answer = Arc<dyn Fn(&str, &Value) -> ToolResponse + Send + Sync>;

/// Tools at `http://tools/NAME`; each answers with `answer(NAME, payload)`.
fn transport(log: &Arc<Log>, answer: Answer) -> InProcessTransport {
    let log = Arc::clone(log);
    InProcessTransport::new(move |request: Request| {
        let name = request
            .target
            .as_str()
            .trim_start_matches("http://tools/")
            .to_owned();
        log.requests
            .lock()
            .unwrap()
            .push((name.clone(), request.payload.clone()));
        log.event(format!("start {name}"));
        let response = answer(&name, &request.payload);
        let log = Arc::clone(&log);
        async move {
            tokio::task::yield_now().await;
            log.event(format!("end {name}"));
            Ok(RawResponse {
                status: response.http_status(),
                headers: vec![("content-type".into(), "application/json".into())],
                body: response.to_json_bytes(),
                read: None,
            })
        }
    })
}

fn ok_tool() -> Answer {
    Arc::new(|name, payload| ToolResponse::ok(json!({"tool": name, "echo": payload})))
}

fn executor(transport: InProcessTransport) -> Executor {
    Executor::builder(transport)
        .with_clock(Arc::new(ManualClock::new()))
        .build()
}

fn workflow(plan: Value) -> Workflow {
    let plan = Plan::from_json(plan.to_string().as_bytes()).unwrap();
    Workflow::new(plan, &Catalogue::new()).unwrap()
}

fn step(id: &str, deps: &[&str], parameters: Value) -> Value {
    json!({"step_id": id, "url": format!("http://tools/{id}"), "depends_on": deps, "parameters": parameters})
}

fn reason(report: &WorkflowReport, id: &str) -> String {
    report
        .step(id)
        .unwrap()
        .outcome
        .reason()
        .unwrap_or_default()
        .to_owned()
}

fn outcome(report: &WorkflowReport, id: &str) -> &'static str {
    report.step(id).unwrap().outcome.name()
}

#[tokio::test]
async fn steps_run_when_their_dependencies_are_done() {
    let plan = json!({"plan_id": "dag", "steps": [
        step("a", &[], json!({})),
        step("b", &["a"], json!({})),
        step("c", &["a"], json!({})),
        step("d", &["b", "c"], json!({})),
        step("e", &[], json!({})),
    ]});
    // One at a time: the order is fully determined by readiness, then plan order.
    let log = Arc::new(Log::default());
    let runner = WorkflowRunner::new(executor(transport(&log, ok_tool())))
        .with_concurrency(1)
        .unwrap();
    let report = runner.run(&workflow(plan.clone())).await;
    assert!(report.success());
    assert_eq!(log.names(), ["a", "b", "c", "d", "e"]);

    // Five at once: a and e start together; d only after b and c have ended.
    let log = Arc::new(Log::default());
    let report = WorkflowRunner::new(executor(transport(&log, ok_tool())))
        .run(&workflow(plan))
        .await;
    assert_eq!(report.exit_code(), 0);
    let events = log.events.lock().unwrap().clone();
    let at = |e: &str| {
        events
            .iter()
            .position(|x| x == e)
            .unwrap_or_else(|| panic!("{e} in {events:?}"))
    };
    assert!(at("start b") > at("end a") && at("start c") > at("end a"));
    assert!(at("start d") > at("end b") && at("start d") > at("end c"));
}

#[tokio::test]
async fn independent_steps_overlap_in_time() {
    // Each of the two tools waits at a barrier for the other: neither can
    // answer unless both are in flight at once.
    let barrier = Arc::new(Barrier::new(2));
    let spans: Arc<Mutex<Vec<(String, Instant, Instant)>>> = Arc::default();
    let (b, s) = (Arc::clone(&barrier), Arc::clone(&spans));
    let tool = InProcessTransport::new(move |request: Request| {
        let (barrier, spans) = (Arc::clone(&b), Arc::clone(&s));
        async move {
            let start = Instant::now();
            let met = tokio::time::timeout(Duration::from_secs(10), barrier.wait())
                .await
                .is_ok();
            let end = Instant::now();
            spans
                .lock()
                .unwrap()
                .push((request.target.to_string(), start, end));
            let response = if met {
                ToolResponse::ok(json!({"met": true}))
            } else {
                ToolResponse::failure(ToolError::policy_rejection(
                    "ALONE",
                    "the other step never ran alongside",
                ))
            };
            Ok(RawResponse {
                status: response.http_status(),
                headers: vec![],
                body: response.to_json_bytes(),
                read: None,
            })
        }
    });
    let plan = json!({"plan_id": "par", "steps": [step("left", &[], json!({})), step("right", &[], json!({}))]});
    let report = WorkflowRunner::new(executor(tool))
        .run(&workflow(plan))
        .await;
    assert!(report.success(), "{}", report.to_json());
    let spans = spans.lock().unwrap();
    let (_, s1, e1) = spans[0].clone();
    let (_, s2, e2) = spans[1].clone();
    assert!(s1 <= e2 && s2 <= e1, "the two calls' time spans overlap");
}

#[tokio::test]
async fn concurrency_is_bounded() {
    let in_flight = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let (f, m) = (Arc::clone(&in_flight), Arc::clone(&most));
    let tool = InProcessTransport::new(move |_request: Request| {
        let (f, m) = (Arc::clone(&f), Arc::clone(&m));
        async move {
            let now = f.fetch_add(1, Ordering::SeqCst) + 1;
            m.fetch_max(now, Ordering::SeqCst);
            for _ in 0..20 {
                tokio::task::yield_now().await;
            }
            f.fetch_sub(1, Ordering::SeqCst);
            let response = ToolResponse::ok(json!({}));
            Ok(RawResponse {
                status: 200,
                headers: vec![],
                body: response.to_json_bytes(),
                read: None,
            })
        }
    });
    let steps: Vec<Value> = (0..6)
        .map(|i| step(&format!("s{i}"), &[], json!({})))
        .collect();
    let runner = WorkflowRunner::new(executor(tool))
        .with_concurrency(2)
        .unwrap();
    let report = runner
        .run(&workflow(json!({"plan_id": "bound", "steps": steps})))
        .await;
    assert!(report.success());
    assert!(most.load(Ordering::SeqCst) <= 2, "at most two at once");
    assert!(
        WorkflowRunner::new(executor(InProcessTransport::from_tool(|_| async {
            ToolResponse::ok(json!({}))
        })))
        .with_concurrency(0)
        .is_err()
    );
}

#[tokio::test]
async fn a_failed_dependency_skips_its_dependents_with_the_reason() {
    let log = Arc::new(Log::default());
    let answer: Answer = Arc::new(|name, _| match name {
        "refund" => ToolResponse::failure(ToolError::policy_rejection(
            "REFUND_WINDOW_CLOSED",
            "past 30 days",
        )),
        _ => ToolResponse::ok(json!({})),
    });
    let plan = json!({"plan_id": "skip", "steps": [
        step("refund", &[], json!({"order_id": "ORD-2002"})),
        step("notify", &["refund"], json!({})),
        step("archive", &["notify"], json!({})),
        step("weather", &[], json!({})),
    ]});
    let report = WorkflowRunner::new(executor(transport(&log, answer)))
        .run(&workflow(plan))
        .await;
    assert_eq!(outcome(&report, "refund"), "failed");
    assert_eq!(outcome(&report, "notify"), "skipped");
    assert_eq!(reason(&report, "notify"), "dependency \"refund\" failed");
    assert_eq!(
        reason(&report, "archive"),
        "dependency \"notify\" was skipped"
    );
    assert_eq!(outcome(&report, "weather"), "succeeded");
    assert_eq!(report.exit_code(), 1);
    let mut sent = log.names();
    sent.sort();
    assert_eq!(sent, ["refund", "weather"], "skipped steps send nothing");
    let json = report.to_json();
    assert_eq!(json["success"], false);
    assert_eq!(json["steps"]["notify"]["attempts"], json!([]));
    assert_eq!(
        json["steps"]["refund"]["error"]["code"],
        "REFUND_WINDOW_CLOSED"
    );
    assert_eq!(
        json["steps"]["refund"]["attempts"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

fn quote_tool() -> Answer {
    Arc::new(|name, payload| match name {
        "quote" => ToolResponse::ok(
            json!({"symbol": "TSLA", "price": 468.285, "history": [{"close": 460.1}, {"close": 455.0}]}),
        ),
        _ if payload["amount"].as_f64().is_some_and(|a| a > 1000.0) => ToolResponse::failure(
            ToolError::input_error("AMOUNT_TOO_LARGE", "too much")
                .detail("field", "amount")
                .retryable(true),
        ),
        _ => ToolResponse::ok(json!({"received": payload})),
    })
}

#[tokio::test]
async fn every_reference_form_resolves() {
    let log = Arc::new(Log::default());
    let plan = json!({"plan_id": "refs", "steps": [
        step("quote", &[], json!({"symbol": "TSLA"})),
        step("use", &["quote"], json!({
            "price": "{{quote.data.price}}",
            "first_close": "{{quote.data.history[0].close}}",
            "history": "{{quote.data.history}}",
            "memo": "sell {{ quote.data.symbol }} at {{quote.data.price}}",
            "nested": {"ok": "{{quote.success}}"}
        })),
    ]});
    let report = WorkflowRunner::new(executor(transport(&log, quote_tool())))
        .run(&workflow(plan))
        .await;
    assert!(report.success(), "{}", report.to_json());
    assert_eq!(
        log.payload_of("use").unwrap(),
        json!({
            "price": 468.285,
            "first_close": 460.1,
            "history": [{"close": 460.1}, {"close": 455.0}],
            "memo": "sell TSLA at 468.285",
            "nested": {"ok": true}
        })
    );
}

#[tokio::test]
async fn an_unresolvable_reference_fails_the_step_before_dispatch() {
    let log = Arc::new(Log::default());
    let plan = json!({"plan_id": "refs", "steps": [
        step("quote", &[], json!({"symbol": "TSLA"})),
        step("use", &["quote"], json!({"volume": "{{quote.data.volume}}"})),
    ]});
    let report = WorkflowRunner::new(executor(transport(&log, quote_tool())))
        .run(&workflow(plan))
        .await;
    assert_eq!(outcome(&report, "use"), "failed");
    let why = reason(&report, "use");
    assert!(
        why.contains("{{quote.data.volume}}") && why.contains("no field \"volume\""),
        "{why}"
    );
    assert_eq!(
        log.names(),
        ["quote"],
        "nothing was sent for the failed step"
    );
}

/// Proposes a payload with every number changed to 1.
struct Meddler(AtomicUsize);

impl Corrector for Meddler {
    fn correct<'a>(
        &'a self,
        request: CorrectionRequest<'a>,
    ) -> recourse::transport::BoxFuture<'a, Correction> {
        self.0.fetch_add(1, Ordering::SeqCst);
        let mut payload = request.payload.clone();
        payload["amount"] = json!(1.0);
        Box::pin(async move { Correction::fixed(CorrectionLayer::Llm, payload, "smaller") })
    }
}

#[tokio::test]
async fn referenced_values_are_exact_bound() {
    // The sell tool refuses the quoted amount in a correctable way; the
    // corrector proposes another amount; the executor must not send it.
    let answer: Answer = Arc::new(|name, payload| match name {
        "quote" => ToolResponse::ok(json!({"price": 468285.0})),
        _ if payload["amount"] == json!(468285.0) => ToolResponse::failure(
            ToolError::input_error("AMOUNT_TOO_LARGE", "too much")
                .detail("field", "amount")
                .retryable(true),
        ),
        _ => ToolResponse::ok(json!({})),
    });
    let log = Arc::new(Log::default());
    let meddler = Arc::new(Meddler(AtomicUsize::new(0)));
    let exec = Executor::builder(transport(&log, answer))
        .with_clock(Arc::new(ManualClock::new()))
        .with_corrector(meddler.clone())
        .build();
    let plan = json!({"plan_id": "bound", "steps": [
        step("quote", &[], json!({"symbol": "TSLA"})),
        step("sell", &["quote"], json!({"amount": "{{quote.data.price}}", "shares": 100})),
    ]});
    let report = WorkflowRunner::new(exec).run(&workflow(plan)).await;
    assert_eq!(outcome(&report, "sell"), "failed", "{}", report.to_json());
    assert_eq!(
        meddler.0.load(Ordering::SeqCst),
        1,
        "a correction was asked for"
    );
    let sells: Vec<Value> = log
        .requests
        .lock()
        .unwrap()
        .iter()
        .filter(|(n, _)| n == "sell")
        .map(|(_, p)| p.clone())
        .collect();
    assert_eq!(
        sells,
        [json!({"amount": 468285.0, "shares": 100})],
        "the proposal changing the referenced amount was never sent"
    );
    let events = &report.step("sell").unwrap().call.as_ref().unwrap().attempts[0].events;
    assert!(
        events.iter().any(|e| matches!(e, Event::Correction {
            verdict: Verdict::RejectedByGate { rule: GateRule::ProtectedChanged },
            reason,
            ..
        } if reason.contains("/amount"))),
        "{events:?}"
    );
}

/// Records what it was shown and answers as configured.
struct Recorder {
    answer: StepApproval,
    shown: Mutex<Vec<(String, Value)>>,
}

impl Approver for Recorder {
    fn review<'a>(
        &'a self,
        request: ApprovalRequest<'a>,
    ) -> recourse::transport::BoxFuture<'a, StepApproval> {
        self.shown
            .lock()
            .unwrap()
            .push((request.step_id.to_owned(), request.payload.clone()));
        let answer = self.answer.clone();
        Box::pin(async move { answer })
    }
}

#[tokio::test]
async fn approval_steps_show_the_resolved_payload_and_respect_the_answer() {
    let plan = json!({"plan_id": "approve", "steps": [
        step("quote", &[], json!({"symbol": "TSLA"})),
        {"step_id": "sell", "url": "http://tools/sell", "depends_on": ["quote"], "approval": true,
         "parameters": {"amount": "{{quote.data.price}}", "shares": 100}},
        step("after", &["sell"], json!({})),
    ]});
    // No approver configured: rejected, not run.
    let log = Arc::new(Log::default());
    let report = WorkflowRunner::new(executor(transport(&log, quote_tool())))
        .run(&workflow(plan.clone()))
        .await;
    assert_eq!(outcome(&report, "sell"), "failed");
    assert!(
        reason(&report, "sell").starts_with("rejected by approver"),
        "{}",
        reason(&report, "sell")
    );
    assert_eq!(reason(&report, "after"), "dependency \"sell\" failed");
    assert_eq!(log.names(), ["quote"]);

    let rejecting = Arc::new(Recorder {
        answer: StepApproval::rejected(""),
        shown: Mutex::default(),
    });
    let log = Arc::new(Log::default());
    let report = WorkflowRunner::new(executor(transport(&log, quote_tool())))
        .with_approver(rejecting.clone())
        .run(&workflow(plan.clone()))
        .await;
    assert_eq!(reason(&report, "sell"), "rejected by approver");
    assert_eq!(
        rejecting.shown.lock().unwrap()[0],
        ("sell".to_owned(), json!({"amount": 468.285, "shares": 100}))
    );

    let approving = Arc::new(Recorder {
        answer: StepApproval::Approved,
        shown: Mutex::default(),
    });
    let log = Arc::new(Log::default());
    let report = WorkflowRunner::new(executor(transport(&log, quote_tool())))
        .with_approver(approving)
        .run(&workflow(plan))
        .await;
    assert!(report.success(), "{}", report.to_json());
    assert_eq!(
        log.payload_of("sell").unwrap(),
        json!({"amount": 468.285, "shares": 100})
    );
}

#[tokio::test]
async fn cancellation_stops_new_dispatches() {
    let cancel = CancellationToken::new();
    let log = Arc::new(Log::default());
    let c = cancel.clone();
    let answer: Answer = Arc::new(move |_, _| {
        c.cancel();
        ToolResponse::ok(json!({}))
    });
    let plan = json!({"plan_id": "cancel", "steps": [step("first", &[], json!({})), step("second", &["first"], json!({}))]});
    let report = WorkflowRunner::new(executor(transport(&log, answer)))
        .with_concurrency(1)
        .unwrap()
        .run_with_cancel(&workflow(plan), cancel)
        .await;
    assert_eq!(outcome(&report, "first"), "succeeded");
    assert_eq!(outcome(&report, "second"), "skipped");
    assert_eq!(
        reason(&report, "second"),
        "cancelled before it was dispatched"
    );
    assert_eq!(log.names(), ["first"]);
}

#[tokio::test]
async fn a_step_read_back_after_a_success_that_did_nothing_fails_not_applied() {
    let log = Arc::new(Log::default());
    // `cancel` answers success and changes nothing; `get` shows the order.
    let answer: Answer = Arc::new(|name, payload| match name {
        "get" => ToolResponse::ok(json!({"order_id": payload["order_id"], "status": "pending"})),
        _ => ToolResponse::ok(json!({"status": "cancelled"})),
    });
    let mut cancel = step("cancel", &[], json!({"order_id": "W7"}));
    cancel["idempotent"] = json!(false);
    cancel["verify"] = json!({"url": "/get", "args": {"order_id": "{{payload.order_id}}"},
                              "expect": ["/status == \"cancelled\""], "always": true});
    let plan = json!({"plan_id": "verify", "steps": [cancel]});
    let report = WorkflowRunner::new(executor(transport(&log, answer)))
        .run(&workflow(plan))
        .await;
    assert_eq!(outcome(&report, "cancel"), "failed", "{}", report.to_json());
    let call = report.step("cancel").unwrap().call.as_ref().unwrap();
    assert_eq!(
        call.outcome.reason(),
        Some(&recourse::StopReason::NotApplied)
    );
    assert_eq!(
        call.verification,
        Some(recourse::policy::Verification::NotApplied)
    );
    assert_eq!(
        log.names(),
        ["get", "cancel", "get"],
        "read before, write once, read after"
    );
}
