//! `recourse`: run tool calls the way a careful engineer would, and explain why.
//!
//! The command's library: its flags, and each command as a module that reads
//! them and prints. The `recourse` binary (`main.rs`) only calls [`main`];
//! the command is a library so that it compiles as soon as the crates it
//! uses are known, not after they are built (a cold build's last minutes).

/// `print!` that ends the command quietly when stdout is closed (see `out.rs`).
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::out::write(format_args!($($arg)*))?
    };
}

/// `println!` that ends the command quietly when stdout is closed (see `out.rs`).
macro_rules! outln {
    () => {
        $crate::out::write(format_args!("\n"))?
    };
    ($($arg:tt)*) => {
        $crate::out::write(format_args!("{}\n", format_args!($($arg)*)))?
    };
}

mod approvals;
mod approve;
mod call;
mod debug;
mod demo;
mod eval;
mod executor_args;
mod explain;
mod glob;
mod healthcheck;
mod input;
mod journal;
mod mcp;
mod mcp_access;
mod mcp_login;
mod mcp_proxy;
mod out;
mod probe;
mod selfdoc;
mod serve;
mod server_limits;
mod settings;
mod stdin_watch;
mod style;
mod telemetry;
mod tools;
mod workflow;

use std::process::ExitCode;

/// mimalloc rather than the system allocator: a call through the gateway
/// makes dozens of small allocations (52 for a read), and glibc's malloc and
/// free were about a fifth of its instructions (CHANGELOG.md, release 0.1.0,
/// *Performance*: 4ee1a65).
/// Built without transparent huge pages (the workspace's `no_thp`), which
/// cost resident memory per in-flight call and bought no speed.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use clap::{Parser, Subcommand};

/// recourse: structured tool failures, handled the way a careful engineer would.
#[derive(Debug, Parser)]
#[command(
    name = "recourse",
    version = env!("RECOURSE_LONG_VERSION"),
    about,
    after_help = "Example: recourse demo"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Trust the certificate authorities in this PEM file besides the platform's, for every
    /// https server recourse reaches: MCP servers, tools, lookups and read-backs, OAuth endpoints
    /// [env: RECOURSE_CA_FILE].
    #[arg(long = "ca-file", value_name = "PEM", global = true, value_parser = settings::path)]
    ca_file: Option<std::path::PathBuf>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Watch recourse handle real tool failures, offline, in under a minute.
    #[command(after_help = r#"Example: recourse demo"#)]
    Demo,
    /// Score how recoveries go across the scenario suite: success, false recoveries,
    /// unnecessary stops and pass^k per category.
    #[command(after_help = r#"Example: recourse eval --k 3 --scenario 'rate_*'"#)]
    Eval(eval::EvalArgs),
    /// Explain what a tool response means and what the policy would do next.
    #[command(after_help = r#"Example: recourse explain --status 503"#)]
    Explain(explain::ExplainArgs),
    /// Call a tool over HTTP through the executor and report every attempt.
    #[command(
        after_help = r#"Example: recourse call http://127.0.0.1:8700/api/stock/quote --payload '{"symbol": "TSLA"}'"#
    )]
    Call(Box<call::CallArgs>),
    /// Serve the executor over HTTP (POST /v1/calls, /healthz, /readyz, /metrics, /openapi.json).
    #[command(
        after_help = r#"Example: RECOURSE_GATEWAY_TOKEN=$(openssl rand -hex 32) recourse serve --port 8780"#
    )]
    Serve(Box<serve::ServeArgs>),
    /// Inspect and settle the journal of calls.
    #[command(
        after_help = r#"Example: recourse journal --journal recourse.db list --state unknown"#
    )]
    Journal(journal::JournalArgs),
    /// Read and decide a gateway's approvals: what each would send, then approve or reject it.
    #[command(
        after_help = r#"Example: RECOURSE_GATEWAY_TOKEN=$LEAD_TOKEN recourse approvals list"#
    )]
    Approvals(approvals::ApprovalsArgs),
    /// Check a tool's error reporting: a fixed battery of bad requests, scored per check.
    #[command(after_help = r#"Example: recourse probe http://127.0.0.1:8700"#)]
    Probe(Box<probe::ProbeArgs>),
    /// Run a plan's steps as a workflow: references, concurrency, approvals, L4 over the trajectory.
    #[command(after_help = r#"Example: recourse run plan.json"#)]
    Run(workflow::RunArgs),
    /// Look at what recourse recorded for debugging (the model exchanges).
    #[command(after_help = r#"Example: recourse debug llm --dir ./llm-debug"#)]
    Debug(debug::DebugArgs),
    /// Put recourse between MCP clients and MCP servers.
    #[command(
        after_help = "Example: recourse mcp proxy -- npx -y @modelcontextprotocol/server-filesystem /srv/data"
    )]
    Mcp {
        #[command(subcommand)]
        command: mcp_proxy::McpCommand,
    },
    /// Run the reference tools.
    #[command(
        after_help = r#"Example: recourse tools serve --port 8700 --fault exports:crash_after_commit:1.0"#
    )]
    Tools {
        #[command(subcommand)]
        command: ToolsCommand,
    },
    /// Write a completion script for a shell to stdout.
    #[command(
        after_help = "Example: recourse completions bash > ~/.local/share/bash-completion/completions/recourse"
    )]
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: selfdoc::Shell,
    },
    /// Write the man page, recourse(1), to stdout.
    #[command(
        after_help = "Example: recourse man > ~/.local/share/man/man1/recourse.1 && man recourse"
    )]
    Man,
    /// Exit 0 when URL answers 200 within a second, else 1 (a container's health check).
    #[command(after_help = "Example: recourse healthcheck http://127.0.0.1:8780/readyz")]
    Healthcheck(healthcheck::HealthcheckArgs),
}

#[derive(Debug, Subcommand)]
enum ToolsCommand {
    /// Serve the five reference tools (on 127.0.0.1 unless --bind), with optional faults.
    #[command(
        after_help = r#"Example: recourse tools serve --port 8700 --fault exports:crash_after_commit:1.0"#
    )]
    Serve(tools::ToolsServeArgs),
}

/// Exit code for usage and configuration errors.
const USAGE: u8 = 2;

/// Runs the `recourse` command with this process's arguments and
/// environment, and gives its exit code.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // A client started a proxy with flags it cannot use: its client
        // is told why, not left with a closed connection.
        Err(error) if error.use_stderr() && mcp_proxy::serves_stdio_in(std::env::args()) => {
            let why = error.render().to_string();
            return exit(refuse_now(anyhow::anyhow!(why.trim().to_owned())));
        }
        Err(error) => error.exit(),
    };
    // The command describing itself needs no configuration.
    match &cli.command {
        Command::Completions { shell } => return exit(selfdoc::completions::<Cli>(*shell)),
        Command::Man => return exit(selfdoc::man::<Cli>()),
        Command::Healthcheck(args) => return ExitCode::from(healthcheck::run(args)),
        _ => {}
    }
    // Configuration first, the same way for every command: a bad RECOURSE_*
    // value stops it before it prints anything.
    let settings = match settings::Settings::from_env() {
        Ok(settings) => settings,
        Err(error) => {
            if let Command::Mcp { command } = &cli.command
                && mcp_proxy::serves_stdio(command)
            {
                return exit(refuse_now(anyhow::Error::new(error)));
            }
            eprintln!("recourse: {error}");
            return ExitCode::from(USAGE);
        }
    };
    let s = &settings;
    // Before any client is built: every https client trusts these roots.
    if let Some(path) = cli.ca_file.as_deref().or(s.ca_file())
        && let Err(error) = recourse::tls::trust_ca_file(path)
    {
        return exit(match &cli.command {
            Command::Mcp { command } if mcp_proxy::serves_stdio(command) => {
                block_on(s, mcp_proxy::refuse(&anyhow::Error::new(error)))
            }
            _ => Err(error.into()),
        });
    }
    let result = match &cli.command {
        Command::Explain(args) => explain::run(args, s),
        Command::Debug(args) => debug::run(args, s),
        Command::Demo => block_on(s, demo::run(s)),
        Command::Eval(args) => block_on(s, eval::run(args, s)),
        Command::Call(args) => block_on(s, call::run(args, s)),
        Command::Serve(args) => block_on(s, serve::serve(args, s)),
        Command::Journal(args) => block_on(s, journal::run(args, s)),
        Command::Approvals(args) => block_on(s, approvals::run(args, s)),
        Command::Probe(args) => block_on(s, probe::run(args, s)),
        Command::Run(args) => block_on(s, workflow::run(args, s)),
        Command::Mcp { command } => block_on(s, mcp_proxy::run(command, s)),
        Command::Tools {
            command: ToolsCommand::Serve(args),
        } => block_on(s, async { tools::serve(args.clone()).await.map(|()| 0) }),
        Command::Completions { .. } | Command::Man | Command::Healthcheck(_) => Ok(0),
    };
    exit(result)
}

/// The process's exit for a command's result: its code, or 2 with the error.
fn exit(result: anyhow::Result<i32>) -> ExitCode {
    match result {
        Ok(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        // The reader of stdout has what it wanted (`| head -1`): done.
        Err(error) if out::is_closed(&error) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("recourse: {error:#}");
            ExitCode::from(USAGE)
        }
    }
}

/// A stdio proxy that cannot start before its settings are read: says why,
/// and answers its client with it ([`mcp_proxy::refuse`]).
fn refuse_now(error: anyhow::Error) -> anyhow::Result<i32> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(mcp_proxy::refuse(&error))
}

/// Runs `command` on a new runtime, with telemetry exporting while it runs
/// and flushed when it ends (before the runtime it sends on goes away).
fn block_on(
    settings: &settings::Settings,
    command: impl std::future::Future<Output = anyhow::Result<i32>>,
) -> anyhow::Result<i32> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let telemetry = telemetry::Telemetry::start(&settings.telemetry, runtime.handle())?;
    let result = runtime.block_on(command);
    telemetry.shutdown();
    result
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// Every command a person can run shows an example in its `--help`.
    #[test]
    fn every_subcommands_help_has_an_example() {
        fn walk(command: &clap::Command, path: &str, missing: &mut Vec<String>) {
            for sub in command.get_subcommands() {
                let path = format!("{path} {}", sub.get_name());
                let help = sub
                    .get_after_help()
                    .or(sub.get_after_long_help())
                    .map(ToString::to_string)
                    .unwrap_or_default();
                if !help.contains("Example: recourse") && !help.contains("Example: RECOURSE_") {
                    missing.push(path.clone());
                }
                walk(sub, &path, missing);
            }
        }
        let mut missing = Vec::new();
        walk(&super::Cli::command(), "recourse", &mut missing);
        assert!(missing.is_empty(), "no example in --help: {missing:?}");
    }

    /// Every command and its `--help`, short and long, by its path.
    fn every_help() -> Vec<(String, String)> {
        fn walk(command: &mut clap::Command, path: &str, out: &mut Vec<(String, String)>) {
            out.push((path.to_owned(), command.render_help().to_string()));
            out.push((path.to_owned(), command.render_long_help().to_string()));
            for sub in command.get_subcommands_mut() {
                let path = format!("{path} {}", sub.get_name());
                walk(sub, &path, out);
            }
        }
        let mut out = Vec::new();
        let mut root = super::Cli::command();
        root.build();
        walk(&mut root, "recourse", &mut out);
        out
    }

    /// No help shows an environment variable's value, or an empty one
    /// (`[env: NAME=]`): the help says which variable, never what it holds.
    #[test]
    fn no_help_shows_an_environment_value() {
        let shown: Vec<String> = every_help()
            .into_iter()
            .filter_map(|(path, help)| {
                let at = help.find("[env: ")?;
                let name_end = help[at..].find([']', '=']).map(|i| at + i)?;
                (help.as_bytes()[name_end] == b'=').then(|| format!("{path}: {}", &help[at..]))
            })
            .collect();
        assert!(shown.is_empty(), "{shown:#?}");
        let tokens = every_help()
            .into_iter()
            .any(|(_, help)| help.contains("[env: RECOURSE_GATEWAY_TOKENS]"));
        assert!(tokens, "the variable is still named");
    }

    /// `mcp proxy --tools` names every key a tool's policy may have.
    #[test]
    fn the_proxys_tools_help_names_every_policy_key() {
        let root = super::Cli::command();
        let proxy = root
            .find_subcommand("mcp")
            .and_then(|mcp| mcp.find_subcommand("proxy"))
            .expect("recourse mcp proxy");
        let tools = proxy
            .get_arguments()
            .find(|a| a.get_id() == "tools")
            .and_then(|a| a.get_help())
            .map(ToString::to_string)
            .unwrap_or_default();
        for key in recourse_mcp_proxy::ToolPolicies::KEYS {
            assert!(tools.contains(&format!("\"{key}\"")), "{key} in {tools}");
        }
    }
}
