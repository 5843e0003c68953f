//! One step: resolve its references, ask for approval, build the call, and
//! run it with a corrector that knows the workflow's trajectory.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::reference::resolve;
use super::{ApprovalRequest, Approver, StepApproval, StepOutcome, StepReport, Workflow};
use crate::call::CallSpec;
use crate::correction::{Correction, CorrectionRequest, Corrector};
use crate::correction::{CorrectionChain, FailedAttempt, Trajectory};
use crate::executor::Executor;
use crate::transport::BoxFuture;
use recourse_core::idempotency::Evidence;
use recourse_core::protect::leaf_pointers;
use recourse_core::record::{CallReport, Outcome};
use recourse_core::target::Target;

/// What every step of one run shares.
pub(crate) struct StepContext {
    pub(crate) executor: Executor,
    pub(crate) chain: Option<Arc<CorrectionChain>>,
    pub(crate) approver: Arc<dyn Approver>,
    pub(crate) workflow: Arc<Workflow>,
}

/// A step's result as references and L4 see it: the success envelope.
pub(crate) fn envelope(data: &Value) -> Value {
    serde_json::json!({"success": true, "data": data})
}

/// Runs step `index`, given the envelopes of the steps that succeeded so far.
pub(crate) async fn run_step(
    ctx: Arc<StepContext>,
    index: usize,
    results: HashMap<String, Value>,
    cancel: CancellationToken,
) -> StepReport {
    let plan = &ctx.workflow.plan;
    let step = &plan.steps[index];
    let target = &ctx.workflow.targets[index];
    let fail = |reason: String| {
        StepReport::without_call(
            &step.step_id,
            StepOutcome::Failed {
                error: None,
                reason,
            },
        )
    };
    let (payload, mut protected) = match resolve(&step.parameters, &results) {
        Ok(resolved) => resolved,
        Err(why) => return fail(why),
    };
    protected.extend(step.exact.iter().cloned());
    if step.approval {
        let request = ApprovalRequest {
            plan_id: &plan.plan_id,
            step_id: &step.step_id,
            original_request: &plan.original_request,
            target: &target.url,
            payload: &payload,
        };
        match ctx.approver.review(request).await {
            StepApproval::Approved => protected.extend(leaf_pointers(&payload)),
            StepApproval::Rejected { why } if why.trim().is_empty() => {
                return fail("rejected by approver".to_owned());
            }
            StepApproval::Rejected { why } => return fail(format!("rejected by approver: {why}")),
        }
    }
    protected.sort();
    protected.dedup();
    let spec = CallSpec {
        idempotent: target.idempotent,
        protect: protected,
        schema: target.schema.clone(),
        intent: Some(plan.original_request.clone()),
        reconcile: target.reconcile.clone(),
        verify: target.verify.clone(),
        ..CallSpec::new(payload)
    };
    let aimed = Target::parse(&target.url)
        .and_then(|url| spec.into_builder(url, ctx.executor.config(), None));
    let mut call = match aimed {
        Ok(call) => call.method(target.method),
        Err(e) => return fail(e.to_string()),
    };
    if let (None, Some(declared)) = (target.idempotent, target.declared) {
        call = call.declared_by_tool(declared, Evidence::Manifest);
    }
    if let Some(capability) = &target.capability {
        call = call.capability(capability.clone());
    }
    let call = match call.build() {
        Ok(call) => call,
        Err(e) => return fail(e.to_string()),
    };
    let mut executor = ctx.executor.clone();
    if let Some(chain) = &ctx.chain {
        let mut trajectory = Trajectory::new(plan.original_request.clone());
        for dep in &step.depends_on {
            if let Some(result) = results.get(dep) {
                trajectory = trajectory.with_step(dep.clone(), result.clone());
            }
        }
        executor.corrector = Some(Arc::new(StepCorrector {
            chain: Arc::clone(chain),
            trajectory,
            earlier: Mutex::new(Vec::new()),
        }));
    }
    let report = executor.execute_with_cancel(call, cancel).await;
    finish(&step.step_id, &target.url, report)
}

fn finish(step_id: &str, target: &str, report: CallReport) -> StepReport {
    let outcome = match &report.outcome {
        Outcome::Succeeded { data } => StepOutcome::Succeeded {
            data: data.to_value(),
        },
        Outcome::Failed { error, reason } => StepOutcome::Failed {
            error: error.clone(),
            reason: reason.to_string(),
        },
        Outcome::Unknown { error, reason } => StepOutcome::Unknown {
            error: error.clone(),
            reason: reason.to_string(),
        },
    };
    StepReport {
        step_id: step_id.to_owned(),
        outcome,
        target: Some(target.to_owned()),
        call: Some(report),
    }
}

/// The correction chain bound to one step: L4 sees the original request, the
/// results of the step's dependencies (per step id), and the attempts of this
/// step that failed before the current one.
struct StepCorrector {
    chain: Arc<CorrectionChain>,
    trajectory: Trajectory,
    earlier: Mutex<Vec<FailedAttempt>>,
}

impl Corrector for StepCorrector {
    fn correct<'a>(&'a self, request: CorrectionRequest<'a>) -> BoxFuture<'a, Correction> {
        let mut trajectory = self.trajectory.clone();
        if let Ok(mut earlier) = self.earlier.lock() {
            trajectory.failures = earlier.clone();
            earlier.push(FailedAttempt {
                payload: request.payload.clone(),
                error: request.error.clone(),
            });
        }
        Box::pin(async move {
            self.chain
                .correct_in_context(request, Some(&trajectory))
                .await
        })
    }
}
