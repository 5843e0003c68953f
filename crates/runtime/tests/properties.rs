//! Invariants of the executor, over arbitrary tool behaviour (proptest).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use proptest::prelude::*;
use recourse::correction::{Correction, CorrectionRequest};
use recourse::record::CorrectionLayer;
use recourse::transport::{RawResponse, TransportFailure, TransportFailureKind};
use recourse::{
    Call, Corrector, Executor, ExecutorConfig, InProcessTransport, Limits, ManualClock,
};
use serde_json::{Value, json};

/// One scripted tool answer.
#[derive(Debug, Clone)]
enum Answer {
    Status {
        status: u16,
        category: Option<&'static str>,
        retryable: Option<bool>,
        retry_after: Option<u64>,
    },
    Transport(TransportFailureKind),
}

fn answer() -> impl Strategy<Value = Answer> {
    let status = prop::sample::select(vec![
        200u16, 400, 401, 403, 404, 405, 408, 409, 422, 429, 500, 502, 503, 504,
    ]);
    let category = prop::option::of(prop::sample::select(vec![
        "INPUT_ERROR",
        "NOT_FOUND",
        "AUTH_ERROR",
        "PERMISSION_DENIED",
        "RATE_LIMIT",
        "SERVICE_ERROR",
        "POLICY_REJECTION",
        "UNKNOWN_OUTCOME",
        "TEAPOT",
    ]));
    let transport = prop::sample::select(vec![
        TransportFailureKind::ConnectFailed,
        TransportFailureKind::TimedOutAfterSend,
        TransportFailureKind::FailedAfterSend,
    ]);
    prop_oneof![
        4 => (status, category, prop::option::of(any::<bool>()), prop::option::of(0u64..120))
            .prop_map(|(status, category, retryable, retry_after)| Answer::Status { status, category, retryable, retry_after }),
        1 => transport.prop_map(Answer::Transport),
    ]
}

fn respond(a: &Answer) -> Result<RawResponse, TransportFailure> {
    match a {
        Answer::Transport(kind) => Err(TransportFailure::new(*kind, "scripted")),
        Answer::Status {
            status,
            category,
            retryable,
            retry_after,
        } => {
            let body = if *status == 200 {
                json!({"success": true, "data": {"ok": true}})
            } else {
                let mut error = json!({"code": "E", "message": "m"});
                if let Some(c) = category {
                    error["category"] = json!(c);
                }
                if let Some(r) = retryable {
                    error["retryable"] = json!(r);
                }
                json!({"success": false, "error": error})
            };
            let mut headers = vec![("content-type".to_owned(), "application/json".to_owned())];
            if let Some(s) = retry_after {
                headers.push(("retry-after".to_owned(), s.to_string()));
            }
            Ok(RawResponse {
                status: *status,
                headers,
                body: body.to_string().into_bytes(),
                read: None,
            })
        }
    }
}

/// A corrector that proposes a new payload, sometimes touching protected values.
struct Meddler;

impl Corrector for Meddler {
    fn correct<'a>(
        &'a self,
        r: CorrectionRequest<'a>,
    ) -> recourse::transport::BoxFuture<'a, Correction> {
        let mut payload = r.payload.clone();
        payload["note"] = json!(format!("try {}", r.attempt));
        if r.attempt.is_multiple_of(2) {
            payload["amount"] = json!(999);
        }
        Box::pin(async move { Correction::fixed(CorrectionLayer::Llm, payload, "meddled") })
    }
}

struct Outcome {
    report: recourse::CallReport,
    sent: Vec<Value>,
    sleeps: Vec<Duration>,
}

fn run(script: Vec<Answer>, idempotent: bool, deadline: Duration) -> Outcome {
    let sent = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&sent);
    let script = Arc::new(script);
    let transport = InProcessTransport::new(move |req: recourse::transport::Request| {
        let mut log = log.lock().unwrap();
        let n = log.len();
        log.push(req.payload.clone());
        let a = script[n.min(script.len() - 1)].clone();
        async move { respond(&a) }
    });
    let clock = ManualClock::new();
    let config = ExecutorConfig {
        deadline: Some(deadline),
        limits: Limits {
            max_retries: 3,
            max_corrections: 2,
            max_backoff: Duration::from_secs(30),
            ..Limits::default()
        },
        ..ExecutorConfig::default()
    };
    let exec = Executor::builder(transport)
        .with_config(config)
        .unwrap()
        .with_clock(Arc::new(clock.clone()))
        .with_jitter_seed(1)
        .with_corrector(Arc::new(Meddler))
        .without_circuit_breakers()
        .build();
    let call = Call::builder("tool", json!({"amount": 100, "to": "EUR"}))
        .protect("/amount")
        .idempotent(idempotent)
        .build()
        .unwrap();
    let report = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(exec.execute(call));
    let sent = sent.lock().unwrap().clone();
    Outcome {
        report,
        sent,
        sleeps: clock.sleeps(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn a_refused_permission_is_never_followed_by_a_resend(
        script in prop::collection::vec(answer(), 1..8), idempotent in any::<bool>()
    ) {
        let o = run(script, idempotent, Duration::from_secs(600));
        for (i, a) in o.report.attempts.iter().enumerate() {
            if a.retry_permission == recourse_protocol::RetryPermission::Refused {
                prop_assert_eq!(i + 1, o.report.attempts.len(), "attempt {} was refused but more followed", a.n);
            }
        }
    }

    #[test]
    fn attempts_never_exceed_the_budgets(
        script in prop::collection::vec(answer(), 1..10), idempotent in any::<bool>()
    ) {
        let o = run(script, idempotent, Duration::from_secs(600));
        prop_assert!(o.sent.len() <= 1 + 3 + 2, "{} dispatches", o.sent.len());
        prop_assert_eq!(o.sent.len(), o.report.attempts.len());
        let sent = o.report.attempts.iter().filter(|a| a.was_sent()).count();
        prop_assert_eq!(sent as u32, o.report.http_calls);
    }

    #[test]
    fn waits_never_cross_the_deadline(
        script in prop::collection::vec(answer(), 1..10), deadline_s in 1u64..90
    ) {
        let deadline = Duration::from_secs(deadline_s);
        let o = run(script, true, deadline);
        let total: Duration = o.sleeps.iter().sum();
        prop_assert!(total < deadline, "slept {:?} with a deadline of {:?}", total, deadline);
    }

    #[test]
    fn protected_values_never_change_between_attempts(
        script in prop::collection::vec(answer(), 1..10), idempotent in any::<bool>()
    ) {
        let o = run(script, idempotent, Duration::from_secs(600));
        for payload in &o.sent {
            prop_assert_eq!(&payload["amount"], &json!(100));
        }
    }
}
