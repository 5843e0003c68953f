//! # recourse-eval
//!
//! The recovery scorecard: how recourse's handling of tool failures goes
//! across a suite of scenarios, scored per category. `recourse eval` is this
//! crate with flags.
//!
//! ```
//! use recourse_eval::{ModelChoice, builtin, evaluate};
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let chosen: Vec<_> = builtin()
//!     .unwrap()
//!     .into_iter()
//!     .filter(|s| s.id() == "export_unknown_outcome")
//!     .collect();
//! let card = evaluate(chosen, 2, &ModelChoice::Absent, &mut ()).await.unwrap();
//! assert!(card.all_passed(), "{}", card.to_text());
//! assert_eq!(card.to_json()["runs"], 2);
//! # });
//! ```
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
//! | finding scenarios | `load.rs`, `builtin.rs` |
//! | scripted tools, request recording | `script.rs` |
//! | the model used by correction | `model.rs` |
//! | playing a run | `runner.rs` |
//! | judging a run | `score.rs` |
//! | the scorecard: JSON, text, HTML | `report.rs`, `html.rs` |

mod builtin;
mod error;
mod failure;
mod html;
mod load;
mod model;
mod report;
mod runner;
mod scenario;
mod score;
mod script;

pub use error::EvalError;
pub use load::{builtin, from_dir};
pub use model::ModelChoice;
pub use report::RecoveryScorecard;
pub use scenario::Scenario;

use report::{JudgedRun, ScenarioResult};

/// What an evaluation tells whoever watches it, as it goes (a progress bar).
/// Every method does nothing unless implemented; `()` watches nothing.
pub trait Progress {
    /// The evaluation will play `runs` runs in all.
    fn runs(&mut self, runs: u64) {
        let _ = runs;
    }

    /// Scenario `id` starts its runs.
    fn scenario(&mut self, id: &str) {
        let _ = id;
    }

    /// One run was played and judged.
    fn run_done(&mut self) {}
}

impl Progress for () {}

/// Plays each of `scenarios` `k` times (run `n` seeded with `n`) and judges
/// every run; a scenario that needs a model is skipped, and says why, when
/// `model` is [`ModelChoice::Absent`].
///
/// # Errors
/// A run that cannot be set up (a port that cannot be bound, a model client
/// that cannot be built) — never how a call ends, which is what is judged.
pub async fn evaluate(
    scenarios: Vec<Scenario>,
    k: u32,
    model: &ModelChoice,
    progress: &mut dyn Progress,
) -> Result<RecoveryScorecard, EvalError> {
    let runnable = |s: &Scenario| !s.needs_model() || !matches!(model, ModelChoice::Absent);
    progress.runs(scenarios.iter().filter(|s| runnable(s)).count() as u64 * u64::from(k));
    let started_at = recourse::journal::rfc3339(std::time::SystemTime::now());
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
        progress.scenario(&scenario.id);
        let mut runs = Vec::with_capacity(k as usize);
        for run in 0..k {
            let record = runner::play(&scenario, run, model).await.map_err(|e| {
                EvalError::caused(
                    format!("scenario {}: run {run} could not start", scenario.id),
                    e,
                )
            })?;
            let verdict = score::judge(&scenario, &record);
            runs.push(JudgedRun { record, verdict });
            progress.run_done();
        }
        results.push(ScenarioResult {
            scenario,
            skipped: None,
            runs,
        });
    }
    Ok(RecoveryScorecard {
        started_at,
        k,
        model: model.label(),
        plumbing_check: model.is_plumbing_check(),
        results,
    })
}
