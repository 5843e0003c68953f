//! The corrector seam: who proposes a different payload after a correctable failure.

use recourse_protocol::ToolError;
use serde_json::Value;

use crate::transport::BoxFuture;
use crate::{PayloadSource, Protected, TokenUsage};

/// What a corrector is told about the failure.
#[derive(Debug, Clone, Copy)]
pub struct CorrectionRequest<'a> {
    /// The call's target (for context; a corrector can never change it).
    pub target: &'a str,
    /// The payload that failed.
    pub payload: &'a Value,
    /// The tool's error, raw. Redact before showing it to a model.
    pub error: &'a ToolError,
    /// The call's protected values.
    pub protected: &'a Protected,
    /// The capability's input schema, if known.
    pub schema: Option<&'a Value>,
    /// The user's original request, if known (enables contextual re-resolution).
    pub intent: Option<&'a str>,
    /// 1-based number of this correction within the call.
    pub attempt: u32,
}

/// A corrector's answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Correction {
    /// A different payload to try.
    Corrected {
        /// The proposed payload (the executor still gates it).
        payload: Value,
        /// Which layer produced it.
        source: PayloadSource,
        /// What was changed and why, for the trace.
        note: String,
        /// Model calls spent.
        llm_calls: u32,
        /// Model tokens spent.
        tokens: TokenUsage,
    },
    /// No acceptable payload.
    CannotFix {
        /// Why, for the trace.
        why: String,
        /// Model calls spent.
        llm_calls: u32,
        /// Model tokens spent.
        tokens: TokenUsage,
    },
}

/// Proposes corrected payloads. Never changes the target, headers or credentials:
/// it can only return a payload.
pub trait Corrector: Send + Sync {
    /// Proposes a payload for the failure in `request`.
    fn correct<'a>(&'a self, request: CorrectionRequest<'a>) -> BoxFuture<'a, Correction>;
}
