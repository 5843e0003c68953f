//! Playing one run of a scenario: build the tool, the executor and the call,
//! execute it on a manual clock, and record what happened.

use std::sync::{Arc, PoisonError};
use std::time::Duration;

use recourse::policy::{ActionKind, StopReason};
use recourse::record::OutcomeKind;
use recourse::{
    Action, CallBuilder, CallReport, CallSpec, CorrectionChain, Executor, ExecutorConfig,
    HttpTransport, ManualClock, Reconciler, Target, Transport, VerifySpec,
};
use recourse_reference_tools::{Fault, RunningTools, ToolsConfig, spawn};

use super::error::EvalError;
use super::failure::FirstFailure;
use super::model::ModelChoice;
use super::scenario::{Scenario, ToolBehaviour};
use super::script::{Recorder, ScriptedTool, SentRequest};

/// What one run did: the evidence the scorer judges.
#[derive(Debug)]
pub(crate) struct RunRecord {
    /// 0-based run index; also the seed of jitter and faults.
    pub(crate) run: u32,
    /// How the call ended.
    pub(crate) final_state: OutcomeKind,
    /// Why the call stopped, when it did.
    pub(crate) stop_reason: Option<StopReason>,
    /// How the first failure was read, if one came.
    pub(crate) category: Option<FirstFailure>,
    /// What the policy did after the first attempt (`None`: no attempt was made).
    pub(crate) next_action: Option<ActionKind>,
    /// Dispatches made.
    pub(crate) attempts: u32,
    /// Writes the tool committed, when it is a write tool.
    pub(crate) writes: Option<usize>,
    /// The question put to the user, if any.
    pub(crate) question: Option<String>,
    /// The full report, for traces.
    pub(crate) report: CallReport,
    /// Every request the transport sent.
    pub(crate) sent: Vec<SentRequest>,
    /// The call as the caller made it.
    pub(crate) call: CallShape,
}

/// What the caller asked for, to compare the requests against.
#[derive(Debug, Clone)]
pub(crate) struct CallShape {
    pub(crate) target: String,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) payload: serde_json::Value,
    pub(crate) protected: Vec<String>,
}

/// The tool a run talks to, and how to count its writes.
enum Tool {
    Reference(RunningTools, bool),
    Script(ScriptedTool),
}

impl Tool {
    fn writes(&self) -> Option<usize> {
        match self {
            Self::Reference(tools, true) => Some(tools.exports_committed()),
            Self::Reference(_, false) => None,
            Self::Script(script) => Some(script.writes()),
        }
    }
}

/// Plays run `run` of `scenario`.
///
/// # Errors
/// Only when the run cannot be set up (a port cannot be bound, a model
/// client cannot be built) — never for how the call ends.
pub(crate) async fn play(
    scenario: &Scenario,
    run: u32,
    model: &ModelChoice,
) -> Result<RunRecord, EvalError> {
    let (tool, transport, target, reconciler) = start_tool(scenario, run).await?;
    // Reads are not attempts: they bypass the recorder, whose requests the
    // false-recovery checks read.
    let reads = Arc::clone(&transport);
    let (recorder, sent) = Recorder::new(transport);
    let config = config(scenario);
    let call = call(scenario, target, &config)?;
    let mut chain = CorrectionChain::new(&config);
    if let Some(script) = &scenario.model
        && let Some(model) = model.model_for(&script.replies)?
    {
        chain = chain.with_model(model);
    }
    let clock = Arc::new(ManualClock::new());
    let mut builder = Executor::standard(Arc::new(recorder), config, Arc::new(chain))
        .map_err(|e| EvalError::caused("the executor", e))?
        .with_clock(clock)
        .with_jitter_seed(u64::from(run));
    if let Some(reconciler) = reconciler {
        builder = builder.with_reconciler(reconciler);
    }
    let mut call = call;
    if let Some(spec) = verify_spec(scenario, &tool) {
        call = call.verify(spec).verify_transport(reads);
    }
    let call = call.build().map_err(|e| {
        EvalError::caused(format!("scenario {}: the call is invalid", scenario.id), e)
    })?;
    let shape = CallShape {
        target: call.target().as_str().to_owned(),
        headers: call.headers().to_vec(),
        payload: call.payload().clone(),
        protected: call.protected().to_vec(),
    };
    let report = builder.build().execute(call).await;
    let sent = std::mem::take(&mut *sent.lock().unwrap_or_else(PoisonError::into_inner));
    let writes = tool.writes();
    if let Tool::Reference(tools, _) = tool {
        tools.shutdown().await;
    }
    Ok(record(run, report, sent, shape, writes))
}

async fn start_tool(
    scenario: &Scenario,
    run: u32,
) -> Result<
    (
        Tool,
        Arc<dyn Transport>,
        String,
        Option<Arc<dyn Reconciler>>,
    ),
    EvalError,
> {
    let wants_lookup = scenario
        .task
        .reconcile
        .unwrap_or_else(|| scenario.writes() && scenario.task.verify.is_none());
    match &scenario.tool {
        ToolBehaviour::Reference(reference) => {
            let mut config = ToolsConfig::default().with_seed(u64::from(run));
            for fault in &reference.faults {
                let fault = fault.parse::<Fault>().map_err(|e| {
                    EvalError::caused(format!("scenario {}: fault {fault:?}", scenario.id), e)
                })?;
                config = config.with_fault(fault);
            }
            if let Some(ms) = reference.retry_after_ms {
                config = config.with_retry_after(Duration::from_millis(ms));
            }
            let tools = spawn(config)
                .await
                .map_err(|e| EvalError::caused("starting the reference tools", e))?;
            let base = tools.base_url();
            let exports = scenario.task.route == "/api/exports";
            let reconciler: Option<Arc<dyn Reconciler>> = match (wants_lookup, exports) {
                (false, _) => None,
                (true, true) => Some(Arc::new(
                    recourse::HttpReconciler::new(format!("{base}/api/exports/{{key}}"))
                        .map_err(|e| EvalError::caused("the outcome lookup", e))?,
                )),
                (true, false) => {
                    return Err(EvalError::new(format!(
                        "scenario {}: only /api/exports has an outcome lookup",
                        scenario.id
                    )));
                }
            };
            let transport = Arc::new(
                HttpTransport::builder()
                    .build()
                    .map_err(|e| EvalError::caused("the HTTP transport", e))?,
            );
            let target = format!("{base}{}", scenario.task.route);
            Ok((
                Tool::Reference(tools, exports),
                transport,
                target,
                reconciler,
            ))
        }
        ToolBehaviour::Script(script) => {
            let tool = ScriptedTool::new(script.clone());
            let reconciler = wants_lookup.then(|| tool.reconciler());
            let transport = Arc::new(tool.transport());
            let target = format!("script://{}", scenario.task.route);
            Ok((Tool::Script(tool), transport, target, reconciler))
        }
    }
}

fn config(scenario: &Scenario) -> ExecutorConfig {
    let task = &scenario.task;
    let mut config = ExecutorConfig {
        request_timeout: Duration::from_secs(5),
        ..ExecutorConfig::default()
    };
    if let Some(secs) = task.deadline_secs {
        config.deadline = Duration::try_from_secs_f64(secs).ok();
    }
    if let Some(n) = task.max_retries {
        config.limits.max_retries = n;
    }
    if let Some(n) = task.max_corrections {
        config.limits.max_corrections = n;
    }
    if let Some(ms) = task.backoff_ms {
        config.backoff_base = Duration::from_millis(ms);
    }
    config
}

/// The task's verification, its reference-tool route made a URL.
fn verify_spec(scenario: &Scenario, tool: &Tool) -> Option<VerifySpec> {
    let mut spec = scenario.task.verify.clone()?;
    if let (Tool::Reference(tools, _), Some(route)) = (tool, &spec.url) {
        spec.url = Some(format!("{}{route}", tools.base_url()));
    }
    Some(spec)
}

/// The task's call, as every door describes one, aimed at `target`.
fn call(
    scenario: &Scenario,
    target: String,
    config: &ExecutorConfig,
) -> Result<CallBuilder, EvalError> {
    let task = &scenario.task;
    let spec = CallSpec {
        idempotent: task.idempotent,
        protect: task.protect.clone(),
        headers: task.headers.clone().into_iter().collect(),
        delegated: task.delegated,
        schema: task.schema.clone(),
        intent: task.intent.clone(),
        ..CallSpec::new(task.payload.clone())
    };
    let invalid = |e: Box<dyn std::error::Error + Send + Sync>| {
        EvalError::caused(format!("scenario {}: the call is invalid", scenario.id), e)
    };
    let target = Target::parse(&target).map_err(|e| invalid(Box::new(e)))?;
    spec.into_builder(target, config, None)
        .map_err(|e| invalid(Box::new(e)))
}

fn record(
    run: u32,
    report: CallReport,
    sent: Vec<SentRequest>,
    call: CallShape,
    writes: Option<usize>,
) -> RunRecord {
    let first = report.attempts.first();
    let failure = report.attempts.iter().find(|a| a.action != Action::Succeed);
    // The question a real call hands the agent (the record's `next.question`).
    let question = report.next().question;
    RunRecord {
        run,
        final_state: report.outcome.kind(),
        stop_reason: report.outcome.reason().cloned(),
        category: failure.and_then(FirstFailure::of),
        next_action: first.map(|a| a.action.kind()),
        attempts: u32::try_from(report.attempts.len()).unwrap_or(u32::MAX),
        writes,
        question,
        report,
        sent,
        call,
    }
}
