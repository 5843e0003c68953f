//! `recourse probe`: the probe (`recourse-probe`) with flags — what to
//! probe, which tools, whether writes are allowed — printed as text or
//! JSON, and written as HTML.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use clap::{ArgGroup, Args};
use recourse_mcp::McpTarget;
use recourse_probe::{EndpointClaims, ProbeOptions, ProbeScorecard, ProbeTarget};
use serde_json::Value;

use crate::glob::Glob;
use crate::input;
use crate::style::Style;

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
    let card = recourse_probe::probe(target(args)?, options(args)?).await?;
    emit(&card, args)?;
    Ok(if card.required_failed() == 0 { 0 } else { 1 })
}

/// Writes the scorecard as asked: text or `--json` on stdout, `--html` to a file.
fn emit(card: &ProbeScorecard, args: &ProbeArgs) -> Result<()> {
    if let Some(path) = &args.html {
        std::fs::write(path, card.to_html())
            .with_context(|| format!("cannot write the HTML report to {}", path.display()))?;
    }
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&card.to_json())?);
    } else {
        out!("{}", card.to_text(Style::detect().is_color()));
        if let Some(path) = &args.html {
            outln!("HTML report: {}", path.display());
        }
    }
    Ok(())
}

/// What the flags point the probe at.
fn target(args: &ProbeArgs) -> Result<ProbeTarget> {
    if let Some(line) = &args.mcp_command {
        let target = McpTarget::command_line(line)
            .context("--mcp-command")?
            .with_pass_env(args.mcp_env.iter().cloned())
            .context("--mcp-env")?;
        return Ok(ProbeTarget::mcp(target));
    }
    if let Some(url) = &args.mcp_url {
        return Ok(ProbeTarget::mcp(McpTarget::url(url).context("--mcp-url")?));
    }
    if let Some(endpoint) = &args.endpoint {
        let claims = EndpointClaims {
            read_only: args.read_only,
            idempotent: args.idempotent,
        };
        let schema = read_schema(args.schema.as_deref())?;
        return Ok(ProbeTarget::endpoint(endpoint, schema, claims)?);
    }
    Ok(ProbeTarget::manifest(
        args.url.as_deref().unwrap_or_default(),
    )?)
}

/// How the flags have the probe go.
fn options(args: &ProbeArgs) -> Result<ProbeOptions> {
    let secs = args.timeout;
    if !(secs.is_finite() && secs > 0.0 && secs <= 3600.0) {
        bail!("--timeout must be a number of seconds in (0, 3600], not {secs}");
    }
    let mut options = ProbeOptions::new().with_timeout(Duration::from_secs_f64(secs));
    if args.allow_writes {
        options = options.allow_writes();
    }
    for (name, value) in input::headers(&args.headers)? {
        options = options.with_header(name, value);
    }
    if !args.tools.is_empty() {
        let globs = args
            .tools
            .iter()
            .map(|g| Glob::new(g).map_err(|e| anyhow!("--tool {g:?}: {e}")))
            .collect::<Result<Vec<_>>>()?;
        options = options.only(move |name| globs.iter().any(|g| g.matches(name)));
    }
    for (name, payload) in payloads(&args.payloads)? {
        options = options.with_payload(name.as_deref(), payload);
    }
    Ok(options)
}

fn read_schema(path: Option<&std::path::Path>) -> Result<Value> {
    let path = path.ok_or_else(|| anyhow!("--endpoint needs --schema FILE"))?;
    let bytes = std::fs::read(path).with_context(|| format!("--schema {}", path.display()))?;
    serde_json::from_slice(&bytes)
        .with_context(|| format!("--schema {} is not valid JSON", path.display()))
}

/// `--payload NAME=JSON|@FILE`; a bare `JSON|@FILE` (no name) is for a
/// probe of one tool.
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
            Ok((name, input::json_or_file(&flag, json)?))
        })
        .collect()
}
