//! # recourse-probe
//!
//! Can recourse trust this tool's errors? A fixed battery of bad requests,
//! derived from each tool's schema, sent to a tool server (its manifest, one
//! endpoint, or an MCP server) and scored per check. `recourse probe` is
//! this crate with flags.
//!
//! ```
//! use recourse_probe::{ProbeOptions, ProbeTarget, probe};
//! use recourse_reference_tools::{ToolsConfig, spawn};
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let tools = spawn(ToolsConfig::default()).await.unwrap();
//! let target = ProbeTarget::manifest(&tools.base_url()).unwrap();
//! // Read-only by default: the tools that may write are listed, not sent anything.
//! let card = probe(target, ProbeOptions::new()).await.unwrap();
//! assert_eq!(card.required_failed(), 0, "{}", card.to_text(false));
//! assert_eq!(card.to_json()["transport"], "http");
//! assert_eq!(tools.exports_committed(), 0);
//! # tools.shutdown().await;
//! # });
//! ```
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
//! timeout and every answer a size cap. Unless writes are allowed
//! ([`ProbeOptions::allow_writes`], `--allow-writes`) only tools that say
//! they only read are sent anything: a manifest entry whose method is `GET`
//! or `HEAD`, an MCP tool with `readOnlyHint: true`, an endpoint claimed
//! [`read_only`](EndpointClaims::read_only). Idempotent is not read-only — a
//! cancel declared idempotent still cancels — so an idempotent `POST` is a
//! write too. With writes allowed the probes of a tool that may write carry fresh
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
//! | the scorecard: JSON, text, HTML | `report.rs`, `html.rs`, `style.rs` |
//! | a read-back to declare for each write | `suggest.rs` |
//! | the target and the options | `target.rs` |

mod answer;
mod battery;
mod check;
mod error;
mod html;
mod http;
mod leak;
mod mcp;
mod replay;
mod report;
mod runner;
mod schema;
mod score;
mod style;
mod subject;
mod suggest;
mod target;

pub use error::ProbeError;
pub use report::ProbeScorecard;
pub use subject::EndpointClaims;
pub use target::{ProbeOptions, ProbeTarget};

use recourse::target::Url;

use runner::{Channel, Runner};
use subject::Subject;
use target::Aim;

/// Sends the battery to every tool of `target` that `options` select, one
/// request at a time, and scores what came back.
///
/// # Errors
/// The target cannot be reached or read (no manifest, no MCP session), it
/// lists no tool the options select, or a payload names no probed tool or is
/// not a JSON object. A tool answering badly is a failed check, not an error.
pub async fn probe(
    target: ProbeTarget,
    options: ProbeOptions,
) -> Result<ProbeScorecard, ProbeError> {
    let (shown, channel, subjects, unknown_route) = connect(target.0, &options).await?;
    // Every tool listed may be the read that settles a write probed.
    let mut suggested = suggest::for_writes(&subjects);
    let subjects = select(subjects, &options)?;
    let mut runner = Runner::new(channel, options.allow_writes);
    let mut tools = Vec::with_capacity(subjects.len());
    for subject in &subjects {
        let mut card = runner.probe(subject).await;
        if let Some(at) = suggested
            .iter()
            .position(|(write, _)| *write == subject.name)
        {
            card.suggested_verify = Some(suggested.swap_remove(at).1);
        }
        tools.push(card);
    }
    let unknown_route = match unknown_route {
        Some(url) => Some(runner.probe_unknown_route(url).await),
        None => None,
    };
    Ok(ProbeScorecard {
        target: shown,
        over: runner.over(),
        tools,
        unknown_route,
        requests: runner.sent,
    })
}

/// What `connect` found: the target as shown, the channel, the tools, and
/// the unknown route to probe (HTTP only).
type Connected = (String, Channel, Vec<Subject>, Option<Url>);

async fn connect(aim: Aim, options: &ProbeOptions) -> Result<Connected, ProbeError> {
    let http =
        |options: &ProbeOptions| http::HttpChannel::new(options.headers.clone(), options.timeout);
    match aim {
        Aim::Mcp(target) => {
            let shown = recourse_protocol::redact(&target.to_string());
            let (channel, tools) = mcp::McpChannel::connect(target, options.timeout).await?;
            Ok((shown, Channel::Mcp(channel), subject::from_mcp(tools), None))
        }
        Aim::Endpoint {
            url,
            schema,
            claims,
        } => {
            let mut origin = url.clone();
            origin.set_path("/");
            origin.set_query(None);
            let unknown = unknown_route(&origin)?;
            let tool = subject::from_endpoint(url.clone(), schema, claims);
            Ok((
                subject::shown(&url),
                Channel::Http(http(options)?),
                vec![tool],
                Some(unknown),
            ))
        }
        Aim::Manifest(base) => {
            let channel = http(options)?;
            let (manifest, dir) = subject::manifest_url(&base)?;
            let tools = subject::from_manifest(&channel, &manifest, &dir).await?;
            let unknown = unknown_route(&dir)?;
            Ok((
                subject::shown(&base),
                Channel::Http(channel),
                tools,
                Some(unknown),
            ))
        }
    }
}

/// A route no tool server has, under `dir`.
fn unknown_route(dir: &Url) -> Result<Url, ProbeError> {
    dir.join("recourse-probe-no-such-route")
        .map_err(|e| ProbeError::because("the unknown route's URL", &e))
}

/// The subjects the options select, with their payloads applied.
fn select(subjects: Vec<Subject>, options: &ProbeOptions) -> Result<Vec<Subject>, ProbeError> {
    let mut chosen: Vec<Subject> = subjects
        .into_iter()
        .filter(|s| options.only.as_ref().is_none_or(|keep| keep(&s.name)))
        .collect();
    if chosen.is_empty() {
        return Err(ProbeError::new(format!(
            "no tool to probe: the target lists none{}",
            if options.only.is_none() {
                ""
            } else {
                " that the tool filter (--tool) selects"
            }
        )));
    }
    let single = chosen.len() == 1;
    for (name, payload) in &options.payloads {
        let subject = match name {
            Some(name) => chosen.iter_mut().find(|s| s.name == *name).ok_or_else(|| {
                ProbeError::new(format!("payload {name}: no probed tool is named {name:?}"))
            })?,
            None if single => &mut chosen[0],
            None => {
                return Err(ProbeError::new(
                    "a payload without a tool's name (NAME=) is for a probe of one tool; name the tool",
                ));
            }
        };
        if !payload.is_object() {
            return Err(ProbeError::new(format!(
                "the payload for {} is not a JSON object",
                subject.name
            )));
        }
        subject.baseline = payload.clone();
    }
    Ok(chosen)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn subjects() -> Vec<Subject> {
        let tool = |name: &str| recourse_mcp::McpTool {
            name: name.to_owned(),
            description: None,
            input_schema: json!({"type": "object"}),
            idempotent_hint: None,
            destructive_hint: None,
            read_only_hint: Some(true),
        };
        subject::from_mcp(vec![tool("a"), tool("b")])
    }

    #[test]
    fn payloads_name_their_tool_and_must_be_objects() {
        let named = ProbeOptions::new().with_payload(Some("b"), json!({"q": 1}));
        let chosen = select(subjects(), &named).unwrap();
        assert_eq!(chosen[1].baseline, json!({"q": 1}));
        let unnamed = ProbeOptions::new().with_payload(None, json!({"q": 1}));
        assert!(
            select(subjects(), &unnamed)
                .unwrap_err()
                .to_string()
                .contains("one tool")
        );
        let one = ProbeOptions::new()
            .only(|t| t == "a")
            .with_payload(None, json!({"q": 2}));
        assert_eq!(
            select(subjects(), &one).unwrap()[0].baseline,
            json!({"q": 2})
        );
        let array = ProbeOptions::new().with_payload(Some("a"), json!([1]));
        assert!(
            select(subjects(), &array)
                .unwrap_err()
                .to_string()
                .contains("not a JSON object")
        );
        let nobody = ProbeOptions::new().with_payload(Some("z"), json!({}));
        assert!(
            select(subjects(), &nobody)
                .unwrap_err()
                .to_string()
                .contains("\"z\"")
        );
        let none = ProbeOptions::new().only(|_| false);
        assert!(
            select(subjects(), &none)
                .unwrap_err()
                .to_string()
                .contains("no tool to probe")
        );
    }
}
