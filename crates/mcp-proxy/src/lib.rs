//! # recourse-mcp-proxy
//!
//! An MCP server in front of MCP servers: every `tools/call` runs through
//! the recourse executor, so an MCP client — Claude Desktop, Claude Code,
//! Cursor, an agent framework — gets recourse's handling of failures with
//! no code: what is safe to resend is resent, correctable input is
//! corrected, a write whose outcome is unknown is settled by reading it back
//! (or left unknown and never repeated), and every other failure stops
//! honestly, with a message the model can act on. `recourse mcp proxy` is
//! this crate with flags.
//!
//! ```no_run
//! use recourse::ExecutorConfig;
//! use recourse_mcp::McpTarget;
//! use recourse_mcp_proxy::{McpProxy, ToolPolicies, Upstream};
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let fs = McpTarget::command_line("npx -y @modelcontextprotocol/server-filesystem /srv/data")?;
//! let policies = ToolPolicies::from_json(br#"{"tools": {"write_file": {"idempotent": true}}}"#)?;
//! let proxy = McpProxy::builder(ExecutorConfig::default())
//!     .upstream(Upstream::unnamed(fs))
//!     .with_policies(policies)
//!     .connect()
//!     .await?;
//! println!("offering {}", proxy.tool_names().join(", "));
//! let served = proxy.serve_stdio(std::time::Duration::from_secs(120)).await?;
//! eprintln!("{} call(s) left in flight", served.calls_left);
//! # Ok(()) }
//! ```
//!
//! - **Upstreams** ([`Upstream`]): MCP servers started as child processes
//!   (no shell; a cleared environment, or with
//!   [`Upstream::with_inherited_env`] the proxy's less what it withholds)
//!   or reached over Streamable HTTP. One
//!   upstream's tools keep their names; with several, each is offered as
//!   `NAME__TOOL`. A child that dies is started again for the next call; a
//!   call in flight when it died is, for a tool that is not idempotent, an
//!   unknown outcome, never resent.
//! - **Evidence of idempotency**, in order: the operator's policy file
//!   ([`ToolPolicies`]), the tool's `readOnlyHint` / `idempotentHint`,
//!   otherwise not idempotent. A call that is not idempotent carries an
//!   idempotency key in `_meta["recourse/idempotency-key"]`, is journaled
//!   when the proxy has a journal, and runs to its end even when the client
//!   stops waiting.
//! - **A caller's key**: a client that puts its own key in
//!   `_meta["recourse/idempotency-key"]` gets the gateway's semantics — the
//!   same key and arguments answer the first call's record and send
//!   nothing; the same key with other arguments is refused
//!   (`IDEMPOTENCY_KEY_REUSED`); one still running answers `CALL_IN_PROGRESS`.
//!   Over HTTP, a [`Client`] that the layer in front names makes the call
//!   that caller's: journaled under its name, its keys its own.
//! - **Approvals**: a tool whose policy has `approval` is never called by
//!   the proxy: each call waits in the journal (`approval_required`, class
//!   `governance`), a person decides it on a gateway sharing the journal,
//!   which sends it to the same server, and the client's next identical
//!   call (same key, else the request's hash as key) gets the result.
//! - **What the client sees**: a success is the upstream's own result, with
//!   the record's summary added under `_meta["recourse/call"]`
//!   ([`CALL_META_KEY`]); any other outcome is an `isError` result holding
//!   the record's message for the model and the structured failure
//!   (`_meta["io.modelcontextprotocol/toolFailure"]`). Only a request the
//!   proxy cannot route (a tool no upstream offers), or that comes while
//!   it stops, is a JSON-RPC error.
//! - **Orphans settled**: with a journal, [`McpProxy::sweep`] settles the
//!   calls a killed proxy left in flight once their lease runs out, by
//!   their read (a tool of the upstreams) or lookup, never by a resend.
//! - **Fronts**: stdio ([`McpProxy::serve_stdio`], what client configs
//!   start; [`McpProxy::serve_io`] over any byte-stream pair) or Streamable
//!   HTTP ([`router`] and [`serve_http`], for clients that take a URL,
//!   behind the gateway's rule for who may call, `recourse_door::Access`).
//!   Over HTTP an answer that is ready within seconds comes as one JSON
//!   body, in a session too; a slower one streams.
//! - **Stopping** ([`McpProxy::serve_stdio_until`]): on its client leaving
//!   or a signal, no new call ([`STOPPING`]), the writes in flight
//!   finished and journaled, then each upstream closed (stdin, SIGTERM,
//!   SIGKILL).
//! - With one upstream, `resources/*` and `prompts/*` are passed through,
//!   resource subscriptions too: a session's `resources/subscribe`, or a
//!   2026-07-28 client's `subscriptions/listen` naming resources, is told of
//!   the upstream's updates of them; the upstream is subscribed once while
//!   any client is.
//! - **List changes**: an upstream whose tools change has them offered anew
//!   (the same names, the policy file applied again) and the clients told —
//!   with `notifications/tools/list_changed` on a session up to 2025-11-25,
//!   on a `subscriptions/listen` stream from 2026-07-28; with one upstream,
//!   its resource and prompt list changes are passed on.

mod answer;
mod approved;
mod ask;
mod call;
mod capabilities;
mod capture;
mod catalog;
mod client;
mod elicit;
mod error;
mod failure;
mod fault;
mod follow;
mod hold;
mod http;
mod json_answer;
mod listeners;
mod meta;
mod proxy;
mod reach;
mod refusing;
mod sealed;
mod sending;
mod server;
mod session_end;
mod session_owners;
mod stdin;
mod stopping;
mod subscribers;
mod subscriptions;
mod sweep;
mod tasks;
mod upstream;

pub use client::Client;
pub use error::{ProxyError, ProxyErrorKind};
pub use http::{MCP_PATH, router, router_with_sessions, serve_http};
pub use meta::CALL_META_KEY;
pub use proxy::{McpProxy, McpProxyBuilder};
pub use recourse_door::Served;
pub use recourse_door::policy::{PolicyError, ToolPolicies};
pub use refusing::{NOT_STARTED, refuse_stdio};
pub use session_owners::DEFAULT_MAX_SESSIONS;
pub use stopping::STOPPING;
pub use upstream::Upstream;
