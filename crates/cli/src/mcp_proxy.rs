//! `recourse mcp proxy`: an MCP server on stdio (or, with `--http`, over
//! Streamable HTTP) in front of MCP servers, every `tools/call` run through
//! the executor (`recourse-mcp-proxy`).

mod http;

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use recourse::shared::{RedisSharedState, SharedState};
use recourse_mcp::{ChildEnv, McpTarget};
use recourse_mcp_proxy::{McpProxy, ToolPolicies, Upstream};

use crate::executor_args::ExecutorArgs;
use crate::mcp_access;
use crate::mcp_login::{self, LoginArgs, LogoutArgs};
use crate::settings::Settings;

/// `recourse mcp …`.
#[derive(Debug, Subcommand)]
pub(crate) enum McpCommand {
    /// Serve MCP on stdio (or over Streamable HTTP) in front of MCP servers: every tools/call
    /// runs through recourse (resend what is safe, settle a write whose outcome is unknown,
    /// stop honestly).
    #[command(
        after_help = "Example: recourse mcp proxy -- npx -y @modelcontextprotocol/server-filesystem /srv/data
Example: recourse mcp proxy --tools tools.json --upstream 'time=uvx mcp-server-time' \\
      --upstream 'fs=npx -y @modelcontextprotocol/server-filesystem /srv/data'
Example: recourse mcp proxy --http --port 8790 -- uvx mcp-server-time

On stdio, stdout carries MCP only; diagnostics go to stderr. With --http, the first stdout line is
'recourse mcp proxy listening on http://ADDR:PORT/mcp'. The policy file and client setup: docs/mcp-proxy.md."
    )]
    Proxy(Box<ProxyArgs>),
    /// Log in to a remote MCP server (OAuth, in a browser) and keep its tokens for
    /// `recourse mcp proxy --upstream NAME=URL`.
    #[command(
        after_help = "Example: recourse mcp login linear=https://mcp.linear.app/mcp

The server's 401 names its authorization server; recourse registers as a client, prints the URL to
open (and opens it where it can), takes the browser's redirect on a loopback port, and keeps the
tokens 0600 in $XDG_STATE_HOME/recourse/oauth/ (~/.local/state/recourse/oauth/), one file per URL.
The proxy renews them before they expire. docs/remote.md."
    )]
    Login(LoginArgs),
    /// Forget the tokens `recourse mcp login` kept for a server.
    #[command(after_help = "Example: recourse mcp logout linear=https://mcp.linear.app/mcp")]
    Logout(LogoutArgs),
}

/// Arguments of `recourse mcp proxy`.
#[derive(Debug, Args)]
pub(crate) struct ProxyArgs {
    /// An MCP server to stand in front of: NAME=CMD ARGS (started over stdio; split as a shell
    /// splits words, never run by one) or NAME=https://HOST/mcp (or http://). NAME is 1 to 32
    /// letters, digits and hyphens. Repeatable; with several, each tool is offered as NAME__TOOL.
    /// Not with -- CMD.
    #[arg(
        long = "upstream",
        value_name = "NAME=CMD ARGS",
        conflicts_with = "command"
    )]
    upstreams: Vec<String>,
    #[arg(long = "upstream-header", value_name = "NAME='Header: value'", help = mcp_access::HEADER_HELP)]
    headers: Vec<String>,
    /// Pass this environment variable to stdio upstreams too, though recourse reads it
    /// (RECOURSE_*, OPENAI_*, OTEL_*) or --mcp-env-clear is given. Repeatable.
    #[arg(long = "mcp-env", value_name = "NAME")]
    mcp_env: Vec<String>,
    /// Start stdio upstreams with only PATH, HOME, LANG, LANGUAGE, LC_*, TZ and the --mcp-env
    /// variables, rather than the proxy's environment (what the client's config set) less the
    /// variables recourse reads.
    #[arg(long = "mcp-env-clear")]
    mcp_env_clear: bool,
    /// The policy file, {"tools": {"NAME": {"idempotent", "verify", "protect", "max_retries",
    /// "approval"}}}, NAME as offered: whether a tool may be resent, how to read a write back when
    /// its answer is lost, what no correction may change, how often it may be resent, and whether
    /// a person approves each call first.
    #[arg(long, value_name = "FILE", value_parser = crate::settings::path)]
    tools: Option<PathBuf>,
    #[command(flatten)]
    executor: ExecutorArgs,
    #[command(flatten)]
    http: http::HttpArgs,
    /// Where calls that may write are journaled: a SQLite path, a postgres:// URL, or `none`
    /// (then a client's idempotency key is refused) [env: RECOURSE_JOURNAL]
    /// [default: $XDG_STATE_HOME/recourse/mcp-proxy.db].
    #[arg(long, value_name = "PATH|URL|none", value_parser = crate::settings::location)]
    journal: Option<String>,
    /// Share the retry budget and circuit breakers with every proxy and gateway using this
    /// Redis, redis://[:PASSWORD@]HOST[:PORT][/DB] [env: RECOURSE_SHARED_STATE].
    #[arg(long = "shared-state", value_name = "URL", value_parser = crate::settings::location)]
    shared_state: Option<String>,
    /// The one MCP server to stand in front of, started over stdio with these arguments as
    /// they are; its tools keep their names.
    #[arg(last = true, value_name = "CMD ARGS")]
    command: Vec<String>,
}

/// Runs `recourse mcp …`.
pub(crate) async fn run(command: &McpCommand, settings: &Settings) -> Result<i32> {
    match command {
        McpCommand::Proxy(args) => match proxy(args, settings).await {
            // Over stdio, a proxy that could not start still answers its
            // client, with the reason: clients show nobody a server's stderr.
            Err(error) if !args.http.enabled() => refuse(&error).await,
            served => served,
        },
        McpCommand::Login(args) => mcp_login::login(args).await,
        McpCommand::Logout(args) => mcp_login::logout(args),
    }
}

/// Whether `command` serves its client on stdio (a client started it).
pub(crate) fn serves_stdio(command: &McpCommand) -> bool {
    matches!(command, McpCommand::Proxy(args) if !args.http.enabled())
}

/// Whether the command line `args` (the program first) asks for a proxy
/// on stdio, though it does not parse: `mcp proxy` its first two words
/// past the global flags, no `--http` before `--`.
pub(crate) fn serves_stdio_in(args: impl IntoIterator<Item = String>) -> bool {
    let ours: Vec<String> = args.into_iter().skip(1).take_while(|a| a != "--").collect();
    let mut words = ours.iter().map(String::as_str);
    let mut command = Vec::with_capacity(2);
    while command.len() < 2
        && let Some(word) = words.next()
    {
        match word {
            // The one global flag that takes a value.
            "--ca-file" => {
                words.next();
            }
            flag if flag.starts_with('-') => {}
            word => command.push(word),
        }
    }
    command == ["mcp", "proxy"] && !ours.iter().any(|a| a == "--http")
}

/// Says why the proxy could not start on stderr, then answers every
/// request of the client on stdio with it until the client closes stdin
/// (or SIGTERM, Ctrl-C).
pub(crate) async fn refuse(error: &anyhow::Error) -> Result<i32> {
    let why = format!("recourse mcp proxy: {error:#}");
    eprintln!("{why}");
    let stop = stop_signal()?;
    tokio::select! {
        refused = recourse_mcp_proxy::refuse_stdio(&why) => {
            refused.context("answering the client on stdio")?;
        }
        () = stop => {}
    }
    Ok(2)
}

/// SIGTERM or SIGINT (Ctrl-C), listened for from the moment this returns:
/// the proxy then stops as it does when its client closes stdin.
fn stop_signal() -> Result<Pin<Box<dyn Future<Output = ()> + Send>>> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut term = signal(SignalKind::terminate()).context("listening for SIGTERM")?;
        let mut interrupt = signal(SignalKind::interrupt()).context("listening for SIGINT")?;
        Ok(Box::pin(async move {
            tokio::select! {
                _ = term.recv() => {}
                _ = interrupt.recv() => {}
            }
        }))
    }
    #[cfg(not(unix))]
    {
        Ok(Box::pin(async {
            let _ = tokio::signal::ctrl_c().await;
        }))
    }
}

async fn proxy(args: &ProxyArgs, settings: &Settings) -> Result<i32> {
    // With --http: who may call, checked before anything starts.
    let exposure = args.http.exposure(settings)?;
    // A signal stops the proxy from here on, starting upstreams included.
    let mut stop = stop_signal()?;
    let mut config = settings.executor.clone();
    args.executor.apply(&mut config);
    let chain = Arc::new(settings.chain(&config)?);
    let policies = match &args.tools {
        Some(path) => ToolPolicies::read(path).map_err(|e| anyhow::anyhow!("--tools {e}"))?,
        None => ToolPolicies::default(),
    };
    let mut builder = McpProxy::builder(config.clone())
        .with_corrector(chain)
        .with_policies(policies)
        .with_warnings(|line| eprintln!("recourse mcp proxy: {line}"));
    for upstream in upstreams(args)? {
        builder = builder.upstream(upstream);
    }
    if let Some(url) = args.shared_state.as_deref().or(settings.shared_state()) {
        let state =
            RedisSharedState::builder(url).map_err(|e| anyhow::anyhow!("--shared-state: {e}"))?;
        let state = recourse_gateway::connect_shared_state(state, |line| eprintln!("{line}")).await;
        builder = builder.with_shared_state(state as Arc<dyn SharedState>);
    }
    // Every flag is checked before the journal is opened, and the port taken.
    builder.check()?;
    let listener = match &exposure {
        Some(_) => Some(http::bind(&args.http).await?),
        None => None,
    };
    let location = settings.journal(args.journal.as_deref());
    let location = recourse_gateway::server_journal_location(location, "mcp-proxy.db")?;
    let journal = match &location {
        Some(location) => {
            recourse_gateway::open_server_journal(Some(location), "mcp-proxy.db").await?
        }
        None => None,
    };
    let journal_words = match (&journal, &location) {
        (Some(_), Some(location)) => format!("journal {}", recourse_protocol::redact(location)),
        _ => "no journal".to_owned(),
    };
    if let Some(journal) = journal {
        builder = builder.with_journal(journal);
    }
    let proxy = tokio::select! {
        proxy = builder.connect() => proxy?,
        () = &mut stop => return Ok(0),
    };
    // Calls a killed proxy left in flight are settled once their lease runs out.
    proxy.sweep(|line| eprintln!("recourse mcp proxy: {line}"));
    eprintln!(
        "recourse mcp proxy: offering {} tool(s) from {} upstream(s), {journal_words}",
        proxy.tool_names().len(),
        proxy.upstreams().count()
    );
    let calls_left = match (exposure, listener) {
        (Some(exposure), Some(listener)) => {
            http::serve(proxy, listener, &args.http, exposure, settings).await?
        }
        _ => {
            let grace = proxy.calls_grace();
            proxy.serve_stdio_until(grace, stop).await?.calls_left
        }
    };
    if calls_left > 0 {
        eprintln!(
            "recourse mcp proxy: stopped with {} call(s) still running, left in flight in the \
             journal (the next proxy on this journal, or recourse journal reconcile, settles them \
             once their lease expires)",
            calls_left
        );
    }
    Ok(0)
}

/// The upstreams the flags name: `-- CMD ARGS`, or each `--upstream`.
fn upstreams(args: &ProxyArgs) -> Result<Vec<Upstream>> {
    let upstreams = match args.command.split_first() {
        Some((program, rest)) => vec![Upstream::unnamed(McpTarget::Command {
            program: program.clone(),
            args: rest.to_vec(),
            pass_env: Vec::new(),
            env: ChildEnv::Cleared,
        })],
        None => args
            .upstreams
            .iter()
            .map(|arg| Upstream::parse(arg))
            .collect::<Result<_, _>>()?,
    };
    // The client's config gave the proxy the server's environment (`env`);
    // recourse's own variables, and those a header reads, were meant for
    // the proxy and the server the header goes to.
    let withheld: Vec<String> = crate::settings::OURS
        .iter()
        .map(|prefix| format!("{prefix}*"))
        .chain(mcp_access::header_variables(&args.headers))
        .collect();
    let inherit = |u: Upstream| match args.mcp_env_clear {
        true => u,
        false => u.with_inherited_env(withheld.iter().cloned()),
    };
    let upstreams = upstreams
        .into_iter()
        .map(|u| u.with_pass_env(args.mcp_env.iter().cloned()).map(inherit))
        .collect::<Result<_, _>>()
        .context("--mcp-env")?;
    mcp_access::with_access(upstreams, &args.headers)
}

#[cfg(test)]
mod tests {
    use super::serves_stdio_in;

    #[test]
    fn a_stdio_proxy_is_known_by_its_words_though_its_flags_do_not_parse() {
        let words = |line: &str| {
            std::iter::once("recourse".to_owned())
                .chain(line.split_whitespace().map(str::to_owned))
                .collect::<Vec<_>>()
        };
        for stdio in [
            "mcp proxy --jounral x -- server",
            "--ca-file ca.pem mcp proxy --upstream a=x -- y",
            "mcp proxy -- server --http",
        ] {
            assert!(serves_stdio_in(words(stdio)), "{stdio}");
        }
        for other in [
            "mcp proxy --http --port x -- server",
            "mcp login x",
            "call --payload mcp proxy",
            "serve --bogus",
            "",
        ] {
            assert!(!serves_stdio_in(words(other)), "{other}");
        }
    }
}
