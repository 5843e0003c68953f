//! Sending probes to an MCP server, through recourse's own MCP transport, so
//! the answer scored is the one an executor would read.

use std::time::Duration;

use recourse::transport::Request;
use recourse::{Target, Transport};
use recourse_mcp::{McpTarget, McpTool, McpTransport};
use recourse_protocol::redact;

use super::answer::{Reply, Response};
use super::battery::{Body, Over};
use super::error::ProbeError;

/// How long starting an MCP server may take at least (a package runner may
/// install it first).
const MIN_SETUP: Duration = Duration::from_secs(30);

/// One MCP session for the whole battery.
///
/// The client library reads whole messages, so the answer cap is applied
/// after an answer arrives rather than while it streams.
pub(crate) struct McpChannel {
    transport: McpTransport,
    timeout: Duration,
}

impl McpChannel {
    /// Starts the server (or opens the session) and lists its tools.
    pub(crate) async fn connect(
        target: McpTarget,
        timeout: Duration,
    ) -> Result<(Self, Vec<McpTool>), ProbeError> {
        let shown = target.to_string();
        let transport = McpTransport::connect(target, timeout.max(MIN_SETUP))
            .await
            .map_err(|e| ProbeError::because(format!("MCP server {shown}"), &e))?;
        let tools = transport
            .tools()
            .await
            .map_err(|e| ProbeError::because(format!("MCP server {shown}: tools/list"), &e))?;
        Ok((Self { transport, timeout }, tools))
    }

    /// Calls `tool` with the payload, carrying the key in `_meta`.
    pub(crate) async fn send(&self, tool: &str, body: &Body, key: Option<&str>) -> Reply {
        let Body::Json(payload) = body else {
            return Reply::NoAnswer("raw bodies cannot be sent over MCP".to_owned());
        };
        let target = match Target::parse(tool) {
            Ok(target) => target,
            Err(e) => return Reply::NoAnswer(format!("tool name {tool:?}: {e}")),
        };
        let request = Request {
            target,
            method: recourse::Method::Post,
            headers: Vec::new(),
            idempotency_key: key.map(str::to_owned),
            payload: payload.clone(),
            timeout: self.timeout,
        };
        match self.transport.send(&request).await {
            Ok(raw) => Response::read(&raw, Over::Mcp),
            Err(failure) => Reply::NoAnswer(redact(&failure.to_string())),
        }
    }
}
