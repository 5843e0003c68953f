//! # recourse-mcp
//!
//! The Model Context Protocol for recourse, both ways:
//!
//! - **Calling MCP tools** through the executor: [`McpTransport`] speaks to an
//!   MCP server started as a child process ([`McpTarget::Command`], stdio) or
//!   reached over streamable HTTP ([`McpTarget::Url`]). `tools/list` gives each
//!   tool's input schema ([`McpTool::prepare`] puts it on the [`Call`](recourse::Call)),
//!   so coercion, repair and correction work as they do for HTTP tools. Results
//!   are read by the shared parser (SPEC §1): an envelope in `structuredContent`
//!   wins, other `isError` results are INPUT_ERROR with the text as message,
//!   JSON-RPC errors map by code. A tool the server does not have is a
//!   non-retryable NOT_FOUND `UNKNOWN_TOOL` naming it and what the server has.
//!   A dead child process or dropped session is a transient transport failure,
//!   and the next attempt starts a fresh one. Every exchange is bounded by the
//!   request timeout.
//! - **Serving recourse tools over MCP**: [`serve_stdio`] exposes a recourse
//!   tool server's manifest as MCP tools whose failures are `isError` results
//!   carrying the envelope in `structuredContent`, so MCP clients keep the
//!   category and retry permission.
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
//! let call = Call::new("get_current_time", json!({"timezone": "America/NewYork"}));
//! let call = match &tool { Some(tool) => tool.prepare(call), None => call };
//! let report = Executor::builder(transport).build().execute(call).await;
//! assert_eq!(report.attempts.len(), 1); // INPUT_ERROR, and no model to correct it
//! # Ok(()) }
//! ```
//!
//! `rmcp` lives in this crate, not in the `recourse` runtime, so agents that
//! only call HTTP tools do not compile an MCP stack (a second HTTP client
//! version, process management, the protocol model).

mod error;
mod reply;
mod server;
mod target;
mod tool;
mod transport;

use std::time::Duration;

pub use error::McpSetupError;
pub use reply::UNKNOWN_TOOL;
pub use server::{McpToolServer, serve_stdio, streamable_http_service};
pub use target::{BASE_ENV, McpTarget};
pub use tool::McpTool;
pub use transport::{IDEMPOTENCY_META_KEY, McpTransport};

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
) -> Result<(McpTransport, Option<McpTool>), McpSetupError> {
    let transport = McpTransport::connect(target, timeout).await?;
    let tool = transport.tool(tool).await?;
    Ok((transport, tool))
}
