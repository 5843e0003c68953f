//! # recourse-mcp
//!
//! Calling MCP tools through the recourse executor.
//!
//! - [`McpTransport`] speaks to an MCP server started as a child process
//!   ([`McpTarget::Command`], stdio) or reached over streamable HTTP
//!   ([`McpTarget::Url`]). `tools/list` gives each tool's input schema
//!   ([`McpTool::prepare`] puts it on the [`Call`](recourse::Call)), so
//!   coercion, repair and correction work as they do for HTTP tools. Results
//!   are read by the shared parser: an envelope in `structuredContent` wins,
//!   then MCP failure metadata (`_meta["io.modelcontextprotocol/toolFailure"]`),
//!   then a transient failure the text names (a guess: resent only for an
//!   idempotent call, never corrected); other `isError` results are
//!   INPUT_ERROR with the text as message. JSON-RPC errors map by code: an
//!   internal error (`-32603`) is a bare 500, an unknown outcome for a write;
//!   `-32020`…`-32022` stop as a protocol mismatch; `-32023` waits its
//!   `retryAfterMs`. A server asking for the user's input stops the call
//!   (`needs_input`). An HTTP 429 or 5xx from a Streamable HTTP server
//!   routes by its status and `Retry-After`. A tool the server does not have
//!   is a non-retryable NOT_FOUND [`UNKNOWN_TOOL`] naming it and what the
//!   server has. A dead child process or dropped session is a transport
//!   failure after sending (an unknown outcome for a write), a session the
//!   server forgot (HTTP 404) one before sending, and the next attempt starts
//!   a fresh one. Every exchange is bounded by the request timeout.
//! - An executor's `Idempotency-Key` travels in the `tools/call` `_meta` under
//!   [`IDEMPOTENCY_META_KEY`].
//! - For a proxy, the transport also gives the server's tools as listed and
//!   its capabilities, and forwards any other request once
//!   ([`McpTransport::forward`]), all as JSON. The lists the server says
//!   changed are passed on ([`McpTransport::list_changes`]), a tools change
//!   once the tools were listed again, on whichever protocol version the
//!   session speaks (`subscriptions/listen` from 2026-07-28). Resource
//!   subscriptions ([`McpTransport::subscribe`], protocol versions up to
//!   2025-11-25) are made again on every new session, and the updates passed
//!   on ([`McpTransport::resource_updates`]).
//!
//! Serving recourse tools over MCP is the other direction and another crate,
//! `recourse-mcp-server`, which needs no executor.
//!
//! ```no_run
//! use std::time::Duration;
//! use recourse::{Call, Executor};
//! use recourse_mcp::{McpTarget, connect_tool};
//! use serde_json::json;
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let target = McpTarget::command_line("mcp-server-time --local-timezone UTC")?;
//! let (transport, tool) = connect_tool(target, "get_current_time", Duration::from_secs(20)).await?;
//! let call = Call::builder("get_current_time", json!({"timezone": "America/NewYork"}));
//! let call = match &tool { Some(tool) => tool.prepare(call), None => call }.build()?;
//! let report = Executor::builder(transport).build().execute(call).await;
//! assert_eq!(report.attempts.len(), 1); // INPUT_ERROR, and no model to correct it
//! # Ok(()) }
//! ```
//!
//! `rmcp` lives in this crate, not in the `recourse` runtime, so agents that
//! only call HTTP tools do not compile an MCP stack (a second HTTP client
//! version, process management, the protocol model). Only rmcp's client side
//! is compiled here.

mod access;
mod blocked;
mod changes;
mod failure;
mod forward;
mod http_session;
mod listed;
pub mod oauth;
mod reply;
mod setup;
mod subscribed;
mod target;
mod tokens;
mod tool;
mod transport;

use std::sync::Arc;
use std::time::{Duration, Instant};

use recourse::{CallBuilder, Transport};

pub use access::{HttpAccess, SecretHeader};
pub use changes::ListChange;
pub use forward::RpcError;
pub use recourse_protocol::mcp::{IDEMPOTENCY_META_KEY, UNKNOWN_TOOL};
pub use recourse_protocol::mcp::{McpError, McpErrorKind};
pub use target::{BASE_ENV, McpTarget};
pub use tool::McpTool;
pub use transport::{McpAnswer, McpTransport};

/// Starts a session with `target` and looks up `tool`: the transport to give
/// an executor, and the tool's description (`None` when the server has no such
/// tool; calls to it then stop with [`UNKNOWN_TOOL`]).
///
/// # Errors
/// As [`McpTransport::connect`].
pub async fn connect_tool(
    target: McpTarget,
    tool: &str,
    timeout: Duration,
) -> Result<(McpTransport, Option<McpTool>), McpError> {
    let transport = McpTransport::connect(target, timeout).await?;
    let tool = transport.tool(tool).await?;
    Ok((transport, tool))
}

/// Starts a session with `target` and aims `call` at its `tool`: the
/// tool's schema (unless the caller gave one) and hints that may only make
/// the call more careful. A tool the server lacks is left to the executor,
/// which stops with [`UNKNOWN_TOOL`] naming the tools it has.
///
/// A read tool a verification names (`verifies`) must be one the server
/// has: the call is refused before the write is sent otherwise.
///
/// The session's setup is part of the call: it may take no longer than one
/// attempt (`timeout`) nor than the whole call's `deadline`, and the call is
/// left only what remains of that deadline, so a server that never finishes
/// its handshake cannot hold a call past its deadline.
///
/// # Errors
/// As [`McpTransport::connect`], or a `verifies` tool the server lacks.
pub async fn connect_call(
    target: McpTarget,
    tool: &str,
    call: CallBuilder,
    timeout: Duration,
    deadline: Option<Duration>,
    verifies: Option<&str>,
) -> Result<(Arc<dyn Transport>, CallBuilder), McpError> {
    let shown = target.to_string();
    let started = Instant::now();
    let setup = deadline.map_or(timeout, |d| d.min(timeout));
    let in_context = |e: McpError| e.context(&format!("MCP server {shown}"));
    let (transport, tool) = connect_tool(target, tool, setup)
        .await
        .map_err(in_context)?;
    if let Some(read) = verifies
        && transport.tool(read).await.map_err(in_context)?.is_none()
    {
        let names: Vec<String> = transport
            .tools()
            .await
            .map_err(in_context)?
            .into_iter()
            .map(|t| t.name)
            .collect();
        return Err(McpError::config(format!(
            "the verification reads {read:?}, which MCP server {shown} does not have (it has: {})",
            names.join(", ")
        )));
    }
    let mut call = match tool {
        Some(tool) => tool.prepare(call),
        None => call,
    };
    if let Some(deadline) = deadline {
        let left = deadline.saturating_sub(started.elapsed());
        call = call.deadline(left.max(Duration::from_millis(1)));
    }
    Ok((Arc::new(transport), call))
}
