//! The gateway's OpenAPI document describes what it answers: real answers —
//! records of every outcome, a replay, the journal's routes — validate
//! against the schema the document gives for that route and status (its
//! `$ref`s resolved into its components). The error statuses that need a
//! real socket (server limits, a header too large) are checked against the
//! binary in the CLI's tests.

use recourse_test_support::{check_openapi, openapi_mismatches};
use serde_json::{Value, json};

use crate::support;

use recourse_test_support::{export, keyed, tools_without_lookups};
use support::{TestGateway, journal_path};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_and_journal_answers_match_the_document() {
    let t = tools_without_lookups(&["exports:crash_after_commit:1.0"]).await;
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
    let answer = &doc["components"]["schemas"]["CallAnswer"];
    let required: Vec<&str> = answer["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    // A field the record leaves out when it has nothing to say (`answer`)
    // is one the document does not require.
    let described: Vec<&String> = answer["properties"]
        .as_object()
        .unwrap()
        .keys()
        .filter(|k| written.contains(k))
        .collect();
    assert_eq!(
        written, described,
        "the document lists the record's fields in the order it writes them (preserve_order)"
    );
    let left_out: Vec<&String> = answer["properties"]
        .as_object()
        .unwrap()
        .keys()
        .filter(|k| !written.contains(k))
        .collect();
    for key in left_out {
        assert!(
            !required.contains(&key.as_str()),
            "the record left out {key}, which the document requires"
        );
    }
    for body in &calls {
        let (status, record) = gw.post(body).await;
        assert_eq!(status, 200, "{record}");
        check_openapi(&doc, "post", "/v1/calls", 200, &record);
        // The check can fail: the same record with a field retyped or gone does not match.
        let mut bent = record.clone();
        bent["next"]["step"] = json!("try_harder");
        bent.as_object_mut().unwrap().remove("http_calls");
        assert_eq!(
            openapi_mismatches(&doc, "post", "/v1/calls", 200, &bent).len(),
            2,
            "{bent}"
        );
    }

    let body = keyed(export(&t), "openapi-1");
    let (_, first) = gw.post(&body).await;
    assert_eq!(first["outcome"], "unknown", "{first}");
    let (status, replay) = gw.post(&body).await;
    assert_eq!((status, &replay["replayed"]), (200, &json!(true)));
    check_openapi(&doc, "post", "/v1/calls", 200, &replay);

    let id = first["call_id"].as_str().unwrap();
    let (status, one) = gw.get(&format!("/v1/calls/{id}")).await;
    assert_eq!(status, 200);
    check_openapi(&doc, "get", "/v1/calls/{call_id}", 200, &one);
    let answer = gw
        .raw(
            "POST",
            &format!("/v1/calls/{id}/reconcile"),
            axum::body::Body::empty(),
        )
        .await;
    let (status, settled) = (answer.status, answer.body);
    assert_eq!(status, 200, "{settled}");
    check_openapi(&doc, "post", "/v1/calls/{call_id}/reconcile", 200, &settled);
    let (status, page) = gw.get("/v1/calls?limit=2").await;
    assert_eq!(status, 200);
    assert_eq!(page["calls"].as_array().unwrap().len(), 2, "{page}");
    check_openapi(&doc, "get", "/v1/calls", 200, &page);
    for (path, route) in [("/healthz", "/healthz"), ("/readyz", "/readyz")] {
        let (status, body) = gw.get(path).await;
        check_openapi(&doc, "get", route, status, &body);
    }
}
