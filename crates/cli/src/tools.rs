//! `recourse tools serve`: the five reference tools, on 127.0.0.1 unless `--bind` says otherwise.
//!
//! Prints the base URL on stdout (one line, nothing else, so scripts can read
//! it), a summary of injected faults on stderr, and serves until Ctrl-C or
//! SIGTERM, with the server limits of the flags (the same as `recourse serve`'s).

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use anyhow::Context;
use recourse_reference_tools::{Fault, ToolsConfig, spawn};

use crate::server_limits::LimitArgs;

/// Options of `recourse tools serve`.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct ToolsServeArgs {
    /// Port to listen on; 0 picks a free port.
    #[arg(long, default_value_t = 8700)]
    pub(crate) port: u16,
    /// Address to bind. The tools have no authentication: anything but loopback serves them
    /// (and their seeded faults) to the network, e.g. to gateways in other containers.
    #[arg(long, default_value = "127.0.0.1")]
    pub(crate) bind: IpAddr,
    /// Check the flags, say what would be served, and exit without serving.
    #[arg(long)]
    pub(crate) check: bool,
    /// Seed for fault decisions and operation ids: the same seed and calls give the same run.
    #[arg(long, default_value_t = 0)]
    pub(crate) seed: u64,
    /// Inject a fault, as TOOL:KIND[:RATE]. Tools: weather, stock, currency, orders, exports.
    /// Kinds: unavailable, rate_limit, slow, auth, drop, unknown_outcome, crash_after_commit,
    /// misleading. RATE is 0..1 (default 1). Repeatable.
    #[arg(long = "fault", value_name = "TOOL:KIND[:RATE]")]
    pub(crate) faults: Vec<Fault>,
    /// Name no lookup for exports_create in the manifest (its route still answers): an export
    /// whose answer is lost stays unknown through a gateway, for trying what follows.
    #[arg(long)]
    pub(crate) no_declared_lookups: bool,
    /// Latency the `slow` fault adds, in milliseconds.
    #[arg(long, default_value_t = 2000, value_name = "MS")]
    pub(crate) slow_ms: u64,
    /// Wait the `rate_limit` fault demands, in seconds.
    #[arg(long, default_value_t = 1, value_name = "SECONDS")]
    pub(crate) retry_after: u64,
    /// Serve the tools as MCP tools on stdin/stdout only, binding no port
    /// (failures are isError results carrying the envelope in structuredContent).
    #[arg(long, conflicts_with = "mcp_http")]
    pub(crate) mcp: bool,
    /// Also serve the tools as MCP tools over Streamable HTTP, on a second free
    /// loopback port; its endpoint URL is printed as a second line on stdout.
    #[arg(long)]
    pub(crate) mcp_http: bool,
    /// Let the currency tool opt a non-positive amount into correction (retryable: true),
    /// for workflows that can work the amount out from earlier steps.
    #[arg(long)]
    pub(crate) correctable_amounts: bool,
    #[command(flatten)]
    pub(crate) limits: LimitArgs,
}

/// Starts the tools and serves until Ctrl-C or SIGTERM.
pub(crate) async fn serve(args: ToolsServeArgs) -> anyhow::Result<()> {
    let config = ToolsConfig {
        seed: args.seed,
        faults: args.faults,
        slow_latency: Duration::from_millis(args.slow_ms),
        retry_after: Duration::from_secs(args.retry_after),
        bind: args.bind,
        port: args.port,
        correctable_amounts: args.correctable_amounts,
        limits: args.limits.limits()?,
        declare_lookups: !args.no_declared_lookups,
    };
    if args.check {
        let addr = SocketAddr::new(args.bind, args.port);
        outln!("configuration ok: would serve the reference tools on http://{addr}");
        return Ok(());
    }
    if args.mcp {
        return crate::mcp::serve_tools(config).await;
    }
    if !args.bind.is_loopback() {
        eprintln!(
            "warning: bound to {}: the reference tools answer anyone who can reach the port",
            args.bind
        );
    }
    let (faults, limits) = (config.faults.clone(), config.limits);
    let tools = spawn(config)
        .await
        .context("starting the reference tools")?;
    let mcp_endpoint = match args.mcp_http {
        true => Some(crate::mcp::serve_tools_http(&tools.base_url(), limits).await?),
        false => None,
    };
    outln!("{}", tools.base_url());
    if let Some(endpoint) = &mcp_endpoint {
        outln!("{}", endpoint.url());
    }
    for fault in &faults {
        eprintln!("injecting fault {fault}");
    }
    eprintln!("serving the reference tools; Ctrl-C to stop");
    shutdown_signal().await?;
    eprintln!("stopping");
    match mcp_endpoint {
        Some(endpoint) => {
            tokio::join!(tools.shutdown(), endpoint.shutdown());
        }
        None => tools.shutdown().await,
    }
    Ok(())
}

/// Resolves on Ctrl-C, or on SIGTERM where there is one.
async fn shutdown_signal() -> anyhow::Result<()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut term = signal(SignalKind::terminate()).context("listening for SIGTERM")?;
        tokio::select! {
            r = tokio::signal::ctrl_c() => r.context("listening for Ctrl-C")?,
            _ = term.recv() => {}
        }
        Ok(())
    }
    #[cfg(not(unix))]
    {
        tokio::signal::ctrl_c()
            .await
            .context("listening for Ctrl-C")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: ToolsServeArgs,
    }

    #[test]
    fn faults_parse_from_repeated_flags() {
        let cli = Cli::try_parse_from([
            "x",
            "--port",
            "0",
            "--seed",
            "7",
            "--fault",
            "exports:unknown_outcome",
            "--fault",
            "stock:rate_limit:0.5",
        ])
        .unwrap();
        assert_eq!(cli.args.port, 0);
        assert_eq!(cli.args.seed, 7);
        assert_eq!(cli.args.faults.len(), 2);
        assert_eq!(cli.args.faults[1].rate, 0.5);
    }

    #[test]
    fn a_bad_fault_is_a_usage_error() {
        let err = Cli::try_parse_from(["x", "--fault", "mail:drop"])
            .err()
            .unwrap();
        assert!(err.to_string().contains("unknown tool"), "{err}");
    }
}
