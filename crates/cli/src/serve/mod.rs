//! `recourse serve`: the gateway (`recourse-gateway`) with flags — the
//! executor as an HTTP service, for agents in any language.
//!
//! Secure by default: it binds 127.0.0.1, calls only loopback targets
//! unless `--allow-target` says otherwise, starts MCP server processes only
//! for command lines an `--allow-mcp-command` pattern matches, requires
//! `RECOURSE_GATEWAY_TOKEN` as a bearer token when set (and refuses to bind
//! beyond loopback without one, unless told `--insecure-no-auth`). SIGTERM or
//! Ctrl-C turns `/readyz` to 503 `draining`, keeps serving for
//! `--drain-delay`, then stops accepting and lets in-flight calls finish,
//! for at most the shutdown grace. Several gateways make a fleet through
//! `--shared-state redis://…` (`fleet.rs`).

mod fleet;
mod journal;

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::Args;
use recourse::shared::SharedState;
use recourse_gateway::{
    Callers, Exposure, Gateway, GatewayConfig, ServeOptions, check_exposure, connect_shared_state,
    open_server_journal, server_journal_location,
};

use crate::server_limits::LimitArgs;
use crate::settings::Settings;

/// Arguments of `recourse serve`.
#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// Port to listen on; 0 picks a free one.
    #[arg(long, default_value_t = 8780)]
    port: u16,
    /// Address to bind. Anything but loopback exposes the gateway to the network,
    /// and needs RECOURSE_GATEWAY_TOKEN (or --insecure-no-auth).
    #[arg(long, default_value = "127.0.0.1")]
    bind: IpAddr,
    /// Named callers, each with its own token, calls and keys: a JSON file
    /// `{"callers": [{"name", "token" | "token_sha256", "admin"?, "approver"?}]}`.
    #[arg(
        long,
        value_name = "FILE",
        env = "RECOURSE_GATEWAY_TOKENS",
        hide_env_values = true
    )]
    tokens: Option<std::path::PathBuf>,
    /// Allow binding beyond loopback without RECOURSE_GATEWAY_TOKEN: anyone who can
    /// reach the port can make the gateway call its targets.
    #[arg(long)]
    insecure_no_auth: bool,
    /// Let the caller that asked for an approval decide it (a one-person setup); the
    /// approval then says self_approved. Without it, another approver must decide.
    #[arg(long)]
    allow_self_approval: bool,
    /// Allow targets matching PATTERN besides loopback: `[http[s]://]HOST[:PORT][/PATH]`, where
    /// HOST is exact, `*.DOMAIN` or `*`, PORT a number or `*`, and PATH exact or ending in `/*`
    /// (e.g. `*.example.com`, `https://api.example.com/v1/*`, `http://127.0.0.1:*`). Repeatable.
    #[arg(long = "allow-target", value_name = "PATTERN")]
    allow_targets: Vec<String>,
    /// Allow `mcp.command` requests whose whole command line matches PATTERN: the program,
    /// named exactly, then its arguments, where `*` matches one argument and a trailing `**`
    /// any remaining ones (e.g. 'node /opt/servers/fs.js *'). Repeatable; without it the
    /// gateway starts no processes.
    #[arg(long = "allow-mcp-command", value_name = "PATTERN")]
    allow_mcp_commands: Vec<String>,
    /// Apply a `recourse mcp proxy --tools` policy FILE to the MCP servers whose whole command
    /// line PATTERN matches (the --allow-mcp-command form): a tool held for a person there is
    /// held here too. 'PATTERN=FILE', split at the last '='; repeatable.
    #[arg(long = "mcp-policy", value_name = "PATTERN=FILE")]
    mcp_policies: Vec<String>,
    /// Pass this environment variable to MCP server processes; they get only PATH, HOME,
    /// LANG, LANGUAGE, LC_*, TZ and these. Repeatable.
    #[arg(long = "mcp-env", value_name = "NAME")]
    mcp_env: Vec<String>,
    #[command(flatten)]
    limits: LimitArgs,
    #[command(flatten)]
    lease: crate::settings::LeaseArg,
    #[command(flatten)]
    journal: journal::JournalArgs,
    #[command(flatten)]
    fleet: fleet::FleetArgs,
    #[command(flatten)]
    stdin_watch: crate::stdin_watch::StdinWatchArg,
    /// Check the flags and settings, say what would be served, and exit without serving
    /// (nothing is bound and no Redis is asked).
    #[arg(long)]
    check: bool,
}

pub(crate) async fn serve(args: &ServeArgs, settings: &Settings) -> Result<i32> {
    let limits = args.limits.limits()?;
    let exposure = check_exposure(
        args.bind,
        settings.gateway_token.is_some() || args.tokens.is_some(),
        args.insecure_no_auth,
    )?;
    if let Exposure::Unauthenticated(warning) = exposure {
        eprintln!("{warning}");
    }
    let shared_state = args.fleet.shared_state(settings)?;
    let shared_words = match &shared_state {
        Some(_) => "shared state: on",
        None => "shared state: off",
    };
    let shared = match shared_state {
        Some(builder) if !args.check => {
            Some(connect_shared_state(builder, |line| eprintln!("{line}")).await)
        }
        _ => None,
    };
    let gateway = Arc::new(gateway(args, settings, shared).await?);
    crate::telemetry::export_executor_metrics(gateway.metrics(), gateway.executor());
    if args.check {
        outln!(
            "configuration ok: would serve on http://{} ({shared_words})",
            SocketAddr::new(args.bind, args.port)
        );
        return Ok(0);
    }
    let listener = tokio::net::TcpListener::bind(SocketAddr::new(args.bind, args.port))
        .await
        .with_context(|| format!("binding {}:{}", args.bind, args.port))?;
    let addr = listener.local_addr()?;
    outln!("recourse gateway listening on http://{addr}");
    let options = ServeOptions::new(limits)
        .with_drain_delay(args.fleet.drain_delay())
        .with_upkeep(args.journal.retain)
        .with_log(|line| eprintln!("{line}"));
    let served = recourse_gateway::serve(
        gateway,
        listener,
        options,
        crate::stdin_watch::stop_requested(args.stdin_watch),
    )
    .await;
    let grace = args.limits.shutdown_grace();
    if served.connections_cut > 0 {
        eprintln!(
            "closed {} connection(s) still open after the {grace:?} shutdown grace",
            served.connections_cut
        );
    }
    match served.calls_left {
        0 => eprintln!("gateway stopped; in-flight calls finished"),
        n => eprintln!(
            "gateway stopped; {n} call(s) still running after the {grace:?} shutdown grace were \
             left in flight in the journal"
        ),
    }
    Ok(0)
}

/// The gateway `args` describe; the journal is opened last, once every
/// flag has been checked, so a refused start leaves nothing on disk.
/// With `--check`, no journal is opened.
async fn gateway(
    args: &ServeArgs,
    settings: &Settings,
    shared: Option<Arc<recourse::shared::RedisSharedState>>,
) -> Result<Gateway> {
    let mut executor = settings.executor.clone();
    args.lease.apply(&mut executor);
    let chain = Arc::new(settings.chain(&executor)?);
    let mut config = GatewayConfig::new(executor).with_corrector(chain);
    if let Some(token) = &settings.gateway_token {
        config = config.with_token(token.clone());
    }
    if let Some(path) = &args.tokens {
        config = config.with_callers(Callers::from_file(path).context("--tokens")?);
    }
    // Exposed beyond loopback without a token (--insecure-no-auth): clients
    // name it by its address. On loopback, the loopback-Host rule holds.
    if args.insecure_no_auth && !args.bind.is_loopback() {
        config = config.serve_any_host();
    }
    // Reachable beyond loopback: every token long enough not to be guessed.
    if !args.bind.is_loopback() {
        config = config.exposed_beyond_loopback();
    }
    if args.allow_self_approval {
        config = config.allow_self_approval();
    }
    for (name, value) in crate::input::headers(&args.journal.reconcile_headers)? {
        config = config.with_settle_header(name, value);
    }
    for pattern in &args.allow_targets {
        config = config.allow_target(pattern.clone());
    }
    for pattern in &args.allow_mcp_commands {
        config = config.allow_mcp_command(pattern.clone());
    }
    for given in &args.mcp_policies {
        let (pattern, file) = given
            .rsplit_once('=')
            .filter(|(p, f)| !p.trim().is_empty() && !f.is_empty())
            .with_context(|| format!("--mcp-policy {given:?}: give 'PATTERN=FILE'"))?;
        let policies = recourse_gateway::ToolPolicies::read(std::path::Path::new(file))
            .map_err(|e| anyhow::anyhow!("--mcp-policy {e}"))?;
        config = config.with_mcp_policy(pattern, policies);
    }
    for name in &args.mcp_env {
        config = config.pass_mcp_env(name.clone());
    }
    if let Some(shared) = shared {
        config = config.with_shared_state(shared as Arc<dyn SharedState>);
    }
    // Every flag checked before the journal is opened.
    config.clone().build()?;
    let location = settings.journal(args.journal.location());
    if !args.check
        && let Some(location) = server_journal_location(location, "gateway.db")?
        && let Some(journal) = open_server_journal(Some(&location), "gateway.db").await?
    {
        eprintln!("journal: {}", recourse_protocol::redact(&location));
        config = config.with_journal(journal);
    }
    Ok(config.build()?)
}
