//! `recourse probe`: can recourse trust this tool's errors?
//!
//! Everything recourse decides rests on the tool telling the truth: the
//! category says what may happen next, `retryable` whether resending is
//! welcome, `Retry-After` how long to wait, `details.field` what to correct,
//! and an `Idempotency-Key` that a resent write is not done twice. Many
//! servers do not: some answer 200 with an error inside, some send plain-text
//! 500s (which recourse must route as a transient outage and resend), some
//! write again on a replayed key. The probe sends a fixed battery of
//! requests derived from each tool's schema and scores what comes back the
//! way recourse itself would read it (`recourse_protocol::parse_response`).
//!
//! # Only where pointed, and read-only by default
//!
//! Requests go only to the target given: a manifest endpoint on another
//! origin is never probed, redirects are not followed, every request has a
//! timeout and every answer a size cap. Without `--allow-writes` only tools
//! that say they only read are sent anything: a manifest entry whose method
//! is `GET` or `HEAD`, an MCP tool with `readOnlyHint: true`, an `--endpoint`
//! given `--read-only`. Idempotent is not read-only — a cancel declared
//! idempotent still cancels — so an idempotent `POST` is a write too. With
//! `--allow-writes` the probes of a tool that may write carry fresh
//! idempotency keys, and one not declared idempotent gets the replay check
//! (`replay.rs`).
//!
//! # Verdicts read types
//!
//! Each check is computed from parsed fields — status, category, retry
//! permission, details, the body's structure — never from message wording,
//! except `no_leak`, whose subject is the wording (`leak.rs`).
//!
//! | piece | file |
//! |---|---|
//! | what to probe, manifest reading | `subject.rs` |
//! | schema reading, derived payloads | `schema.rs` |
//! | the battery | `battery.rs` |
//! | sending: HTTP, MCP | `http.rs`, `mcp.rs`, `runner.rs` |
//! | reading answers | `answer.rs` |
//! | checks and verdicts | `check.rs`, `score.rs`, `replay.rs`, `leak.rs` |
//! | the scorecard: JSON, text, HTML | `report.rs`, `html.rs` |

mod answer;
mod battery;
mod check;
mod html;
mod http;
mod leak;
mod mcp;
mod replay;
mod report;
mod runner;
mod schema;
mod score;
mod subject;

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use clap::{ArgGroup, Args};
use recourse::target::{TargetUrl, Url};
use recourse_mcp::McpTarget;
use serde_json::Value;

use crate::glob::Glob;
use crate::input;
use crate::style::Style;
use report::Scorecard;
use runner::{Channel, Runner};
use subject::Subject;

/// Arguments of `recourse probe`.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("target").required(true).args(["url", "endpoint", "mcp_command", "mcp_url"])))]
pub(crate) struct ProbeArgs {
    /// The tool server's base URL; its manifest is read from URL/api/capabilities.
    url: Option<String>,
    /// Probe this one endpoint (POST) instead of a manifest's; needs --schema.
    #[arg(long, value_name = "URL", requires = "schema", conflicts_with_all = ["url", "mcp_command", "mcp_url"])]
    endpoint: Option<String>,
    /// The --endpoint's input JSON Schema (a file).
    #[arg(long, value_name = "FILE", requires = "endpoint")]
    schema: Option<PathBuf>,
    /// The --endpoint only reads (a POST that changes nothing): probe it
    /// without --allow-writes.
    #[arg(long, requires = "endpoint")]
    read_only: bool,
    /// The --endpoint is idempotent: with --allow-writes, no replay check.
    /// Idempotent is not read-only: it does not let the endpoint be probed
    /// without --allow-writes (--read-only does).
    #[arg(long, requires = "endpoint")]
    idempotent: bool,
    /// Probe the tools of the MCP server started as this command, over stdio
    /// (split like a shell splits words; no shell runs it), with a cleared environment.
    #[arg(long, value_name = "\"CMD ARGS\"", conflicts_with_all = ["url", "mcp_url"])]
    mcp_command: Option<String>,
    /// Pass this environment variable to the --mcp-command process (repeatable).
    #[arg(long = "mcp-env", value_name = "NAME", requires = "mcp_command")]
    mcp_env: Vec<String>,
    /// Probe the tools of the MCP server at this streamable HTTP endpoint.
    #[arg(long, value_name = "URL", conflicts_with = "url")]
    mcp_url: Option<String>,
    /// Only tools whose name matches GLOB (repeatable).
    #[arg(long = "tool", value_name = "GLOB")]
    tools: Vec<String>,
    /// The valid payload the battery varies for tool NAME, instead of one
    /// derived from its schema (repeatable; JSON inline or @FILE).
    #[arg(long = "payload", value_name = "NAME=JSON")]
    payloads: Vec<String>,
    /// Also probe tools that may write (every one not declared read-only),
    /// including the idempotency replay check.
    #[arg(long)]
    allow_writes: bool,
    /// A header for every HTTP request, 'Name: value' (repeatable; never printed).
    #[arg(long = "header", value_name = "'NAME: VALUE'", conflicts_with_all = ["mcp_command", "mcp_url"])]
    headers: Vec<String>,
    /// Each request's timeout, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 10.0)]
    timeout: f64,
    /// Print the scorecard as one JSON object.
    #[arg(long)]
    json: bool,
    /// Also write a self-contained HTML report to FILE.
    #[arg(long, value_name = "FILE", value_parser = crate::settings::path)]
    html: Option<PathBuf>,
}

/// Runs the probe: exit 0 when every required check passed, 1 when one failed.
pub(crate) async fn run(args: &ProbeArgs, _settings: &crate::settings::Settings) -> Result<i32> {
    let timeout = timeout(args.timeout)?;
    let filters = args
        .tools
        .iter()
        .map(|g| Glob::new(g).map_err(|e| anyhow!("--tool {g:?}: {e}")))
        .collect::<Result<Vec<_>>>()?;
    let payloads = payloads(&args.payloads)?;
    let (target, channel, subjects, unknown_route) = connect(args, timeout).await?;
    let subjects = select(subjects, &filters, payloads)?;
    let mut runner = Runner::new(channel, args.allow_writes);
    let mut tools = Vec::with_capacity(subjects.len());
    for subject in &subjects {
        tools.push(runner.probe(subject).await);
    }
    let unknown_route = match unknown_route {
        Some(url) => Some(runner.probe_unknown_route(url).await),
        None => None,
    };
    let card = Scorecard {
        target,
        over: runner.over(),
        tools,
        unknown_route,
        requests: runner.sent,
    };
    emit(&card, args)?;
    Ok(if card.required_failed() == 0 { 0 } else { 1 })
}

/// Writes the scorecard as asked: text or `--json` on stdout, `--html` to a file.
fn emit(card: &Scorecard, args: &ProbeArgs) -> Result<()> {
    if let Some(path) = &args.html {
        std::fs::write(path, html::page(card))
            .with_context(|| format!("cannot write the HTML report to {}", path.display()))?;
    }
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&card.to_json())?);
    } else {
        out!("{}", card.to_text(Style::detect()));
        if let Some(path) = &args.html {
            outln!("HTML report: {}", path.display());
        }
    }
    Ok(())
}

fn timeout(secs: f64) -> Result<Duration> {
    if !(secs.is_finite() && secs > 0.0 && secs <= 3600.0) {
        bail!("--timeout must be a number of seconds in (0, 3600], not {secs}");
    }
    Ok(Duration::from_secs_f64(secs))
}

/// What `connect` found: the target as shown, the channel, the tools, and
/// the unknown route to probe (HTTP only).
type Connected = (String, Channel, Vec<Subject>, Option<Url>);

async fn connect(args: &ProbeArgs, timeout: Duration) -> Result<Connected> {
    if let Some(target) = mcp_target(args)? {
        let shown = recourse_protocol::redact(&target.to_string());
        let (channel, tools) = mcp::McpChannel::connect(target, timeout).await?;
        return Ok((shown, Channel::Mcp(channel), subject::from_mcp(tools), None));
    }
    let http = http::HttpChannel::new(input::headers(&args.headers)?, timeout)?;
    if let Some(endpoint) = &args.endpoint {
        let url = parse_url("--endpoint", endpoint)?;
        let schema = read_schema(args.schema.as_deref())?;
        let mut origin = url.clone();
        origin.set_path("/");
        origin.set_query(None);
        let unknown = origin.join("recourse-probe-no-such-route")?;
        let claims = subject::EndpointClaims {
            read_only: args.read_only,
            idempotent: args.idempotent,
        };
        let tool = subject::from_endpoint(url.clone(), schema, claims);
        return Ok((
            subject::shown(&url),
            Channel::Http(http),
            vec![tool],
            Some(unknown),
        ));
    }
    let base = parse_url("the URL", args.url.as_deref().unwrap_or_default())?;
    let (manifest, dir) = subject::manifest_url(&base)?;
    let tools = subject::from_manifest(&http, &manifest, &dir).await?;
    let unknown = dir.join("recourse-probe-no-such-route")?;
    Ok((
        subject::shown(&base),
        Channel::Http(http),
        tools,
        Some(unknown),
    ))
}

fn mcp_target(args: &ProbeArgs) -> Result<Option<McpTarget>> {
    Ok(match (&args.mcp_command, &args.mcp_url) {
        (Some(line), _) => Some(
            McpTarget::command_line(line)
                .context("--mcp-command")?
                .with_pass_env(args.mcp_env.iter().cloned())
                .context("--mcp-env")?,
        ),
        (None, Some(url)) => Some(McpTarget::url(url).context("--mcp-url")?),
        (None, None) => None,
    })
}

fn parse_url(what: &str, text: &str) -> Result<Url> {
    let url = TargetUrl::parse(text).map_err(|e| anyhow!("{what}: {e}"))?;
    Ok(url.url().clone())
}

fn read_schema(path: Option<&std::path::Path>) -> Result<Value> {
    let path = path.ok_or_else(|| anyhow!("--endpoint needs --schema FILE"))?;
    let bytes = std::fs::read(path).with_context(|| format!("--schema {}", path.display()))?;
    let schema: Value = serde_json::from_slice(&bytes)
        .with_context(|| format!("--schema {} is not valid JSON", path.display()))?;
    if !(schema.is_object() || schema.is_boolean()) {
        bail!(
            "--schema {} is not a JSON Schema (an object)",
            path.display()
        );
    }
    Ok(schema)
}

/// `--payload NAME=JSON|@FILE`, each an object; a bare `JSON|@FILE` (no
/// name) is for a probe of one tool.
fn payloads(raw: &[String]) -> Result<Vec<(Option<String>, Value)>> {
    raw.iter()
        .map(|p| {
            let (name, json) = if p.starts_with(['{', '@']) {
                (None, p.as_str())
            } else {
                let (name, json) = p
                    .split_once('=')
                    .filter(|(name, _)| !name.trim().is_empty())
                    .ok_or_else(|| {
                        anyhow!("--payload {p:?} must look like NAME=JSON or NAME=@FILE")
                    })?;
                (Some(name.trim().to_owned()), json)
            };
            let flag = match &name {
                Some(name) => format!("--payload {name}"),
                None => "--payload".to_owned(),
            };
            let value = input::json_or_file(&flag, json)?;
            if !value.is_object() {
                bail!("{flag} must be a JSON object");
            }
            Ok((name, value))
        })
        .collect()
}

/// The subjects `--tool` selects, with `--payload` baselines applied.
fn select(
    subjects: Vec<Subject>,
    filters: &[Glob],
    payloads: Vec<(Option<String>, Value)>,
) -> Result<Vec<Subject>> {
    let mut chosen: Vec<Subject> = subjects
        .into_iter()
        .filter(|s| filters.is_empty() || filters.iter().any(|g| g.matches(&s.name)))
        .collect();
    if chosen.is_empty() {
        bail!(
            "no tool to probe: the target lists none{}",
            if filters.is_empty() {
                ""
            } else {
                " that --tool selects"
            }
        );
    }
    let single = chosen.len() == 1;
    for (name, payload) in payloads {
        let subject = match &name {
            Some(name) => chosen
                .iter_mut()
                .find(|s| s.name == *name)
                .ok_or_else(|| anyhow!("--payload {name}: no probed tool is named {name:?}"))?,
            None if single => &mut chosen[0],
            None => bail!("--payload without NAME= is for a probe of one tool; name the tool"),
        };
        subject.baseline = payload;
    }
    Ok(chosen)
}
