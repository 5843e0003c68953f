//! The executor's success path against a raw `reqwest` POST to the same
//! loopback tool: what recourse costs when nothing goes wrong.
//!
//! `cargo bench -p recourse --bench executor`; the ratio of medians goes in BENCHMARKS.md.
//! The `redact_*` benches time the redactor alone (`-- redact` runs just those).

// criterion's macros generate undocumented public functions.
#![allow(missing_docs)]

use axum::Router;
use axum::routing::post;
use criterion::{Criterion, criterion_group, criterion_main};
use recourse::correction::Schema;
use recourse::transport::RawResponse;
use recourse::{Call, Executor, HttpTransport, InProcessTransport};
use serde_json::{Value, json};

/// A loopback tool on its own thread and runtime, so the client side measured
/// below shares its thread with nothing else.
fn tool_server() -> String {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let app = Router::new().route(
                "/api/stock/quote",
                post(|axum::Json(_payload): axum::Json<Value>| async {
                    axum::Json(
                        json!({"success": true, "data": {"symbol": "TSLA", "price": 468.285}}),
                    )
                }),
            );
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let url = format!("http://{}/api/stock/quote", listener.local_addr().unwrap());
            tx.send(url).unwrap();
            axum::serve(listener, app).await.unwrap();
        });
    });
    rx.recv().unwrap()
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let url = tool_server();
    let payload = json!({"symbol": "TSLA"});
    let schema = json!({"type": "object", "properties": {"symbol": {"type": "string"}}, "required": ["symbol"]});

    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    c.bench_function("raw_reqwest_post", |b| {
        b.to_async(&rt).iter(|| async {
            let resp = client.post(&url).json(&payload).send().await.unwrap();
            let body: Value = resp.json().await.unwrap();
            assert_eq!(body["success"], true);
        });
    });

    let executor = Executor::builder(HttpTransport::builder().build().unwrap()).build();
    c.bench_function("executor_success_path", |b| {
        b.to_async(&rt).iter(|| async {
            let call = Call::builder(url.clone(), payload.clone()).build().unwrap();
            let report = executor.execute(call).await;
            assert_eq!(report.outcome.name(), "succeeded");
        });
    });

    let coercing = Executor::builder(HttpTransport::builder().build().unwrap()).build();
    let schema = Schema::compile(&schema).unwrap();
    c.bench_function("executor_success_path_with_schema", |b| {
        b.to_async(&rt).iter(|| async {
            let call = Call::builder(url.clone(), payload.clone())
                .compiled_schema(schema.clone())
                .build()
                .unwrap();
            let report = coercing.execute(call).await;
            assert_eq!(report.outcome.name(), "succeeded");
        });
    });
}

/// The executor's own work, with no network: an in-process tool that answers
/// at once, against parsing that answer alone.
fn overhead(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let body = br#"{"success":true,"data":{"symbol":"TSLA","price":468.285}}"#.to_vec();
    let answer = RawResponse {
        status: 200,
        headers: vec![("content-type".into(), "application/json".into())],
        body: body.clone(),
        read: None,
    };
    c.bench_function("parse_only", |b| {
        b.iter(|| {
            recourse_protocol::parse_response(200, [("content-type", "application/json")], &body)
        });
    });
    let executor = Executor::builder(InProcessTransport::new(move |_req| {
        let answer = answer.clone();
        async move { Ok(answer) }
    }))
    .build();
    let payload = json!({"symbol": "TSLA"});
    c.bench_function("executor_in_process", |b| {
        b.to_async(&rt).iter(|| async {
            let call = Call::builder("stock.quote", payload.clone())
                .build()
                .unwrap();
            let report = executor.execute(call).await;
            assert_eq!(report.outcome.name(), "succeeded");
        });
    });
}

/// The redactor on a typical clean error message (its one-scan fast path),
/// on one holding a secret, and on a small JSON value.
fn redaction(c: &mut Criterion) {
    let clean = "Location 'Flower Mound, TX' not found; try 'Flower Mound, Texas, US'. \
                 Request op-5e41ab087439611e at 2026-01-01T00:00:00Z, token count 12.";
    let dirty = "GET https://api.example.com/weather?q=Paris&appid=0123456789abcdef failed: 401";
    let value = json!({"location": "Flower Mound, TX", "units": "metric", "days": [1, 2, 3],
                       "note": "the password field is required"});
    c.bench_function("redact_clean_text", |b| {
        b.iter(|| recourse_protocol::redact_cow(std::hint::black_box(clean)).len());
    });
    // Non-ASCII text once sent the scan off the fast automaton (Unicode word boundaries).
    let clean_non_ascii = "Lieu « Flower Mound, TX » introuvable ; essayez « Flower Mound, Texas, US ». \
                           Requête op-5e41ab087439611e à 2026-01-01T00:00:00Z — 12 jetons.";
    c.bench_function("redact_clean_non_ascii_text", |b| {
        b.iter(|| recourse_protocol::redact_cow(std::hint::black_box(clean_non_ascii)).len());
    });
    c.bench_function("redact_text_with_secret", |b| {
        b.iter(|| recourse_protocol::redact(std::hint::black_box(dirty)));
    });
    c.bench_function("redact_value_clean", |b| {
        b.iter(|| recourse_protocol::redact_value(std::hint::black_box(&value)));
    });
}

criterion_group!(benches, bench, overhead, redaction);
criterion_main!(benches);
