//! `recourse-bench mcp-load`: a closed loop of `tools/call` through one MCP
//! session, as an MCP client's agent loop makes them, and the CPU the
//! server under test spent on them.
//!
//! The session is rmcp's client over Streamable HTTP (`--url`) or over a
//! child process's stdio (`--command`, split on whitespace, no shell).
//! `--concurrency N` tasks share the session, each sending its next call
//! when the last is answered, for `--duration` seconds after a one-second
//! warm-up. The server's CPU is its utime + stime from `/proc/PID/stat`
//! over the measured window: `--server-pid` names it for `--url`; a
//! `--command` child is its own. One line of JSON comes out.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, ClientConfig, ProtocolVersion};
use rmcp::service::{Peer, RoleClient};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use serde_json::{Map, Value, json};

use crate::cpu;

/// What to load and how.
struct Load {
    url: Option<String>,
    command: Option<String>,
    server_pid: Option<u32>,
    tool: String,
    arguments: Map<String, Value>,
    duration: Duration,
    concurrency: usize,
    /// The protocol version the client offers (rmcp's latest unless given).
    protocol: Option<ProtocolVersion>,
}

const USAGE: &str = "mcp-load (--url URL [--server-pid PID] | --command 'CMD ARGS') --tool NAME \
                     [--args JSON] [--duration SECS] [--concurrency N] [--protocol VERSION]";

fn parse(args: &[String]) -> Result<Load, String> {
    let mut load = Load {
        url: None,
        command: None,
        server_pid: None,
        tool: String::new(),
        arguments: Map::new(),
        duration: Duration::from_secs(5),
        concurrency: 8,
        protocol: None,
    };
    let mut words = args.iter();
    while let Some(word) = words.next() {
        let mut value = || {
            words
                .next()
                .cloned()
                .ok_or_else(|| format!("{word} needs a value; {USAGE}"))
        };
        let bad = |what: &str| format!("{word}: not {what}");
        match word.as_str() {
            "--url" => load.url = Some(value()?),
            "--command" => load.command = Some(value()?),
            "--server-pid" => load.server_pid = Some(value()?.parse().map_err(|_| bad("a pid"))?),
            "--tool" => load.tool = value()?,
            "--args" => {
                load.arguments =
                    serde_json::from_str(&value()?).map_err(|_| bad("a JSON object"))?;
            }
            "--duration" => {
                load.duration = Duration::from_secs_f64(
                    value()?.parse().map_err(|_| bad("a number of seconds"))?,
                );
            }
            "--protocol" => {
                load.protocol = Some(
                    serde_json::from_value(Value::String(value()?))
                        .map_err(|_| bad("a protocol version"))?,
                );
            }
            "--concurrency" => {
                load.concurrency = value()?.parse().map_err(|_| bad("a count"))?;
            }
            _ => return Err(format!("unexpected argument {word:?}; {USAGE}")),
        }
    }
    if load.tool.is_empty() || load.url.is_some() == load.command.is_some() || load.concurrency == 0
    {
        return Err(USAGE.to_owned());
    }
    Ok(load)
}

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let load = parse(args)?;
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?
        .block_on(measure(load))
}

async fn measure(load: Load) -> Result<(), String> {
    let mut info = ClientConfig::default();
    if let Some(version) = &load.protocol {
        info.protocol_version = version.clone();
    }
    let (client, pid) = match (&load.url, &load.command) {
        (Some(url), _) => {
            let transport = StreamableHttpClientTransport::from_uri(url.as_str());
            let client = info
                .serve(transport)
                .await
                .map_err(|e| format!("{url}: {e}"))?;
            (client, load.server_pid)
        }
        (_, Some(line)) => {
            let mut words = line.split_whitespace();
            let program = words.next().ok_or("--command is empty")?;
            let mut command = tokio::process::Command::new(program);
            command.args(words).kill_on_drop(true);
            let child = TokioChildProcess::new(command).map_err(|e| format!("{program}: {e}"))?;
            let pid = child.id();
            let client = info
                .serve(child)
                .await
                .map_err(|e| format!("{line}: {e}"))?;
            (client, pid)
        }
        _ => unreachable!("parse requires one of --url and --command"),
    };
    let peer = client.peer().clone();
    let protocol = client
        .peer_info()
        .map(|info| info.protocol_version.to_string());
    let params =
        CallToolRequestParams::new(load.tool.clone()).with_arguments(load.arguments.clone());
    // A first call that fails stops the run: nothing after it would be a figure.
    one(&peer, &params)
        .await
        .map_err(|e| format!("the first call: {e}"))?;

    let measuring = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    let calls = Arc::new(AtomicU64::new(0));
    let errors = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::with_capacity(load.concurrency);
    for _ in 0..load.concurrency {
        let (peer, params) = (peer.clone(), params.clone());
        let (measuring, stop) = (Arc::clone(&measuring), Arc::clone(&stop));
        let (calls, errors) = (Arc::clone(&calls), Arc::clone(&errors));
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                let started = Instant::now();
                let answered = one(&peer, &params).await;
                if measuring.load(Ordering::Relaxed) {
                    match answered {
                        Ok(()) => {
                            calls.fetch_add(1, Ordering::Relaxed);
                            latencies.push(started.elapsed());
                        }
                        Err(_) => {
                            errors.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            }
            latencies
        }));
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let cpu_before = pid.map(cpu::process_cpu).transpose()?;
    let started = Instant::now();
    measuring.store(true, Ordering::Relaxed);
    tokio::time::sleep(load.duration).await;
    measuring.store(false, Ordering::Relaxed);
    let elapsed = started.elapsed();
    let cpu_after = pid.map(cpu::process_cpu).transpose()?;
    stop.store(true, Ordering::Relaxed);
    let mut latencies = Vec::new();
    for task in tasks {
        latencies.extend(task.await.map_err(|e| e.to_string())?);
    }
    latencies.sort_unstable();
    let calls = calls.load(Ordering::Relaxed);
    let quantile = |q: f64| {
        latencies
            .get(((latencies.len() as f64 * q) as usize).min(latencies.len().saturating_sub(1)))
            .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
    };
    let cpu_us_per_call = match (cpu_before, cpu_after) {
        (Some(before), Some(after)) if calls > 0 => {
            Some((after - before).as_secs_f64() * 1e6 / calls as f64)
        }
        _ => None,
    };
    println!(
        "{}",
        json!({
            "calls": calls,
            "errors": errors.load(Ordering::Relaxed),
            "seconds": elapsed.as_secs_f64(),
            "calls_per_sec": calls as f64 / elapsed.as_secs_f64(),
            "p50_ms": quantile(0.50),
            "p99_ms": quantile(0.99),
            "server_cpu_us_per_call": cpu_us_per_call,
            "protocol": protocol,
        })
    );
    drop(client);
    Ok(())
}

/// How long one call may take: a server that dies mid-run leaves calls no
/// answer will ever come to, and the run must still end.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// One call; a result with `isError`, or no answer within [`CALL_TIMEOUT`],
/// counts as a failure.
async fn one(peer: &Peer<RoleClient>, params: &CallToolRequestParams) -> Result<(), String> {
    let result = tokio::time::timeout(CALL_TIMEOUT, peer.call_tool(params.clone()))
        .await
        .map_err(|_| format!("no answer within {CALL_TIMEOUT:?}"))?
        .map_err(|e| e.to_string())?;
    match result.is_error {
        Some(true) => Err(format!("isError: {:?}", result.content)),
        _ => Ok(()),
    }
}
