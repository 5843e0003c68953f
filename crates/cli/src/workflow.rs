//! `recourse run PLAN.json`: run a plan's steps as a workflow and report each one.

use std::sync::Arc;

use anyhow::{Context, Result, bail};
use clap::Args;
use recourse::correction::SchemaCoercion;
use recourse::workflow::{Catalogue, Plan, StepOutcome, Workflow, WorkflowReport, WorkflowRunner};
use recourse::{Executor, HttpTransport};
use tokio_util::sync::CancellationToken;

use crate::approve::CliApprover;
use crate::settings::Settings;

/// Arguments of `recourse run`.
#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// The plan: a JSON file ('-' reads standard input).
    #[arg(value_parser = crate::settings::location)]
    plan: String,
    /// A tool server whose GET /api/capabilities resolves the plan's capabilities (repeatable).
    #[arg(long = "catalog", value_name = "URL")]
    catalogs: Vec<String>,
    /// Steps run at once, at most.
    #[arg(long, default_value_t = recourse::workflow::DEFAULT_CONCURRENCY, value_name = "N")]
    concurrency: usize,
    /// Approve every step that asks for approval.
    #[arg(long, conflicts_with = "approve")]
    approve_all: bool,
    /// Approve this step without asking (repeatable).
    #[arg(long = "approve", value_name = "STEP")]
    approve: Vec<String>,
    /// Reject this step without asking (repeatable).
    #[arg(long = "reject", value_name = "STEP")]
    reject: Vec<String>,
    /// Record every step's call and attempts before dispatch: a SQLite path or postgres:// URL
    /// [env: RECOURSE_JOURNAL].
    #[arg(long, value_name = "PATH|URL", value_parser = crate::settings::location)]
    journal: Option<String>,
    #[command(flatten)]
    lease: crate::settings::LeaseArg,
    /// Print one JSON report.
    #[arg(long)]
    json: bool,
}

impl RunArgs {
    fn plan(&self) -> Result<Plan> {
        let bytes = if self.plan == "-" {
            crate::input::text_or_file("@-")?
        } else {
            std::fs::read(&self.plan).with_context(|| format!("reading the plan {}", self.plan))?
        };
        Ok(Plan::from_json(&bytes)?)
    }

    /// Every --approve / --reject names an approval step, and none is named twice.
    fn check_flags(&self, plan: &Plan) -> Result<()> {
        for (flag, steps) in [("--approve", &self.approve), ("--reject", &self.reject)] {
            for id in steps {
                match plan.step(id) {
                    None => bail!("{flag} {id}: the plan has no step {id:?}"),
                    Some(step) if !step.approval => {
                        bail!("{flag} {id}: step {id:?} does not ask for approval")
                    }
                    Some(_) => {}
                }
            }
        }
        if let Some(both) = self.approve.iter().find(|s| self.reject.contains(s)) {
            bail!("step {both:?} is both approved and rejected");
        }
        Ok(())
    }
}

pub(crate) async fn run(args: &RunArgs, settings: &Settings) -> Result<i32> {
    let plan = args.plan()?;
    args.check_flags(&plan)?;
    let catalogue = Catalogue::fetch_all(&args.catalogs).await?;
    let workflow = Workflow::new(plan, &catalogue)?;
    let mut config = settings.executor.clone();
    args.lease.apply(&mut config);
    let chain = Arc::new(settings.chain(&config)?);
    let mut builder = Executor::builder(HttpTransport::builder().build()?)
        .with_config(config)?
        .with_admission(Arc::new(SchemaCoercion))
        .with_corrector(chain.clone());
    if let Some(location) = settings.journal(args.journal.as_deref()) {
        builder = builder.with_journal(recourse::journal::open_journal(location).await?);
    }
    let executor = builder.build();
    let metrics = Arc::new(recourse::metrics::Metrics::default());
    crate::telemetry::export_executor_metrics(&metrics, &executor);
    let runner = WorkflowRunner::new(executor)
        .with_correction_chain(chain)
        .with_approver(Arc::new(CliApprover::new(
            args.approve_all,
            &args.approve,
            &args.reject,
        )))
        .with_concurrency(args.concurrency)?;
    let cancel = CancellationToken::new();
    let on_interrupt = cancel.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            eprintln!("recourse: interrupted; no new steps will start");
            on_interrupt.cancel();
        }
    });
    let report = runner.run_with_cancel(&workflow, cancel).await;
    for call in report.steps.iter().filter_map(|step| step.call.as_ref()) {
        metrics.observe(call);
    }
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&report.to_json())?);
    } else {
        out!("{}", narrate(&report));
    }
    Ok(report.exit_code())
}

/// Each step's outcome, with its calls' traces.
pub(crate) fn narrate(report: &WorkflowReport) -> String {
    let mut out = String::new();
    for step in &report.steps {
        out.push_str(&format!("■ step {}: {}", step.step_id, step.outcome.name()));
        match &step.outcome {
            StepOutcome::Succeeded { .. } => out.push('\n'),
            other => out.push_str(&format!(" ({})\n", other.reason().unwrap_or_default())),
        }
        if let (Some(call), Some(target)) = (&step.call, &step.target) {
            for line in crate::call::narrate(&crate::call::Door::from_text(target), call).lines() {
                out.push_str(&format!("  {line}\n"));
            }
        }
    }
    out.push_str(&format!(
        "plan {}: {}\n",
        report.plan_id,
        if report.success() {
            "every step succeeded"
        } else {
            "not every step succeeded"
        }
    ));
    out
}
