//! `recourse mcp proxy --http`: the proxy over Streamable HTTP at `/mcp`,
//! behind the gateway's rules — `RECOURSE_GATEWAY_TOKEN` as a bearer token
//! when set (and required to bind beyond loopback, unless
//! `--insecure-no-auth`), loopback `Host` names only without one — and the
//! gateway's server limits.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Args;
use recourse_gateway::{Callers, Exposure, authorize, check_exposure, shutdown_signal};
use recourse_mcp_proxy::{MCP_PATH, McpProxy};
use tokio_util::sync::CancellationToken;

use crate::server_limits::LimitArgs;
use crate::settings::Settings;

/// The Streamable HTTP front's flags.
#[derive(Debug, Args)]
pub(crate) struct HttpArgs {
    /// Serve Streamable HTTP at /mcp instead of stdio; the first stdout line is
    /// 'recourse mcp proxy listening on http://ADDR:PORT/mcp'. Needs RECOURSE_GATEWAY_TOKEN
    /// (a bearer token) beyond loopback; without one, only loopback Host names are served.
    #[arg(long)]
    http: bool,
    /// Address to bind with --http. Anything but loopback exposes the proxy to the network,
    /// and needs RECOURSE_GATEWAY_TOKEN (or --insecure-no-auth).
    #[arg(long, default_value = "127.0.0.1", requires = "http")]
    bind: IpAddr,
    /// Port to listen on with --http; 0 picks a free one.
    #[arg(long, default_value_t = 8790, requires = "http")]
    port: u16,
    /// Allow binding beyond loopback without RECOURSE_GATEWAY_TOKEN: anyone who can reach the
    /// port can call the upstreams' tools.
    #[arg(long, requires = "http")]
    insecure_no_auth: bool,
    #[command(flatten)]
    limits: LimitArgs,
}

impl HttpArgs {
    /// With `--http`, how the front would be exposed, refused beyond
    /// loopback without a token (unless `--insecure-no-auth`, then warned);
    /// `None` for the stdio front.
    pub(crate) fn exposure(&self, settings: &Settings) -> Result<Option<Exposure>> {
        if !self.http {
            return Ok(None);
        }
        self.limits.limits()?;
        let has_token = settings.gateway_token.is_some();
        let exposure = check_exposure(self.bind, has_token, self.insecure_no_auth)?;
        if let Exposure::Unauthenticated(warning) = exposure {
            eprintln!("{warning}");
        }
        Ok(Some(exposure))
    }
}

/// Serves `proxy` over Streamable HTTP until SIGTERM or Ctrl-C; then waits,
/// at most `grace`, for the calls that may write. How many were left running.
pub(crate) async fn serve(
    proxy: McpProxy,
    args: &HttpArgs,
    exposure: Exposure,
    settings: &Settings,
    grace: Duration,
) -> Result<usize> {
    let limits = args.limits.limits()?;
    let callers = settings.gateway_token.as_deref().map(Callers::single);
    // Without a token, loopback Host names only — unless the operator
    // exposed the proxy without one on purpose: clients name its address.
    let any_host = matches!(exposure, Exposure::Unauthenticated(_));
    let loopback_hosts_only = callers.is_none() && !any_host;
    let stop = CancellationToken::new();
    let router = proxy
        .streamable_http_router(stop.clone(), recourse_tool::DEFAULT_BODY_LIMIT)
        .layer(authorize(callers.map(Arc::new), loopback_hosts_only));
    let listener = tokio::net::TcpListener::bind(SocketAddr::new(args.bind, args.port))
        .await
        .with_context(|| format!("binding {}:{}", args.bind, args.port))?;
    let addr = listener.local_addr()?;
    outln!("recourse mcp proxy listening on http://{addr}{MCP_PATH}");
    let stopped = recourse_tool::serve(listener, router)
        .with_limits(limits)
        .with_graceful_shutdown(async move {
            shutdown_signal().await;
            // Open sessions end, so that their streams let the server stop.
            stop.cancel();
        })
        .await;
    if stopped.connections_cut() > 0 {
        eprintln!(
            "recourse mcp proxy: closed {} connection(s) still open after the {:?} shutdown grace",
            stopped.connections_cut(),
            args.limits.shutdown_grace()
        );
    }
    Ok(proxy.finish_calls(grace).await)
}
