//! # recourse-rig
//!
//! Tools for [rig](https://docs.rs/rig-core) agents whose every call runs
//! through the recourse executor. rig's agent loop calls a tool and hands
//! whatever comes back to the model; with these tools, what comes back is
//! the end of a careful call — waited out, corrected, looked up, or stopped —
//! and what the model reads is the record's decision about what to do next.
//!
//! ```
//! use std::sync::Arc;
//! use recourse::{CorrectionChain, Executor, ExecutorConfig, HttpTransport};
//! use recourse_reference_tools::{ToolsConfig, spawn};
//! use serde_json::json;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let tools = spawn(ToolsConfig::default()).await?;
//! let config = ExecutorConfig::default();
//! let chain = Arc::new(CorrectionChain::new(&config)); // deterministic repair, no model
//! let executor = Executor::standard(Arc::new(HttpTransport::builder().build()?), config, chain)?.build();
//!
//! // Every capability of the tool server's manifest, as a rig tool.
//! let wrapped = recourse_rig::http_tools(&executor, &tools.base_url()).await?;
//! let weather = wrapped.iter().find(|t| t.name() == "weather_current").unwrap();
//! assert_eq!(weather.parameters()["required"][0], "location");
//!
//! // The tool does not know "Flower Mound, TX" and says which place it has:
//! // recourse repairs the arguments, and the model reads the result and what was changed.
//! let output = weather.call(json!({"location": "Flower Mound, TX"})).await?;
//! assert!(output.render().contains("recourse corrected the arguments"));
//!
//! // Registered with an agent: `AgentBuilder::new(model).dynamic_tools(tools)`.
//! let for_rig: Vec<rig_core::tool::DynamicTool> =
//!     wrapped.into_iter().map(recourse_rig::RecourseTool::into_dynamic).collect();
//! assert_eq!(for_rig.len(), 7);
//! # Ok(())
//! # }
//! ```
//!
//! ## What the model reads
//!
//! [`tool_answer`] turns a call's record into rig's answer, from the
//! record's `next` (never from the tool's text): the data on `use_result`;
//! otherwise a [`ToolExecutionError`](rig_core::tool::ToolExecutionError)
//! whose text opens with `recourse: next step STEP.` and carries the record's
//! model message, and whose fields are for rig and its hooks — `code` is the
//! step, `retryable` is always `false` (recourse already resent what was safe
//! to resend), `http_status` the tool's last HTTP error status. A write whose outcome is
//! unknown is `do_not_repeat`, with [`DO_NOT_REPEAT_LINE`] at the head of the
//! text.
//!
//! ## A write is not repeated
//!
//! Nothing in rig resends a failed call by itself, and a `retryable: false`
//! failure gives its hooks no reason to. The model could still call again
//! with the same arguments after being told not to; each tool remembers the
//! calls whose record said `do_not_repeat` and answers the same call with the
//! same arguments the same way, without sending it.
//!
//! ## Where tools come from
//!
//! - HTTP: [`http_tools`] reads a tool server's capability manifest
//!   (`GET /api/capabilities`): name, description, input schema, method,
//!   idempotency, and the lookup that reconciles a write's unknown outcome
//!   ([`HttpEndpoint`]; [`RecourseTool::http`] wraps one).
//! - MCP (feature `mcp`, on by default): [`mcp_tools`] wraps what an MCP
//!   server's `tools/list` says, through `recourse-mcp`'s transport
//!   ([`RecourseTool::mcp`] wraps one).
//!
//! rig is pinned to 0.44, the newest release that builds on Rust 1.95, and
//! only `rig-core`'s tool contracts are compiled here, without its
//! transports; the agent (`rig-agent`) and the model's HTTP client are the
//! application's choice.

mod answer;
mod endpoint;
mod error;
mod http;
mod in_doubt;
#[cfg(feature = "mcp")]
mod mcp;
mod tool;

pub use answer::{DO_NOT_REPEAT_LINE, tool_answer};
pub use endpoint::HttpEndpoint;
pub use error::SetupError;
pub use http::{MANIFEST_PATH, http_tools};
pub use in_doubt::MAX_REMEMBERED;
#[cfg(feature = "mcp")]
pub use mcp::mcp_tools;
pub use tool::RecourseTool;
