//! `recourse call`: run one tool call through the executor and report it.

use std::time::Duration;

use std::sync::Arc;

use anyhow::{Result, bail};
use clap::Args;
use recourse::{
    Action, Call, CallBuilder, CallReport, CorrectionChain, Executor, ExecutorConfig,
    HttpTransport, Outcome, Schema, Transport,
};
use serde_json::Value;

use crate::input;

/// Arguments of `recourse call`.
#[derive(Debug, Args)]
pub(crate) struct CallArgs {
    /// The tool's URL (POSTed with a JSON body); not with --mcp-command / --mcp-url.
    #[arg(
        required_unless_present_any = ["mcp_command", "mcp_url"],
        conflicts_with_all = ["mcp_command", "mcp_url"]
    )]
    url: Option<String>,
    #[command(flatten)]
    mcp: crate::mcp::McpArgs,
    /// The JSON payload, inline or as @FILE.
    #[arg(long)]
    payload: String,
    /// A request header, 'Name: value' (repeatable).
    #[arg(long = "header")]
    headers: Vec<String>,
    /// The capability is not idempotent: send an Idempotency-Key, never resend blindly.
    #[arg(long)]
    non_idempotent: bool,
    /// The capability is a delegated orchestrator: dispatch exactly once.
    #[arg(long)]
    delegated: bool,
    /// A JSON Pointer to a value no correction may change (repeatable).
    #[arg(long = "protect")]
    protect: Vec<String>,
    /// Same-payload resends allowed.
    #[arg(long)]
    max_retries: Option<u32>,
    /// Corrections allowed.
    #[arg(long)]
    max_corrections: Option<u32>,
    /// The whole call's deadline, in seconds.
    #[arg(long)]
    deadline: Option<f64>,
    /// The backoff base, in milliseconds.
    #[arg(long)]
    backoff_ms: Option<u64>,
    /// Each attempt's timeout, in seconds.
    #[arg(long)]
    timeout: Option<f64>,
    /// Reconcile unknown outcomes by GETting this URL template ({key}, {operation_id}).
    #[arg(long, value_name = "URL_TEMPLATE")]
    reconcile: Option<String>,
    /// Record the call and its attempts before dispatch: a SQLite path or postgres:// URL.
    #[arg(long, env = "RECOURSE_JOURNAL", value_name = "PATH|URL")]
    journal: Option<String>,
    /// The capability's input JSON Schema (a file): used by coercion, repair and the correction gate.
    #[arg(long, value_name = "FILE")]
    schema: Option<std::path::PathBuf>,
    /// The user's original request, enabling contextual re-resolution (L4).
    #[arg(long, value_name = "TEXT")]
    intent: Option<String>,
    /// Print one JSON report.
    #[arg(long)]
    json: bool,
}

fn seconds(flag: &str, secs: f64) -> Result<Duration> {
    if !(secs.is_finite() && secs > 0.0) {
        bail!("{flag} must be a positive number of seconds, not {secs}");
    }
    Ok(Duration::try_from_secs_f64(secs)?)
}

impl CallArgs {
    fn config(&self) -> Result<ExecutorConfig> {
        let mut config = ExecutorConfig::from_env()?;
        if let Some(n) = self.max_retries {
            config.limits.max_retries = n;
        }
        if let Some(n) = self.max_corrections {
            config.limits.max_corrections = n;
        }
        if let Some(secs) = self.deadline {
            config.deadline = Some(seconds("--deadline", secs)?);
        }
        if let Some(ms) = self.backoff_ms {
            config.backoff_base = Duration::from_millis(ms);
        }
        if let Some(secs) = self.timeout {
            config.request_timeout = seconds("--timeout", secs)?;
        }
        Ok(config)
    }

    /// The URL, or in MCP mode the tool name.
    fn target(&self) -> Result<String> {
        match &self.url {
            Some(url) if url.starts_with("http://") || url.starts_with("https://") => {
                Ok(url.clone())
            }
            Some(url) => bail!("the URL must start with http:// or https://, not {url:?}"),
            None => self.mcp.tool(),
        }
    }

    /// The call as the flags describe it, not yet checked (an MCP server's
    /// tool description is added before it is built).
    fn call(&self) -> Result<CallBuilder> {
        let target = self.target()?;
        let payload = input::json_or_file("--payload", &self.payload)?;
        if !payload.is_object() {
            bail!("--payload must be a JSON object");
        }
        let mut call = Call::builder(target, payload).idempotent(!self.non_idempotent);
        for (name, value) in input::headers(&self.headers)? {
            call = call.header(name, value);
        }
        for pointer in &self.protect {
            call = call.protect(pointer.clone());
        }
        if self.delegated {
            call = call.delegated();
        }
        if let Some(path) = &self.schema {
            call = call.compiled_schema(read_schema(path)?);
        }
        if let Some(intent) = &self.intent {
            call = call.intent(intent.clone());
        }
        if let Some(template) = &self.reconcile {
            call = call.reconcile_url(template.clone())?;
        }
        Ok(call)
    }
}

/// Reads and compiles `--schema FILE`.
fn read_schema(path: &std::path::Path) -> Result<Schema> {
    let bytes =
        std::fs::read(path).map_err(|e| anyhow::anyhow!("--schema {}: {e}", path.display()))?;
    let schema: Value = serde_json::from_slice(&bytes)
        .map_err(|e| anyhow::anyhow!("--schema {} is not valid JSON: {e}", path.display()))?;
    Schema::compile(&schema).map_err(|e| anyhow::anyhow!("--schema {}: {e}", path.display()))
}

pub(crate) async fn run(args: &CallArgs) -> Result<i32> {
    let config = args.config()?;
    let chain = CorrectionChain::from_env(&config)?;
    let call = args.call()?;
    let (transport, call): (Arc<dyn Transport>, CallBuilder) = match args.mcp.target()? {
        Some(target) => {
            let tool = args.mcp.tool()?;
            crate::mcp::connect(target, &tool, call, config.request_timeout).await?
        }
        None => (Arc::new(HttpTransport::builder().build()?), call),
    };
    let call = call.build()?;
    let mut builder = Executor::standard(transport, config, Arc::new(chain))?;
    if let Some(location) = &args.journal {
        builder = builder.with_journal(recourse::open_journal(location).await?);
    }
    let shown = call.target().to_string();
    let report = builder.build().execute(call).await;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", narrate(&shown, &report));
    }
    Ok(report.outcome.exit_code())
}

/// A readable trace of a call report.
pub(crate) fn narrate(target: &str, report: &CallReport) -> String {
    // HTTP targets are POSTed; anything else names an MCP or in-process tool.
    let verb = if target.starts_with("http://") || target.starts_with("https://") {
        "POST"
    } else {
        "call"
    };
    let mut out = String::new();
    for a in &report.attempts {
        out.push_str(&format!(
            "→ attempt {} ({}) {verb} {target} {}\n",
            a.n,
            a.source.as_str(),
            a.payload
        ));
        let heard = match (&a.status, &a.transport_error) {
            (Some(s), _) if a.action == Action::Succeed => format!("{s} OK"),
            (Some(s), _) => {
                let cat = a
                    .category
                    .as_ref()
                    .map_or("no category".to_owned(), ToString::to_string);
                let code = a
                    .code
                    .as_deref()
                    .map_or(String::new(), |c| format!(" [{c}]"));
                format!("{s} {cat}{code}, retry {}", a.retry_permission)
            }
            (None, Some(t)) => t.to_string(),
            (None, None) => "nothing".to_owned(),
        };
        let mut decided = a.action.name().to_owned();
        if let Some(w) = a.wait_ms() {
            decided.push_str(&format!(", waited {w} ms"));
        }
        if let Action::Stop { reason } = &a.action {
            decided.push_str(&format!(" ({})", reason.code()));
        }
        out.push_str(&format!("  ← {heard} ⇒ {decided}\n"));
        for note in a.notes() {
            out.push_str(&format!("    · {note}\n"));
        }
    }
    out.push_str(&format!(
        "{} after {} attempt(s): {} HTTP call(s), {} LLM call(s)\n",
        report.outcome.name(),
        report.attempts.len(),
        report.http_calls,
        report.llm_calls
    ));
    if let Some(reason) = report.outcome.reason() {
        out.push_str(&format!("reason: {reason}\n"));
    }
    if let Some(error) = report.outcome.error() {
        out.push_str(&format!("error: {}\n", error.redacted()));
    }
    if let Some(key) = &report.idempotency_key {
        out.push_str(&format!("idempotency key: {key}\n"));
    }
    if let Some(op) = &report.operation_id {
        out.push_str(&format!("operation id: {op}\n"));
    }
    let next = report.next();
    match report.stop_kind() {
        Some(kind) => out.push_str(&format!("next: {} (stop kind {kind})\n", next.step)),
        None => out.push_str(&format!("next: {}\n", next.step)),
    }
    if let Some(question) = &next.question {
        out.push_str(&format!("ask the user: {question}\n"));
    }
    out.push_str(&format!("tell the model: {}\n", next.model_message));
    if let Outcome::Succeeded { data } = &report.outcome
        && !data.is_null()
    {
        out.push_str(&format!("{data}\n"));
    }
    out
}
