//! `recourse mcp proxy --http`: the flags of the proxy's Streamable HTTP
//! front (`recourse_mcp_proxy::serve_http`), behind the gateway's rules —
//! `RECOURSE_GATEWAY_TOKEN` as a bearer token, or the named callers of a
//! tokens file (`--tokens`), when set (and required to bind beyond loopback,
//! unless `--insecure-no-auth`), loopback `Host` names only without one —
//! and the gateway's server limits.

use std::net::{IpAddr, SocketAddr};

use anyhow::{Context, Result};
use clap::Args;
use recourse_gateway::{Access, Callers, Exposure, check_exposure, shutdown_signal};
use recourse_mcp_proxy::{MCP_PATH, McpProxy, serve_http};
use tokio::net::TcpListener;

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
    /// Named callers for --http, each with its own token, calls and idempotency keys: the
    /// gateway's tokens file `{"callers": [{"name", "token" | "token_sha256", ...}]}`.
    #[arg(
        long,
        value_name = "FILE",
        env = "RECOURSE_GATEWAY_TOKENS",
        hide_env_values = true,
        requires = "http"
    )]
    tokens: Option<std::path::PathBuf>,
    /// Port to listen on with --http; 0 picks a free one.
    #[arg(long, default_value_t = 8790, requires = "http")]
    port: u16,
    /// Allow binding beyond loopback without RECOURSE_GATEWAY_TOKEN: anyone who can reach the
    /// port can call the upstreams' tools.
    #[arg(long, requires = "http")]
    insecure_no_auth: bool,
    /// The most MCP sessions open at once with --http (each its opener's); a new one past it
    /// is answered 503 until one ends or has been idle for five minutes.
    #[arg(long, value_name = "N", default_value_t = 1000,
          value_parser = clap::value_parser!(u32).range(1..), requires = "http")]
    max_sessions: u32,
    #[command(flatten)]
    limits: LimitArgs,
}

impl HttpArgs {
    /// Whether `--http` was given (else the proxy serves stdio).
    pub(crate) fn enabled(&self) -> bool {
        self.http
    }

    /// With `--http`, how the front would be exposed, refused beyond
    /// loopback without a token (unless `--insecure-no-auth`, then warned);
    /// `None` for the stdio front.
    pub(crate) fn exposure(&self, settings: &Settings) -> Result<Option<Exposure>> {
        if !self.http {
            return Ok(None);
        }
        self.limits.limits()?;
        self.access(settings, false)?;
        let has_token = settings.gateway_token.is_some() || self.tokens.is_some();
        let exposure = check_exposure(self.bind, has_token, self.insecure_no_auth)?;
        if let Exposure::Unauthenticated(warning) = exposure {
            eprintln!("{warning}");
        }
        Ok(Some(exposure))
    }

    /// Who may call: the tokens file's callers (`RECOURSE_GATEWAY_TOKEN`
    /// beside it joins them as caller `default`), or the one token's
    /// caller, or — with neither — anyone on a loopback host name, or any
    /// host when exposed without a token on purpose.
    fn access(&self, settings: &Settings, any_host: bool) -> Result<Access> {
        let callers = match &self.tokens {
            Some(path) => Some(Callers::from_file(path).context("--tokens")?),
            None => None,
        };
        let access = Access::new(callers, settings.gateway_token.as_deref()).context("--tokens")?;
        if !self.bind.is_loopback() {
            access.check_exposed().context("--tokens")?;
        }
        Ok(if any_host {
            access.serve_any_host()
        } else {
            access
        })
    }
}

/// The front's port, taken before any upstream starts: a port in use stops
/// the proxy before it has started a server.
pub(crate) async fn bind(args: &HttpArgs) -> Result<TcpListener> {
    TcpListener::bind(SocketAddr::new(args.bind, args.port))
        .await
        .with_context(|| format!("binding {}:{}", args.bind, args.port))
}

/// Serves `proxy` over Streamable HTTP on `listener` until SIGTERM or
/// Ctrl-C; then waits for the calls that may write. How many were left
/// running.
pub(crate) async fn serve(
    proxy: McpProxy,
    listener: TcpListener,
    args: &HttpArgs,
    exposure: Exposure,
    settings: &Settings,
) -> Result<usize> {
    let limits = args.limits.limits()?;
    // Exposed without a token on purpose: clients name the proxy by its address.
    let access = args.access(settings, matches!(exposure, Exposure::Unauthenticated(_)))?;
    let addr = listener.local_addr()?;
    outln!("recourse mcp proxy listening on http://{addr}{MCP_PATH}");
    let served = serve_http(
        proxy,
        listener,
        &access,
        limits,
        args.max_sessions as usize,
        shutdown_signal(),
    )
    .await;
    if served.connections_cut > 0 {
        eprintln!(
            "recourse mcp proxy: closed {} connection(s) still open after the {:?} shutdown grace",
            served.connections_cut,
            args.limits.shutdown_grace()
        );
    }
    Ok(served.calls_left)
}
