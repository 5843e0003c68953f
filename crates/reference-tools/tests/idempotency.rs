//! `Idempotency-Key` on exports: replay, mismatch, and exactly one write.

mod support;

use serde_json::json;
use support::{post, post_keyed, start};

#[tokio::test]
async fn the_same_key_and_payload_replays_the_first_result() {
    let tools = start(&[]).await;
    let body = json!({"source_id": "sales-2024", "version": 2, "format": "docx"});
    let first = post_keyed(&tools, "/api/exports", "key-1", body.clone()).await;
    let replay = post_keyed(&tools, "/api/exports", "key-1", body).await;
    assert_eq!(first.data(), replay.data());
    assert_eq!(tools.exports_committed(), 1);
}

#[tokio::test]
async fn field_order_does_not_make_a_different_payload() {
    let tools = start(&[]).await;
    let a = r#"{"source_id": "inventory", "format": "csv"}"#;
    let b = r#"{"format": "csv", "source_id": "inventory"}"#;
    for body in [a, b] {
        let req = support::client()
            .post(format!("{}/api/exports", tools.base_url()))
            .header("Idempotency-Key", "key-order")
            .header("content-type", "application/json")
            .body(body);
        assert_eq!(support::send(req).await.status, 200);
    }
    assert_eq!(tools.exports_committed(), 1);
}

#[tokio::test]
async fn the_same_key_with_another_payload_is_refused_with_422() {
    let tools = start(&[]).await;
    let first = post_keyed(
        &tools,
        "/api/exports",
        "key-2",
        json!({"source_id": "sales-2024", "format": "pdf"}),
    )
    .await;
    let r = post_keyed(
        &tools,
        "/api/exports",
        "key-2",
        json!({"source_id": "sales-2024", "format": "csv"}),
    )
    .await;
    r.assert_failure(422, "POLICY_REJECTION", "IDEMPOTENCY_KEY_REUSED", false);
    assert_eq!(r.detail("operation_id"), &first.data()["operation_id"]);
    assert_eq!(tools.exports_committed(), 1);
}

#[tokio::test]
async fn a_rejected_payload_does_not_bind_its_key() {
    let tools = start(&[]).await;
    let r = post_keyed(
        &tools,
        "/api/exports",
        "key-3",
        json!({"source_id": "sales-2024", "format": "PDF"}),
    )
    .await;
    r.assert_failure(400, "INPUT_ERROR", "UNSUPPORTED_FORMAT", true);
    let r = post_keyed(
        &tools,
        "/api/exports",
        "key-3",
        json!({"source_id": "sales-2024", "format": "pdf"}),
    )
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(tools.exports_committed(), 1);
}

#[tokio::test]
async fn without_a_key_every_call_writes() {
    let tools = start(&[]).await;
    let body = json!({"source_id": "inventory", "format": "csv"});
    let a = post(&tools, "/api/exports", body.clone()).await;
    let b = post(&tools, "/api/exports", body).await;
    assert_ne!(a.data()["operation_id"], b.data()["operation_id"]);
    assert_eq!(tools.exports_committed(), 2);
}

#[tokio::test]
async fn an_empty_key_is_an_input_error() {
    let tools = start(&[]).await;
    let r = post_keyed(
        &tools,
        "/api/exports",
        " ",
        json!({"source_id": "inventory", "format": "csv"}),
    )
    .await;
    r.assert_failure(400, "INPUT_ERROR", "INVALID_IDEMPOTENCY_KEY", false);
    assert_eq!(tools.exports_committed(), 0);
}
