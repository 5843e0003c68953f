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
            idempotent: (self.idempotent || self.non_idempotent).then_some(self.idempotent),
            method: self.method.clone(),
            idempotency_key: self.idempotency_key.clone(),
            headers: input::headers(&self.headers)?,
            protect: self.protect.clone(),
            delegated: self.delegated,
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

/// Where a narrated call went, as its trace names it.
pub(crate) enum Door {
    /// An HTTP endpoint, with the method it was sent with.
    Http { method: Method, url: String },
    /// An MCP or in-process tool, by name.
    Tool(String),
}

impl Door {
    /// Where `call` goes (its target as shown: redacted).
    pub(crate) fn of(call: &Call) -> Self {
        Self::new(call.target(), call.method())
    }

    /// A target written as text (a plan step's, a demo scene's): a URL is
    /// POSTed, anything else names a tool.
    pub(crate) fn from_text(target: &str) -> Self {
        match Target::parse(target) {
            Ok(parsed) => Self::new(&parsed, Method::Post),
            Err(_) => Self::Tool(target.to_owned()),
        }
    }

    fn new(target: &Target, method: Method) -> Self {
        match target.url() {
            Some(_) => Self::Http {
                method,
                url: target.to_string(),
            },
            None => Self::Tool(target.to_string()),
        }
    }
}

/// A readable trace of a call report. HTTP statuses and "HTTP call(s)" are
/// named only for HTTP calls; an MCP call's answer is its category.
pub(crate) fn narrate(door: &Door, report: &CallReport) -> String {
    narrated(door, report)
        .into_iter()
        .map(|line| line.text + "\n")
        .collect()
}

/// One line of a narrated call (control characters a note or an error
/// carried are escaped: see [`printable`]). The line that says how the call ended carries that
/// outcome, so a reader styles it by type, not by its words.
#[derive(Debug)]
pub(crate) struct Line {
    pub(crate) text: String,
    pub(crate) outcome: Option<OutcomeKind>,
}

/// The lines of a narrated call being written.
#[derive(Default)]
struct Lines {
    lines: Vec<Line>,
}

impl Lines {
    fn say(&mut self, text: String) {
        self.lines.push(Line {
            text: printable(text),
            outcome: None,
        });
    }

    /// The line that says how the call ended.
    fn ended(&mut self, outcome: OutcomeKind, text: String) {
        self.lines.push(Line {
            text: printable(text),
            outcome: Some(outcome),
        });
    }
}

/// `text` safe for a terminal: a tool's words may hold escape sequences
/// (to move the cursor, rewrite earlier lines, set the title), newlines (to
/// forge a line of ours) or bidirectional overrides (to show text other than
/// it is). Each such character is written as its escape (`\u{1b}`); every
/// other character stays.
pub(crate) fn printable(text: String) -> String {
    let unsafe_char = |c: char| {
        c.is_control()
            || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
    };
    if !text.chars().any(unsafe_char) {
        return text;
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if unsafe_char(c) {
            out.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}

/// [`narrate`]'s lines, the closing one with its outcome.
pub(crate) fn narrated(door: &Door, report: &CallReport) -> Vec<Line> {
    let (verb, target, over_http) = match door {
        Door::Http { method, url } => (method.as_str(), url.as_str(), true),
        Door::Tool(name) => ("call", name.as_str(), false),
    };
    let mut out = Lines::default();
    for a in &report.attempts {
        out.say(format!(
            "→ attempt {} ({}) {verb} {target} {}",
            a.n,
            a.source.as_str(),
            a.payload
        ));
        let status = a.status.filter(|_| over_http);
        let heard = match (&a.status, &a.transport_error) {
            (Some(_), _) if a.action == Action::Succeed => match status {
                Some(s) => format!("{s} OK"),
                None => "OK".to_owned(),
            },
            (Some(_), _) => {
                let cat = a
                    .category
                    .as_ref()
                    .map_or("no category".to_owned(), ToString::to_string);
                let code = a
                    .code
                    .as_deref()
                    .map_or(String::new(), |c| format!(" [{c}]"));
                let status = status.map_or(String::new(), |s| format!("{s} "));
                format!("{status}{cat}{code}, retry {}", a.retry_permission)
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
        out.say(format!("  ← {heard} ⇒ {decided}"));
        for note in a.notes() {
            out.say(format!("    · {note}"));
        }
    }
    out.ended(
        report.outcome.kind(),
        format!(
            "{} after {} attempt(s): {} {} call(s), {} LLM call(s)",
            report.outcome.name(),
            report.attempts.len(),
            report.http_calls,
            if over_http { "HTTP" } else { "tool" },
            report.llm_calls
        ),
    );
    if let Some(reason) = report.outcome.reason() {
        out.say(format!("reason: {reason}"));
    }
    if let Some(error) = report.outcome.error() {
        out.say(format!("error: {}", error.redacted()));
    }
    let idempotency = &report.idempotency;
    let said = match idempotency.from {
        Evidence::Caller => "as the caller said",
        Evidence::Manifest => "as the tool's manifest says",
        Evidence::McpAnnotation => "as the tool's MCP annotations say",
        Evidence::Method => "by its HTTP method",
        Evidence::Default => "nothing said otherwise",
    };
    let treated = if idempotency.idempotent {
        "idempotent"
    } else {
        "not idempotent"
    };
    match &report.idempotency_key {
        Some(key) => out.say(format!("{treated} ({said}); idempotency key: {key}")),
        None => out.say(format!("{treated} ({said})")),
    }
    if let Some(op) = &report.operation_id {
        out.say(format!("operation id: {op}"));
    }
    if let Some(verification) = report.verification {
        out.say(format!("verification: {verification}"));
    }
    let next = report.next();
    match report.stop_kind() {
        Some(kind) => out.say(format!("next: {} (stop kind {kind})", next.step)),
        None => out.say(format!("next: {}", next.step)),
    }
    if let Some(question) = &next.question {
        out.say(format!("ask the user: {question}"));
    }
    out.say(format!("tell the model: {}", next.model_message));
    if let Outcome::Succeeded { data } = &report.outcome
        && !data.is_null()
    {
        out.say(format!("{data}"));
    }
    out.lines
}

#[cfg(test)]
mod tests {

    use recourse::StopReason;
    use recourse::idempotency::Idempotency;

    use recourse_protocol::{ErrorCategory, ToolError};

    use super::*;

    fn report(outcome: Outcome) -> CallReport {
        CallReport {
            http_calls: 1,
            ..CallReport::new("c", outcome, Idempotency::decide(Some(true), None, None))
        }
    }

    #[test]
    fn a_tools_escape_sequences_and_newlines_never_reach_the_terminal() {
        let door = Door::from_text("tool");
        // Clear the screen, set the title, forge a line of ours, reverse the text.
        let words = "done\x1b[2J\x1b]0;pwned\x07\nsucceeded after 1 attempt(s)\u{202e}gnp.exe";
        let failed = report(Outcome::Failed {
            error: Some(ToolError::new(
                ErrorCategory::InputError,
                "BAD\x1b[31m",
                words,
            )),
            reason: StopReason::CannotFix,
        });
        let lines = narrated(&door, &failed);
        let text = narrate(&door, &failed);
        for bad in ['\x1b', '\x07', '\u{202e}'] {
            assert!(!text.contains(bad), "{bad:?} in {text}");
        }
        assert!(text.contains("\\u{1b}[2J"), "shown, escaped: {text}");
        assert_eq!(text.lines().count(), lines.len(), "no line forged: {text}");
    }

    #[test]
    fn the_closing_line_carries_the_outcome_it_reports() {
        let door = Door::from_text("tool");
        let words = "succeeded, the tool says; it did not";
        let failed = report(Outcome::Failed {
            error: Some(ToolError::new(ErrorCategory::InputError, "BAD", words)),
            reason: StopReason::CannotFix,
        });
        let succeeded = report(Outcome::Succeeded {
            data: serde_json::json!("failed").into(),
        });
        for (report, kind) in [
            (failed, OutcomeKind::Failed),
            (succeeded, OutcomeKind::Succeeded),
        ] {
            let lines = narrated(&door, &report);
            let ended: Vec<&Line> = lines.iter().filter(|l| l.outcome.is_some()).collect();
            assert_eq!(ended.len(), 1, "{lines:?}");
            assert_eq!(ended[0].outcome, Some(kind));
            assert!(
                ended[0]
                    .text
                    .starts_with(&format!("{} after 0 attempt(s)", kind.as_str()))
            );
            let text: String = lines.iter().map(|l| format!("{}\n", l.text)).collect();
            assert_eq!(narrate(&door, &report), text);
        }
    }
}
