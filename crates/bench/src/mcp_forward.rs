//! `recourse-bench mcp-forward [--http] -- CMD ARGS…`: the floor of
//! `recourse mcp proxy` — rmcp's server in front of rmcp's client, every
//! `tools/list` and `tools/call` handed to the upstream (CMD, over its
//! stdio) as it came and its answer handed back, with none of recourse's
//! logic: no executor, no policy, no record, no journal.
//!
//! It serves this process's stdio, or with `--http` Streamable HTTP on
//! 127.0.0.1 (a free port; it prints `listening on http://ADDR/mcp`),
//! configured as the proxy's HTTP front is (JSON answers, sessions in
//! memory). So `bench/mcp-proxy.sh` measures each of recourse's fronts
//! against the same stack without recourse.

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ErrorData, ListToolsResult, PaginatedRequestParams,
    ServerCapabilities, ServerConfig,
};
use rmcp::service::{Peer, RequestContext, RoleClient, RoleServer, ServiceError};
use rmcp::transport::TokioChildProcess;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ServerHandler, ServiceExt};

const USAGE: &str = "mcp-forward [--http] -- CMD ARGS…";

/// The forwarder: one upstream session shared by every client session.
#[derive(Clone)]
struct Forward {
    upstream: Peer<RoleClient>,
}

impl ServerHandler for Forward {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.upstream
            .list_tools(request)
            .await
            .map_err(upstream_error)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.upstream
            .call_tool(request)
            .await
            .map(Into::into)
            .map_err(upstream_error)
    }
}

/// The upstream's JSON-RPC error as it came; any other failure an internal error.
fn upstream_error(error: ServiceError) -> ErrorData {
    match error {
        ServiceError::McpError(error) => error,
        other => ErrorData::internal_error(other.to_string(), None),
    }
}

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let (http, command) = match args {
        [flag, dash, command @ ..] if flag == "--http" && dash == "--" => (true, command),
        [dash, command @ ..] if dash == "--" => (false, command),
        _ => return Err(format!("usage: {USAGE}")),
    };
    let [program, arguments @ ..] = command else {
        return Err(format!("usage: {USAGE}"));
    };
    let mut upstream = tokio::process::Command::new(program);
    upstream.args(arguments).kill_on_drop(true);
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?
        .block_on(async move {
            let child = TokioChildProcess::new(upstream).map_err(|e| format!("{program}: {e}"))?;
            let client = ().serve(child).await.map_err(|e| format!("{program}: {e}"))?;
            let forward = Forward {
                upstream: client.peer().clone(),
            };
            if http {
                serve_http(forward).await
            } else {
                let running = forward
                    .serve(rmcp::transport::stdio())
                    .await
                    .map_err(|e| format!("stdio: {e}"))?;
                running.waiting().await.map_err(|e| e.to_string())?;
                Ok(())
            }
        })
}

async fn serve_http(forward: Forward) -> Result<(), String> {
    let config = StreamableHttpServerConfig::default()
        .with_json_response(true)
        .disable_allowed_hosts();
    let service = StreamableHttpService::new(
        move || Ok(forward.clone()),
        std::sync::Arc::<LocalSessionManager>::default(),
        config,
    );
    let app = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| e.to_string())?;
    let address = listener.local_addr().map_err(|e| e.to_string())?;
    println!("listening on http://{address}/mcp");
    axum::serve(listener, app).await.map_err(|e| e.to_string())
}
