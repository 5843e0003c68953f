//! The gateway's OpenAPI document describes what it answers: real answers —
//! records of every outcome, a replay, the journal's routes — validate
//! against the schema the document gives for that route and status (its
//! `$ref`s resolved into its components). The error statuses that need a
//! real socket (server limits, a header too large) are checked against the
//! binary in the CLI's tests.

use std::time::Duration;

use serde_json::{Value, json};

mod support;

use support::{TestGateway, export, journal_path, keyed, tools};

/// Checks `body` against the schema `doc` declares for `method path` answering `status`.
fn check(doc: &Value, method: &str, path: &str, status: u16, body: &Value) {
    let errors = mismatches(doc, method, path, status, body);
    assert!(
        errors.is_empty(),
        "{method} {path} {status} does not match its schema: {errors:#?}\n{body:#}"
    );
}

/// Where `body` departs from the schema `doc` declares for `method path` answering `status`.
fn mismatches(doc: &Value, method: &str, path: &str, status: u16, body: &Value) -> Vec<String> {
    let response = &doc["paths"][path][method]["responses"][status.to_string()];
    let schema = &response["content"]["application/json"]["schema"];
    assert!(
        schema.is_object(),
        "{method} {path} does not document {status}: {body}"
    );
    // The whole document as the root, so `#/components/schemas/…` resolves.
    let mut root = doc.clone();
    root["$ref"] = schema["$ref"].clone();
    let validator = jsonschema::draft202012::new(&root).expect("the document is a valid schema");
    validator
        .iter_errors(body)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_and_journal_answers_match_the_document() {
    let t = tools(&["exports:crash_after_commit:1.0"], Duration::ZERO).await;
    let state = tempfile::tempdir().unwrap();
    let gw = TestGateway::journaled(&journal_path(state.path())).await;
    let (status, doc) = gw.get("/openapi.json").await;
    assert_eq!(status, 200);
    let base = t.base_url();
    let calls = [
        json!({"url": format!("{base}/api/stock/quote"), "payload": {"symbol": "TSLA"}}),
        json!({"url": format!("{base}/api/weather/current"), "payload": {"location": "Flower Mound, TX"}}),
        json!({"url": format!("{base}/api/currency/convert"), "payload": {"amount": -5, "from": "USD", "to": "EUR"}}),
        json!({"url": format!("{base}/api/orders/refund"), "payload": {"order_id": "ORD-2002"}}),
        json!({"url": format!("{base}/api/exports"), "payload": {"source_id": "sales-2024", "format": "pdf"},
               "reconcile": format!("{base}/api/exports/{{operation_id}}")}),
    ];
    let (_, quote) = gw.post(&calls[0]).await;
    let written: Vec<&String> = quote.as_object().unwrap().keys().collect();
    let described: Vec<&String> = doc["components"]["schemas"]["CallAnswer"]["properties"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(
        written, described,
        "the document lists the record's fields in the order it writes them (preserve_order)"
    );
    for body in &calls {
        let (status, record) = gw.post(body).await;
        assert_eq!(status, 200, "{record}");
        check(&doc, "post", "/v1/calls", 200, &record);
        // The check can fail: the same record with a field retyped or gone does not match.
        let mut bent = record.clone();
        bent["next"]["step"] = json!("try_harder");
        bent.as_object_mut().unwrap().remove("http_calls");
        assert_eq!(
            mismatches(&doc, "post", "/v1/calls", 200, &bent).len(),
            2,
            "{bent}"
        );
    }

    let body = keyed(export(&t), "openapi-1");
    let (_, first) = gw.post(&body).await;
    assert_eq!(first["outcome"], "unknown", "{first}");
    let (status, replay) = gw.post(&body).await;
    assert_eq!((status, &replay["replayed"]), (200, &json!(true)));
    check(&doc, "post", "/v1/calls", 200, &replay);

    let id = first["call_id"].as_str().unwrap();
    let (status, one) = gw.get(&format!("/v1/calls/{id}")).await;
    assert_eq!(status, 200);
    check(&doc, "get", "/v1/calls/{call_id}", 200, &one);
    let answer = gw
        .raw(
            "POST",
            &format!("/v1/calls/{id}/reconcile"),
            axum::body::Body::empty(),
        )
        .await;
    let (status, settled) = (answer.status, answer.body);
    assert_eq!(status, 200, "{settled}");
    check(&doc, "post", "/v1/calls/{call_id}/reconcile", 200, &settled);
    let (status, page) = gw.get("/v1/calls?limit=2").await;
    assert_eq!(status, 200);
    assert_eq!(page["calls"].as_array().unwrap().len(), 2, "{page}");
    check(&doc, "get", "/v1/calls", 200, &page);
    for (path, route) in [("/healthz", "/healthz"), ("/readyz", "/readyz")] {
        let (status, body) = gw.get(path).await;
        check(&doc, "get", route, status, &body);
    }
}
