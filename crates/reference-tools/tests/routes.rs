//! Contract tests for every route, over real HTTP, without faults.

mod support;

use recourse_tool::protocol::{ErrorCategory, RetryPermission};
use serde_json::{Value, json};
use support::{get, post, start};

#[tokio::test]
async fn weather_finds_listed_places_and_suggests_for_abbreviations() {
    let tools = start(&[]).await;
    let r = post(
        &tools,
        "/api/weather/current",
        json!({"location": "Flower Mound, TX"}),
    )
    .await;
    r.assert_failure(404, "NOT_FOUND", "LOCATION_NOT_FOUND", true);
    assert_eq!(r.parsed.permission, RetryPermission::Allowed);
    assert_eq!(r.detail("suggestion"), "Flower Mound, Texas, US");
    assert!(
        r.detail("hint")
            .as_str()
            .unwrap()
            .contains("City, Region, Country")
    );

    let r = post(
        &tools,
        "/api/weather/current",
        json!({"location": "Flower Mound, Texas, US"}),
    )
    .await;
    let data = r.data();
    assert_eq!(data["location"], "Flower Mound, Texas, US");
    assert_eq!(data["units"], "metric");
    assert_eq!(data["temperature"], 31.5);

    let body = json!({"location": "Flower Mound, Texas, US", "units": "imperial"});
    let r = post(&tools, "/api/weather/current", body).await;
    assert_eq!(r.data()["temperature"], 88.7);

    let r = post(
        &tools,
        "/api/weather/current",
        json!({"location": "Paris", "units": "kelvin"}),
    )
    .await;
    r.assert_failure(400, "INPUT_ERROR", "INVALID_FORMAT", true);
    assert_eq!(r.detail("field"), "units");
    assert_eq!(r.detail("allowed_values"), "metric,imperial");

    let r = post(&tools, "/api/weather/current", json!({"units": "metric"})).await;
    r.assert_failure(400, "INPUT_ERROR", "MISSING_REQUIRED_FIELD", true);
    assert_eq!(r.detail("field"), "location");
}

#[tokio::test]
async fn stock_quotes_tsla_and_suggests_msft() {
    let tools = start(&[]).await;
    let r = post(&tools, "/api/stock/quote", json!({"symbol": "TSLA"})).await;
    let data = r.data();
    assert_eq!(data["price"], 468.285);
    assert_eq!(data["history"].as_array().unwrap().len(), 5);
    assert_eq!(data["history"][4]["close"], 468.285);

    let r = post(&tools, "/api/stock/quote", json!({"symbol": "MSFT Inc"})).await;
    r.assert_failure(404, "NOT_FOUND", "SYMBOL_NOT_FOUND", true);
    assert_eq!(r.detail("suggestion"), "MSFT");
    let r = post(&tools, "/api/stock/quote", json!({"symbol": "MSFT"})).await;
    assert_eq!(r.data()["symbol"], "MSFT");

    let r = post(&tools, "/api/stock/quote", json!({"symbol": 42})).await;
    r.assert_failure(400, "INPUT_ERROR", "INVALID_FORMAT", true);
    assert_eq!(r.detail("field"), "symbol");
}

#[tokio::test]
async fn currency_converts_and_refuses_bad_amounts_and_codes() {
    let tools = start(&[]).await;
    let r = post(
        &tools,
        "/api/currency/convert",
        json!({"amount": 100, "from": "USD", "to": "EUR"}),
    )
    .await;
    assert_eq!(r.data()["converted"], 92.0);

    let r = post(
        &tools,
        "/api/currency/convert",
        json!({"amount": 0, "from": "USD", "to": "EUR"}),
    )
    .await;
    r.assert_failure(400, "INPUT_ERROR", "INVALID_AMOUNT", false);
    assert_eq!(r.parsed.permission, RetryPermission::Refused);
    let r = post(
        &tools,
        "/api/currency/convert",
        json!({"amount": -5, "from": "USD", "to": "EUR"}),
    )
    .await;
    r.assert_failure(400, "INPUT_ERROR", "INVALID_AMOUNT", false);

    let r = post(
        &tools,
        "/api/currency/convert",
        json!({"amount": 5, "from": "USD", "to": "XYZ"}),
    )
    .await;
    r.assert_failure(400, "INPUT_ERROR", "UNSUPPORTED_CURRENCY", true);
    assert_eq!(r.detail("field"), "to");
    assert!(r.detail("allowed_values").as_str().unwrap().contains("EUR"));

    let r = post(
        &tools,
        "/api/currency/convert",
        json!({"amount": "5", "from": "USD", "to": "EUR"}),
    )
    .await;
    r.assert_failure(400, "INPUT_ERROR", "INVALID_FORMAT", true);
    assert_eq!(r.detail("field"), "amount");
}

#[tokio::test]
async fn orders_lookup_refund_and_policy() {
    let tools = start(&[]).await;
    let r = post(
        &tools,
        "/api/orders/lookup",
        json!({"order_id": "ORD-1001"}),
    )
    .await;
    assert_eq!(r.data()["refundable"], true);
    let r = post(&tools, "/api/orders/lookup", json!({"order_id": "1001"})).await;
    r.assert_failure(400, "INPUT_ERROR", "INVALID_ORDER_ID", true);
    assert_eq!(r.detail("suggestion"), "ORD-1001");
    let r = post(&tools, "/api/orders/lookup", json!({"order_id": "ORD-9"})).await;
    r.assert_failure(404, "NOT_FOUND", "ORDER_NOT_FOUND", false);

    let first = post(
        &tools,
        "/api/orders/refund",
        json!({"order_id": "ORD-1001"}),
    )
    .await;
    assert_eq!(first.data()["status"], "refunded");
    let again = post(
        &tools,
        "/api/orders/refund",
        json!({"order_id": "ORD-1001"}),
    )
    .await;
    assert_eq!(again.data(), first.data(), "refunds are idempotent");
    let r = post(
        &tools,
        "/api/orders/lookup",
        json!({"order_id": "ORD-1001"}),
    )
    .await;
    assert_eq!(r.data()["status"], "refunded");
    assert_eq!(r.data()["refundable"], false);

    let r = post(
        &tools,
        "/api/orders/refund",
        json!({"order_id": "ORD-2002"}),
    )
    .await;
    r.assert_failure(422, "POLICY_REJECTION", "REFUND_WINDOW_CLOSED", false);
    assert_eq!(r.parsed.category, Some(ErrorCategory::PolicyRejection));
    let r = post(
        &tools,
        "/api/orders/refund",
        json!({"order_id": "ord-2002x"}),
    )
    .await;
    r.assert_failure(400, "INPUT_ERROR", "INVALID_ORDER_ID", false);
}

#[tokio::test]
async fn exports_commit_and_refuse_honestly() {
    let tools = start(&[]).await;
    let r = post(
        &tools,
        "/api/exports",
        json!({"source_id": "sales-2024", "format": "pdf"}),
    )
    .await;
    let data = r.data().clone();
    assert_eq!(data["version"], 3);
    assert_eq!(data["file_name"], "sales-2024-v3.pdf");
    assert_eq!(tools.exports_committed(), 1);
    let op = data["operation_id"].as_str().unwrap();
    let r = get(&tools, &format!("/api/exports/{op}")).await;
    assert_eq!(r.data()["state"], "committed");
    assert_eq!(r.data()["result"], data);

    let body = json!({"source_id": "hr-salaries", "format": "pdf"});
    post(&tools, "/api/exports", body).await.assert_failure(
        403,
        "PERMISSION_DENIED",
        "SOURCE_PRIVATE",
        false,
    );
    let body = json!({"source_id": "sales-2024", "version": 7, "format": "pdf"});
    let r = post(&tools, "/api/exports", body).await;
    r.assert_failure(404, "NOT_FOUND", "VERSION_NOT_FOUND", false);
    assert_eq!(r.detail("latest_version"), "3");
    let body = json!({"source_id": "sales-2024", "format": "xlsx"});
    let r = post(&tools, "/api/exports", body).await;
    r.assert_failure(400, "INPUT_ERROR", "UNSUPPORTED_FORMAT", true);
    assert_eq!(r.detail("allowed_values"), "pdf,docx,csv");
    let body = json!({"source_id": "nowhere", "format": "csv"});
    post(&tools, "/api/exports", body).await.assert_failure(
        404,
        "NOT_FOUND",
        "SOURCE_NOT_FOUND",
        false,
    );
    assert_eq!(tools.exports_committed(), 1, "refusals write nothing");

    let r = get(&tools, "/api/exports/op-never-seen").await;
    assert_eq!(r.data()["state"], "not_committed");
}

#[tokio::test]
async fn the_export_lookup_reads_exports_by_their_inputs() {
    let tools = start(&[]).await;
    let asked = json!({"source_id": "inventory", "format": "csv"});
    let r = post(&tools, "/api/exports/lookup", asked.clone()).await;
    assert_eq!(r.data()["count"], 0);
    assert_eq!(r.data()["latest"], Value::Null);
    let body = json!({"source_id": "inventory", "version": 1, "format": "csv"});
    post(&tools, "/api/exports", body.clone()).await;
    post(
        &tools,
        "/api/exports",
        json!({"source_id": "inventory", "format": "pdf"}),
    )
    .await;
    let r = post(&tools, "/api/exports/lookup", asked).await;
    assert_eq!(r.data()["count"], 1);
    assert_eq!(r.data()["latest"]["file_name"], "inventory-v1.csv");
    let r = post(
        &tools,
        "/api/exports/lookup",
        json!({"source_id": "inventory", "format": "csv", "version": 2}),
    )
    .await;
    assert_eq!(r.data()["count"], 0);
    assert_eq!(tools.exports_committed(), 2, "a lookup writes nothing");
}

#[tokio::test]
async fn manifest_unknown_routes_and_bad_bodies_are_envelopes() {
    let tools = start(&[]).await;
    let r = get(&tools, "/api/capabilities").await;
    let caps = r.data()["capabilities"].as_array().unwrap().clone();
    let names: Vec<&str> = caps.iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "weather_current",
            "stock_quote",
            "currency_convert",
            "orders_lookup",
            "orders_refund",
            "exports_create",
            "exports_lookup"
        ]
    );
    let exports = &caps[5];
    assert_eq!(exports["idempotent"], false);
    assert_eq!(exports["reconcile"], "/api/exports/{operation_id}");
    assert_eq!(
        exports["input_schema"]["required"],
        json!(["source_id", "format"])
    );
    assert!(caps[..5].iter().all(|c| c["idempotent"] == true));
    assert_eq!(caps[6]["idempotent"], true, "the lookup is a read");

    get(&tools, "/api/nothing-here").await.assert_failure(
        404,
        "NOT_FOUND",
        "ROUTE_NOT_FOUND",
        false,
    );
    let req = support::client()
        .post(format!("{}/api/stock/quote", tools.base_url()))
        .header("content-type", "application/json")
        .body("{\"symbol\": ");
    support::send(req)
        .await
        .assert_failure(400, "INPUT_ERROR", "INVALID_REQUEST", false);
    let req = support::client()
        .post(format!("{}/api/stock/quote", tools.base_url()))
        .header("content-type", "application/json")
        .body(vec![b' '; 6 * 1024 * 1024]);
    let r = support::send(req).await;
    assert_eq!(r.status, 413);
    assert_eq!(r.body["error"]["category"], "INPUT_ERROR");
    let r = post(&tools, "/api/stock/quote", json!({"symbol": "TSLA"})).await;
    assert_eq!(r.data()["price"], 468.285, "still serving");
}

#[tokio::test]
async fn on_loopback_only_requests_for_a_loopback_host_are_served() {
    // DNS rebinding: a page whose name resolves to 127.0.0.1 sends its own.
    let tools = start(&[]).await;
    let client = reqwest::Client::new();
    let quote = format!("{}/api/stock/quote", tools.base_url());
    let rebound = client
        .post(&quote)
        .header("host", "attacker.example")
        .json(&json!({"symbol": "TSLA"}))
        .send()
        .await
        .unwrap();
    assert_eq!(rebound.status(), 403);
    let body: Value = rebound.json().await.unwrap();
    assert_eq!(body["error"]["code"], "HOST_NOT_ALLOWED");
    let local = client
        .post(&quote)
        .header("host", "localhost")
        .json(&json!({"symbol": "TSLA"}))
        .send()
        .await
        .unwrap();
    assert_eq!(local.status(), 200);
}
