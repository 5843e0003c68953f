//! `recourse call --mcp-command "CMD ARGS" --tool NAME` / `--mcp-url URL --tool NAME`:
//! the MCP side of `recourse call` (its session: `recourse_mcp::connect_call`),
//! and `recourse tools serve --mcp`.

use std::future::IntoFuture;

use anyhow::{Context, Result, anyhow};
use clap::Args;
use recourse_mcp::McpTarget;
use recourse_mcp_server::McpToolServer;
use recourse_reference_tools::ToolsConfig;
use recourse_tool::ServerLimits;

/// How `recourse call` reaches an MCP server instead of a URL.
#[derive(Debug, Args)]
pub(crate) struct McpArgs {
    /// Call a tool of the MCP server started as this command, over stdio
    /// (split like a shell splits words; no shell runs it), with a cleared environment.
    #[arg(
        long,
        value_name = "\"CMD ARGS\"",
        conflicts_with = "mcp_url",
        requires = "tool"
    )]
    mcp_command: Option<String>,
    /// Pass this environment variable to the --mcp-command process; it gets only PATH, HOME,
    /// LANG, LANGUAGE, LC_*, TZ and these. Repeatable.
    #[arg(long = "mcp-env", value_name = "NAME", requires = "mcp_command")]
    mcp_env: Vec<String>,
    /// Call a tool of the MCP server at this streamable HTTP endpoint.
    #[arg(long, value_name = "URL", requires = "tool")]
    mcp_url: Option<String>,
    /// The MCP tool to call (with --mcp-command or --mcp-url).
    #[arg(long, value_name = "NAME")]
    tool: Option<String>,
}

impl McpArgs {
    /// The MCP server to call, when one was given.
    pub(crate) fn target(&self) -> Result<Option<McpTarget>> {
        Ok(match (&self.mcp_command, &self.mcp_url) {
            (Some(line), _) => Some(
                McpTarget::command_line(line)
                    .context("--mcp-command")?
                    .with_pass_env(self.mcp_env.iter().cloned())
                    .context("--mcp-env")?,
            ),
            (None, Some(url)) => Some(McpTarget::url(url).context("--mcp-url")?),
            (None, None) => None,
        })
    }

    /// The tool name, which is the call's target in MCP mode.
    pub(crate) fn tool(&self) -> Result<String> {
        match self.tool.as_deref().map(str::trim) {
            Some(name) if !name.is_empty() => Ok(name.to_owned()),
            _ => Err(anyhow!(
                "--tool NAME is required with --mcp-command or --mcp-url"
            )),
        }
    }
}

/// `recourse tools serve --mcp`: the reference tools as MCP tools on stdio.
///
/// Each `tools/call` goes straight into the tools' router in this process —
/// no port is bound — and its envelope is returned. Only MCP bytes go to
/// stdout.
pub(crate) async fn serve_tools(config: ToolsConfig) -> Result<()> {
    for fault in &config.faults {
        eprintln!("injecting fault {fault}");
    }
    // Called in this process: stdio is the only door, no port is bound.
    let server = McpToolServer::from_router(recourse_reference_tools::router(&config))
        .await
        .context("reading the reference tools' manifest")?
        .with_call_log();
    eprintln!(
        "serving {} reference tools over MCP on stdio",
        server.tool_names().len()
    );
    recourse_mcp_server::serve_stdio(server)
        .await
        .context("serving MCP on stdio")
}

/// Serves the tools at `base_url` as MCP tools over Streamable HTTP on a free
/// loopback port, in the background, with `limits`.
pub(crate) async fn serve_tools_http(base_url: &str, limits: ServerLimits) -> Result<McpEndpoint> {
    let server = McpToolServer::from_manifest(base_url).await?;
    let app = axum::Router::new()
        .nest_service("/mcp", recourse_mcp_server::streamable_http_service(server));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .context("binding the MCP endpoint")?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let served = recourse_tool::serve(listener, app)
        .with_limits(limits)
        .with_graceful_shutdown(async {
            let _ = stopped.await;
        });
    let task = tokio::spawn(served.into_future());
    Ok(McpEndpoint { url, stop, task })
}

/// The MCP endpoint of `recourse tools serve --mcp-http`, running.
pub(crate) struct McpEndpoint {
    url: String,
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<recourse_tool::Stopped>,
}

impl McpEndpoint {
    /// The endpoint URL (`…/mcp`).
    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    /// Stops it gracefully, within its limits' shutdown grace.
    pub(crate) async fn shutdown(self) {
        let _ = self.stop.send(());
        if let Err(e) = self.task.await {
            eprintln!("recourse: the MCP endpoint stopped: {e}");
        }
    }
}
