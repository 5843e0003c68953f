//! A request body the gateway cannot run is refused before anything is
//! sent: 400 `INVALID_CALL` (or the target's own refusal), the field at
//! fault named as the body names it, and the message as it always read.

use crate::support;

use serde_json::{Value, json};
use support::{TestGateway, journal_path};

async fn refused(gw: &TestGateway, body: Value) -> Value {
    let (status, answer) = gw.post(&body).await;
    assert_eq!(status, 400, "{body}: {answer}");
    answer
}

#[tokio::test]
async fn each_refused_field_is_named_as_the_body_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let gw = TestGateway::journaled(&journal_path(dir.path())).await;
    let url = "http://127.0.0.1:9/api/x";
    let cases = [
        (
            json!({"url": url, "payload": [1]}),
            "payload",
            "payload must be a JSON object",
        ),
        (
            json!({"url": url, "payload": {}, "deadline_secs": 0}),
            "deadline_secs",
            "deadline_secs must be in (0, 3600]",
        ),
        (
            json!({"url": url, "payload": {}, "method": "BREW"}),
            "method",
            "invalid method:",
        ),
        (
            json!({"url": url, "payload": {}, "protect": ["amount"]}),
            "protect",
            "invalid protect:",
        ),
        (
            json!({"url": url, "payload": {}, "headers": [["Host", "evil"]]}),
            "headers",
            "invalid headers:",
        ),
        (
            json!({"url": url, "payload": {}, "idempotency_key": "has space"}),
            "idempotency_key",
            "invalid idempotency_key:",
        ),
        (
            json!({"url": url, "payload": {}, "schema": {"type": 12}}),
            "schema",
            "invalid schema:",
        ),
    ];
    for (body, field, message) in cases {
        let answer = refused(&gw, body).await;
        assert_eq!(answer["error"]["code"], "INVALID_CALL", "{answer}");
        assert_eq!(answer["error"]["details"]["field"], field, "{answer}");
        let text = answer["error"]["message"].as_str().unwrap();
        assert!(text.starts_with(message), "{field}: {text}");
    }
    // A template is checked against the allowlist first, as a target.
    let template = refused(
        &gw,
        json!({"url": url, "payload": {}, "reconcile": "http://127.0.0.1:9/no-placeholder"}),
    )
    .await;
    assert_eq!(template["error"]["code"], "INVALID_TARGET", "{template}");
    assert_eq!(template["error"]["details"]["field"], "reconcile");
    let missing = refused(&gw, json!({"payload": {}})).await;
    assert_eq!(missing["error"]["code"], "MISSING_REQUIRED_FIELD");
    assert_eq!(missing["error"]["details"]["field"], "url");
    let both = refused(
        &gw,
        json!({"url": url, "mcp": {"url": url, "tool": "t"}, "payload": {}}),
    )
    .await;
    assert_eq!(both["error"]["code"], "INVALID_TARGET");
    let unknown = refused(&gw, json!({"url": url, "payload": {}, "colour": "red"})).await;
    assert_eq!(
        unknown["success"], false,
        "unknown fields are refused: {unknown}"
    );
}

#[tokio::test]
async fn a_number_that_would_change_on_the_way_is_refused_naming_it() {
    let gw = TestGateway::plain();
    let body = r#"{"url": "http://127.0.0.1:9/api/pay", "payload": {"account": 18446744073709551617, "amount": 1.00000000000000000001}}"#;
    let answer = gw.raw("POST", "/v1/calls", body).await;
    assert_eq!(answer.status, 400, "{}", answer.text);
    let error = &answer.body["error"];
    assert_eq!(error["code"], "NUMBER_NOT_REPRESENTABLE");
    assert_eq!(error["details"]["field"], "payload");
    assert_eq!(error["details"]["pointer"], "/payload/account");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("18446744073709551617"),
        "{error}"
    );
    // A number a double holds as written goes on (here, to a closed port).
    let fine = r#"{"url": "http://127.0.0.1:9/api/pay", "payload": {"account": 18446744073709551615, "amount": 12.50}}"#;
    let answer = gw.raw("POST", "/v1/calls", fine).await;
    assert_ne!(
        answer.body["error"]["code"], "NUMBER_NOT_REPRESENTABLE",
        "{}",
        answer.text
    );
}
