//! [`McpToolServer`]: a recourse tool server's tools, served over MCP.
//!
//! Each capability in the tool server's manifest (`GET /api/capabilities`)
//! becomes an MCP tool with the same name, description and input schema, and
//! `idempotentHint` from the manifest. A `tools/call` is forwarded to the
//! capability's endpoint — over loopback HTTP, or straight into the tool
//! server's router in this process — and its envelope comes back whole:
//! a success's `data` as `structuredContent`, a failure as an `isError` result
//! with the envelope in `structuredContent`, so an MCP client keeps the
//! category, code and retry permission. A `Retry-After` the tool sent is
//! kept as `details.retry_after`, since MCP has no headers. Beside the
//! envelope, a failure carries the proposed MCP failure metadata in the
//! form SEP #3313 gives it (`_meta["io.modelcontextprotocol/toolFailure"]`:
//! `class` — `capability`, `reliability` or `governance`, from the category
//! as [`FailureClass::of`](recourse_protocol::mcp::FailureClass::of) maps
//! it — `code`, `retryable` when the tool stated it, `retryNotBefore` in Unix
//! epoch milliseconds when it asked for a wait), for MCP clients that read
//! that and not our envelope.

use std::sync::Arc;
use std::time::SystemTime;

use recourse_protocol::mcp::{
    IDEMPOTENCY_META_KEY, TOOL_FAILURE_META_KEY, UNKNOWN_TOOL, tool_failure_meta,
};
use recourse_protocol::{
    ErrorCategory, ToolError, ToolResponse, parse_retry_after, parse_retry_after_detail,
};
use rmcp::ServiceExt;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ErrorData, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Value, json};

use crate::backend::{Answer, Backend, FORWARD_TIMEOUT, Unanswered};
use recourse_protocol::mcp::McpError;

/// One capability from the tool server's manifest.
#[derive(Debug, Clone)]
struct Capability {
    name: String,
    description: String,
    endpoint: String,
    method: String,
    idempotent: bool,
    input_schema: Value,
}

/// A recourse tool server (found by its base URL, or its router in this
/// process), as an MCP server.
#[derive(Debug, Clone)]
pub struct McpToolServer {
    backend: Backend,
    capabilities: Arc<Vec<Capability>>,
    log_calls: bool,
}

impl McpToolServer {
    /// Reads the tool server's manifest at `{base_url}/api/capabilities`.
    ///
    /// # Errors
    /// The manifest could not be fetched or is not a recourse manifest.
    pub async fn from_manifest(base_url: &str) -> Result<Self, McpError> {
        let base_url = base_url.trim_end_matches('/').to_owned();
        let client = reqwest::Client::builder()
            .timeout(FORWARD_TIMEOUT)
            .build()
            .map_err(|e| McpError::config("HTTP client").caused_by(e))?;
        Self::read_manifest(Backend::Http { base_url, client }).await
    }

    /// Reads the manifest of the tool server `router` serves, and forwards
    /// every call into it in this process: no port is bound, so this serves
    /// a tool server over stdio alone. A router's broken response body reads
    /// as a connection lost after sending.
    ///
    /// # Errors
    /// The router has no recourse manifest at `/api/capabilities`.
    pub async fn from_router(router: axum::Router) -> Result<Self, McpError> {
        Self::read_manifest(Backend::InProcess(router)).await
    }

    async fn read_manifest(backend: Backend) -> Result<Self, McpError> {
        const PATH: &str = "/api/capabilities";
        let answer = backend
            .send("GET", PATH, None, None)
            .await
            .map_err(|e| McpError::unreachable(format!("GET {PATH}: {}", e.message)))?;
        let body = answer
            .body
            .map_err(|e| McpError::unreachable(format!("GET {PATH}: {e}")))?;
        if !(200..300).contains(&answer.status) {
            return Err(McpError::unreachable(format!(
                "GET {PATH}: HTTP {}",
                answer.status
            )));
        }
        let manifest: Value = serde_json::from_slice(&body)
            .map_err(|e| McpError::unreachable(format!("GET {PATH}: not JSON")).caused_by(e))?;
        let capabilities = manifest["data"]["capabilities"]
            .as_array()
            .ok_or_else(|| McpError::config(format!("{PATH} is not a recourse manifest")))?
            .iter()
            .map(capability)
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| McpError::config(format!("{PATH} lists an incomplete capability")))?;
        Ok(Self {
            backend,
            capabilities: Arc::new(capabilities),
            log_calls: false,
        })
    }

    /// Notes each `tools/call` on stderr (never stdout, which carries the protocol).
    #[must_use]
    pub fn with_call_log(mut self) -> Self {
        self.log_calls = true;
        self
    }

    /// The names of the tools it serves.
    pub fn tool_names(&self) -> Vec<String> {
        self.capabilities.iter().map(|c| c.name.clone()).collect()
    }

    fn tools_json(&self) -> Value {
        let tools: Vec<Value> = self
            .capabilities
            .iter()
            .map(|c| {
                json!({
                    "name": c.name,
                    "description": c.description,
                    "inputSchema": c.input_schema,
                    "annotations": {"idempotentHint": c.idempotent, "readOnlyHint": false},
                })
            })
            .collect();
        json!({ "tools": tools })
    }

    /// Forwards `request` to its tool, with `key` as its `Idempotency-Key`.
    async fn forward(&self, request: CallToolRequestParams, key: Option<&str>) -> CallToolResult {
        if self.log_calls {
            eprintln!("tools/call {}", request.name);
        }
        let Some(cap) = self.capabilities.iter().find(|c| c.name == request.name) else {
            let error = ToolError::not_found(
                UNKNOWN_TOOL,
                format!(
                    "no tool named {:?}; tools: {}",
                    request.name,
                    self.tool_names().join(", ")
                ),
            )
            .retryable(false);
            return error_result(error);
        };
        let body = Value::Object(request.arguments.unwrap_or_default());
        match self
            .backend
            .send(&cap.method, &cap.endpoint, Some(&body), key)
            .await
        {
            Ok(answer) => from_answer(answer, cap),
            Err(e) => error_result(unreachable_tool(&e, cap)),
        }
    }
}

fn capability(v: &Value) -> Option<Capability> {
    Some(Capability {
        name: v["name"].as_str()?.to_owned(),
        description: v["description"].as_str().unwrap_or_default().to_owned(),
        endpoint: v["endpoint"].as_str()?.to_owned(),
        method: v["method"].as_str().unwrap_or("POST").to_owned(),
        idempotent: v["idempotent"].as_bool().unwrap_or(false),
        input_schema: v.get("input_schema").filter(|s| s.is_object())?.clone(),
    })
}

/// The tool could not be reached: safe to retry only if nothing was sent or
/// the capability is idempotent; otherwise the outcome is unknown.
fn unreachable_tool(e: &Unanswered, cap: &Capability) -> ToolError {
    lost(e.nothing_sent, &e.message, cap)
}

fn lost(nothing_sent: bool, why: &str, cap: &Capability) -> ToolError {
    let message = format!("the tool {} could not be reached: {why}", cap.name);
    if nothing_sent {
        ToolError::service_error("TOOL_UNREACHABLE", message).retryable(true)
    } else if cap.idempotent {
        ToolError::service_error("TOOL_CONNECTION_LOST", message)
    } else {
        ToolError::unknown_outcome("TOOL_CONNECTION_LOST", message)
    }
}

fn from_answer(answer: Answer, cap: &Capability) -> CallToolResult {
    let Answer {
        status,
        retry_after,
        body,
    } = answer;
    let body: Option<Value> = match body {
        Ok(bytes) => serde_json::from_slice(&bytes).ok(),
        Err(e) => return error_result(lost(false, &e, cap)),
    };
    let success = (200..300).contains(&status);
    match body {
        Some(envelope) if envelope["success"] == Value::Bool(true) && success => {
            success_result(envelope.get("data").cloned().unwrap_or(Value::Null))
        }
        Some(mut envelope) if envelope["success"] == Value::Bool(false) => {
            if let (Some(wait), Some(error)) = (retry_after, envelope["error"].as_object_mut()) {
                let details = error.entry("details").or_insert_with(|| json!({}));
                if let Some(details) = details.as_object_mut() {
                    details.entry("retry_after").or_insert(Value::String(wait));
                }
            }
            failure_result(&envelope)
        }
        _ => {
            let error = ToolError::service_error(
                "UNREADABLE_RESPONSE",
                format!(
                    "the tool {} answered HTTP {status} without an envelope",
                    cap.name
                ),
            );
            error_result(error)
        }
    }
}

fn error_result(error: ToolError) -> CallToolResult {
    let bytes = ToolResponse::failure(error).to_json_bytes();
    failure_result(&serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

fn success_result(data: Value) -> CallToolResult {
    let text = data.to_string();
    result(
        json!({"content": [{"type": "text", "text": text}], "structuredContent": data, "isError": false}),
    )
}

fn failure_result(envelope: &Value) -> CallToolResult {
    let error = &envelope["error"];
    let code = error["code"].as_str().unwrap_or("ERROR");
    let text = format!("[{code}] {}", error["message"].as_str().unwrap_or_default());
    let mut value = json!({"content": [{"type": "text", "text": text}], "structuredContent": envelope, "isError": true});
    if let Some(category) = error["category"].as_str() {
        let meta = tool_failure_meta(
            &ErrorCategory::from_wire(category),
            code,
            error["retryable"].as_bool(),
            retry_not_before(&error["details"]["retry_after"], SystemTime::now()),
        );
        value["_meta"] = json!({ TOOL_FAILURE_META_KEY: meta });
    }
    result(value)
}

/// When the tool accepts calls again, from `details.retry_after` (a delay, or
/// the HTTP date a `Retry-After` header held); `None` without one, or for a
/// wait too long to write down.
fn retry_not_before(retry_after: &Value, now: SystemTime) -> Option<SystemTime> {
    let wait = parse_retry_after_detail(retry_after)
        .or_else(|| parse_retry_after(retry_after.as_str()?, now))?;
    now.checked_add(wait)
}

fn result(value: Value) -> CallToolResult {
    serde_json::from_value(complete(value)).unwrap_or_else(|e| {
        CallToolResult::error(vec![rmcp::model::ContentBlock::text(format!(
            "the result could not be encoded: {e}"
        ))])
    })
}

/// `result` marked `resultType: "complete"`: protocol 2026-07-28 requires
/// the field on every result (clients of that version reject one without
/// it), and rmcp takes it out again for a client of an older version.
fn complete(mut result: Value) -> Value {
    if let Value::Object(fields) = &mut result {
        fields
            .entry("resultType")
            .or_insert_with(|| Value::from("complete"));
    }
    result
}

impl rmcp::ServerHandler for McpToolServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build()).with_server_info(
            Implementation::new("recourse-tools", env!("CARGO_PKG_VERSION")),
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        serde_json::from_value(complete(self.tools_json()))
            .map_err(|e| ErrorData::internal_error(format!("tool list: {e}"), None))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // rmcp reads a request's `_meta` into the context, not the parameters.
        let key = context
            .meta
            .get(IDEMPOTENCY_META_KEY)
            .and_then(Value::as_str)
            .map(str::to_owned);
        Ok(self.forward(request, key.as_deref()).await.into())
    }
}

/// Serves `server` over this process's stdin and stdout until the client
/// closes the session. Nothing else may write to stdout meanwhile.
///
/// # Errors
/// The MCP handshake failed, or the session ended abnormally.
pub async fn serve_stdio(server: McpToolServer) -> Result<(), McpError> {
    let running = server
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| McpError::unreachable("MCP handshake on stdio failed").caused_by(e))?;
    running
        .waiting()
        .await
        .map_err(|e| McpError::unreachable("the MCP session failed").caused_by(e))?;
    Ok(())
}

/// The Streamable HTTP endpoint for `server`: a tower service to mount (at
/// `/mcp`, say) in an HTTP server. Sessions are kept in memory; only loopback
/// `Host` headers are accepted (rmcp's defence against DNS rebinding).
pub fn streamable_http_service(
    server: McpToolServer,
) -> rmcp::transport::streamable_http_server::StreamableHttpService<
    McpToolServer,
    rmcp::transport::streamable_http_server::session::local::LocalSessionManager,
> {
    rmcp::transport::streamable_http_server::StreamableHttpService::new(
        move || Ok(server.clone()),
        std::sync::Arc::default(),
        rmcp::transport::streamable_http_server::StreamableHttpServerConfig::default(),
    )
}
