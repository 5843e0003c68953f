//! The executor gates what any corrector returns, not only the built-in chain.

use std::sync::{Arc, Mutex};

use recourse::correction::{Correction, CorrectionRequest};
use recourse::record::{CoercionRule, CorrectionLayer, Event, GateRule, PayloadSource, Verdict};
use recourse::transport::BoxFuture;
use recourse::{Call, Corrector, Executor, InProcessTransport, ManualClock, StopReason};
use recourse_protocol::{ToolError, ToolResponse};
use serde_json::{Value, json};

/// A corrector that always proposes `proposal`.
struct Proposes(Value);

impl Corrector for Proposes {
    fn correct<'a>(&'a self, _r: CorrectionRequest<'a>) -> BoxFuture<'a, Correction> {
        let payload = self.0.clone();
        Box::pin(async move { Correction::fixed(CorrectionLayer::Llm, payload, "custom") })
    }
}

async fn run(proposal: Value) -> (recourse::CallReport, Vec<Value>) {
    let sent = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&sent);
    let tool = InProcessTransport::from_tool(move |payload: Value| {
        log.lock().unwrap().push(payload.clone());
        async move {
            match payload["city"].as_str() {
                Some("Paris") => ToolResponse::ok(json!({"temp": 21})),
                _ => ToolResponse::failure(
                    ToolError::not_found("CITY_NOT_FOUND", "no such city").retryable(true),
                ),
            }
        }
    });
    let schema = json!({
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        "required": ["city"],
        "additionalProperties": false
    });
    let report = Executor::builder(tool)
        .with_clock(Arc::new(ManualClock::new()))
        .with_corrector(Arc::new(Proposes(proposal)))
        .build()
        .execute(
            Call::builder("weather", json!({"city": "Pariss"}))
                .schema(schema)
                .build()
                .unwrap(),
        )
        .await;
    let sent = sent.lock().unwrap().clone();
    (report, sent)
}

#[tokio::test]
async fn a_custom_correction_adding_an_unknown_field_is_never_sent() {
    let (report, sent) = run(json!({"city": "Paris", "admin": true})).await;
    assert_eq!(report.outcome.reason(), Some(&StopReason::CannotFix));
    assert_eq!(sent.len(), 1, "only the caller's payload was sent");
    let Event::Correction {
        layer,
        verdict,
        reason,
    } = &report.attempts[0].events[0]
    else {
        panic!("{:?}", report.attempts[0].events)
    };
    assert_eq!(*layer, CorrectionLayer::Llm);
    assert_eq!(
        *verdict,
        Verdict::RejectedByGate {
            rule: GateRule::UnknownField
        }
    );
    assert!(reason.contains("/admin"), "{reason}");
    let json = report.to_json();
    assert_eq!(
        json["attempts"][0]["events"][0]["verdict"],
        "rejected_by_gate"
    );
    assert_eq!(json["attempts"][0]["events"][0]["rule"], "unknown_field");
}

#[tokio::test]
async fn a_custom_correction_failing_the_schema_is_never_sent() {
    let (report, sent) = run(json!({"city": "Paris", "days": "many"})).await;
    assert_eq!(report.outcome.reason(), Some(&StopReason::CannotFix));
    assert_eq!(sent.len(), 1);
    assert!(matches!(
        report.attempts[0].events[0],
        Event::Correction {
            verdict: Verdict::RejectedByGate {
                rule: GateRule::SchemaInvalid
            },
            ..
        }
    ));
}

#[tokio::test]
async fn a_valid_custom_correction_is_coerced_and_sent() {
    let (report, sent) = run(json!({"city": "Paris", "days": "3"})).await;
    assert_eq!(report.outcome.name(), "succeeded");
    assert_eq!(sent[1], json!({"city": "Paris", "days": 3}));
    // The fix is recorded on the failed attempt, the coercion on the one it shaped.
    assert!(matches!(
        report.attempts[0].events[..],
        [Event::Correction {
            verdict: Verdict::Fixed,
            ..
        }]
    ));
    assert_eq!(report.attempts[1].source, PayloadSource::Llm);
    let Event::Coerced { changes } = &report.attempts[1].events[0] else {
        panic!("{:?}", report.attempts[1].events)
    };
    assert_eq!(changes[0].pointer, "/days");
    assert_eq!(changes[0].rule, CoercionRule::IntegerString);
}
