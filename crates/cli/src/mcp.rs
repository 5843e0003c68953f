//! `recourse call --mcp-command "CMD ARGS" --tool NAME` / `--mcp-url URL --tool NAME`:
//! the MCP side of `recourse call`, and `recourse tools serve --mcp`.

use std::future::IntoFuture;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow};
use clap::Args;
use recourse::{CallBuilder, Transport};
use recourse_mcp::{McpTarget, connect_tool};
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

/// Starts a session with `target` and aims `call` at its tool: the tool's
/// schema (unless the caller gave one with --schema) and hints that may only
/// make the call more careful. A tool the server lacks is left to the
/// executor, which stops with `UNKNOWN_TOOL` naming the tools it has.
///
/// A read tool a verification names (`verifies`) must be one the server
/// has: the call is refused before the write is sent otherwise.
///
/// The session's setup is part of the call: it may take no longer than one
/// attempt (`timeout`) nor than the whole call's `deadline`, and the call is
/// left only what remains of that deadline, so a server that never finishes
/// its handshake cannot hold a call past its deadline.
pub(crate) async fn connect(
    target: McpTarget,
    tool: &str,
    call: CallBuilder,
    timeout: Duration,
    deadline: Option<Duration>,
    verifies: Option<&str>,
) -> Result<(Arc<dyn Transport>, CallBuilder)> {
    let shown = target.to_string();
    let started = Instant::now();
    let setup = deadline.map_or(timeout, |d| d.min(timeout));
    let (transport, tool) = connect_tool(target, tool, setup)
        .await
        .with_context(|| format!("MCP server {shown}"))?;
    if let Some(read) = verifies
        && transport.tool(read).await?.is_none()
    {
        let names: Vec<String> = transport
            .tools()
            .await?
            .into_iter()
            .map(|t| t.name)
            .collect();
        anyhow::bail!(
            "the verification reads {read:?}, which MCP server {shown} does not have (it has: {})",
            names.join(", ")
        );
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
