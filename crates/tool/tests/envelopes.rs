//! Every way a request can go wrong is answered with an envelope, over real HTTP.

use recourse_tool::protocol::{ErrorCategory, RetryPermission, ToolError, parse_response};
use recourse_tool::{Capability, Success, ToolJson, ToolResult, ToolServer, upstream_failure};
use serde::Deserialize;
use serde_json::{Value, json};

#[derive(Deserialize, schemars::JsonSchema)]
struct Input {
    amount: f64,
    #[allow(dead_code)]
    currency: Option<String>,
}

async fn double(ToolJson(input): ToolJson<Input>) -> ToolResult<Value> {
    Ok(Success(json!({ "doubled": input.amount * 2.0 })))
}

async fn explode(ToolJson(_input): ToolJson<Input>) -> ToolResult<Value> {
    panic!("handler bug with secret sk-abcdefghijklmnopqrstuvwx");
}

async fn limited() -> ToolResult<Value> {
    Err(ToolError::rate_limit("RATE_LIMITED", "slow down")
        .retryable(true)
        .detail("retry_after", "3")
        .into())
}

async fn upstream() -> ToolResult<Value> {
    Err(upstream_failure(
        None,
        "GET https://api.example.com/v1/data?api_key=topsecret123: status 503",
    ))
}

async fn start() -> String {
    let app = ToolServer::new()
        .tool(
            Capability::post::<Input>("double", "/api/double", "Doubles an amount").idempotent(),
            double,
        )
        .tool(
            Capability::post::<Input>("explode", "/api/explode", "Panics"),
            explode,
        )
        .tool(
            Capability::post::<()>("limited", "/api/limited", "Rate limited"),
            limited,
        )
        .tool(
            Capability::post::<()>("upstream", "/api/upstream", "Upstream down"),
            upstream,
        )
        .with_body_limit(64 * 1024)
        .into_router();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    base
}

struct Reply {
    status: u16,
    headers: reqwest::header::HeaderMap,
    body: Value,
    parsed: recourse_tool::protocol::ParsedResponse,
}

async fn send(req: reqwest::RequestBuilder) -> Reply {
    let resp = req.send().await.expect("server answered");
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let bytes = resp.bytes().await.unwrap();
    let parsed = parse_response(
        status,
        headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.to_str().unwrap_or(""))),
        &bytes,
    );
    let body = serde_json::from_slice(&bytes).expect("body is JSON");
    assert_eq!(headers["content-type"], "application/json");
    Reply {
        status,
        headers,
        body,
        parsed,
    }
}

async fn still_serving(client: &reqwest::Client, base: &str) {
    let r = send(
        client
            .post(format!("{base}/api/double"))
            .json(&json!({"amount": 2})),
    )
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body, json!({"success": true, "data": {"doubled": 4.0}}));
}

#[tokio::test]
async fn a_panicking_handler_gets_a_500_envelope_and_the_server_keeps_serving() {
    let base = start().await;
    let client = reqwest::Client::new();
    for _ in 0..2 {
        let r = send(
            client
                .post(format!("{base}/api/explode"))
                .json(&json!({"amount": 1})),
        )
        .await;
        assert_eq!(r.status, 500);
        assert_eq!(r.parsed.category, Some(ErrorCategory::ServiceError));
        assert_eq!(r.body["error"]["code"], "INTERNAL_ERROR");
        assert_eq!(r.body["error"]["retryable"], false);
        assert!(
            !r.body.to_string().contains("sk-abc"),
            "panic text never sent"
        );
        still_serving(&client, &base).await;
    }
}

#[tokio::test]
async fn an_oversized_body_gets_413_and_the_server_keeps_serving() {
    let base = start().await;
    let client = reqwest::Client::new();
    let big = format!(
        r#"{{"amount": 1, "currency": "{}"}}"#,
        "x".repeat(6 * 1024 * 1024)
    );
    let r = send(
        client
            .post(format!("{base}/api/double"))
            .header("content-type", "application/json")
            .body(big),
    )
    .await;
    assert_eq!(r.status, 413);
    assert_eq!(r.parsed.category, Some(ErrorCategory::InputError));
    assert_eq!(r.body["error"]["code"], "PAYLOAD_TOO_LARGE");
    still_serving(&client, &base).await;
}

#[tokio::test]
async fn a_six_mib_body_is_refused_by_the_default_limit_too() {
    let app = ToolServer::new()
        .tool(
            Capability::post::<Input>("double", "/api/double", "Doubles"),
            double,
        )
        .into_router();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    let client = reqwest::Client::new();
    let big = format!(
        r#"{{"amount": 1, "currency": "{}"}}"#,
        "x".repeat(6 * 1024 * 1024)
    );
    let req = client
        .post(format!("{base}/api/double"))
        .header("content-type", "application/json")
        .body(big);
    let r = send(req).await;
    assert_eq!(r.status, 413);
    still_serving(&client, &base).await;
}

#[tokio::test]
async fn malformed_json_is_a_non_retryable_invalid_request() {
    let base = start().await;
    let client = reqwest::Client::new();
    let req = client
        .post(format!("{base}/api/double"))
        .header("content-type", "application/json")
        .body("{\"amount\": ");
    let r = send(req).await;
    assert_eq!(r.status, 400);
    assert_eq!(r.body["error"]["code"], "INVALID_REQUEST");
    assert_eq!(r.body["error"]["category"], "INPUT_ERROR");
    assert_eq!(r.parsed.permission, RetryPermission::Refused);
    still_serving(&client, &base).await;
}

#[tokio::test]
async fn missing_and_mistyped_fields_are_named() {
    let base = start().await;
    let client = reqwest::Client::new();
    let url = format!("{base}/api/double");
    let r = send(client.post(&url).json(&json!({"currency": "EUR"}))).await;
    assert_eq!(r.status, 400);
    assert_eq!(r.body["error"]["code"], "MISSING_REQUIRED_FIELD");
    assert_eq!(r.body["error"]["details"]["field"], "amount");
    assert_eq!(r.parsed.permission, RetryPermission::Allowed);

    let r = send(client.post(&url).json(&json!({"amount": "ten"}))).await;
    assert_eq!(r.status, 400);
    assert_eq!(r.body["error"]["code"], "INVALID_FORMAT");
    assert_eq!(r.body["error"]["details"]["field"], "amount");
}

#[tokio::test]
async fn wrong_content_type_is_415() {
    let base = start().await;
    let client = reqwest::Client::new();
    let req = client
        .post(format!("{base}/api/double"))
        .header("content-type", "text/plain")
        .body(r#"{"amount": 1}"#);
    let r = send(req).await;
    assert_eq!(r.status, 415);
    assert_eq!(r.body["error"]["category"], "INPUT_ERROR");
    let r = send(
        client
            .post(format!("{base}/api/double"))
            .body(r#"{"amount": 1}"#),
    )
    .await;
    assert_eq!(r.status, 415);
}

#[tokio::test]
async fn unknown_routes_and_methods_are_envelopes() {
    let base = start().await;
    let client = reqwest::Client::new();
    let r = send(client.get(format!("{base}/api/nowhere"))).await;
    assert_eq!(r.status, 404);
    assert_eq!(r.body["error"]["category"], "NOT_FOUND");
    assert_eq!(r.body["success"], false);
    let r = send(client.get(format!("{base}/api/double"))).await;
    assert_eq!(r.status, 405);
    assert_eq!(r.body["error"]["code"], "METHOD_NOT_ALLOWED");
}

#[tokio::test]
async fn rate_limits_carry_retry_after() {
    let base = start().await;
    let r = send(reqwest::Client::new().post(format!("{base}/api/limited"))).await;
    assert_eq!(r.status, 429);
    assert_eq!(r.headers["retry-after"], "3");
    assert_eq!(r.body["error"]["details"]["retry_after"], "3");
}

#[tokio::test]
async fn upstream_failures_are_classified_and_redacted() {
    let base = start().await;
    let r = send(reqwest::Client::new().post(format!("{base}/api/upstream"))).await;
    assert_eq!(r.status, 502);
    assert_eq!(r.body["error"]["category"], "SERVICE_ERROR");
    assert_eq!(r.body["error"]["retryable"], true);
    assert!(!r.body.to_string().contains("topsecret123"));
}

#[tokio::test]
async fn the_manifest_lists_every_operation_with_its_schema() {
    let base = start().await;
    let r = send(reqwest::Client::new().get(format!("{base}/api/capabilities"))).await;
    assert_eq!(r.status, 200);
    let caps = r.body["data"]["capabilities"].as_array().unwrap();
    assert_eq!(caps.len(), 4);
    assert_eq!(caps[0]["name"], "double");
    assert_eq!(caps[0]["method"], "POST");
    assert_eq!(caps[0]["idempotent"], true);
    assert_eq!(caps[1]["idempotent"], false);
    assert_eq!(
        caps[0]["input_schema"]["properties"]["amount"]["type"],
        "number"
    );
}

/// Answers with the length of the body it was given, as it came.
async fn raw(
    recourse_tool::ToolJsonBytes(body): recourse_tool::ToolJsonBytes,
) -> ToolResult<Value> {
    Ok(Success(
        json!({ "bytes": body.len(), "text": String::from_utf8_lossy(&body) }),
    ))
}

/// A server of the two body-taking tools, `/api/raw` and `/api/unread`,
/// with a 1 KiB body limit; its base URL.
async fn body_tools() -> String {
    let app = ToolServer::new()
        .tool(
            Capability::post::<()>("raw", "/api/raw", "Echoes its body"),
            raw,
        )
        .tool(
            Capability::post::<()>("unread", "/api/unread", "Reads its body once"),
            unread,
        )
        .with_body_limit(1024)
        .into_router();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    base
}

#[tokio::test]
async fn a_raw_json_body_is_checked_like_a_typed_one_and_kept_as_sent() {
    let url = format!("{}/api/raw", body_tools().await);
    let client = reqwest::Client::new();
    let json = |body: &str| {
        client
            .post(&url)
            .header("content-type", "application/json")
            .body(body.to_owned())
    };

    // Kept byte for byte: spacing and key order are the caller's.
    let sent = r#"{ "b": 1,  "a": [true] }"#;
    let r = send(json(sent)).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body["data"]["text"], sent);

    let r = send(json(r#"{"a": "#)).await;
    assert_eq!(r.status, 400);
    assert_eq!(r.body["error"]["code"], "INVALID_REQUEST");
    assert_eq!(r.parsed.permission, RetryPermission::Refused);

    let r = send(
        client
            .post(&url)
            .header("content-type", "text/plain")
            .body("{}"),
    )
    .await;
    assert_eq!(r.status, 415);

    let r = send(json(&format!(r#"{{"pad": "{}"}}"#, "x".repeat(2048)))).await;
    assert_eq!(r.status, 413);
}

#[derive(serde::Deserialize)]
struct Amount {
    amount: f64,
}

/// Reads its body once, with `parse_json`, as a handler taking the body unread does.
async fn unread(
    recourse_tool::ToolJsonBody(body): recourse_tool::ToolJsonBody,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    match recourse_tool::parse_json::<Amount>(&body) {
        Ok(input) => {
            ToolResult::<Value>::Ok(Success(json!({ "amount": input.amount }))).into_response()
        }
        Err(rejection) => rejection.into_response(),
    }
}

#[tokio::test]
async fn an_unread_json_body_parsed_once_is_refused_as_a_checked_one_is() {
    let base = body_tools().await;
    let client = reqwest::Client::new();
    let post = |path: &str, content_type: &str, body: String| {
        client
            .post(format!("{base}{path}"))
            .header("content-type", content_type)
            .body(body)
    };

    let r = send(post(
        "/api/unread",
        "application/json",
        r#"{"amount": 2.5}"#.into(),
    ))
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body["data"]["amount"], 2.5);

    // Not JSON — cut short where a field is already of the wrong type, too:
    // the same refusal the checked body gets.
    for body in [r#"{"amount": "#, r#"[1, 2"#, r#"{"amount": "ten", "#] {
        let unread = send(post("/api/unread", "application/json", body.into())).await;
        let checked = send(post("/api/raw", "application/json", body.into())).await;
        assert_eq!(unread.status, 400, "{body}");
        assert_eq!(unread.body["error"]["code"], "INVALID_REQUEST", "{body}");
        assert_eq!(unread.body["error"], checked.body["error"], "{body}");
    }

    // JSON, but not the input: the field is named.
    let r = send(post(
        "/api/unread",
        "application/json",
        r#"{"amount": "ten"}"#.into(),
    ))
    .await;
    assert_eq!(r.status, 400);
    assert_eq!(r.body["error"]["details"]["field"], "amount");

    let r = send(post("/api/unread", "text/plain", "{}".into())).await;
    assert_eq!(r.status, 415);
    let r = send(post(
        "/api/unread",
        "application/json",
        format!(r#"{{"pad": "{}"}}"#, "x".repeat(2048)),
    ))
    .await;
    assert_eq!(r.status, 413);
}
