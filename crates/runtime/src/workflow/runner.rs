//! The scheduler: ready steps run concurrently, up to a bound.
//!
//! A step is ready when every step it depends on has finished. If one of them
//! did not succeed, the step is skipped — saying which dependency and why —
//! and so, in turn, are the steps waiting on it. Otherwise the step is
//! dispatched when a slot is free. Cancelling stops new dispatches; steps in
//! flight stop at their next wait, and steps never started are skipped.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use recourse_protocol::redact;
use serde_json::Value;
use tokio::task::{Id, JoinSet};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;
use tracing::field::Empty;

use super::step::{StepContext, envelope, run_step};
use super::{Approver, RejectAll, StepOutcome, StepReport, Workflow, WorkflowReport};
use crate::correction::CorrectionChain;
use crate::executor::Executor;
use recourse_core::config::ConfigError;

/// Steps run at once unless configured otherwise.
pub const DEFAULT_CONCURRENCY: usize = 5;

/// Runs [`Workflow`]s through an [`Executor`].
///
/// ```no_run
/// use std::sync::Arc;
/// use recourse::{Executor, HttpTransport};
/// use recourse::workflow::{ApproveAll, Catalogue, Plan, Workflow, WorkflowRunner};
///
/// # async fn demo(plan_json: &[u8]) -> Result<(), Box<dyn std::error::Error>> {
/// let catalogue = Catalogue::fetch("http://127.0.0.1:8700").await?;
/// let workflow = Workflow::new(Plan::from_json(plan_json)?, &catalogue)?;
/// let runner = WorkflowRunner::new(Executor::builder(HttpTransport::builder().build()?).build())
///     .with_approver(Arc::new(ApproveAll))
///     .with_concurrency(3)?;
/// let report = runner.run(&workflow).await;
/// println!("{}", report.to_json());
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct WorkflowRunner {
    executor: Executor,
    chain: Option<Arc<CorrectionChain>>,
    approver: Arc<dyn Approver>,
    concurrency: usize,
}

impl std::fmt::Debug for WorkflowRunner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkflowRunner")
            .field("executor", &self.executor)
            .field("chain", &self.chain.is_some())
            .field("concurrency", &self.concurrency)
            .finish_non_exhaustive()
    }
}

/// What the scheduler knows about each step.
enum State {
    Waiting,
    Running,
    Done(StepOutcome),
}

impl WorkflowRunner {
    /// A runner over `executor`: at most [`DEFAULT_CONCURRENCY`] steps at
    /// once, approval steps rejected ([`RejectAll`]), and the executor's own
    /// corrector (if any) without the workflow's context.
    pub fn new(executor: Executor) -> Self {
        Self {
            executor,
            chain: None,
            approver: Arc::new(RejectAll),
            concurrency: DEFAULT_CONCURRENCY,
        }
    }

    /// Corrects every step with `chain`, bound to the step's trajectory: the
    /// plan's original request, its dependencies' results and its earlier
    /// failures (L4). Replaces the executor's corrector for workflow steps.
    #[must_use]
    pub fn with_correction_chain(mut self, chain: Arc<CorrectionChain>) -> Self {
        self.chain = Some(chain);
        self
    }

    /// Asks `approver` before running steps marked `approval: true`.
    #[must_use]
    pub fn with_approver(mut self, approver: Arc<dyn Approver>) -> Self {
        self.approver = approver;
        self
    }

    /// Runs at most `n` steps at once.
    ///
    /// # Errors
    /// When `n` is 0.
    pub fn with_concurrency(mut self, n: usize) -> Result<Self, ConfigError> {
        if n == 0 {
            return Err(ConfigError::new("concurrency", "must be at least 1"));
        }
        self.concurrency = n;
        Ok(self)
    }

    /// Runs every step of `workflow` to its end.
    pub async fn run(&self, workflow: &Workflow) -> WorkflowReport {
        self.run_with_cancel(workflow, CancellationToken::new())
            .await
    }

    /// Runs `workflow` until it ends or `cancel` fires.
    pub async fn run_with_cancel(
        &self,
        workflow: &Workflow,
        cancel: CancellationToken,
    ) -> WorkflowReport {
        let span = tracing::info_span!(
            "workflow",
            recourse.plan_id = %redact(&workflow.plan.plan_id),
            recourse.steps = crate::span::int(workflow.plan.steps.len()),
            recourse.succeeded = Empty,
            otel.status_code = Empty,
        );
        let report = self
            .schedule(workflow, cancel)
            .instrument(span.clone())
            .await;
        let succeeded = report
            .steps
            .iter()
            .filter(|s| matches!(s.outcome, StepOutcome::Succeeded { .. }))
            .count();
        span.record("recourse.succeeded", crate::span::int(succeeded));
        span.record(
            "otel.status_code",
            if report.success() { "ok" } else { "error" },
        );
        report
    }

    async fn schedule(&self, workflow: &Workflow, cancel: CancellationToken) -> WorkflowReport {
        let ctx = Arc::new(StepContext {
            executor: self.executor.clone(),
            chain: self.chain.clone(),
            approver: Arc::clone(&self.approver),
            workflow: Arc::new(workflow.clone()),
        });
        let steps = &workflow.plan.steps;
        let mut states: Vec<State> = steps.iter().map(|_| State::Waiting).collect();
        let mut reports: Vec<Option<StepReport>> = steps.iter().map(|_| None).collect();
        let mut results: HashMap<String, Value> = HashMap::new();
        let mut running: JoinSet<StepReport> = JoinSet::new();
        let mut tasks: HashMap<Id, usize> = HashMap::new();
        loop {
            self.skip_blocked(workflow, &mut states, &mut reports);
            if !cancel.is_cancelled() {
                for i in 0..steps.len() {
                    if running.len() >= self.concurrency {
                        break;
                    }
                    if !matches!(states[i], State::Waiting) || !self.ready(workflow, &states, i) {
                        continue;
                    }
                    states[i] = State::Running;
                    let task = run_step(Arc::clone(&ctx), i, results.clone(), cancel.child_token());
                    let handle = running.spawn(traced_step(steps[i].step_id.clone(), task));
                    tasks.insert(handle.id(), i);
                }
            }
            let Some(joined) = running.join_next_with_id().await else {
                break;
            };
            let id = match &joined {
                Ok((id, _)) => *id,
                Err(e) => e.id(),
            };
            let Some(i) = tasks.remove(&id) else {
                continue;
            };
            let report = joined.map_or_else(
                |e| {
                    let outcome = StepOutcome::Failed {
                        error: None,
                        reason: format!("the step's task ended abnormally: {e}"),
                    };
                    StepReport::without_call(&steps[i].step_id, outcome)
                },
                |(_, report)| report,
            );
            if let StepOutcome::Succeeded { data } = &report.outcome {
                results.insert(steps[i].step_id.clone(), envelope(data));
            }
            states[i] = State::Done(report.outcome.clone());
            reports[i] = Some(report);
        }
        let steps = steps
            .iter()
            .zip(reports)
            .map(|(step, report)| {
                report.unwrap_or_else(|| {
                    StepReport::without_call(
                        &step.step_id,
                        StepOutcome::Skipped {
                            reason: "cancelled before it was dispatched".to_owned(),
                        },
                    )
                })
            })
            .collect();
        WorkflowReport {
            plan_id: workflow.plan.plan_id.clone(),
            steps,
        }
    }

    /// Whether every dependency of step `i` succeeded.
    fn ready(&self, workflow: &Workflow, states: &[State], i: usize) -> bool {
        workflow.plan.steps[i].depends_on.iter().all(|d| {
            matches!(
                states[index_of(workflow, d)],
                State::Done(StepOutcome::Succeeded { .. })
            )
        })
    }

    /// Skips every waiting step with a dependency that finished without
    /// success, until no more can be skipped.
    fn skip_blocked(
        &self,
        workflow: &Workflow,
        states: &mut [State],
        reports: &mut [Option<StepReport>],
    ) {
        let steps = &workflow.plan.steps;
        let mut changed = true;
        while changed {
            changed = false;
            for i in 0..steps.len() {
                if !matches!(states[i], State::Waiting) {
                    continue;
                }
                let blocked =
                    steps[i]
                        .depends_on
                        .iter()
                        .find_map(|d| match &states[index_of(workflow, d)] {
                            State::Done(StepOutcome::Succeeded { .. })
                            | State::Waiting
                            | State::Running => None,
                            State::Done(other) => Some(format!(
                                "dependency {d:?} {}",
                                match other {
                                    StepOutcome::Skipped { .. } => "was skipped",
                                    StepOutcome::Unknown { .. } => "ended with an unknown outcome",
                                    _ => "failed",
                                }
                            )),
                        });
                if let Some(reason) = blocked {
                    let outcome = StepOutcome::Skipped { reason };
                    reports[i] = Some(StepReport::without_call(&steps[i].step_id, outcome.clone()));
                    states[i] = State::Done(outcome);
                    changed = true;
                }
            }
        }
    }
}

/// `task` in a `step` span that records how the step ended.
async fn traced_step(step_id: String, task: impl Future<Output = StepReport>) -> StepReport {
    let span = tracing::info_span!(
        "step",
        recourse.step_id = %redact(&step_id),
        recourse.outcome = Empty,
        otel.status_code = Empty,
    );
    let report = task.instrument(span.clone()).await;
    span.record("recourse.outcome", report.outcome.name());
    let ok = matches!(report.outcome, StepOutcome::Succeeded { .. });
    span.record("otel.status_code", if ok { "ok" } else { "error" });
    report
}

/// The index of step `id`; validation guarantees it exists.
fn index_of(workflow: &Workflow, id: &str) -> usize {
    workflow
        .plan
        .steps
        .iter()
        .position(|s| s.step_id == id)
        .unwrap_or_default()
}
