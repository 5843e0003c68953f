//! The spans the executor opens: one per call, attempt, correction, layer,
//! reconciliation and lookup, each with the record's typed fields and never
//! a payload or a tool's words.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use recourse::reconcile::{ReconcileRequest, Reconciliation};
use recourse::transport::{BoxFuture, RawResponse, Request};
use recourse::{
    Call, CorrectionChain, Executor, ExecutorConfig, InProcessTransport, ManualClock, Reconciler,
};
use recourse_protocol::{ToolError, ToolResponse};
use serde_json::{Value, json};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// A credential planted in the payload and in the tool's error message.
const SECRET: &str = "sk-live-PLANTEDsecret0123456789abcdef";

#[derive(Debug, Clone)]
struct Seen {
    name: &'static str,
    parent: Option<u64>,
    fields: BTreeMap<String, String>,
}

/// A subscriber that keeps every span with its fields and parent (the test
/// runs on one thread, so one stack of entered spans is enough).
#[derive(Default)]
struct Recorder {
    spans: Mutex<BTreeMap<u64, Seen>>,
    stack: Mutex<Vec<u64>>,
    next: AtomicU64,
}

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

impl Subscriber for Recorder {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }

    fn new_span(&self, attrs: &Attributes<'_>) -> Id {
        let id = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        let parent = match attrs.parent() {
            Some(p) => Some(p.into_u64()),
            None if attrs.is_contextual() => self.stack.lock().unwrap().last().copied(),
            None => None,
        };
        let mut fields = BTreeMap::new();
        attrs.record(&mut Fields(&mut fields));
        let name = attrs.metadata().name();
        self.spans.lock().unwrap().insert(
            id,
            Seen {
                name,
                parent,
                fields,
            },
        );
        Id::from_u64(id)
    }

    fn record(&self, span: &Id, values: &Record<'_>) {
        if let Some(seen) = self.spans.lock().unwrap().get_mut(&span.into_u64()) {
            values.record(&mut Fields(&mut seen.fields));
        }
    }

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, _: &Event<'_>) {}

    fn enter(&self, span: &Id) {
        self.stack.lock().unwrap().push(span.into_u64());
    }

    fn exit(&self, span: &Id) {
        let mut stack = self.stack.lock().unwrap();
        if let Some(at) = stack.iter().rposition(|s| *s == span.into_u64()) {
            stack.remove(at);
        }
    }
}

impl Recorder {
    fn named(&self, name: &str) -> Vec<(u64, Seen)> {
        self.spans
            .lock()
            .unwrap()
            .iter()
            .filter(|(_, s)| s.name == name)
            .map(|(id, s)| (*id, s.clone()))
            .collect()
    }

    fn everything(&self) -> String {
        format!("{:?}", self.spans.lock().unwrap())
    }
}

fn tool(answer: impl Fn(&Value) -> ToolResponse + Send + Sync + 'static) -> InProcessTransport {
    let answer = Arc::new(answer);
    InProcessTransport::new(move |request: Request| {
        let response = answer(&request.payload);
        async move {
            Ok(RawResponse {
                status: response.http_status(),
                headers: vec![("content-type".into(), "application/json".into())],
                body: response.to_json_bytes(),
                read: None,
            })
        }
    })
}

fn executor(transport: InProcessTransport) -> Executor {
    let config = ExecutorConfig::default();
    let chain = Arc::new(CorrectionChain::new(&config));
    Executor::standard(Arc::new(transport), config, chain)
        .unwrap()
        .with_clock(Arc::new(ManualClock::new()))
        .build()
}

/// Runs `f` with `recorder` as this thread's subscriber.
async fn traced<T>(recorder: &Arc<Recorder>, f: impl std::future::Future<Output = T>) -> T {
    let _guard = tracing::subscriber::set_default(Arc::clone(recorder));
    f.await
}

fn field<'a>(seen: &'a Seen, name: &str) -> &'a str {
    seen.fields
        .get(name)
        .map_or("", String::as_str)
        .trim_matches('"')
}

#[tokio::test]
async fn a_repaired_call_has_a_span_per_attempt_correction_and_layer() {
    let transport = tool(|p| match p["unit"].as_str() {
        Some("celsius") => ToolResponse::ok(json!({"temp": 21})),
        _ => ToolResponse::failure(
            ToolError::input_error("INVALID_UNIT", format!("bad unit; key {SECRET}"))
                .detail("field", "unit")
                .detail("allowed_values", "celsius,fahrenheit")
                .retryable(true),
        ),
    });
    let call = Call::builder("weather", json!({"unit": "Celsius", "token": SECRET}))
        .build()
        .unwrap();
    let recorder = Arc::new(Recorder::default());
    let report = traced(&recorder, executor(transport).execute(call)).await;
    assert_eq!(report.outcome.name(), "succeeded", "{:?}", report.outcome);

    let calls = recorder.named("call");
    assert_eq!(calls.len(), 1);
    let call = &calls[0].1;
    assert_eq!(field(call, "recourse.outcome"), "succeeded");
    assert_eq!(field(call, "recourse.attempts"), "2");
    assert_eq!(field(call, "recourse.category"), "INPUT_ERROR");
    assert_eq!(field(call, "recourse.code"), "INVALID_UNIT");
    assert_eq!(field(call, "recourse.next_step"), "use_result");
    assert_eq!(field(call, "otel.status_code"), "ok");

    let attempts = recorder.named("attempt");
    let actions: Vec<&str> = attempts
        .iter()
        .map(|(_, a)| field(a, "recourse.action"))
        .collect();
    assert_eq!(actions, ["correct", "succeed"]);
    assert!(attempts.iter().all(|(_, a)| a.parent == Some(calls[0].0)));
    assert_eq!(field(&attempts[1].1, "recourse.source"), "repair");

    let corrections = recorder.named("correction");
    assert_eq!(corrections.len(), 1);
    assert_eq!(field(&corrections[0].1, "recourse.verdict"), "fixed");
    assert_eq!(field(&corrections[0].1, "recourse.layer"), "repair");
    let layers = recorder.named("correction_layer");
    assert_eq!(layers.len(), 1, "repair fixed it: no other layer asked");
    assert_eq!(layers[0].1.parent, Some(corrections[0].0));
    assert_eq!(field(&layers[0].1, "recourse.layer"), "repair");
    assert_eq!(field(&layers[0].1, "recourse.verdict"), "fixed");

    let everything = recorder.everything();
    assert!(!everything.contains("PLANTED"), "{everything}");
    assert!(
        !everything.contains("bad unit"),
        "no tool message: {everything}"
    );
}

#[tokio::test]
async fn a_layer_that_cannot_fix_and_one_skipped_each_have_a_span() {
    let transport = tool(|_| {
        ToolResponse::failure(ToolError::input_error("BAD", "nothing to go on").retryable(true))
    });
    let call = Call::builder("t", json!({"q": 1})).build().unwrap();
    let recorder = Arc::new(Recorder::default());
    let report = traced(&recorder, executor(transport).execute(call)).await;
    assert_eq!(report.outcome.name(), "failed");

    let call = &recorder.named("call")[0].1;
    assert_eq!(field(call, "recourse.reason"), "cannot_fix");
    assert_eq!(field(call, "recourse.stop_kind"), "input");
    assert_eq!(field(call, "otel.status_code"), "error");
    let layers: Vec<(String, String)> = recorder
        .named("correction_layer")
        .iter()
        .map(|(_, l)| {
            (
                field(l, "recourse.layer").to_owned(),
                field(l, "recourse.verdict").to_owned(),
            )
        })
        .collect();
    assert!(
        layers.contains(&("repair".into(), "cannot_fix".into())),
        "{layers:?}"
    );
    assert!(
        layers.iter().any(|(_, verdict)| verdict == "skipped"),
        "{layers:?}"
    );
    let correction = &recorder.named("correction")[0].1;
    assert_eq!(field(correction, "recourse.verdict"), "cannot_fix");
}

/// Says every write committed.
struct Committed;

impl Reconciler for Committed {
    fn reconcile<'a>(&'a self, _: ReconcileRequest<'a>) -> BoxFuture<'a, Reconciliation> {
        Box::pin(async { Reconciliation::Committed(json!({"id": 7})) })
    }
}

#[tokio::test]
async fn a_reconciled_write_has_a_lookup_span_under_its_reconciliation() {
    let transport = tool(|_| {
        ToolResponse::failure(ToolError::unknown_outcome(
            "MAYBE_COMMITTED",
            format!("timed out mid-write {SECRET}"),
        ))
    });
    let call = Call::builder("orders", json!({"amount": 5}))
        .non_idempotent()
        .reconciler(Arc::new(Committed))
        .build()
        .unwrap();
    let recorder = Arc::new(Recorder::default());
    let report = traced(&recorder, executor(transport).execute(call)).await;
    assert_eq!(report.outcome.name(), "succeeded", "{:?}", report.outcome);

    let call = &recorder.named("call")[0].1;
    assert_eq!(field(call, "recourse.category"), "UNKNOWN_OUTCOME");
    assert_eq!(field(call, "recourse.idempotent"), "false");
    assert_eq!(field(call, "recourse.idempotency_from"), "caller");
    let attempt = &recorder.named("attempt")[0].1;
    assert_eq!(field(attempt, "recourse.action"), "reconcile");
    let reconciles = recorder.named("reconcile");
    assert_eq!(reconciles.len(), 1);
    assert_eq!(field(&reconciles[0].1, "recourse.lookups"), "1");
    let lookups = recorder.named("lookup");
    assert_eq!(lookups.len(), 1);
    assert_eq!(lookups[0].1.parent, Some(reconciles[0].0));
    assert_eq!(field(&lookups[0].1, "recourse.result"), "committed");
    assert_eq!(field(&lookups[0].1, "recourse.action"), "succeed");
    assert!(!recorder.everything().contains("PLANTED"));
}
