//! How a call ended, and the report that explains it.

use std::time::Duration;

use recourse_protocol::ToolError;
use serde_json::{Value, json};

use crate::{AttemptRecord, StopReason};

/// How a logical call ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The tool did what was asked.
    Succeeded {
        /// The result.
        data: Value,
    },
    /// The call stopped without success, and nothing is in doubt.
    Failed {
        /// The last error, if the tool (or transport) gave one.
        error: Option<ToolError>,
        /// Why the executor stopped.
        reason: StopReason,
    },
    /// A write may or may not have committed; a person or a later
    /// reconciliation must check before writing again.
    Unknown {
        /// The last error, if any.
        error: Option<ToolError>,
        /// Why the executor stopped.
        reason: StopReason,
    },
}

impl Outcome {
    /// `succeeded`, `failed` or `unknown`.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Succeeded { .. } => "succeeded",
            Self::Failed { .. } => "failed",
            Self::Unknown { .. } => "unknown",
        }
    }

    /// The stop reason, unless the call succeeded.
    pub fn reason(&self) -> Option<&StopReason> {
        match self {
            Self::Succeeded { .. } => None,
            Self::Failed { reason, .. } | Self::Unknown { reason, .. } => Some(reason),
        }
    }

    /// The last error, unless the call succeeded.
    pub fn error(&self) -> Option<&ToolError> {
        match self {
            Self::Succeeded { .. } => None,
            Self::Failed { error, .. } | Self::Unknown { error, .. } => error.as_ref(),
        }
    }

    /// The process exit code the CLI uses: 0 succeeded, 1 failed, 3 unknown.
    pub fn exit_code(&self) -> i32 {
        match self {
            Self::Succeeded { .. } => 0,
            Self::Failed { .. } => 1,
            Self::Unknown { .. } => 3,
        }
    }
}

/// Model token usage.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TokenUsage {
    /// Prompt tokens.
    pub prompt: u64,
    /// Completion tokens.
    pub completion: u64,
}

/// Everything a call did: its outcome, every attempt, and what it cost.
#[derive(Debug, Clone, PartialEq)]
pub struct CallReport {
    /// The call's id (as recorded in the journal).
    pub call_id: String,
    /// How it ended.
    pub outcome: Outcome,
    /// Every dispatch, in order.
    pub attempts: Vec<AttemptRecord>,
    /// Dispatches made (reconcile lookups not included).
    pub http_calls: u32,
    /// Model calls made by correctors.
    pub llm_calls: u32,
    /// Model tokens spent.
    pub tokens: TokenUsage,
    /// Time spent in corrections that called a model (clock time).
    pub llm_time: Duration,
    /// The idempotency key sent with every attempt, for non-idempotent calls.
    pub idempotency_key: Option<String>,
    /// The tool's operation id, if it reported one (for reconciliation by a person).
    pub operation_id: Option<String>,
    /// Wall time (clock time) the call took.
    pub elapsed: Duration,
}

impl CallReport {
    /// The report as the JSON object `recourse call --json` prints. Errors are redacted.
    pub fn to_json(&self) -> Value {
        json!({
            "call_id": self.call_id,
            "outcome": self.outcome.name(),
            "data": match &self.outcome { Outcome::Succeeded { data } => data.clone(), _ => Value::Null },
            "error": self.outcome.error().map(|e| serde_json::to_value(e.redacted()).unwrap_or(Value::Null)),
            "reason": self.outcome.reason().map(StopReason::code),
            "reason_text": self.outcome.reason().map(ToString::to_string),
            "http_calls": self.http_calls,
            "llm_calls": self.llm_calls,
            "tokens": {"prompt": self.tokens.prompt, "completion": self.tokens.completion},
            "llm_ms": u64::try_from(self.llm_time.as_millis()).unwrap_or(u64::MAX),
            "idempotency_key": self.idempotency_key,
            "operation_id": self.operation_id,
            "elapsed_ms": u64::try_from(self.elapsed.as_millis()).unwrap_or(u64::MAX),
            "attempts": serde_json::to_value(&self.attempts).unwrap_or(Value::Null),
        })
    }
}
