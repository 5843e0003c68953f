//! `recourse mcp proxy --http`: the proxy over Streamable HTTP at `/mcp`,
//! behind the gateway's rules — `RECOURSE_GATEWAY_TOKEN` as a bearer token,
//! or the named callers of a tokens file (`--tokens`), each call its
//! caller's and each key in its caller's space, when set (and required to bind beyond loopback, unless
//! `--insecure-no-auth`), loopback `Host` names only without one — and the
//! gateway's server limits.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Args;
use recourse_gateway::{Caller, Callers, Exposure, authorize, check_exposure, shutdown_signal};
use recourse_mcp_proxy::{Client, MCP_PATH, McpProxy};
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
        self.callers(settings)?;
        let has_token = settings.gateway_token.is_some() || self.tokens.is_some();
        let exposure = check_exposure(self.bind, has_token, self.insecure_no_auth)?;
        if let Exposure::Unauthenticated(warning) = exposure {
            eprintln!("{warning}");
        }
        Ok(Some(exposure))
    }

    /// Who may call: the tokens file's callers (`RECOURSE_GATEWAY_TOKEN`
    /// beside it joins them as caller `default`), or the one token's
    /// caller, or — with neither — no one is asked for a token.
    fn callers(&self, settings: &Settings) -> Result<Option<Callers>> {
        let token = settings.gateway_token.as_deref();
        let Some(path) = &self.tokens else {
            return Ok(token.map(Callers::single));
        };
        let callers = Callers::from_file(path).context("--tokens")?;
        Ok(Some(match token {
            Some(token) => callers.with_default(token).context("--tokens")?,
            None => callers,
        }))
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
    let callers = args.callers(settings)?;
    let keys = callers.as_ref().map(Callers::key_scope);
    // Without a token, loopback Host names only — unless the operator
    // exposed the proxy without one on purpose: clients name its address.
    let any_host = matches!(exposure, Exposure::Unauthenticated(_));
    let loopback_hosts_only = callers.is_none() && !any_host;
    let stop = CancellationToken::new();
    let router = proxy
        .streamable_http_router(stop.clone(), recourse_tool::DEFAULT_BODY_LIMIT)
        // The caller the token names makes each call its own (journaled
        // under its name, its keys its own); the layer added last runs first.
        .layer(axum::middleware::map_request(
            move |mut request: axum::extract::Request| async move {
                let caller = request.extensions().get::<Arc<Caller>>().cloned();
                if let (Some(caller), Some(keys)) = (caller, keys) {
                    request
                        .extensions_mut()
                        .insert(Client::new(caller.name(), keys));
                }
                request
            },
        ))
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
