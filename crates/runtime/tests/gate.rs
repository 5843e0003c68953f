//! The executor gates what any corrector returns, not only the built-in chain.

use std::sync::{Arc, Mutex};

use recourse::{
    BoxFuture, Call, Correction, CorrectionRequest, Corrector, Executor, InProcessTransport,
    ManualClock, PayloadSource, StopReason, TokenUsage,
};
use recourse_protocol::{ToolError, ToolResponse};
use serde_json::{Value, json};

/// A corrector that always proposes `proposal`.
struct Proposes(Value);

impl Corrector for Proposes {
    fn correct<'a>(&'a self, _r: CorrectionRequest<'a>) -> BoxFuture<'a, Correction> {
        let payload = self.0.clone();
        Box::pin(async move {
            Correction::Corrected {
                payload,
                source: PayloadSource::Llm,
                note: "custom".into(),
                llm_calls: 0,
                tokens: TokenUsage::default(),
            }
        })
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
        .execute(Call::new("weather", json!({"city": "Pariss"})).with_schema(schema))
        .await;
    let sent = sent.lock().unwrap().clone();
    (report, sent)
}

#[tokio::test]
async fn a_custom_correction_adding_an_unknown_field_is_never_sent() {
    let (report, sent) = run(json!({"city": "Paris", "admin": true})).await;
    assert_eq!(report.outcome.reason(), Some(&StopReason::CannotFix));
    assert_eq!(sent.len(), 1, "only the caller's payload was sent");
    assert!(
        report.attempts[0].notes[0].contains("/admin"),
        "{:?}",
        report.attempts[0].notes
    );
}

#[tokio::test]
async fn a_custom_correction_failing_the_schema_is_never_sent() {
    let (report, sent) = run(json!({"city": "Paris", "days": "many"})).await;
    assert_eq!(report.outcome.reason(), Some(&StopReason::CannotFix));
    assert_eq!(sent.len(), 1);
}

#[tokio::test]
async fn a_valid_custom_correction_is_coerced_and_sent() {
    let (report, sent) = run(json!({"city": "Paris", "days": "3"})).await;
    assert_eq!(report.outcome.name(), "succeeded");
    assert_eq!(sent[1], json!({"city": "Paris", "days": 3}));
}
