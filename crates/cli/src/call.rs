//! `recourse call`: run one tool call through the executor and report it.

use std::time::Duration;

use std::sync::Arc;

use anyhow::{Result, bail};
use clap::Args;
use recourse::correction::Schema;
use recourse::idempotency::Evidence;
use recourse::record::OutcomeKind;
use recourse::verify::AbsentWhen;
use recourse::{
    Action, Call, CallBuilder, CallReport, CallSpec, Executor, ExecutorConfig, HttpTransport,
    Method, Outcome, Target, Transport, VerifySpec,
};
use serde_json::Value;

use crate::input;
use crate::settings::Settings;

/// Arguments of `recourse call`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("target").required(true).args(["url", "mcp_command", "mcp_url"])))]
pub(crate) struct CallArgs {
    /// The tool's URL (POSTed with a JSON body); not with --mcp-command / --mcp-url.
    #[arg(conflicts_with_all = ["mcp_command", "mcp_url"])]
    url: Option<String>,
    #[command(flatten)]
    mcp: crate::mcp::McpArgs,
    /// The JSON payload, inline or as @FILE.
    #[arg(long)]
    payload: String,
    /// A request header, 'Name: value' (repeatable).
    #[arg(long = "header")]
    headers: Vec<String>,
    #[command(flatten)]
    idempotency: IdempotencyArgs,
    /// A JSON Pointer to a value no correction may change (repeatable).
    #[arg(long = "protect")]
    protect: Vec<String>,
    #[command(flatten)]
    limits: LimitArgs,
    /// Reconcile unknown outcomes by GETting this URL template ({key}, {operation_id}).
    #[arg(long, value_name = "URL_TEMPLATE")]
    reconcile: Option<String>,
    #[command(flatten)]
    verify: VerifyArgs,
    /// Record the call and its attempts before dispatch: a SQLite path or postgres:// URL
    /// [env: RECOURSE_JOURNAL].
    #[arg(long, value_name = "PATH|URL", value_parser = crate::settings::location)]
    journal: Option<String>,
    /// The capability's input JSON Schema (a file): used by coercion, repair and the correction gate.
    #[arg(long, value_name = "FILE", value_parser = crate::settings::path)]
    schema: Option<std::path::PathBuf>,
    /// The user's original request, enabling contextual re-resolution (L4).
    #[arg(long, value_name = "TEXT")]
    intent: Option<String>,
    #[command(flatten)]
    lease: crate::settings::LeaseArg,
    /// Print one JSON report.
    #[arg(long)]
    json: bool,
}

/// How `recourse call` is told whether the call may be resent.
#[derive(Debug, Args)]
struct IdempotencyArgs {
    /// The capability is not idempotent: send an Idempotency-Key, never resend after an
    /// uncertain outcome. Without --idempotent or --non-idempotent, the tool's manifest, then
    /// the method decide; otherwise the call is not idempotent.
    #[arg(long, conflicts_with = "idempotent")]
    non_idempotent: bool,
    /// The capability is idempotent: resending it is harmless.
    #[arg(long)]
    idempotent: bool,
    /// Use this idempotency key (1–255 visible ASCII characters) on every attempt.
    #[arg(long, value_name = "KEY")]
    idempotency_key: Option<String>,
    /// The HTTP method: POST (default), PUT, PATCH with the payload as a JSON body; GET, HEAD,
    /// OPTIONS, DELETE with it as query parameters.
    #[arg(long, value_name = "METHOD")]
    method: Option<String>,
    /// The capability is a delegated orchestrator: dispatch exactly once.
    #[arg(long)]
    delegated: bool,
}

/// The limits `recourse call` sets for this call.
#[derive(Debug, Args)]
struct LimitArgs {
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
}

/// How `recourse call` reads a write back: settles an unknown outcome (and,
/// with --verify-always, checks a success) through a read of the write's effect.
#[derive(Debug, Args)]
#[group(skip)]
pub(crate) struct VerifyArgs {
    /// Verify the write by reading this HTTP endpoint (POST with --verify-args as the JSON body).
    #[arg(
        long,
        value_name = "URL",
        group = "verify_read",
        conflicts_with = "verify_tool"
    )]
    verify_url: Option<String>,
    /// Verify the write by calling this MCP tool on the write's server (with --mcp-command or --mcp-url).
    #[arg(long, value_name = "NAME", group = "verify_read")]
    verify_tool: Option<String>,
    /// The verify URL's method: POST (default) or GET (--verify-args as query parameters).
    #[arg(long, value_name = "METHOD", requires = "verify_url")]
    verify_method: Option<String>,
    /// The read's arguments, JSON or @FILE, with {{payload.field}} templates over the write's payload.
    #[arg(long, value_name = "JSON", requires = "verify_read")]
    verify_args: Option<String>,
    /// What the read's result shows once the write took effect: 'POINTER OP VALUE' (POINTER a
    /// JSON Pointer, or $ for the whole result), OP one of ==, !=, exists, !exists, contains,
    /// !contains, starts_with, ends_with, <, <=, >, >=, in, any, grew_by (e.g.
    /// '/status in ["resolved", "closed"]', '/orders grew_by 1'). Repeatable; all must hold.
    #[arg(long, value_name = "EXPECTATION", requires = "verify_read")]
    verify_expect: Vec<String>,
    /// A read failing with this error code means the effect is absent (not that the read
    /// failed); 'error' for any error the tool answers about what was read. Repeatable.
    #[arg(long, value_name = "CODE", requires = "verify_read")]
    verify_absent_when: Vec<String>,
    /// Skip the read before the write.
    #[arg(long, requires = "verify_read")]
    verify_after_only: bool,
    /// Read back after a success too: a success whose expectations do not hold fails, not_applied.
    #[arg(long, requires = "verify_read")]
    verify_always: bool,
}

impl VerifyArgs {
    /// The declared verification, when one was declared.
    pub(crate) fn spec(&self) -> Result<Option<VerifySpec>> {
        let mut spec = match (&self.verify_url, &self.verify_tool) {
            (Some(url), _) => VerifySpec::url(url.clone()),
            (None, Some(tool)) => VerifySpec::tool(tool.clone()),
            (None, None) => return Ok(None),
        };
        if let Some(method) = &self.verify_method {
            spec = spec.method(method.parse()?);
        }
        if let Some(args) = &self.verify_args {
            spec = spec.args(input::json_or_file("--verify-args", args)?);
        }
        for expectation in &self.verify_expect {
            spec = spec.expect(expectation.clone());
        }
        if spec.expect.is_empty() {
            bail!(
                "--verify-url / --verify-tool need at least one --verify-expect 'POINTER OP VALUE'"
            );
        }
        spec.after_only = self.verify_after_only;
        spec.always = self.verify_always;
        spec.absent_when = match self.verify_absent_when.as_slice() {
            [] => None,
            [word] if word == "error" => Some(AbsentWhen::AnyError),
            codes => Some(AbsentWhen::Codes(codes.to_vec())),
        };
        Ok(Some(spec))
    }

    /// The MCP read tool, when the read is one.
    pub(crate) fn tool(&self) -> Option<&str> {
        self.verify_tool.as_deref()
    }
}

fn seconds(flag: &str, secs: f64) -> Result<Duration> {
    if !(secs.is_finite() && secs > 0.0) {
        bail!("{flag} must be a positive number of seconds, not {secs}");
    }
    Ok(Duration::try_from_secs_f64(secs)?)
}

impl CallArgs {
    fn config(&self, settings: &Settings) -> Result<ExecutorConfig> {
        let mut config = settings.executor.clone();
        if let Some(n) = self.limits.max_retries {
            config.limits.max_retries = n;
        }
        if let Some(n) = self.limits.max_corrections {
            config.limits.max_corrections = n;
        }
        if let Some(secs) = self.limits.deadline {
            config.deadline = Some(seconds("--deadline", secs)?);
        }
        if let Some(ms) = self.limits.backoff_ms {
            config.backoff_base = Duration::from_millis(ms);
        }
        if let Some(secs) = self.limits.timeout {
            config.request_timeout = seconds("--timeout", secs)?;
        }
        self.lease.apply(&mut config);
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

    /// The call the flags describe, as every door describes one.
    fn spec(&self) -> Result<CallSpec> {
        let payload = input::json_or_file("--payload", &self.payload)?;
        if !payload.is_object() {
            bail!("--payload must be a JSON object");
        }
        Ok(CallSpec {
            idempotent: (self.idempotency.idempotent || self.idempotency.non_idempotent)
                .then_some(self.idempotency.idempotent),
            method: self.idempotency.method.clone(),
            idempotency_key: self.idempotency.idempotency_key.clone(),
            headers: input::headers(&self.headers)?,
            protect: self.protect.clone(),
            delegated: self.idempotency.delegated,
            intent: self.intent.clone(),
            reconcile: self.reconcile.clone(),
            verify: self.verify.spec()?,
            ..CallSpec::new(payload)
        })
    }

    /// The call as the flags describe it, not yet checked (an MCP server's
    /// tool description is added before it is built). Its limits are the
    /// executor's (`config`, which the flags set); its schema is compiled
    /// from `--schema FILE` here, to name the file in an error.
    fn call(&self, config: &ExecutorConfig) -> Result<CallBuilder> {
        let target = Target::parse(&self.target()?)?;
        let spec = self.spec()?;
        // Typed for this call: a template its payload cannot fill is a
        // mistake on this command line (exit 2), not a verification that
        // does not apply, as a door's or a policy file's is.
        if let Some(verify) = &spec.verify {
            verify.check_against(&spec.payload)?;
        }
        let mut call = spec.into_builder(target, config, None)?;
        if let Some(path) = &self.schema {
            call = call.compiled_schema(read_schema(path)?);
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

pub(crate) async fn run(args: &CallArgs, settings: &Settings) -> Result<i32> {
    let config = args.config(settings)?;
    let chain = settings.chain(&config)?;
    let call = args.call(&config)?;
    let (transport, call): (Arc<dyn Transport>, CallBuilder) = match args.mcp.target()? {
        Some(target) => {
            let tool = args.mcp.tool()?;
            let (transport, mut call) = recourse_mcp::connect_call(
                target,
                &tool,
                call,
                config.request_timeout,
                config.deadline,
                args.verify.tool(),
            )
            .await?;
            if args.verify.verify_url.is_some() {
                call = call.verify_transport(Arc::new(HttpTransport::builder().build()?));
            }
            (transport, call)
        }
        None => (Arc::new(HttpTransport::builder().build()?), call),
    };
    let call = call.build()?;
    let mut builder = Executor::standard(transport, config, Arc::new(chain))?;
    if let Some(location) = settings.journal(args.journal.as_deref()) {
        builder = builder.with_journal(recourse::journal::open_journal(location).await?);
    }
    let door = Door::of(&call);
    let executor = builder.build();
    let metrics = Arc::new(recourse::metrics::Metrics::default());
    crate::telemetry::export_executor_metrics(&metrics, &executor);
    let report = executor.execute(call).await;
    metrics.observe(&report);
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        out!("{}", narrate(&door, &report));
    }
    Ok(report.outcome.exit_code())
}

mod trace;

pub(crate) use trace::{Door, narrate, narrated, printable};

#[cfg(test)]
mod tests;
