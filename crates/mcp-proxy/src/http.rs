//! The proxy over Streamable HTTP: rmcp's server service mounted at `/mcp`
//! in an axum router, for clients that take a URL rather than a command.
//!
//! # Why the router checks no host or token itself
//!
//! rmcp's service refuses, by default, any `Host` but a loopback one — right
//! for a server without a token, wrong for one behind a token on a public
//! name. Who may call is the operator's rule, and `recourse mcp proxy
//! --http` applies the gateway's: a bearer token when one is set (required
//! to bind beyond loopback), else loopback `Host` names only. So the router
//! leaves both to the layer its server puts in front
//! (`recourse_gateway::authorize`), and rmcp's own host list is off.

use std::sync::Arc;
use std::time::Duration;

use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use crate::json_answer;
use crate::proxy::McpProxy;

/// The path the Streamable HTTP endpoint is served at.
pub const MCP_PATH: &str = "/mcp";

impl McpProxy {
    /// A router serving this proxy over Streamable HTTP at [`MCP_PATH`]:
    /// each client session talks to a clone of the proxy (one executor, one
    /// journal, one set of running calls for all). Sessions are kept in
    /// memory and end when `stop` is cancelled. Requests bodies are capped
    /// at `body_limit` bytes.
    ///
    /// It checks neither the `Host` nor a token: put the server's rule in
    /// front of it (see the module docs).
    pub fn streamable_http_router(
        &self,
        stop: CancellationToken,
        body_limit: usize,
    ) -> axum::Router {
        let proxy = self.clone();
        // Without a session (2026-07-28), rmcp answers a call with one JSON
        // body unless its handler notifies first; in a session it streams
        // every answer, which `json_answer` turns into one body where it can.
        let config = StreamableHttpServerConfig::default()
            .with_json_response(true)
            .disable_allowed_hosts()
            .with_max_request_body_bytes(body_limit)
            .with_cancellation_token(stop);
        let service = StreamableHttpService::new(
            move || Ok(proxy.for_session()),
            Arc::<LocalSessionManager>::default(),
            config,
        );
        axum::Router::new()
            .nest_service(MCP_PATH, service)
            .layer(axum::middleware::from_fn(json_answer::as_json))
    }

    /// Stops taking calls into account and waits, at most `grace`, for the
    /// calls that may write to end; how many were still running after it
    /// (each is in flight in the journal, settled once its lease expires).
    pub async fn finish_calls(&self, grace: Duration) -> usize {
        self.shared.door.finish_calls(grace).await
    }
}
