//! `McpToolServer` over Streamable HTTP on loopback, in front of a real
//! recourse tool server, called by rmcp's client: what an MCP client sees.

use std::sync::{Arc, Mutex};

use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use recourse_mcp_server::{McpToolServer, streamable_http_service};
use recourse_protocol::mcp::{IDEMPOTENCY_META_KEY, TOOL_FAILURE_META_KEY, UNKNOWN_TOOL};
use recourse_protocol::{ErrorCategory, RetryPermission, ToolError, ToolResponse, parse_response};
use recourse_tool::{Capability, Success, ToolJson, ToolResult, ToolServer};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use serde_json::{Value, json};
use tokio::task::JoinHandle;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Order {
    /// How many.
    quantity: u32,
}

/// The `Idempotency-Key` headers the orders tool received, in order.
type Keys = Arc<Mutex<Vec<Option<String>>>>;

struct Tools {
    base_url: String,
    keys: Keys,
    task: JoinHandle<()>,
}

/// A tool server with a non-idempotent `orders_create` that records its
/// `Idempotency-Key`, and an idempotent `quote` that is always rate limited.
async fn tools() -> Tools {
    let keys = Keys::default();
    let seen = Arc::clone(&keys);
    let create = move |headers: HeaderMap, ToolJson(order): ToolJson<Order>| async move {
        let key = headers
            .get("idempotency-key")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        seen.lock().unwrap().push(key);
        let result: ToolResult<Value> = Ok(Success(json!({"ordered": order.quantity})));
        result
    };
    let app = ToolServer::new()
        .tool(
            Capability::post::<Order>("orders_create", "/api/orders", "Place an order"),
            create,
        )
        .tool(
            Capability::post::<Order>("quote", "/api/quote", "Quote an order").idempotent(),
            rate_limited,
        )
        .into_router();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base_url = format!("http://{}", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Tools {
        base_url,
        keys,
        task,
    }
}

/// 429 with a `Retry-After` header and no `retry_after` in the envelope.
async fn rate_limited(ToolJson(_): ToolJson<Order>) -> Response {
    let reply = ToolResponse::failure(ToolError::rate_limit("QUOTA", "slow down").retryable(true));
    (
        axum::http::StatusCode::TOO_MANY_REQUESTS,
        [("retry-after", "7"), ("content-type", "application/json")],
        reply.to_json_bytes(),
    )
        .into_response()
}

/// Serves `server` at `/mcp` on a free loopback port; returns its URL.
async fn mount(server: McpToolServer) -> String {
    let app = axum::Router::new().nest_service("/mcp", streamable_http_service(server));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    url
}

async fn client(base_url: &str) -> RunningService<RoleClient, ()> {
    let server = McpToolServer::from_manifest(base_url).await.unwrap();
    let url = mount(server).await;
    ().serve(StreamableHttpClientTransport::from_uri(url))
        .await
        .expect("the MCP handshake")
}

/// `tools/call` of `name`, as the JSON of the result.
async fn call(client: &RunningService<RoleClient, ()>, params: Value) -> Value {
    let params: CallToolRequestParams = serde_json::from_value(params).unwrap();
    let result = client.call_tool(params).await.expect("a CallToolResult");
    serde_json::to_value(result).unwrap()
}

/// What recourse's parser reads from a result, as an MCP client would hand it over.
fn parsed(result: &Value) -> recourse_protocol::ParsedResponse {
    parse_response(
        200,
        [("content-type", "application/json")],
        result.to_string().as_bytes(),
    )
}

#[tokio::test]
async fn the_manifest_becomes_the_tool_list_with_schemas_and_idempotency_hints() {
    let tools = tools().await;
    let client = client(&tools.base_url).await;
    let listed = client.list_all_tools().await.unwrap();
    let listed = serde_json::to_value(listed).unwrap();
    let by_name = |name: &str| {
        listed
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("{name} is listed: {listed}"))
    };
    let create = by_name("orders_create");
    assert_eq!(create["annotations"]["idempotentHint"], false);
    assert_eq!(create["inputSchema"]["required"], json!(["quantity"]));
    assert_eq!(create["description"], "Place an order");
    assert_eq!(by_name("quote")["annotations"]["idempotentHint"], true);
}

#[tokio::test]
async fn the_idempotency_key_in_meta_reaches_the_tool_as_its_header() {
    let tools = tools().await;
    let client = client(&tools.base_url).await;
    let with_key = json!({
        "name": "orders_create",
        "arguments": {"quantity": 3},
        "_meta": {IDEMPOTENCY_META_KEY: "key-123"},
    });
    let result = call(&client, with_key).await;
    assert_eq!(result["isError"], false, "{result}");
    assert_eq!(result["structuredContent"], json!({"ordered": 3}));
    let without = json!({"name": "orders_create", "arguments": {"quantity": 1}});
    call(&client, without).await;
    assert_eq!(
        *tools.keys.lock().unwrap(),
        [Some("key-123".to_owned()), None]
    );
}

#[tokio::test]
async fn a_failure_keeps_its_envelope_and_the_retry_after_header_becomes_a_detail() {
    let tools = tools().await;
    let client = client(&tools.base_url).await;
    let result = call(
        &client,
        json!({"name": "quote", "arguments": {"quantity": 1}}),
    )
    .await;
    assert_eq!(result["isError"], true, "{result}");
    let error = &result["structuredContent"]["error"];
    assert_eq!(error["code"], "QUOTA");
    assert_eq!(error["details"]["retry_after"], "7", "{result}");
    let read = parsed(&result);
    assert_eq!(read.category, Some(ErrorCategory::RateLimit));
    assert_eq!(read.permission, RetryPermission::Allowed);
}

#[tokio::test]
async fn a_failure_carries_the_mcp_failure_metadata_beside_its_envelope() {
    let tools = tools().await;
    let client = client(&tools.base_url).await;
    let before = std::time::SystemTime::now();
    let result = call(
        &client,
        json!({"name": "quote", "arguments": {"quantity": 1}}),
    )
    .await;
    let meta = &result["_meta"][TOOL_FAILURE_META_KEY];
    assert_eq!(meta["class"], "reliability", "{result}");
    assert_eq!(meta["code"], "QUOTA");
    assert_eq!(meta["retryable"], true);
    let not_before = meta["retryNotBefore"].as_u64().expect("epoch milliseconds");
    let since_epoch = |t: std::time::SystemTime| {
        t.duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64
    };
    assert!(
        not_before >= since_epoch(before) + 6_000
            && not_before <= since_epoch(std::time::SystemTime::now()) + 8_000,
        "{result}"
    );

    // Without the envelope, a client reads the failure from the metadata: a
    // reliability failure it may resend, after the wait.
    let mut bare = result.clone();
    bare.as_object_mut().unwrap().remove("structuredContent");
    let read = recourse_protocol::parse_response_at(
        200,
        [("content-type", "application/json")],
        bare.to_string().as_bytes(),
        before,
    );
    assert_eq!(read.category, Some(ErrorCategory::ServiceError));
    assert_eq!(read.code.as_deref(), Some("QUOTA"));
    assert_eq!(read.permission, RetryPermission::Allowed);
    let wait = read.server_wait.expect("retryNotBefore is a wait");
    assert!(
        wait >= std::time::Duration::from_secs(6) && wait <= std::time::Duration::from_secs(60),
        "Retry-After: 7, seen from before the call: {wait:?}"
    );

    // A failure recourse's server makes up itself (no retry_after) has no retryNotBefore.
    let unknown = call(&client, json!({"name": "orders_cancel", "arguments": {}})).await;
    let meta = &unknown["_meta"][TOOL_FAILURE_META_KEY];
    assert_eq!(meta["class"], "capability", "{unknown}");
    assert_eq!(meta["retryable"], false);
    assert!(meta.get("retryNotBefore").is_none());
}

#[tokio::test]
async fn an_unknown_tool_is_a_non_retryable_not_found_naming_the_tools() {
    let tools = tools().await;
    let client = client(&tools.base_url).await;
    let result = call(&client, json!({"name": "orders_cancel", "arguments": {}})).await;
    assert_eq!(result["isError"], true, "{result}");
    let read = parsed(&result);
    assert_eq!(read.code.as_deref(), Some(UNKNOWN_TOOL));
    assert_eq!(read.category, Some(ErrorCategory::NotFound));
    assert_eq!(read.permission, RetryPermission::Refused);
    let message = read.message.unwrap_or_default();
    assert!(
        message.contains("\"orders_cancel\"") && message.contains("orders_create"),
        "{message}"
    );
    assert!(
        tools.keys.lock().unwrap().is_empty(),
        "nothing was forwarded"
    );
}

#[tokio::test]
async fn a_tool_server_that_went_away_is_a_retryable_service_error() {
    let tools = tools().await;
    let client = client(&tools.base_url).await;
    tools.task.abort();
    let _ = tools.task.await; // the listener is closed once the task is gone
    let result = call(
        &client,
        json!({"name": "orders_create", "arguments": {"quantity": 1}}),
    )
    .await;
    let read = parsed(&result);
    assert_eq!(read.code.as_deref(), Some("TOOL_UNREACHABLE"), "{result}");
    assert_eq!(read.category, Some(ErrorCategory::ServiceError));
    assert_eq!(read.permission, RetryPermission::Allowed);
}

#[tokio::test]
async fn a_manifest_that_is_not_one_or_not_there_is_a_setup_error() {
    let app = axum::Router::new().route(
        "/api/capabilities",
        axum::routing::get(|| async { axum::Json(json!({"hello": "world"})) }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base_url = format!("http://{}", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    let err = McpToolServer::from_manifest(&base_url)
        .await
        .expect_err("not a recourse manifest");
    assert!(!err.is_unreachable(), "{err}");
    assert!(err.to_string().contains("not a recourse manifest"), "{err}");

    task.abort();
    let _ = task.await;
    let err = McpToolServer::from_manifest(&base_url)
        .await
        .expect_err("nothing listens");
    assert!(err.is_unreachable(), "{err}");
}
