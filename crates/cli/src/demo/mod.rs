//! `recourse demo`: the reference tools, real failures, and what recourse does about them.
//!
//! Offline and without configuration: it starts the reference tools in-process
//! on a free port, plays each scene through the real executor, and narrates
//! from the real trace. A model, if one is configured, is used only where the
//! story needs one.

mod recovering;
mod scenes;
mod workflow_scene;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use recourse::record::OutcomeKind;
use recourse::{
    CallReport, CallSpec, CorrectionChain, Executor, ExecutorConfig, HttpTransport, Target,
    Transport, VerifySpec,
};
use recourse_reference_tools::{RunningTools, ToolsConfig, spawn};
use serde_json::{Value, json};

use crate::call::narrated;
use crate::settings::Settings;
use crate::style::Style;
use recovering::Recovering;
use scenes::{SCENES, Scene, Settle};

pub(crate) async fn run(settings: &Settings) -> Result<i32> {
    let config = ExecutorConfig {
        backoff_base: Duration::from_millis(200),
        deadline: Some(Duration::from_secs(30)),
        ..settings.executor.clone()
    };
    let workflow = workflow_scene::Setup::new(settings)?;
    let style = Style::detect();
    let started = Instant::now();
    let tools = Arc::new(
        spawn(ToolsConfig::default().with_correctable_amounts())
            .await
            .context("starting the reference tools")?,
    );
    let schemas = manifest_schemas(&tools.base_url()).await?;
    outln!(
        "{}",
        style.bold(&format!(
            "recourse demo — reference tools at {}",
            tools.base_url()
        ))
    );
    outln!(
        "{}\n",
        style.dim("Every line below is read from the executor's real trace.")
    );
    let mut failures = 0;
    for (i, scene) in SCENES.iter().enumerate() {
        if !play(i + 1, scene, &tools, &schemas, &config, style).await? {
            failures += 1;
        }
    }
    let mut not_run = 0;
    match workflow_scene::play(SCENES.len() + 1, &tools, &workflow, style).await? {
        Played::Behaved => {}
        Played::Misbehaved => failures += 1,
        Played::NeedsModel => not_run += 1,
    }
    let ran = SCENES.len() + 1 - not_run;
    let summary = summary(ran, failures, not_run, started.elapsed());
    outln!(
        "{}",
        if failures == 0 {
            style.good(&summary)
        } else {
            style.bad(&summary)
        }
    );
    Ok(if failures == 0 { 0 } else { 1 })
}

/// How a scene went.
pub(crate) enum Played {
    /// As a careful engineer would.
    Behaved,
    /// Not as a careful engineer would.
    Misbehaved,
    /// It stopped honestly, but what it shows needs a model, and none is configured.
    NeedsModel,
}

/// The closing line: scenes that could not show what they are for are
/// counted apart, never as behaving.
fn summary(ran: usize, failures: usize, not_run: usize, took: Duration) -> String {
    let mut line = format!(
        "{} of {ran} scenes behaved as a careful engineer would",
        ran - failures
    );
    if not_run > 0 {
        line.push_str(&format!(
            "; {not_run} more needs a model to show its recovery (set RECOURSE_LLM_BASE_URL and RECOURSE_LLM_MODEL)"
        ));
    }
    line.push_str(&format!(", in {:.1} s.", took.as_secs_f64()));
    line
}

/// Input schemas by route, from the tools' own manifest.
async fn manifest_schemas(base: &str) -> Result<HashMap<String, Value>> {
    let manifest: Value = reqwest::get(format!("{base}/api/capabilities"))
        .await?
        .json()
        .await?;
    let list = manifest["data"]["capabilities"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    Ok(list
        .into_iter()
        .filter_map(|c| {
            Some((
                c["endpoint"].as_str()?.to_owned(),
                c["input_schema"].clone(),
            ))
        })
        .collect())
}

/// The standard executor, repair only (no scene but the workflow needs a model).
fn executor(tools: &Arc<RunningTools>, scene: &Scene, config: &ExecutorConfig) -> Result<Executor> {
    let http = HttpTransport::builder().build()?;
    let transport: Arc<dyn Transport> = match scene.recover_after {
        Some(n) => Arc::new(Recovering::new(http, Arc::clone(tools), n)),
        None => Arc::new(http),
    };
    let chain = Arc::new(CorrectionChain::new(config));
    Ok(Executor::standard(transport, config.clone(), chain)?.build())
}

async fn play(
    n: usize,
    scene: &Scene,
    tools: &Arc<RunningTools>,
    schemas: &HashMap<String, Value>,
    config: &ExecutorConfig,
    style: Style,
) -> Result<bool> {
    outln!("{}", style.bold(&format!("{n}. {}", scene.title)));
    outln!("   {}", scene.story);
    let faults = scene
        .faults
        .iter()
        .map(|f| f.parse())
        .collect::<Result<Vec<_>, _>>()?;
    tools.set_faults(faults);
    let writes_before = tools.exports_committed();
    let url = format!("{}{}", tools.base_url(), scene.route);
    // No idempotency flag: the reference tools' manifest says which calls are writes.
    let mut spec = CallSpec {
        schema: schemas.get(scene.route).cloned(),
        ..CallSpec::new((scene.payload)())
    };
    match scene.settle {
        Settle::No => {}
        Settle::Lookup => {
            spec.reconcile = Some(format!("{}/api/exports/{{operation_id}}", tools.base_url()));
        }
        Settle::ReadBack => {
            spec.verify = Some(
                VerifySpec::url(format!("{}/api/exports/lookup", tools.base_url()))
                    .args(json!({"source_id": "{{payload.source_id}}", "version": "{{payload.version}}", "format": "{{payload.format}}"}))
                    .expect("/latest exists"),
            );
        }
    }
    let call = spec.into_builder(Target::parse(&url)?, config, None)?;
    let report = executor(tools, scene, config)?.execute(call.build()?).await;
    tools.set_faults(Vec::new());
    print_trace(&url, &report, style)?;
    let writes = tools.exports_committed() - writes_before;
    if scene.route == "/api/exports" {
        outln!("   exports written by this scene: {writes}");
    }
    let verdict = (scene.check)(&report, writes);
    match &verdict {
        Ok(lesson) => outln!("   {} {lesson}\n", style.good("✓")),
        Err(problem) => outln!("   {} {problem}\n", style.bad("✗")),
    }
    Ok(verdict.is_ok())
}

fn print_trace(url: &str, report: &CallReport, style: Style) -> Result<()> {
    for line in narrated(&crate::call::Door::from_text(url), report) {
        for text in line.text.lines() {
            let text = match line.outcome {
                Some(OutcomeKind::Succeeded) => style.good(text),
                Some(OutcomeKind::Failed | OutcomeKind::Unknown) => style.warn(text),
                None => text.to_owned(),
            };
            outln!("   {text}");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scene_that_needs_a_model_is_not_counted_as_behaving() {
        let line = summary(7, 0, 1, Duration::from_millis(3200));
        assert!(line.starts_with("7 of 7 scenes behaved"), "{line}");
        assert!(line.contains("1 more needs a model"), "{line}");
        let all = summary(8, 1, 0, Duration::from_secs(1));
        assert!(all.starts_with("7 of 8 scenes behaved"), "{all}");
        assert!(!all.contains("needs a model"), "{all}");
    }
}
