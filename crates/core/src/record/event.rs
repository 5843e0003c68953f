//! What recourse did around an attempt, as typed events.

use serde::{Deserialize, Serialize};
use strum::{EnumCount, EnumIter, EnumString, IntoStaticStr, VariantNames};

use crate::policy::VerifyResult;
use crate::policy::WaitCause;
use crate::record::CallState;
use crate::record::CoercionChange;

/// One thing recourse did for an attempt, in order.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Event {
    /// Schema coercion (L2) changed this attempt's payload before it was sent.
    Coerced {
        /// Each change, in payload order.
        changes: Vec<CoercionChange>,
    },
    /// A correction layer was asked (or skipped) after this attempt failed.
    Correction {
        /// The layer.
        layer: CorrectionLayer,
        /// What came of it.
        #[serde(flatten)]
        verdict: Verdict,
        /// Why, in words (redacted; for people, never read by recourse).
        reason: String,
    },
    /// The executor waited before the next dispatch or lookup.
    Waited {
        /// How long, in milliseconds.
        ms: u64,
        /// Who asked for the wait.
        cause: WaitCause,
    },
    /// A lookup of a write whose outcome was unknown.
    Lookup {
        /// What it found.
        result: LookupResult,
        /// Why it could not tell, when it could not (redacted; for people).
        #[serde(skip_serializing_if = "Option::is_none")]
        detail: Option<String>,
    },
    /// A verification read of the write's effect (see
    /// [`Policy::after_verification`](crate::policy::Policy::after_verification)).
    Verify {
        /// Before the first dispatch, or after an answer.
        phase: VerifyPhase,
        /// What it found.
        result: VerifyResult,
        /// What did not hold, or why it could not tell (redacted; for people).
        #[serde(skip_serializing_if = "Option::is_none")]
        detail: Option<String>,
    },
    /// The journal recorded the call in this state.
    Journal {
        /// The state written.
        state: CallState,
    },
}

/// A correction layer, by the name its payloads carry as `source`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
#[derive(IntoStaticStr, EnumString, EnumIter, VariantNames)]
#[strum(serialize_all = "snake_case")]
pub enum CorrectionLayer {
    /// Deterministic repair (L2.5).
    Repair,
    /// LLM correction (L3).
    Llm,
    /// Contextual re-resolution (L4).
    Semantic,
}

impl CorrectionLayer {
    /// `repair`, `llm` or `semantic`.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// What came of asking a correction layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "verdict", rename_all = "snake_case")]
#[derive(IntoStaticStr, EnumCount)]
#[strum(serialize_all = "snake_case")]
pub enum Verdict {
    /// It proposed a payload that passed the gate; that payload is sent next.
    Fixed,
    /// It had no payload to propose.
    CannotFix,
    /// It proposed a payload the gate refused, by `rule`.
    RejectedByGate {
        /// The gate's rule that refused it.
        rule: GateRule,
    },
    /// It was not asked (switched off, no model, no original request, limit reached).
    Skipped,
}

impl Verdict {
    /// `fixed`, `cannot_fix`, `rejected_by_gate` or `skipped`.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// A rule of the correction gate every proposed payload must pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
#[derive(IntoStaticStr, EnumString, EnumIter, VariantNames)]
#[strum(serialize_all = "snake_case")]
pub enum GateRule {
    /// A payload must be a JSON object.
    NotObject,
    /// A protected value was changed, removed or retyped.
    ProtectedChanged,
    /// A field the schema does not define was added.
    UnknownField,
    /// The payload is the one that failed (after coercion).
    Unchanged,
    /// The payload does not satisfy the schema after coercion.
    SchemaInvalid,
}

impl GateRule {
    /// The rule's snake-case name.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// What a lookup of an unknown outcome found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
#[derive(IntoStaticStr, EnumString, EnumIter, VariantNames)]
#[strum(serialize_all = "snake_case")]
pub enum LookupResult {
    /// The write committed.
    Committed,
    /// Nothing was committed.
    NotCommitted,
    /// The write is still in progress.
    Pending,
    /// The lookup could not tell.
    CannotTell,
}

impl LookupResult {
    /// The result's snake-case name.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// When a verification read ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
#[derive(IntoStaticStr, EnumString, EnumIter, VariantNames)]
#[strum(serialize_all = "snake_case")]
pub enum VerifyPhase {
    /// Once, before the first dispatch: was the effect there already?
    Before,
    /// After the write answered (an unknown outcome, or a success read back).
    After,
}

impl VerifyPhase {
    /// `before` or `after`.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}
