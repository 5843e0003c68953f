//! The demo's last scene: the sell-and-convert workflow, whose second step a
//! planner got wrong. L4 can work out the amount from the first step's result
//! — with a model. Without one, the step stops honestly and the demo says
//! exactly what to configure.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use recourse::workflow::{Catalogue, Plan, StepOutcome, Workflow, WorkflowReport, WorkflowRunner};
use recourse::{CorrectionChain, Executor, ExecutorConfig, HttpTransport};
use recourse_reference_tools::RunningTools;

use super::Played;
use crate::settings::Settings;
use crate::style::Style;

/// The plan shipped in `examples/`, so the demo and the example never drift apart.
const PLAN: &str = include_str!("sell-and-convert.json");

/// The scene's configuration, read (and checked) before the demo prints anything.
pub(crate) struct Setup {
    config: ExecutorConfig,
    chain: Arc<CorrectionChain>,
}

impl Setup {
    pub(crate) fn new(settings: &Settings) -> Result<Self> {
        let config = ExecutorConfig {
            deadline: Some(Duration::from_secs(60)),
            ..settings.executor.clone()
        };
        let chain = Arc::new(settings.chain(&config)?);
        Ok(Self { config, chain })
    }
}

pub(crate) async fn play(
    n: usize,
    tools: &RunningTools,
    setup: &Setup,
    style: Style,
) -> Result<Played> {
    outln!(
        "{}",
        style.bold(&format!(
            "{n}. Sell 100 Tesla shares and convert the proceeds to EUR"
        ))
    );
    outln!("   A planner made two steps and gave the conversion amount 0; the quote step's result");
    outln!("   holds what is needed. The currency tool opts non-positive amounts into correction.");
    let chain = Arc::clone(&setup.chain);
    let has_model = chain.has_model();
    let transport = Arc::new(HttpTransport::builder().build()?);
    let executor = Executor::standard(transport, setup.config.clone(), Arc::clone(&chain))?.build();
    let workflow = Workflow::new(
        Plan::from_json(PLAN.as_bytes())?,
        &Catalogue::fetch(&tools.base_url()).await?,
    )?;
    let report = WorkflowRunner::new(executor)
        .with_correction_chain(chain)
        .run(&workflow)
        .await;
    for line in crate::workflow::narrate(&report).lines() {
        outln!("   {line}");
    }
    let verdict = judge(&report, has_model);
    Ok(match &verdict {
        Ok(lesson) if has_model => {
            outln!("   {} {lesson}\n", style.good("✓"));
            Played::Behaved
        }
        // Behaved, but what the scene is for (a model's recovery) did not run.
        Ok(lesson) => {
            outln!("   {} {lesson}\n", style.dim("–"));
            Played::NeedsModel
        }
        Err(problem) => {
            outln!("   {} {problem}\n", style.bad("✗"));
            Played::Misbehaved
        }
    })
}

fn judge(report: &WorkflowReport, has_model: bool) -> Result<&'static str, String> {
    let quote_ok = matches!(
        report.step("quote").map(|s| &s.outcome),
        Some(StepOutcome::Succeeded { .. })
    );
    let convert = report.step("convert").map(|s| &s.outcome);
    match (has_model, convert) {
        (true, Some(StepOutcome::Succeeded { .. })) if quote_ok => {
            Ok("L4 re-resolved the amount from the quote and the user's request")
        }
        (true, _) => Err("a model is configured, but the convert step did not recover".to_owned()),
        (false, Some(StepOutcome::Failed { .. })) if quote_ok => Ok(
            "without a model the convert step stops honestly. To see L4 recover amount = 46828.5, set \
             RECOURSE_LLM_BASE_URL (e.g. http://127.0.0.1:11434/v1 for Ollama), RECOURSE_LLM_MODEL and, \
             if your server needs one, RECOURSE_LLM_API_KEY — then run `recourse demo` again",
        ),
        (false, _) => Err("expected the quote to succeed and the conversion to stop".to_owned()),
    }
}
