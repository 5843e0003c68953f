//! What a workflow did: each step's outcome, keyed by step id.

use recourse_protocol::ToolError;
use serde_json::{Map, Value, json};

use recourse_core::record::CallReport;

/// How one step ended.
#[derive(Debug, Clone, PartialEq)]
pub enum StepOutcome {
    /// The tool did what was asked.
    Succeeded {
        /// The result's data.
        data: Value,
    },
    /// The step stopped without success; nothing is in doubt.
    Failed {
        /// The tool's last error, if any.
        error: Option<ToolError>,
        /// Why it stopped.
        reason: String,
    },
    /// A write may or may not have committed.
    Unknown {
        /// The tool's last error, if any.
        error: Option<ToolError>,
        /// Why it stopped.
        reason: String,
    },
    /// The step never ran.
    Skipped {
        /// Why (a dependency failed, the run was cancelled).
        reason: String,
    },
}

impl StepOutcome {
    /// `succeeded`, `failed`, `unknown` or `skipped`.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Succeeded { .. } => "succeeded",
            Self::Failed { .. } => "failed",
            Self::Unknown { .. } => "unknown",
            Self::Skipped { .. } => "skipped",
        }
    }

    /// Why the step did not succeed.
    pub fn reason(&self) -> Option<&str> {
        match self {
            Self::Succeeded { .. } => None,
            Self::Failed { reason, .. }
            | Self::Unknown { reason, .. }
            | Self::Skipped { reason } => Some(reason),
        }
    }

    /// The tool's last error, if the step failed with one.
    pub fn error(&self) -> Option<&ToolError> {
        match self {
            Self::Failed { error, .. } | Self::Unknown { error, .. } => error.as_ref(),
            _ => None,
        }
    }
}

/// One step's report.
#[derive(Debug, Clone, PartialEq)]
pub struct StepReport {
    /// The step.
    pub step_id: String,
    /// How it ended.
    pub outcome: StepOutcome,
    /// Where it was sent, if it was.
    pub target: Option<String>,
    /// The call's full report, if the step was dispatched.
    pub call: Option<CallReport>,
}

impl StepReport {
    pub(crate) fn without_call(step_id: &str, outcome: StepOutcome) -> Self {
        Self {
            step_id: step_id.to_owned(),
            outcome,
            target: None,
            call: None,
        }
    }

    /// The step as `recourse run --json` prints it. Errors are redacted.
    pub fn to_json(&self) -> Value {
        json!({
            "outcome": self.outcome.name(),
            "data": match &self.outcome { StepOutcome::Succeeded { data } => data.clone(), _ => Value::Null },
            "error": self.outcome.error().map(|e| serde_json::to_value(e.redacted()).unwrap_or(Value::Null)),
            "reason": self.outcome.reason(),
            "attempts": self.call.as_ref().map_or_else(
                || Value::Array(Vec::new()),
                |c| serde_json::to_value(&c.attempts).unwrap_or(Value::Null),
            ),
        })
    }
}

/// Every step's report, in plan order.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkflowReport {
    /// The plan's id.
    pub plan_id: String,
    /// One report per step, in plan order.
    pub steps: Vec<StepReport>,
}

impl WorkflowReport {
    /// Whether every step succeeded.
    pub fn success(&self) -> bool {
        self.steps
            .iter()
            .all(|s| matches!(s.outcome, StepOutcome::Succeeded { .. }))
    }

    /// The step called `step_id`.
    pub fn step(&self, step_id: &str) -> Option<&StepReport> {
        self.steps.iter().find(|s| s.step_id == step_id)
    }

    /// The CLI's exit code: 0 all succeeded, 3 any unknown, else 1.
    pub fn exit_code(&self) -> i32 {
        if self.success() {
            0
        } else if self
            .steps
            .iter()
            .any(|s| matches!(s.outcome, StepOutcome::Unknown { .. }))
        {
            3
        } else {
            1
        }
    }

    /// `{plan_id, success, steps: {step_id: {outcome, data, error, reason, attempts}}}`.
    pub fn to_json(&self) -> Value {
        let steps: Map<String, Value> = self
            .steps
            .iter()
            .map(|s| (s.step_id.clone(), s.to_json()))
            .collect();
        json!({"plan_id": self.plan_id, "success": self.success(), "steps": steps})
    }
}
