//! `recourse-bench`: the programs `bench/gateway.sh` runs besides `recourse` itself.
//!
//! - `recourse-bench forward [--port N] [--client reqwest|hyper]`: the floor
//!   of the gateway's stack — an axum server that reads `{"url", "payload"}`,
//!   POSTs the payload there with reqwest (or hyper-util's pooled client over
//!   hyper's HTTP/1, which the gateway sends plain HTTP over) and hands back the tool's status and body
//!   as they came, with none of recourse's logic. Prints `listening on http://ADDR`.
//!   `--answer record` (hyper only) reads the tool's envelope and answers the
//!   gateway's record of the call instead: the floor of the gateway's
//!   contract, not only of its stack.
//! - `recourse-bench library [--calls N] [--rounds R] [--url URL]`: the
//!   library's success path (`Executor::execute`) against a raw reqwest POST
//!   of the same JSON, as CPU time per call of the client's thread, so the
//!   ratio holds on a machine busy with other work.
//! - `recourse-bench mcp-load (--url URL | --command CMD) --tool NAME …`:
//!   a closed loop of MCP `tools/call` through one session, for
//!   `bench/mcp-proxy.sh`; calls per second, latency and the server's CPU
//!   per call, as one line of JSON.
//! - `recourse-bench mcp-forward [--http] -- CMD ARGS…`: the floor of
//!   `recourse mcp proxy` — rmcp's server in front of rmcp's client, every
//!   call handed to the upstream and its answer back, with none of
//!   recourse's logic; over stdio, or Streamable HTTP.

mod cpu;
mod forward;
mod library;
mod mcp;
mod mcp_forward;

use std::process::ExitCode;

/// The allocator `recourse` uses, so the forwarder is the floor of the same stack.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("forward") => forward::run(&args[1..]),
        Some("library") => library::run(&args[1..]),
        Some("mcp-load") => mcp::run(&args[1..]),
        Some("mcp-forward") => mcp_forward::run(&args[1..]),
        _ => Err(USAGE.to_owned()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("recourse-bench: {message}");
            ExitCode::from(2)
        }
    }
}

const USAGE: &str = "usage: recourse-bench forward [--port N] [--client reqwest|hyper] \
                     [--answer relay|record] | \
                     library [--calls N] [--rounds R] [--url URL] [--only reqwest|executor] | \
                     mcp-load (--url URL [--server-pid PID] | --command CMD) --tool NAME \
                     [--args JSON] [--duration SECS] [--concurrency N] | \
                     mcp-forward [--http] -- CMD ARGS…";

/// The value after `--name` in `args`, parsed; `default` when absent.
fn flag<T: std::str::FromStr>(args: &[String], name: &str, default: T) -> Result<T, String> {
    let mut found = None;
    let mut words = args.iter();
    while let Some(word) = words.next() {
        if word == name {
            found = Some(
                words
                    .next()
                    .ok_or_else(|| format!("{name} needs a value"))?,
            );
        } else if !word.starts_with("--") || !known(word) {
            return Err(format!("unexpected argument {word:?}; {USAGE}"));
        } else {
            words.next();
        }
    }
    match found {
        Some(text) => text
            .parse()
            .map_err(|_| format!("{name} {text:?} is not a valid value")),
        None => Ok(default),
    }
}

fn known(word: &str) -> bool {
    matches!(
        word,
        "--port" | "--client" | "--answer" | "--calls" | "--rounds" | "--url" | "--only"
    )
}
