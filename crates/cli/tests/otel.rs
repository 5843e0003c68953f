//! OpenTelemetry export: `recourse serve` and `recourse call` with
//! `OTEL_EXPORTER_OTLP_ENDPOINT` pointing at a loopback OTLP/HTTP receiver
//! that decodes what it receives. The spans carry the call's outcome,
//! category and attempt count; nothing received holds a secret the call
//! carried (in its payload, a header, the URL's query, the tool's error).
//! Batching is set far longer than the test, so what arrives is what the
//! process flushed on its way out.

#[path = "support/gateway.rs"]
mod support;

use support::Gateway;

use std::process::{Child, Command};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::response::IntoResponse;
use axum::routing::post;
use opentelemetry_proto::tonic::collector::metrics::v1::{
    ExportMetricsServiceRequest, ExportMetricsServiceResponse,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::{KeyValue, any_value};
use opentelemetry_proto::tonic::metrics::v1::{metric, number_data_point};
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;
use serde_json::{Value, json};

/// Planted in the payload, a header, the target's query and the tool's error.
const SECRET: &str = "PLANTEDsecret-7f3a9c";

/// What the receiver got, raw and decoded.
#[derive(Default)]
struct Received {
    raw: Vec<u8>,
    traces: Vec<ExportTraceServiceRequest>,
    metrics: Vec<ExportMetricsServiceRequest>,
}

type Shared = Arc<Mutex<Received>>;

/// An OTLP/HTTP (protobuf) receiver on loopback.
async fn receiver() -> (String, Shared) {
    async fn traces(State(r): State<Shared>, body: Bytes) -> impl IntoResponse {
        let decoded = ExportTraceServiceRequest::decode(body.as_ref()).expect("a trace export");
        let mut r = r.lock().unwrap();
        r.raw.extend_from_slice(&body);
        r.traces.push(decoded);
        protobuf(ExportTraceServiceResponse::default().encode_to_vec())
    }
    async fn metrics(State(r): State<Shared>, body: Bytes) -> impl IntoResponse {
        let decoded = ExportMetricsServiceRequest::decode(body.as_ref()).expect("a metric export");
        let mut r = r.lock().unwrap();
        r.raw.extend_from_slice(&body);
        r.metrics.push(decoded);
        protobuf(ExportMetricsServiceResponse::default().encode_to_vec())
    }
    let shared = Shared::default();
    let app = Router::new()
        .route("/v1/traces", post(traces))
        .route("/v1/metrics", post(metrics))
        .with_state(Arc::clone(&shared));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, shared)
}

fn protobuf(body: Vec<u8>) -> impl IntoResponse {
    ([(CONTENT_TYPE, "application/x-protobuf")], body)
}

/// A tool that is always unavailable, quoting the secret in its error.
async fn failing_tool() -> String {
    let app = Router::new().route(
        "/tool",
        post(|| async {
            let body = json!({"success": false, "error": {
                "code": "BACKEND_DOWN",
                "message": format!("upstream refused credentials {SECRET}"),
                "category": "SERVICE_ERROR",
                "retryable": true
            }});
            (
                axum::http::StatusCode::SERVICE_UNAVAILABLE,
                axum::Json(body),
            )
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/tool", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}

/// The environment of a recourse process exporting to `endpoint`.
/// The variables both commands export with: `endpoint`, a long batch delay
/// (nothing is sent before the flush), two resends.
fn otel_vars(endpoint: &str) -> [(&str, &str); 6] {
    [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint),
        ("OTEL_SERVICE_NAME", "recourse-under-test"),
        ("OTEL_BSP_SCHEDULE_DELAY", "600000"),
        ("OTEL_METRIC_EXPORT_INTERVAL", "600000"),
        ("RECOURSE_MAX_RETRIES", "2"),
        ("RECOURSE_BACKOFF_MS", "0"),
    ]
}

fn otel_env(command: &mut Command, endpoint: &str) {
    for var in [
        "RECOURSE_JOURNAL",
        "RECOURSE_GATEWAY_TOKEN",
        "OTEL_SDK_DISABLED",
    ] {
        command.env_remove(var);
    }
    command.envs(otel_vars(endpoint));
}

fn attribute<'a>(attributes: &'a [KeyValue], key: &str) -> Option<&'a any_value::Value> {
    attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref())
        .and_then(|v| v.value.as_ref())
}

fn text<'a>(span: &'a Span, key: &str) -> &'a str {
    match attribute(&span.attributes, key) {
        Some(any_value::Value::StringValue(s)) => s,
        other => panic!("{key} on {}: {other:?}", span.name),
    }
}

fn int(span: &Span, key: &str) -> i64 {
    match attribute(&span.attributes, key) {
        Some(any_value::Value::IntValue(n)) => *n,
        other => panic!("{key} on {}: {other:?}", span.name),
    }
}

fn spans(received: &Received) -> Vec<Span> {
    received
        .traces
        .iter()
        .flat_map(|t| &t.resource_spans)
        .flat_map(|r| &r.scope_spans)
        .flat_map(|s| s.spans.clone())
        .collect()
}

/// Waits (bounded) for `child` to exit.
fn wait_for_exit(child: &mut Child) -> std::process::ExitStatus {
    let until = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(Instant::now() < until, "the process did not exit");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The assertions both commands share: the call's span, its attempts under
/// it, the resource's name, the exported counters, and no secret anywhere.
fn check_export(received: &Received) {
    assert!(!received.traces.is_empty(), "no spans were received");
    assert!(!received.metrics.is_empty(), "no metrics were received");
    assert!(
        !String::from_utf8_lossy(&received.raw).contains("PLANTED"),
        "a secret left the process"
    );
    let resource = &received.traces[0].resource_spans[0].resource;
    let service = attribute(&resource.as_ref().unwrap().attributes, "service.name");
    assert_eq!(
        service,
        Some(&any_value::Value::StringValue("recourse-under-test".into()))
    );

    let spans = spans(received);
    let calls: Vec<&Span> = spans.iter().filter(|s| s.name == "call").collect();
    assert_eq!(
        calls.len(),
        1,
        "{:?}",
        spans.iter().map(|s| &s.name).collect::<Vec<_>>()
    );
    let call = calls[0];
    assert_eq!(text(call, "recourse.outcome"), "failed");
    assert_eq!(text(call, "recourse.category"), "SERVICE_ERROR");
    assert_eq!(text(call, "recourse.reason"), "retries_exhausted");
    assert_eq!(text(call, "recourse.code"), "BACKEND_DOWN");
    assert_eq!(int(call, "recourse.attempts"), 3);
    assert_eq!(text(call, "recourse.idempotency_from"), "caller");
    assert!(
        !text(call, "recourse.target").contains('?'),
        "no query on the span"
    );
    assert_eq!(
        call.status.as_ref().map(|s| s.code),
        Some(2),
        "status error"
    );

    let attempts: Vec<&Span> = spans
        .iter()
        .filter(|s| s.name == "attempt" && s.parent_span_id == call.span_id)
        .collect();
    assert_eq!(attempts.len(), 3);
    let mut actions: Vec<(i64, &str)> = attempts
        .iter()
        .map(|a| (int(a, "recourse.attempt"), text(a, "recourse.action")))
        .collect();
    actions.sort_unstable();
    assert_eq!(actions, [(1, "retry_same"), (2, "retry_same"), (3, "stop")]);
    assert!(attempts.iter().all(|a| int(a, "recourse.status") == 503));

    let calls_total = received
        .metrics
        .iter()
        .flat_map(|m| &m.resource_metrics)
        .flat_map(|r| &r.scope_metrics)
        .flat_map(|s| &s.metrics)
        .find(|m| m.name == "recourse_calls_total")
        .expect("recourse_calls_total exported");
    let Some(metric::Data::Sum(sum)) = &calls_total.data else {
        panic!("{calls_total:?}");
    };
    let failed = sum
        .data_points
        .iter()
        .find(|p| {
            attribute(&p.attributes, "outcome")
                == Some(&any_value::Value::StringValue("failed".into()))
        })
        .expect("a failed call counted");
    assert_eq!(failed.value, Some(number_data_point::Value::AsDouble(1.0)));
}

fn request(tool: &str) -> Value {
    json!({
        "url": format!("{tool}?token={SECRET}"),
        "payload": {"query": "status", "note": SECRET},
        "headers": [["X-Api-Key", SECRET]],
        "idempotent": true
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateway_exports_its_spans_and_metrics_and_flushes_on_sigterm() {
    let (endpoint, received) = receiver().await;
    let tool = failing_tool().await;
    let mut gw = Gateway::spawn()
        .env(&otel_vars(&endpoint))
        .env_remove("OTEL_SDK_DISABLED")
        .start();
    let gateway = gw.url.clone();
    let pid = gw.child.id().to_string();

    let report: Value = reqwest::Client::new()
        .post(format!("{gateway}/v1/calls"))
        .json(&request(&tool))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(report["outcome"], "failed", "{report:#}");
    assert_eq!(report["attempts"].as_array().unwrap().len(), 3);
    assert!(
        received.lock().unwrap().traces.is_empty(),
        "batched: nothing is sent before the flush"
    );

    let status = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    assert!(status.success());
    let exit = tokio::task::spawn_blocking(move || wait_for_exit(&mut gw.child))
        .await
        .unwrap();
    assert!(exit.success(), "{exit:?}");
    check_export(&received.lock().unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_recourse_call_exports_before_it_exits() {
    let (endpoint, received) = receiver().await;
    let tool = failing_tool().await;
    let r = request(&tool);
    let mut command = Command::new(env!("CARGO_BIN_EXE_recourse"));
    command.args([
        "call",
        r["url"].as_str().unwrap(),
        "--payload",
        &r["payload"].to_string(),
        "--header",
        &format!("X-Api-Key: {SECRET}"),
        "--idempotent",
        "--json",
    ]);
    otel_env(&mut command, &endpoint);
    let out = tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    check_export(&received.lock().unwrap());
}
