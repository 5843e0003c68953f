//! `recourse explain`: what the parser understood, and what the policy would do.

use std::time::Duration;

use anyhow::{Result, bail};
use clap::{Args, ValueEnum};
use recourse::backoff::Backoff;
use recourse::policy::{Observation, Situation, is_unknown_outcome};
use recourse::transport::{TransportFailure, TransportFailureKind};
use recourse::{Action, Policy, Traits};
use recourse_protocol::{ParsedResponse, parse_response, redact};
use serde_json::{Value, json};

use crate::input;
use crate::settings::Settings;

/// Arguments of `recourse explain`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("answer").required(true).args(["status", "transport"])))]
pub(crate) struct ExplainArgs {
    /// The HTTP status the tool answered with.
    #[arg(long, value_parser = clap::value_parser!(u16).range(100..=599))]
    status: Option<u16>,
    /// The response body, inline or as @FILE.
    #[arg(long)]
    body: Option<String>,
    /// A response header, 'Name: value' (repeatable).
    #[arg(long = "header")]
    headers: Vec<String>,
    /// A transport failure instead of a status.
    #[arg(long, value_enum, conflicts_with_all = ["status", "body"])]
    transport: Option<TransportArg>,
    /// Explain for a non-idempotent capability (the default, as for `call` without evidence).
    #[arg(long, conflicts_with = "idempotent")]
    non_idempotent: bool,
    /// Explain for an idempotent capability.
    #[arg(long)]
    idempotent: bool,
    /// Explain for a delegated orchestrator.
    #[arg(long)]
    delegated: bool,
    /// Which attempt this was (1 = the first dispatch).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    attempt: u32,
    /// Explain as if no corrector were configured.
    #[arg(long)]
    no_corrector: bool,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum TransportArg {
    /// The connection failed before anything was sent.
    Connect,
    /// The request was sent, then timed out.
    SentTimeout,
    /// The request was sent, then the connection was reset.
    Reset,
}

pub(crate) fn run(args: &ExplainArgs, settings: &Settings) -> Result<i32> {
    let config = settings.executor.clone();
    let traits = Traits {
        idempotent: args.idempotent,
        delegated: args.delegated,
    };
    let parsed = match args.status {
        Some(status) => Some(parse(status, args)?),
        None => None,
    };
    let failure = args.transport.map(|t| {
        let kind = match t {
            TransportArg::Connect => TransportFailureKind::ConnectFailed,
            TransportArg::SentTimeout => TransportFailureKind::TimedOutAfterSend,
            TransportArg::Reset => TransportFailureKind::FailedAfterSend,
        };
        TransportFailure::new(kind, "as given on the command line")
    });
    let observation = match (&parsed, &failure) {
        (Some(p), _) => Observation::Response(p),
        (None, Some(f)) => Observation::Transport(f),
        (None, None) => bail!("give --status or --transport"),
    };
    let situation = Situation {
        traits,
        retries_used: args.attempt - 1,
        corrections_used: 0,
        lookups_used: 0,
        backoff: Duration::ZERO,
        remaining: config.deadline,
        corrector_available: !args.no_corrector,
        reconciler_available: true,
        verify_success: false,
        has_mutable_inputs: true,
    };
    let action = Policy::new(config.limits).decide(observation, &situation);
    let ceiling = Backoff::full_jitter(config.backoff_base, config.limits.max_backoff)
        .ceiling(args.attempt - 1);
    let report = report(
        parsed.as_ref(),
        failure.as_ref(),
        &action,
        is_unknown_outcome(observation, traits),
        ceiling,
    );
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        out!("{}", human(&report));
    }
    Ok(0)
}

fn parse(status: u16, args: &ExplainArgs) -> Result<ParsedResponse> {
    let body = args
        .body
        .as_deref()
        .map(input::text_or_file)
        .transpose()?
        .unwrap_or_default();
    let headers = input::headers(&args.headers)?;
    Ok(parse_response(status, headers, &body))
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

fn report(
    parsed: Option<&ParsedResponse>,
    failure: Option<&TransportFailure>,
    action: &Action,
    unknown: bool,
    ceiling: Duration,
) -> Value {
    let (wait_ms, wait_cause, reason, reason_text) = match action {
        Action::RetrySame { wait, cause } => {
            (Some(millis(*wait)), Some(cause.as_str()), None, None)
        }
        Action::Stop { reason } => (None, None, Some(reason.code()), Some(reason.to_string())),
        _ => (None, None, None, None),
    };
    json!({
        "success": parsed.is_some_and(|p| p.success),
        "status": parsed.map(|p| p.status),
        "transport": failure.map(|f| f.kind.as_str()),
        "format": parsed.map(|p| p.format.as_str()),
        "category": parsed.and_then(|p| p.category.as_ref().map(ToString::to_string)),
        "routing_status": parsed.and_then(ParsedResponse::routing_status),
        "code": parsed.and_then(|p| p.code.clone()),
        "message": parsed.and_then(|p| p.message.as_deref().map(redact)),
        "details": parsed.map_or(Value::Null, |p| recourse_protocol::redact_value(&p.details)),
        "retry_permission": parsed.map_or("unspecified", |p| p.permission.as_str()),
        "server_wait_ms": parsed.and_then(|p| p.server_wait.map(millis)),
        "unknown_outcome": unknown,
        "action": action.name(),
        "reason": reason,
        "reason_text": reason_text,
        "wait_ms": wait_ms,
        "wait_cause": wait_cause,
        "backoff_ceiling_ms": millis(ceiling),
    })
}

fn human(r: &Value) -> String {
    let mut out = String::new();
    let what = match (&r["status"], &r["transport"]) {
        (Value::Number(s), _) => format!(
            "HTTP {s}, body read as {}",
            r["format"].as_str().unwrap_or("?")
        ),
        (_, Value::String(t)) => format!("transport failure: {t}"),
        _ => "nothing".to_owned(),
    };
    out.push_str(&format!("Received:   {what}\n"));
    if r["success"] == true {
        out.push_str("Understood: success\n");
    } else {
        let field = |k: &str| r[k].as_str().unwrap_or("-").to_owned();
        out.push_str(&format!(
            "Understood: failure, category {}, code {}\n",
            field("category"),
            field("code")
        ));
        if let Some(m) = r["message"].as_str() {
            out.push_str(&format!("Message:    {m}\n"));
        }
        out.push_str(&format!(
            "Retry:      {} by the tool\n",
            field("retry_permission")
        ));
        if let Some(w) = r["server_wait_ms"].as_u64() {
            out.push_str(&format!("Server asks to wait {w} ms\n"));
        }
        if r["unknown_outcome"] == true {
            out.push_str("Outcome:    unknown — the write may have committed\n");
        }
    }
    out.push_str(&format!(
        "Action:     {}",
        r["action"].as_str().unwrap_or("?")
    ));
    if let Some(w) = r["wait_ms"].as_u64() {
        out.push_str(&format!(
            " after {w} ms (or a jittered backoff up to {} ms, whichever is longer)",
            r["backoff_ceiling_ms"]
        ));
    }
    if let Some(reason) = r["reason_text"].as_str() {
        out.push_str(&format!(" — {reason}"));
    }
    out.push('\n');
    out
}
