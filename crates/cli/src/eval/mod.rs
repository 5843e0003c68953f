//! `recourse eval`: the recovery scorecard (protocol §8).
//!
//! Each scenario (a data file: task, tool behaviour, acceptable outcomes) is
//! played `k` times against the real executor — over loopback HTTP to the
//! reference tools, or through an in-process scripted tool — on a manual
//! clock, so a minute of rate-limit waiting costs nothing. Jitter and
//! reference-tool faults are seeded with the run index. Every run is judged
//! for success, false recovery and unnecessary stopping, and the scores are
//! reported per category, because one overall percentage would let many easy
//! corrections hide a single authorisation bypass.
//!
//! | piece | file |
//! |---|---|
//! | scenario model and validation | `scenario.rs` |
//! | the first failure's reading, scenario categories | `failure.rs` |
//! | finding scenarios, `--scenario` globs | `load.rs`, `builtin.rs` (globs: `../glob.rs`) |
//! | scripted tools, request recording | `script.rs` |
//! | the model used by correction | `model.rs` |
//! | playing a run | `runner.rs` |
//! | judging a run | `score.rs` |
//! | the scorecard: JSON, text, HTML | `report.rs`, `html.rs` |

mod builtin;
mod failure;
pub(crate) mod html;
mod load;
mod model;
mod report;
mod runner;
mod scenario;
mod score;
mod script;

use std::io::IsTerminal;
use std::path::PathBuf;

use crate::settings::Settings;
use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};

use model::ModelChoice;
use report::{JudgedRun, ScenarioResult, Scorecard};
use scenario::Scenario;

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
        Some(dir) => load::from_dir(dir)?,
        None => load::builtin()?,
    };
    let scenarios = load::select(suite, &args.scenarios)?;
    let model = match args.model {
        Some(ModelFlag::Scripted) => ModelChoice::Scripted,
        Some(ModelFlag::None) => ModelChoice::Absent,
        None => settings
            .llm
            .clone()
            .map_or(ModelChoice::Absent, ModelChoice::Configured),
    };
    let card = evaluate(scenarios, args.k, &model).await?;
    if let Some(path) = &args.html {
        std::fs::write(path, html::page(&card))
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

async fn evaluate(scenarios: Vec<Scenario>, k: u32, model: &ModelChoice) -> Result<Scorecard> {
    let runnable = |s: &Scenario| !s.needs_model() || !matches!(model, ModelChoice::Absent);
    let total_runs = scenarios.iter().filter(|s| runnable(s)).count() as u64 * u64::from(k);
    let started_at = recourse::journal::rfc3339(std::time::SystemTime::now());
    let progress = progress_bar(total_runs);
    let mut results = Vec::with_capacity(scenarios.len());
    for scenario in scenarios {
        if !runnable(&scenario) {
            results.push(ScenarioResult {
                scenario,
                skipped: Some(
                    "needs a model: set RECOURSE_LLM_BASE_URL (or OPENAI_BASE_URL / OPENAI_API_KEY), \
                     or use --model scripted for a plumbing check"
                        .to_owned(),
                ),
                runs: Vec::new(),
            });
            continue;
        }
        progress.set_message(scenario.id.clone());
        let mut runs = Vec::with_capacity(k as usize);
        for run in 0..k {
            let record = runner::play(&scenario, run, model)
                .await
                .with_context(|| format!("scenario {}: run {run} could not start", scenario.id))?;
            let verdict = score::judge(&scenario, &record);
            runs.push(JudgedRun { record, verdict });
            progress.inc(1);
        }
        results.push(ScenarioResult {
            scenario,
            skipped: None,
            runs,
        });
    }
    progress.finish_and_clear();
    Ok(Scorecard {
        started_at,
        k,
        model: model.label(),
        plumbing_check: model.is_plumbing_check(),
        results,
    })
}

/// A bar on stderr when both stdout and stderr are terminals; hidden otherwise.
fn progress_bar(len: u64) -> ProgressBar {
    if !(std::io::stderr().is_terminal() && std::io::stdout().is_terminal()) {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len);
    if let Ok(style) = ProgressStyle::with_template("{bar:30} {pos}/{len} runs  {msg}") {
        bar.set_style(style);
    }
    bar
}
