//! What contextual re-resolution (L4) knows beyond the failure itself.

use recourse_protocol::ToolError;
use serde_json::Value;

/// The user's original request, what earlier steps returned (per step, never
/// merged), and the attempts that already failed.
///
/// A single `recourse call` has only the request (`--intent`); a workflow
/// passes its steps' results so a model can compute a parameter from them.
///
/// ```
/// use recourse::correction::Trajectory;
/// use serde_json::json;
///
/// let t = Trajectory::new("Sell 100 shares of TSLA at the market price")
///     .with_step("quote", json!({"success": true, "data": {"symbol": "TSLA", "price": 468.285}}));
/// assert_eq!(t.steps[0].0, "quote");
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Trajectory {
    /// What the user asked for, in their words.
    pub original_request: String,
    /// Earlier steps' results, by step id, in order.
    pub steps: Vec<(String, Value)>,
    /// Earlier failed attempts of this step: the payload and the error.
    pub failures: Vec<FailedAttempt>,
}

/// An attempt that failed before the current one.
#[derive(Debug, Clone, PartialEq)]
pub struct FailedAttempt {
    /// What was sent.
    pub payload: Value,
    /// What the tool said.
    pub error: ToolError,
}

impl Trajectory {
    /// A trajectory holding only the user's request.
    pub fn new(original_request: impl Into<String>) -> Self {
        Self {
            original_request: original_request.into(),
            steps: Vec::new(),
            failures: Vec::new(),
        }
    }

    /// Adds an earlier step's result.
    #[must_use]
    pub fn with_step(mut self, step_id: impl Into<String>, result: Value) -> Self {
        self.steps.push((step_id.into(), result));
        self
    }

    /// Adds an earlier failed attempt.
    #[must_use]
    pub fn with_failure(mut self, payload: Value, error: ToolError) -> Self {
        self.failures.push(FailedAttempt { payload, error });
        self
    }
}
