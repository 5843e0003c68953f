//! The plan model: what a planner hands the workflow engine, as JSON.

use serde::Deserialize;
use serde_json::Value;

use super::PlanError;

/// A plan: the user's request and the steps that fulfil it.
///
/// ```
/// use recourse::workflow::Plan;
///
/// let plan = Plan::from_json(br#"{
///   "plan_id": "sell-and-convert",
///   "original_request": "Sell 100 Tesla shares and convert the proceeds to EUR",
///   "steps": [
///     {"step_id": "quote", "capability": "stock_quote", "parameters": {"symbol": "TSLA"}},
///     {"step_id": "convert", "capability": "currency_convert", "depends_on": ["quote"],
///      "parameters": {"amount": 0, "from": "USD", "to": "EUR"}}
///   ]
/// }"#).unwrap();
/// assert_eq!(plan.steps[1].depends_on, ["quote"]);
/// ```
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    /// The plan's id, echoed in its report.
    pub plan_id: String,
    /// What the user asked for, in their words (contextual re-resolution reads it).
    #[serde(default)]
    pub original_request: String,
    /// The steps, in the planner's order.
    pub steps: Vec<PlanStep>,
    /// Free text for people (how to run the plan, say); ignored by the engine.
    #[serde(default)]
    pub comment: Option<String>,
}

/// One step of a [`Plan`]: a tool call, its inputs, and what it waits for.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanStep {
    /// Unique within the plan; references name it (`{{quote.data.price}}`).
    pub step_id: String,
    /// The tool's URL. Exactly one of `url` and `capability` is given.
    #[serde(default)]
    pub url: Option<String>,
    /// A capability name, resolved against the catalogues.
    #[serde(default)]
    pub capability: Option<String>,
    /// The payload, which may hold `{{step.path}}` references. Default `{}`.
    #[serde(default = "empty_object")]
    pub parameters: Value,
    /// Steps that must succeed before this one runs.
    #[serde(default)]
    pub depends_on: Vec<String>,
    /// Ask the approver before dispatch; approved values become protected.
    #[serde(default)]
    pub approval: bool,
    /// JSON Pointers to parameters the caller bound exactly (protected).
    #[serde(default)]
    pub exact: Vec<String>,
    /// Whether the step may be resent: outranks the catalogue's declaration.
    /// Without either, the tool's manifest, then the method decide, else it
    /// is not idempotent.
    #[serde(default)]
    pub idempotent: Option<bool>,
    /// The HTTP method (default `POST`; a capability's is the catalogue's).
    #[serde(default)]
    pub method: Option<recourse_core::method::Method>,
    /// A reconcile URL template (`{key}`, `{operation_id}`); a leading `/` is
    /// relative to the tool's base URL. Overrides the capability's.
    #[serde(default)]
    pub reconcile: Option<String>,
    /// A read-back verification of the step's write (see
    /// [`VerifySpec`](crate::verify::VerifySpec)): an HTTP read only (`url`; a
    /// leading `/` is relative to the tool's base URL), its templates over
    /// the step's parameters (`{{payload.order_id}}`).
    #[serde(default)]
    pub verify: Option<crate::verify::VerifySpec>,
    /// Free text for people; ignored by the engine.
    #[serde(default)]
    pub comment: Option<String>,
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

impl Plan {
    /// Parses a plan from JSON. Only the shape is checked here; see
    /// [`Workflow::new`](crate::workflow::Workflow::new) for validation.
    ///
    /// # Errors
    /// [`PlanError::Syntax`] naming the line, column and problem.
    pub fn from_json(bytes: &[u8]) -> Result<Self, PlanError> {
        serde_json::from_slice(bytes).map_err(|e| PlanError::Syntax(e.to_string()))
    }

    /// The step called `step_id`.
    pub fn step(&self, step_id: &str) -> Option<&PlanStep> {
        self.steps.iter().find(|s| s.step_id == step_id)
    }
}
