//! The corrector seam: who proposes a different payload after a correctable failure.

use recourse_protocol::ToolError;
use serde_json::Value;

use crate::schema::Schema;
use crate::transport::BoxFuture;
use recourse_core::protect::Protected;
use recourse_core::record::{CorrectionLayer, TokenUsage, Verdict};
use recourse_core::target::Target;

/// What a corrector is told about the failure.
#[derive(Debug, Clone, Copy)]
pub struct CorrectionRequest<'a> {
    /// The call's target (for context; a corrector can never change it).
    pub target: &'a Target,
    /// The payload that failed.
    pub payload: &'a Value,
    /// The tool's error, raw. Redact before showing it to a model.
    pub error: &'a ToolError,
    /// The call's protected values.
    pub protected: &'a Protected,
    /// The capability's compiled input schema, if known.
    pub schema: Option<&'a Schema>,
    /// The user's original request, if known (enables contextual re-resolution).
    pub intent: Option<&'a str>,
    /// 1-based number of this correction within the call.
    pub attempt: u32,
}

/// What one layer did when asked, for the record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayerVerdict {
    /// The layer.
    pub layer: CorrectionLayer,
    /// What came of it (never [`Verdict::Fixed`]: a fix is the [`Correction`] itself).
    pub verdict: Verdict,
    /// Why, in words (for people; redacted).
    pub reason: String,
}

/// A corrector's answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Correction {
    /// A different payload to try.
    Corrected {
        /// The proposed payload (the executor still gates it).
        payload: Value,
        /// Which layer produced it.
        layer: CorrectionLayer,
        /// What was changed and why, for the record.
        reason: String,
        /// The layers tried before this one, and what each did.
        tried: Vec<LayerVerdict>,
        /// Model calls spent.
        llm_calls: u32,
        /// Model tokens spent.
        tokens: TokenUsage,
    },
    /// No acceptable payload.
    CannotFix {
        /// Each layer tried (or skipped), and what it did.
        tried: Vec<LayerVerdict>,
        /// Model calls spent.
        llm_calls: u32,
        /// Model tokens spent.
        tokens: TokenUsage,
    },
}

impl Correction {
    /// A payload from `layer`, at no model cost.
    pub fn fixed(layer: CorrectionLayer, payload: Value, reason: impl Into<String>) -> Self {
        Self::Corrected {
            payload,
            layer,
            reason: reason.into(),
            tried: Vec::new(),
            llm_calls: 0,
            tokens: TokenUsage::default(),
        }
    }

    /// `layer` cannot fix it, at no model cost.
    pub fn cannot_fix(layer: CorrectionLayer, why: impl Into<String>) -> Self {
        Self::CannotFix {
            tried: vec![LayerVerdict {
                layer,
                verdict: Verdict::CannotFix,
                reason: why.into(),
            }],
            llm_calls: 0,
            tokens: TokenUsage::default(),
        }
    }

    /// Model calls and tokens this correction spent.
    pub fn spent(&self) -> (u32, TokenUsage) {
        match self {
            Self::Corrected {
                llm_calls, tokens, ..
            }
            | Self::CannotFix {
                llm_calls, tokens, ..
            } => (*llm_calls, *tokens),
        }
    }
}

/// Proposes corrected payloads. Never changes the target, headers or credentials:
/// it can only return a payload.
pub trait Corrector: Send + Sync {
    /// Proposes a payload for the failure in `request`.
    fn correct<'a>(&'a self, request: CorrectionRequest<'a>) -> BoxFuture<'a, Correction>;
}
