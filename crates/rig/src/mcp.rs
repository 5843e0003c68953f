//! MCP tools from `tools/list`: [`mcp_tools`].

use std::sync::Arc;

use recourse::Executor;
use recourse_mcp::McpTransport;

use crate::error::SetupError;
use crate::tool::RecourseTool;

/// Every tool the MCP server behind `transport` lists, as rig tools calling
/// through `executor` (its budget, breakers, corrector and journal, on
/// `transport`).
///
/// Each tool keeps its input schema (offered to the model, and used for
/// coercion, repair and correction) and what its annotations declare about
/// repeating a call; an MCP server names no lookup, so a write whose outcome
/// is unknown stays unknown, and the model is told not to repeat it.
///
/// # Errors
/// The server could not be started or reached, or did not list its tools.
pub async fn mcp_tools(
    executor: &Executor,
    transport: McpTransport,
) -> Result<Vec<RecourseTool>, SetupError> {
    let subject = transport.target().to_string();
    let tools = transport.tools().await.map_err(|e| {
        if e.is_unreachable() {
            SetupError::unreachable(&subject, e.to_string())
        } else {
            SetupError::new(&subject, e.to_string())
        }
    })?;
    let executor = executor.with_transport(Arc::new(transport));
    tools
        .into_iter()
        .map(|tool| RecourseTool::mcp(executor.clone(), tool))
        .collect()
}
