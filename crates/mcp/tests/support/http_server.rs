//! A scripted MCP server over Streamable HTTP (the session-based protocol of
//! 2025-06-18), written out by hand so a test controls what rmcp's client
//! meets: the HTTP status, the session, when a response stream ends.
//!
//! Every `tools/call` of a tool first commits (its count goes up), then
//! answers as the tool's script says for that call.

use std::collections::{HashMap, HashSet};
use std::convert::Infallible;
use std::sync::{Arc, Mutex};

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};
use tokio::sync::Notify;

/// The tools, with their `idempotentHint`.
const TOOLS: [(&str, bool); 8] = [
    ("modify_user_address", false),
    ("get_order", true),
    ("update_cart", false),
    ("place_order", false),
    ("refund_payment", false),
    ("slow_write", false),
    ("get_status", true),
    ("locked_write", false),
];

/// How a script answers one call.
enum Answer {
    /// A JSON-RPC result or error object, with this HTTP status.
    Json(StatusCode, &'static str, Value),
    /// This HTTP status (and `Retry-After`), no JSON-RPC message.
    Status(StatusCode, Option<&'static str>),
    /// Forget the session, tell the test, and hold a response stream open
    /// until the test releases it; then end it without an answer.
    ExpireMidCall,
    /// HTTP 401 with an OAuth challenge: the token (there is none) refused.
    Challenge,
}

fn script(tool: &str, n: usize) -> Answer {
    let ok =
        json!({"content": [{"type": "text", "text": "done"}], "structuredContent": {"ok": true}});
    let internal = json!({"code": -32603, "message": "Internal error"});
    match (tool, n) {
        ("modify_user_address", _) | ("get_order", 1) => {
            Answer::Json(StatusCode::OK, "error", internal)
        }
        ("update_cart", 1) => Answer::Status(StatusCode::TOO_MANY_REQUESTS, Some("2")),
        ("place_order", 1) => Answer::Status(StatusCode::SERVICE_UNAVAILABLE, Some("3")),
        ("refund_payment", 1) => Answer::Status(StatusCode::BAD_GATEWAY, None),
        ("slow_write", 1) => Answer::ExpireMidCall,
        ("locked_write", _) => Answer::Challenge,
        _ => Answer::Json(StatusCode::OK, "result", ok),
    }
}

/// The server's state: live sessions and what each tool was asked.
#[derive(Default)]
struct Inner {
    next_session: u64,
    live: HashSet<String>,
    calls: HashMap<String, usize>,
}

pub struct McpHttpServer {
    pub url: String,
    inner: Arc<Mutex<Inner>>,
    /// Signalled when a call has committed and forgotten its session.
    pub committed: Arc<Notify>,
    /// Ends a held response stream.
    pub release: Arc<Notify>,
    _task: tokio::task::JoinHandle<()>,
}

#[derive(Clone)]
struct Shared {
    inner: Arc<Mutex<Inner>>,
    committed: Arc<Notify>,
    release: Arc<Notify>,
}

impl McpHttpServer {
    pub async fn start() -> Self {
        let shared = Shared {
            inner: Arc::default(),
            committed: Arc::new(Notify::new()),
            release: Arc::new(Notify::new()),
        };
        let app = axum::Router::new()
            .route("/mcp", post(handle).get(not_allowed).delete(not_allowed))
            .with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Self {
            url,
            inner: shared.inner,
            committed: shared.committed,
            release: shared.release,
            _task: task,
        }
    }

    /// How often `tool` ran.
    pub fn calls(&self, tool: &str) -> usize {
        self.inner
            .lock()
            .unwrap()
            .calls
            .get(tool)
            .copied()
            .unwrap_or(0)
    }

    /// How many sessions clients started.
    pub fn sessions(&self) -> u64 {
        self.inner.lock().unwrap().next_session
    }

    /// Stops listening: a connection to it is refused from now on.
    pub fn stop(&self) {
        self._task.abort();
    }
}

async fn not_allowed() -> StatusCode {
    StatusCode::METHOD_NOT_ALLOWED
}

fn json_response(status: StatusCode, body: &Value) -> Response {
    let mut response = (status, body.to_string()).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

async fn handle(State(shared): State<Shared>, headers: HeaderMap, body: Bytes) -> Response {
    let Ok(message) = serde_json::from_slice::<Value>(&body) else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    let Some(id) = message.get("id").cloned() else {
        return StatusCode::ACCEPTED.into_response(); // a notification
    };
    let Some(method) = message.get("method").and_then(Value::as_str) else {
        return StatusCode::ACCEPTED.into_response(); // a reply to us
    };
    if method == "initialize" {
        let session = {
            let mut inner = shared.inner.lock().unwrap();
            inner.next_session += 1;
            let session = format!("s{}", inner.next_session);
            inner.live.insert(session.clone());
            session
        };
        let result = json!({"jsonrpc": "2.0", "id": id, "result": {
            "protocolVersion": "2025-06-18",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "scripted-http", "version": "1"}
        }});
        let mut response = json_response(StatusCode::OK, &result);
        response
            .headers_mut()
            .insert("mcp-session-id", HeaderValue::from_str(&session).unwrap());
        return response;
    }
    let session = headers
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    if !shared.inner.lock().unwrap().live.contains(&session) {
        return StatusCode::NOT_FOUND.into_response();
    }
    match method {
        "tools/list" => {
            let tools: Vec<Value> = TOOLS
                .iter()
                .map(|(name, idempotent)| {
                    json!({"name": name, "inputSchema": {"type": "object"},
                           "annotations": {"idempotentHint": idempotent, "readOnlyHint": false}})
                })
                .collect();
            json_response(
                StatusCode::OK,
                &json!({"jsonrpc": "2.0", "id": id, "result": {"tools": tools}}),
            )
        }
        "tools/call" => {
            let tool = message["params"]["name"].as_str().unwrap_or_default();
            let n = {
                let mut inner = shared.inner.lock().unwrap();
                let n = inner.calls.entry(tool.to_owned()).or_default();
                *n += 1;
                *n
            };
            answer(&shared, script(tool, n), id, &session)
        }
        _ => json_response(
            StatusCode::OK,
            &json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "no"}}),
        ),
    }
}

fn answer(shared: &Shared, answer: Answer, id: Value, session: &str) -> Response {
    match answer {
        Answer::Json(status, kind, value) => {
            json_response(status, &json!({"jsonrpc": "2.0", "id": id, kind: value}))
        }
        Answer::Status(status, retry_after) => {
            let mut response = status.into_response();
            if let Some(wait) = retry_after {
                response
                    .headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from_static(wait));
            }
            response
        }
        Answer::Challenge => {
            let mut response = StatusCode::UNAUTHORIZED.into_response();
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static(
                    r#"Bearer error="invalid_token", resource_metadata="http://127.0.0.1:9/.well-known/oauth-protected-resource""#,
                ),
            );
            response
        }
        Answer::ExpireMidCall => {
            shared.inner.lock().unwrap().live.remove(session);
            shared.committed.notify_one();
            let release = Arc::clone(&shared.release);
            let held = futures_util::stream::once(async move {
                release.notified().await;
                Ok::<_, Infallible>(Bytes::new())
            });
            let mut response = Body::from_stream(held).into_response();
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/event-stream"),
            );
            response
        }
    }
}
