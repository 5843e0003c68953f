//! `recourse eval`: the recovery scorecard (`recourse-eval`) with flags —
//! which scenarios, how many runs, which model — printed as text or JSON,
//! and written as HTML.

use std::io::IsTerminal;
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use recourse_eval::{ModelChoice, Progress, Scenario};

use crate::glob::Glob;
use crate::settings::Settings;

/// Arguments of `recourse eval`.
#[derive(Debug, Args)]
pub(crate) struct EvalArgs {
    /// Runs per scenario, seeded 0..k; pass^k counts scenarios that pass all k.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=1000))]
    k: u32,
    /// Print the scorecard as one JSON object.
    #[arg(long)]
    json: bool,
    /// Also write a self-contained HTML report to FILE.
    #[arg(long, value_name = "FILE", value_parser = crate::settings::path)]
    html: Option<PathBuf>,
    /// Only scenarios whose id matches GLOB (repeatable).
    #[arg(long = "scenario", value_name = "GLOB")]
    scenarios: Vec<String>,
    /// Load the scenarios from DIR (every *.json) instead of the built-in suite.
    #[arg(long, value_name = "DIR", value_parser = crate::settings::path)]
    suite: Option<PathBuf>,
    /// The model for scenarios that need one: `scripted` replays each scenario's
    /// reference reply (a plumbing check); `none` skips them. Default: the
    /// model RECOURSE_LLM_* / OPENAI_* configure, else none.
    #[arg(long, value_enum)]
    model: Option<ModelFlag>,
}

/// `--model` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ModelFlag {
    /// Replay each scenario's reference reply.
    Scripted,
    /// No model: scenarios that need one are skipped.
    None,
}

/// Runs the evaluation; exit code 0 when every scenario that ran passed, 1 otherwise.
pub(crate) async fn run(args: &EvalArgs, settings: &Settings) -> Result<i32> {
    let suite = match &args.suite {
        Some(dir) => recourse_eval::from_dir(dir)?,
        None => recourse_eval::builtin()?,
    };
    let scenarios = select(suite, &args.scenarios)?;
    let model = match args.model {
        Some(ModelFlag::Scripted) => ModelChoice::Scripted,
        Some(ModelFlag::None) => ModelChoice::Absent,
        None => settings
            .llm
            .clone()
            .map_or(ModelChoice::Absent, ModelChoice::Configured),
    };
    let mut bar = Bar::new();
    let card = recourse_eval::evaluate(scenarios, args.k, &model, &mut bar).await;
    bar.0.finish_and_clear();
    let card = card?;
    if let Some(path) = &args.html {
        std::fs::write(path, card.to_html())
            .with_context(|| format!("cannot write the HTML report to {}", path.display()))?;
    }
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&card.to_json())?);
    } else {
        out!("{}", card.to_text());
        if let Some(path) = &args.html {
            outln!("HTML report: {}", path.display());
        }
    }
    Ok(if card.all_passed() { 0 } else { 1 })
}

/// The scenarios whose id matches any of `patterns` (all when there are none).
///
/// # Errors
/// A malformed glob, or globs that match no scenario.
fn select(scenarios: Vec<Scenario>, patterns: &[String]) -> Result<Vec<Scenario>> {
    if patterns.is_empty() {
        return Ok(scenarios);
    }
    let globs = patterns
        .iter()
        .map(|p| Glob::new(p).map_err(|e| anyhow::anyhow!("bad --scenario glob {p:?}: {e}")))
        .collect::<Result<Vec<_>>>()?;
    let chosen: Vec<Scenario> = scenarios
        .into_iter()
        .filter(|s| globs.iter().any(|g| g.matches(s.id())))
        .collect();
    if chosen.is_empty() {
        bail!(
            "no scenario matches --scenario {}",
            patterns.join(" --scenario ")
        );
    }
    Ok(chosen)
}

/// A bar on stderr when both stdout and stderr are terminals; hidden otherwise.
struct Bar(ProgressBar);

impl Bar {
    fn new() -> Self {
        if !(std::io::stderr().is_terminal() && std::io::stdout().is_terminal()) {
            return Self(ProgressBar::hidden());
        }
        let bar = ProgressBar::new(0);
        if let Ok(style) = ProgressStyle::with_template("{bar:30} {pos}/{len} runs  {msg}") {
            bar.set_style(style);
        }
        Self(bar)
    }
}

impl Progress for Bar {
    fn runs(&mut self, runs: u64) {
        self.0.set_length(runs);
    }

    fn scenario(&mut self, id: &str) {
        self.0.set_message(id.to_owned());
    }

    fn run_done(&mut self) {
        self.0.inc(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_select_and_bad_ones_are_usage_errors() {
        let all = recourse_eval::builtin().unwrap();
        let chosen = select(all.clone(), &["export_*".to_owned()]).unwrap();
        assert!(chosen.iter().all(|s| s.id().starts_with("export_")));
        assert!(select(all.clone(), &["[x".to_owned()]).is_err());
        assert!(select(all, &["zzz*".to_owned()]).is_err());
    }
}
