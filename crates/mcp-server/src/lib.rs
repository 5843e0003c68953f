//! # recourse-mcp-server
//!
//! A recourse tool server's tools, served over the Model Context Protocol.
//!
//! [`McpToolServer::from_manifest`] reads a tool server's manifest
//! (`GET /api/capabilities`) and offers each capability as an MCP tool;
//! [`serve_stdio`] serves them to an MCP client that started this process,
//! and [`streamable_http_service`] is a Streamable HTTP endpoint to mount in
//! an HTTP server. Each `tools/call` is forwarded to the tool over HTTP (or,
//! with [`McpToolServer::from_router`], into the tool server's router in this
//! process, binding no port), and its envelope comes back whole — a failure as an `isError` result with the
//! envelope in `structuredContent` — so an MCP client keeps the category, the
//! code and the retry permission.
//!
//! ```
//! use recourse_mcp_server::{McpToolServer, streamable_http_service};
//! use recourse_tool::{Capability, Success, ToolJson, ToolResult, ToolServer};
//!
//! /// Input of `POST /api/greet`.
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Greet {
//!     /// Who to greet.
//!     name: String,
//! }
//!
//! async fn greet(ToolJson(input): ToolJson<Greet>) -> ToolResult<String> {
//!     Ok(Success(format!("Hello, {}!", input.name)))
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // Any recourse tool server; here one tool on a loopback port.
//! let tools = ToolServer::new()
//!     .tool(Capability::post::<Greet>("greet", "/api/greet", "Greet someone"), greet)
//!     .into_router();
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! let base_url = format!("http://{}", listener.local_addr()?);
//! tokio::spawn(async move { axum::serve(listener, tools).await });
//!
//! let server = McpToolServer::from_manifest(&base_url).await?;
//! assert_eq!(server.tool_names(), ["greet"]);
//!
//! // Over stdio, for a client that starts this process:
//! //     recourse_mcp_server::serve_stdio(server).await?;
//! // or over Streamable HTTP, mounted in an axum app on loopback:
//! let app = axum::Router::new().nest_service("/mcp", streamable_http_service(server));
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! tokio::spawn(async move { axum::serve(listener, app).await });
//! # Ok(())
//! # }
//! ```
//!
//! This crate depends on the protocol crate, rmcp's server side and an HTTP
//! client to reach the tools — never on the `recourse` executor, so a tool
//! author exposing tools over MCP compiles no agent-side code. Calling MCP
//! tools through the executor is `recourse-mcp`'s job.

mod backend;
mod server;

pub use recourse_protocol::mcp::{McpError, McpErrorKind};
pub use server::{McpToolServer, serve_stdio, streamable_http_service};
