//! The probe in-process against the reference tools (HTTP, and MCP over
//! Streamable HTTP), a deliberately sloppy loopback server, a counted
//! idempotent cancel, and the third-party MCP servers `.ci/run` installs
//! (`RECOURSE_TEST_MCP_TIME_CMD`, `RECOURSE_TEST_MCP_FILESYSTEM_CMD`;
//! skipped visibly when unset). `recourse probe`'s own tests keep its flags,
//! exit codes and printing.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use recourse_mcp::McpTarget;
use recourse_probe::{EndpointClaims, ProbeOptions, ProbeScorecard, ProbeTarget};
use recourse_reference_tools::{ToolsConfig, spawn};
use recourse_test_support::service_var;
use serde_json::{Value, json};

/// The valid export the battery varies for `exports_create`.
fn export() -> Value {
    json!({"source_id": "sales-2024", "format": "pdf"})
}

/// Probes `target` as `options` say.
async fn probe(target: ProbeTarget, options: ProbeOptions) -> ProbeScorecard {
    recourse_probe::probe(target, options).await.unwrap()
}

/// Whether every required check passed (`recourse probe` exits 0).
fn passed(card: &ProbeScorecard) -> bool {
    card.required_failed() == 0
}

fn manifest_of(url: &str) -> ProbeTarget {
    ProbeTarget::manifest(url).unwrap()
}

fn tool<'a>(card: &'a Value, name: &str) -> &'a Value {
    card["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("no tool {name} in {card:#}"))
}

fn verdict<'a>(tool: &'a Value, check: &str) -> &'a str {
    tool["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == check)
        .and_then(|c| c["verdict"].as_str())
        .unwrap_or_else(|| panic!("no check {check} in {tool:#}"))
}

fn detail<'a>(tool: &'a Value, check: &str) -> &'a str {
    tool["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == check)
        .and_then(|c| c["detail"].as_str())
        .unwrap_or_else(|| panic!("no check {check} in {tool:#}"))
}

/// The ids of the checks `tool` failed.
fn failed(tool: &Value) -> BTreeSet<&str> {
    tool["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["verdict"] == "fail")
        .map(|c| c["id"].as_str().unwrap())
        .collect()
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("recourse-probe-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.canonicalize().unwrap()
}

#[tokio::test]
async fn the_reference_tools_pass_every_required_check_and_replay_without_a_second_write() {
    let tools = spawn(ToolsConfig::default()).await.unwrap();
    let options = ProbeOptions::new()
        .allow_writes()
        .with_payload(Some("exports_create"), export());
    let scorecard = probe(manifest_of(&tools.base_url()), options).await;
    let card = scorecard.to_json();
    assert!(passed(&scorecard), "{card:#}");
    assert_eq!(card["required_failed"], 0);
    assert_eq!(card["transport"], "http");
    let all = card["tools"].as_array().unwrap();
    assert_eq!(all.len(), 7);
    for t in all {
        assert_eq!(t["probed"], true, "{t:#}");
        for check in ["envelope", "category_status", "details_field", "no_leak"] {
            assert_eq!(verdict(t, check), "pass", "{} {check}: {t:#}", t["name"]);
        }
    }
    let exports = tool(&card, "exports_create");
    assert_eq!(verdict(exports, "replay"), "pass", "{exports:#}");
    assert_eq!(verdict(tool(&card, "weather_current"), "replay"), "skipped");
    assert_eq!(
        verdict(tool(&card, "weather_current"), "allowed_values"),
        "pass"
    );
    let route = &card["unknown_route"];
    assert_eq!(verdict(route, "envelope"), "pass", "{route:#}");
    assert_eq!(route["probes"][0]["code"], "ROUTE_NOT_FOUND");
    // One export from the unknown-field probe (a valid payload plus a field
    // serde ignores), one from the replay sequence; the replay wrote nothing.
    assert_eq!(tools.exports_committed(), 2);
    let page = scorecard.to_html();
    assert!(page.starts_with("<!doctype html>") && page.contains("<code>exports_create</code>"));
    assert!(!page.contains("<script"));
    tools.shutdown().await;
}

#[tokio::test]
async fn without_allow_writes_nothing_that_writes_is_sent() {
    let tools = spawn(ToolsConfig::default()).await.unwrap();
    let scorecard = probe(manifest_of(&tools.base_url()), ProbeOptions::new()).await;
    let text = scorecard.to_text(false);
    assert!(passed(&scorecard), "{text}");
    assert!(
        text.contains("exports_create: it may write") && text.contains("--allow-writes"),
        "{text}"
    );
    assert!(text.contains("required checks failed: 0"), "{text}");
    assert_eq!(tools.exports_committed(), 0);

    // The export's read-back, suggested from the manifest's read of the same
    // thing, its arguments by name; the lookup of an order for its refund.
    let card = scorecard.to_json();
    let suggested = &tool(&card, "exports_create")["suggested_verify"];
    assert_eq!(
        suggested["url"],
        format!("{}/api/exports/lookup", tools.base_url()),
        "{card:#}"
    );
    assert_eq!(
        suggested["args"],
        json!({"source_id": "{{payload.source_id}}", "format": "{{payload.format}}", "version": "{{payload.version?}}"})
    );
    assert_eq!(suggested["expect"][1], "<POINTER TO THE LIST> grew_by 1");
    assert_eq!(
        tool(&card, "orders_refund")["suggested_verify"]["args"],
        json!({"order_id": "{{payload.order_id}}"})
    );
    assert!(tool(&card, "exports_lookup")["suggested_verify"].is_null());
    assert!(text.contains("read back with"), "{text}");

    // One endpoint and its schema, without a manifest: a write unless read-only.
    let schema =
        json!({"type":"object","required":["symbol"],"properties":{"symbol":{"type":"string"}}});
    let endpoint = format!("{}/api/stock/quote", tools.base_url());
    let one = |claims| ProbeTarget::endpoint(&endpoint, schema.clone(), claims).unwrap();
    let unprobed = probe(one(EndpointClaims::default()), ProbeOptions::new())
        .await
        .to_json();
    assert_eq!(unprobed["tools"][0]["probed"], false, "{unprobed:#}");
    let read_only = EndpointClaims {
        read_only: true,
        idempotent: false,
    };
    let scorecard = probe(one(read_only), ProbeOptions::new()).await;
    let probed = scorecard.to_json();
    assert!(passed(&scorecard), "{probed:#}");
    assert_eq!(
        verdict(&probed["tools"][0], "details_field"),
        "pass",
        "{probed:#}"
    );
    tools.shutdown().await;
}

#[tokio::test]
async fn with_allow_writes_the_replay_check_runs_on_exports_create_from_its_schema_alone() {
    let tools = spawn(ToolsConfig::default()).await.unwrap();
    let options = ProbeOptions::new()
        .allow_writes()
        .only(|name| name == "exports_create");
    let scorecard = probe(manifest_of(&tools.base_url()), options).await;
    let card = scorecard.to_json();
    assert!(passed(&scorecard), "{card:#}");
    let exports = tool(&card, "exports_create");
    // The baseline derived from the schema's examples is a valid export, so
    // the replay sequence runs on it rather than being skipped.
    assert_eq!(verdict(exports, "replay"), "pass", "{exports:#}");
    let first = exports["probes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == "replay_first")
        .unwrap_or_else(|| panic!("no replay_first probe: {exports:#}"));
    assert_eq!(first["success"], true, "{first:#}");
    assert_eq!(
        tools.exports_committed(),
        2,
        "unknown_field and replay_first"
    );
    tools.shutdown().await;
}

#[tokio::test]
async fn an_idempotent_post_is_a_write_and_gets_nothing_without_allow_writes() {
    let server = Counted::start().await;
    let card = probe(manifest_of(&server.url), ProbeOptions::new())
        .await
        .to_json();
    let cancel = tool(&card, "orders_cancel");
    assert_eq!(cancel["probed"], false, "{cancel:#}");
    assert_eq!(cancel["writes"], true);
    let why = cancel["not_probed"].as_str().unwrap();
    assert!(
        why.contains("may write") && why.contains("idempotent, which is not read-only"),
        "{why}"
    );
    assert_eq!(server.calls(), 0, "an idempotent POST is not read-only");

    // The same endpoint probed on its own, claimed idempotent: still a write.
    let schema: Value = serde_json::from_str(Counted::SCHEMA).unwrap();
    let endpoint = format!("{}/api/orders/cancel", server.url);
    let claims = EndpointClaims {
        read_only: false,
        idempotent: true,
    };
    let target = ProbeTarget::endpoint(&endpoint, schema, claims).unwrap();
    let idempotent = probe(target, ProbeOptions::new()).await.to_json();
    assert_eq!(idempotent["tools"][0]["probed"], false, "{idempotent:#}");
    assert_eq!(
        server.calls(),
        0,
        "an idempotent claim does not make a write read-only"
    );

    // With writes allowed it is probed, with no replay check (idempotent).
    let card = probe(manifest_of(&server.url), ProbeOptions::new().allow_writes())
        .await
        .to_json();
    let cancel = tool(&card, "orders_cancel");
    assert_eq!(cancel["probed"], true, "{cancel:#}");
    assert_eq!(verdict(cancel, "replay"), "skipped");
    assert!(server.calls() > 0);
}

/// A tool server with one idempotent POST, a cancel, counting every request
/// that reaches it.
struct Counted {
    url: String,
    calls: Arc<AtomicUsize>,
}

impl Counted {
    const SCHEMA: &str =
        r#"{"type":"object","required":["order_id"],"properties":{"order_id":{"type":"string"}}}"#;

    async fn start() -> Self {
        let calls = Arc::new(AtomicUsize::new(0));
        let schema: Value = serde_json::from_str(Self::SCHEMA).unwrap();
        let manifest = json!({"capabilities": [{"name": "orders_cancel", "endpoint": "/api/orders/cancel",
            "method": "POST", "idempotent": true, "input_schema": schema}]});
        let counter = Arc::clone(&calls);
        let app = Router::new()
            .route(
                "/api/capabilities",
                get(move || std::future::ready(axum::Json(manifest.clone()))),
            )
            .route(
                "/api/orders/cancel",
                axum::routing::any(move || {
                    counter.fetch_add(1, Ordering::SeqCst);
                    std::future::ready(axum::Json(
                        json!({"success": true, "data": {"cancelled": true}}),
                    ))
                }),
            );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        Self { url, calls }
    }

    fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

#[tokio::test]
async fn a_sloppy_server_fails_exactly_the_checks_it_breaks() {
    let sloppy = Sloppy::start().await;
    let scorecard = probe(manifest_of(&sloppy.url), ProbeOptions::new().allow_writes()).await;
    let card = scorecard.to_json();
    assert!(!passed(&scorecard), "{card:#}");
    let expect = [
        // Plain-text 500s: no envelope, so no field; recourse would route
        // them as transient service errors and resend a malformed request.
        (
            "plain_500",
            vec!["envelope", "details_field", "retryable", "category_fits"],
        ),
        // 200 with an error inside: read as success.
        ("ok_with_error", vec!["envelope"]),
        // An honest envelope on a 200.
        ("ok_with_envelope", vec!["category_status"]),
        ("stack_trace", vec!["no_leak"]),
        ("no_retry_after", vec!["retry_after"]),
        ("double_write", vec!["replay"]),
    ];
    for (name, checks) in expect {
        let t = tool(&card, name);
        assert_eq!(failed(t), checks.into_iter().collect(), "{name}: {t:#}");
    }
    let route = &card["unknown_route"];
    assert_eq!(
        failed(route),
        ["envelope", "retryable"].into_iter().collect(),
        "{route:#}"
    );
    let leak = detail(tool(&card, "stack_trace"), "no_leak");
    assert!(leak.contains("Python traceback"), "{leak}");
    let replay = detail(tool(&card, "double_write"), "replay");
    assert!(replay.contains("second write"), "{replay}");
    assert_eq!(card["required_failed"], 7);
    // The text scorecard, for `docs/probe.md` (`-- --nocapture` shows it).
    println!("{}", scorecard.to_text(false));
    let before = sloppy.writes();
    let options = ProbeOptions::new().only(|name| name.starts_with("double_"));
    let read_only = probe(manifest_of(&sloppy.url), options).await.to_json();
    assert_eq!(read_only["tools"][0]["probed"], false, "{read_only:#}");
    assert_eq!(
        sloppy.writes(),
        before,
        "nothing is sent to a write without --allow-writes"
    );
}

/// The reference tools as MCP tools over Streamable HTTP on loopback, called
/// into their router in this process.
async fn reference_tools_over_mcp() -> String {
    let router = recourse_reference_tools::router(&ToolsConfig::default());
    let server = recourse_mcp_server::McpToolServer::from_router(router)
        .await
        .unwrap();
    let app =
        Router::new().nest_service("/mcp", recourse_mcp_server::streamable_http_service(server));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}

#[tokio::test]
async fn recourse_own_mcp_server_passes_and_honours_the_key_in_meta() {
    let url = reference_tools_over_mcp().await;
    let target = ProbeTarget::mcp(McpTarget::url(&url).unwrap());
    let options = ProbeOptions::new()
        .allow_writes()
        .with_payload(Some("exports_create"), export());
    let scorecard = probe(target, options).await;
    let card = scorecard.to_json();
    assert!(passed(&scorecard), "{card:#}");
    assert_eq!(card["transport"], "mcp");
    assert!(card["unknown_route"].is_null());
    let exports = tool(&card, "exports_create");
    assert_eq!(verdict(exports, "replay"), "pass", "{exports:#}");
    assert_eq!(verdict(exports, "envelope"), "pass");
    assert_eq!(verdict(exports, "category_status"), "skipped");
    assert!(
        exports["probes"][0]["status"].is_null(),
        "no HTTP status over MCP"
    );
}

#[tokio::test]
async fn a_target_that_cannot_be_read_is_an_error_that_says_where() {
    let refused = recourse_probe::probe(manifest_of("http://127.0.0.1:1"), ProbeOptions::new())
        .await
        .unwrap_err()
        .to_string();
    assert!(refused.contains("cannot read the manifest"), "{refused}");
    assert!(ProbeTarget::manifest("ftp://127.0.0.1:1").is_err());
}

#[tokio::test]
async fn mcp_server_time_reports_errors_as_text_only() {
    let Some(command) = service_var("RECOURSE_TEST_MCP_TIME_CMD") else {
        return;
    };
    let target = ProbeTarget::mcp(McpTarget::command_line(&command).unwrap());
    let scorecard = probe(target, ProbeOptions::new()).await;
    let card = scorecard.to_json();
    let time = tool(&card, "get_current_time");
    assert_eq!(time["probed"], true, "it declares readOnlyHint: {time:#}");
    assert_eq!(verdict(time, "category_status"), "skipped");
    // Its failures are isError results with text only: recourse reads them
    // as INPUT_ERROR by default, but nothing names a category or the field.
    assert_eq!(verdict(time, "envelope"), "fail", "{time:#}");
    assert_eq!(verdict(time, "details_field"), "fail");
    assert_eq!(verdict(time, "no_leak"), "pass");
    assert!(!passed(&scorecard));
}

#[tokio::test]
async fn the_filesystem_server_gets_no_write_without_allow_writes() {
    let Some(command) = service_var("RECOURSE_TEST_MCP_FILESYSTEM_CMD") else {
        return;
    };
    let dir = temp_dir("fs");
    std::fs::write(dir.join("notes.txt"), "hello\n").unwrap();
    let command = format!("{command} '{}'", dir.display());
    let target = ProbeTarget::mcp(McpTarget::command_line(&command).unwrap());
    let card = probe(target, ProbeOptions::new()).await.to_json();
    for name in ["write_file", "edit_file", "create_directory", "move_file"] {
        assert_eq!(tool(&card, name)["probed"], false, "{name}");
    }
    let read = tool(&card, "read_text_file");
    assert_eq!(read["probed"], true);
    assert_eq!(verdict(read, "envelope"), "fail", "{read:#}");
    let left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, ["notes.txt"], "the probe wrote nothing");
    assert_eq!(
        std::fs::read_to_string(dir.join("notes.txt")).unwrap(),
        "hello\n"
    );
}

/// A loopback tool server that gets error reporting wrong in one way per
/// tool, each with the schema `{q: string}` (required).
struct Sloppy {
    url: String,
    writes: Arc<AtomicUsize>,
}

impl Sloppy {
    async fn start() -> Self {
        let writes = Arc::new(AtomicUsize::new(0));
        let app = Router::new()
            .route("/api/capabilities", get(manifest))
            .route("/plain", post(plain_500))
            .route("/ok-error", post(ok_with_error))
            .route("/ok-envelope", post(ok_with_envelope))
            .route("/trace", post(stack_trace))
            .route("/busy", post(no_retry_after))
            .route("/write", post(double_write))
            .fallback(|| async { (StatusCode::NOT_FOUND, "Not Found") })
            .layer(DefaultBodyLimit::disable())
            .with_state(Arc::clone(&writes));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        Self { url, writes }
    }

    fn writes(&self) -> usize {
        self.writes.load(Ordering::SeqCst)
    }
}

async fn manifest() -> axum::Json<Value> {
    let schema =
        json!({"type": "object", "required": ["q"], "properties": {"q": {"type": "string"}}});
    let tool = |name: &str, endpoint: &str, idempotent: bool| json!({"name": name, "endpoint": endpoint, "method": "POST", "idempotent": idempotent, "input_schema": schema});
    axum::Json(json!({"capabilities": [
        tool("plain_500", "/plain", true),
        tool("ok_with_error", "/ok-error", true),
        tool("ok_with_envelope", "/ok-envelope", true),
        tool("stack_trace", "/trace", true),
        tool("no_retry_after", "/busy", true),
        tool("double_write", "/write", false),
    ]}))
}

/// What is wrong with a body, if anything: `Some(None)` for one that is not
/// a JSON object, `Some(Some("q"))` for a missing or mistyped `q`.
fn problem(body: &[u8]) -> Option<Option<&'static str>> {
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(o)) if o.get("q").is_some_and(Value::is_string) => None,
        Ok(Value::Object(_)) => Some(Some("q")),
        _ => Some(None),
    }
}

fn envelope(status: StatusCode, field: Option<&str>, message: &str, details: Value) -> Response {
    let mut details = details;
    if let Some(field) = field {
        details["field"] = json!(field);
    }
    let body = json!({"success": false, "error": {
        "code": "BAD_INPUT", "message": message, "category": "INPUT_ERROR",
        "retryable": field.is_some(), "details": details,
    }});
    (status, axum::Json(body)).into_response()
}

fn refused(field: Option<&str>) -> Response {
    envelope(StatusCode::BAD_REQUEST, field, "bad input", json!({}))
}

fn ok() -> Response {
    axum::Json(json!({"success": true, "data": {"answer": 42}})).into_response()
}

async fn plain_500(body: Bytes) -> Response {
    match problem(&body) {
        None => ok(),
        Some(_) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            [(header::CONTENT_TYPE, "text/plain")],
            "Internal Server Error",
        )
            .into_response(),
    }
}

async fn ok_with_error(body: Bytes) -> Response {
    match problem(&body) {
        None => axum::Json(json!({"result": "fine"})).into_response(),
        Some(_) => axum::Json(json!({"error": "bad request"})).into_response(),
    }
}

async fn ok_with_envelope(body: Bytes) -> Response {
    match problem(&body) {
        None => ok(),
        Some(field) => envelope(StatusCode::OK, field, "bad input", json!({})),
    }
}

async fn stack_trace(body: Bytes) -> Response {
    match problem(&body) {
        None => ok(),
        Some(field) => envelope(
            StatusCode::BAD_REQUEST,
            field,
            "KeyError: 'q'",
            json!({"trace": "Traceback (most recent call last):\n  File \"/srv/app.py\", line 12, in handler\nKeyError: 'q'"}),
        ),
    }
}

async fn no_retry_after(body: Bytes) -> Response {
    match problem(&body) {
        Some(field) => refused(field),
        None => {
            let body = json!({"success": false, "error": {
                "code": "SLOW_DOWN", "message": "too many requests", "category": "RATE_LIMIT", "retryable": true,
            }});
            (StatusCode::TOO_MANY_REQUESTS, axum::Json(body)).into_response()
        }
    }
}

/// Writes on every valid request, whatever its `Idempotency-Key`.
async fn double_write(State(writes): State<Arc<AtomicUsize>>, body: Bytes) -> Response {
    match problem(&body) {
        Some(field) => refused(field),
        None => {
            let n = writes.fetch_add(1, Ordering::SeqCst) + 1;
            axum::Json(json!({"success": true, "data": {"write": n}})).into_response()
        }
    }
}
