//! One behaviour test per rule of protocol §3, against a real loopback HTTP server.

mod support;

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use recourse::correction::{Correction, CorrectionRequest};
use recourse::record::{CorrectionLayer, Event, GateRule, Verdict};
use recourse::{
    Call, CallBuilder, CallReport, Corrector, Executor, ExecutorConfig, HttpTransport, ManualClock,
    StopReason,
};
use serde_json::json;
use support::{ScriptedServer, Step};

fn config() -> ExecutorConfig {
    ExecutorConfig {
        backoff_base: Duration::from_millis(100),
        deadline: None,
        request_timeout: Duration::from_secs(5),
        ..ExecutorConfig::default()
    }
}

fn executor(clock: &ManualClock, config: ExecutorConfig) -> Executor {
    Executor::builder(HttpTransport::builder().build().unwrap())
        .with_config(config)
        .unwrap()
        .with_clock(Arc::new(clock.clone()))
        .with_jitter_seed(7)
        .without_circuit_breakers()
        .build()
}

async fn call(
    script: Vec<Step>,
    call: impl FnOnce(CallBuilder) -> CallBuilder,
) -> (CallReport, ScriptedServer, ManualClock) {
    call_with(script, config(), call).await
}

async fn call_with(
    script: Vec<Step>,
    config: ExecutorConfig,
    call: impl FnOnce(CallBuilder) -> CallBuilder,
) -> (CallReport, ScriptedServer, ManualClock) {
    let server = ScriptedServer::start(script).await;
    let clock = ManualClock::new();
    let report = executor(&clock, config)
        .execute(
            call(Call::builder(
                server.url.clone(),
                json!({"symbol": "TSLA", "qty": 3}),
            ))
            .build()
            .unwrap(),
        )
        .await;
    (report, server, clock)
}

fn reason(report: &CallReport) -> Option<&StopReason> {
    report.outcome.reason()
}

#[tokio::test]
async fn rule1_2xx_succeeds_with_the_envelope_data() {
    let (report, server, _) = call(vec![Step::ok(r#"{"price":468.285}"#)], |c| c).await;
    assert_eq!(report.outcome.name(), "succeeded");
    assert_eq!(report.to_json()["data"], json!({"price": 468.285}));
    assert_eq!(server.hits(), 1);
}

#[tokio::test]
async fn rule1_success_false_on_200_is_a_failure() {
    let (report, server, _) =
        call(vec![Step::envelope_error(200, "INPUT_ERROR", None)], |c| c).await;
    assert_eq!(report.outcome.name(), "failed");
    assert_eq!(reason(&report), Some(&StopReason::NoCorrector));
    assert_eq!(server.hits(), 1);
}

#[tokio::test]
async fn rule2_delegated_orchestrator_is_dispatched_once() {
    let (report, server, _) = call(vec![Step::text(503, "busy")], CallBuilder::delegated).await;
    assert_eq!(reason(&report), Some(&StopReason::DelegatedSingleDispatch));
    assert_eq!(server.hits(), 1);
}

#[tokio::test]
async fn rule4_refused_503_and_429_are_not_resent() {
    for (status, cat) in [(503, "SERVICE_ERROR"), (429, "RATE_LIMIT")] {
        let (report, server, clock) =
            call(vec![Step::envelope_error(status, cat, Some(false))], |c| c).await;
        assert_eq!(reason(&report), Some(&StopReason::RetryRefused), "{status}");
        assert_eq!(server.hits(), 1);
        assert!(clock.sleeps().is_empty());
    }
}

#[tokio::test]
async fn rule5_auth_permission_and_method_stop_at_once() {
    for (status, want) in [
        (401, StopReason::AuthenticationFailed),
        (403, StopReason::PermissionDenied),
        (405, StopReason::MethodNotAllowed),
    ] {
        let (report, server, _) = call(vec![Step::text(status, "no")], |c| c).await;
        assert_eq!(reason(&report), Some(&want), "{status}");
        assert_eq!(server.hits(), 1);
    }
}

#[tokio::test]
async fn rule6_transient_statuses_resend_the_same_bytes() {
    for status in [408, 429, 500, 502, 503, 504] {
        let (report, server, _) = call(vec![Step::text(status, "later"), Step::ok("1")], |c| {
            c.idempotent(true)
        })
        .await;
        assert_eq!(report.outcome.name(), "succeeded", "{status}");
        let received = server.received();
        assert_eq!(received.len(), 2);
        assert_eq!(
            received[0].body, received[1].body,
            "{status}: resend must be byte-identical"
        );
        assert_eq!(report.attempts[0].action.name(), "retry_same");
    }
}

#[tokio::test]
async fn rule6_retry_after_seconds_is_honoured() {
    let mut c = config();
    c.backoff_base = Duration::ZERO;
    let script = vec![
        Step::text(429, "slow down").with_header("Retry-After", "2"),
        Step::ok("1"),
    ];
    let (report, _, clock) = call_with(script, c, |c| c).await;
    assert_eq!(report.outcome.name(), "succeeded");
    assert_eq!(clock.sleeps(), vec![Duration::from_secs(2)]);
    assert_eq!(report.attempts[0].wait_ms(), Some(2000));
}

#[tokio::test]
async fn rule6_retry_after_http_date_is_honoured() {
    let mut c = config();
    c.backoff_base = Duration::ZERO;
    let date = httpdate_in(Duration::from_secs(5));
    let script = vec![
        Step::text(503, "maintenance").with_header("Retry-After", &date),
        Step::ok("1"),
    ];
    let (report, _, clock) = call_with(script, c, |c| c).await;
    assert_eq!(report.outcome.name(), "succeeded");
    let slept = clock.sleeps()[0];
    assert!(
        slept > Duration::from_secs(3) && slept <= Duration::from_secs(5),
        "{slept:?}"
    );
}

fn httpdate_in(d: Duration) -> String {
    httpdate::fmt_http_date(SystemTime::now() + d)
}

#[tokio::test]
async fn rule6_a_wait_past_the_deadline_stops_without_sleeping() {
    let mut c = config();
    c.deadline = Some(Duration::from_secs(10));
    let script = vec![Step::text(429, "quota").with_header("Retry-After", "60")];
    let (report, server, clock) = call_with(script, c, |c| c).await;
    assert_eq!(
        reason(&report),
        Some(&StopReason::RateLimited {
            retry_after: Duration::from_secs(60)
        })
    );
    assert!(clock.sleeps().is_empty());
    assert_eq!(server.hits(), 1);
}

#[tokio::test]
async fn rule6_a_demand_longer_than_max_backoff_is_never_cut_short() {
    // No deadline: the old behaviour waited max_backoff (30 s) and resent early.
    for retry_after in ["3600", "99999999999999999999"] {
        let script = vec![
            Step::text(429, "quota").with_header("Retry-After", retry_after),
            Step::ok("1"),
        ];
        let (report, server, clock) = call_with(script, config(), |c| c).await;
        assert_eq!(
            report.outcome.reason().map(StopReason::code),
            Some("rate_limited")
        );
        assert!(clock.sleeps().is_empty(), "{retry_after}");
        assert_eq!(
            server.hits(),
            1,
            "{retry_after}: never resent before the tool allows"
        );
        assert!(
            report.to_json()["reason_text"]
                .as_str()
                .unwrap()
                .contains("accept")
        );
    }
}

#[tokio::test]
async fn rule6_retries_stop_at_max_retries() {
    let (report, server, _) = call(vec![Step::text(503, "down")], |c| c).await;
    assert_eq!(reason(&report), Some(&StopReason::RetriesExhausted));
    assert_eq!(server.hits(), 4, "one dispatch and three resends");
}

#[tokio::test]
async fn rule7_non_transient_4xx_is_never_resent_unchanged() {
    struct Echo;
    impl Corrector for Echo {
        fn correct<'a>(
            &'a self,
            r: CorrectionRequest<'a>,
        ) -> recourse::transport::BoxFuture<'a, Correction> {
            let payload = r.payload.clone();
            Box::pin(async move { Correction::fixed(CorrectionLayer::Llm, payload, "same again") })
        }
    }
    let server =
        ScriptedServer::start(vec![Step::envelope_error(400, "INPUT_ERROR", Some(true))]).await;
    let clock = ManualClock::new();
    let exec = Executor::builder(HttpTransport::builder().build().unwrap())
        .with_clock(Arc::new(clock))
        .with_corrector(Arc::new(Echo))
        .build();
    let report = exec
        .execute(
            Call::builder(server.url.clone(), json!({"symbol": "TSLA"}))
                .build()
                .unwrap(),
        )
        .await;
    assert_eq!(reason(&report), Some(&StopReason::CannotFix));
    assert_eq!(server.hits(), 1);
    assert!(matches!(
        report.attempts[0].events[..],
        [Event::Correction {
            verdict: Verdict::RejectedByGate {
                rule: GateRule::Unchanged
            },
            ..
        }]
    ));
}

#[tokio::test]
async fn a_huge_body_is_an_error_outcome_for_a_read() {
    let big = vec![b'x'; 5 * 1024 * 1024];
    let step = Step::Respond {
        status: 200,
        headers: vec![],
        body: big,
    };
    let (report, _, _) = call(vec![step], |c| c.idempotent(true)).await;
    assert_eq!(reason(&report), Some(&StopReason::ResponseTooLarge));
}

#[tokio::test]
async fn a_huge_body_after_a_2xx_leaves_a_write_unknown_and_is_never_resent() {
    let huge = |status| Step::Respond {
        status,
        headers: vec![],
        body: vec![b'x'; 5 * 1024 * 1024],
    };
    let (report, server, _) =
        call(vec![huge(200), Step::ok("1")], CallBuilder::non_idempotent).await;
    assert_eq!(report.outcome.name(), "unknown", "{}", report.to_json());
    assert_eq!(report.outcome.exit_code(), 3);
    assert_eq!(reason(&report), Some(&StopReason::OutcomeUnknown));
    assert_eq!(server.hits(), 1, "the tool answered 2xx: it acted");
    let attempt = &report.attempts[0];
    assert_eq!(attempt.status, Some(200));
    let failure = attempt.transport_error.as_ref().unwrap();
    assert_eq!(
        failure.kind,
        recourse::transport::TransportFailureKind::ResponseTooLarge
    );
    assert_eq!(failure.status, Some(200));

    // A refusal with a huge body is a failure, as before.
    let (report, server, _) = call(vec![huge(400)], CallBuilder::non_idempotent).await;
    assert_eq!(report.outcome.name(), "failed");
    assert_eq!(reason(&report), Some(&StopReason::ResponseTooLarge));
    assert_eq!(server.hits(), 1);
}

#[tokio::test]
async fn a_dropped_connection_is_resent_when_idempotent() {
    let (report, server, _) = call(vec![Step::Drop, Step::ok("1")], |c| c.idempotent(true)).await;
    assert_eq!(report.outcome.name(), "succeeded");
    assert_eq!(server.hits(), 2);
    assert!(
        report.attempts[0]
            .transport_error
            .as_ref()
            .unwrap()
            .to_string()
            .starts_with("failed_after_send")
    );
}

#[tokio::test]
async fn without_evidence_a_post_is_not_idempotent_and_a_lost_reply_stays_unknown() {
    // No caller word, no manifest (the executor has none), POST: not idempotent.
    let (report, server, _) = call(vec![Step::Drop, Step::ok("1")], |c| c).await;
    assert_eq!(report.outcome.name(), "unknown");
    assert_eq!(server.hits(), 1);
    assert_eq!(
        report.to_json()["idempotency"],
        json!({"idempotent": false, "from": "default"})
    );
    // The method is evidence: a GET resends.
    let (report, server, _) = call(vec![Step::Drop, Step::ok("1")], |c| {
        c.method(recourse::Method::Get)
    })
    .await;
    assert_eq!(report.outcome.name(), "succeeded");
    assert_eq!(server.hits(), 2);
    assert_eq!(report.to_json()["idempotency"]["from"], "method");
}

#[tokio::test]
async fn a_dropped_connection_leaves_a_non_idempotent_write_unknown() {
    let (report, server, _) =
        call(vec![Step::Drop, Step::ok("1")], CallBuilder::non_idempotent).await;
    assert_eq!(report.outcome.name(), "unknown");
    assert_eq!(report.outcome.exit_code(), 3);
    assert_eq!(server.hits(), 1, "never a blind resend");
    assert!(report.idempotency_key.is_some());
}

#[tokio::test]
async fn a_refused_connection_is_retried_even_for_writes() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/tool", listener.local_addr().unwrap());
    drop(listener);
    let clock = ManualClock::new();
    let report = executor(&clock, config())
        .execute(
            Call::builder(url, json!({}))
                .non_idempotent()
                .build()
                .unwrap(),
        )
        .await;
    assert_eq!(reason(&report), Some(&StopReason::RetriesExhausted));
    assert_eq!(report.attempts.len(), 4);
    assert_eq!(
        report.http_calls, 0,
        "no connection opened: nothing was sent"
    );
    let error = report.outcome.error().unwrap();
    assert!(
        error.retryable,
        "recourse resent it: the final error must not say otherwise"
    );
    let failure = report.attempts[0]
        .transport_error
        .as_ref()
        .unwrap()
        .to_string();
    assert!(failure.starts_with("connect_failed"), "{failure}");
    assert!(
        failure.contains("is the tool server running?"),
        "a person is told what to check: {failure}"
    );
}

#[tokio::test]
async fn a_timeout_after_sending_is_unknown_for_writes() {
    let mut c = config();
    c.request_timeout = Duration::from_millis(200);
    let script = vec![Step::Delay(Duration::from_secs(2), Box::new(Step::ok("1")))];
    let (report, _, _) = call_with(script, c, CallBuilder::non_idempotent).await;
    assert_eq!(report.outcome.name(), "unknown");
    assert!(
        report.attempts[0]
            .transport_error
            .as_ref()
            .unwrap()
            .to_string()
            .starts_with("timed_out_after_send")
    );
}

#[tokio::test]
async fn every_attempt_of_a_write_carries_the_same_idempotency_key() {
    let script = vec![
        Step::text(503, "down"),
        Step::text(503, "down"),
        Step::ok("1"),
    ];
    let (report, server, _) = call(script, CallBuilder::non_idempotent).await;
    assert_eq!(report.outcome.name(), "succeeded");
    let keys: Vec<_> = server
        .received()
        .iter()
        .map(|r| r.header("Idempotency-Key").unwrap().to_owned())
        .collect();
    assert_eq!(keys.len(), 3);
    assert!(
        keys.iter()
            .all(|k| Some(k.as_str()) == report.idempotency_key.as_deref())
    );
}

#[tokio::test]
async fn methods_that_send_no_body_carry_the_payload_as_query_parameters() {
    let script = vec![Step::ok("1"), Step::ok("1")];
    let (_, server, _) = call(script, |c| c.method(recourse::Method::Get)).await;
    let got = &server.received()[0];
    assert!(
        got.line.starts_with("GET /") && got.line.contains("?qty=3&symbol=TSLA "),
        "{}",
        got.line
    );
    assert!(got.body.is_empty());
    let (_, server, _) = call(vec![Step::ok("1")], |c| c.method(recourse::Method::Put)).await;
    let got = &server.received()[0];
    assert!(got.line.starts_with("PUT /"), "{}", got.line);
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&got.body).unwrap(),
        json!({"symbol": "TSLA", "qty": 3})
    );
}
