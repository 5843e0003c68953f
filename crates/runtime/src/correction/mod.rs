//! Correction: what changes a payload after a correctable failure, and what
//! stops a bad change from being sent (protocol §4).
//!
//! The layers, cheapest first:
//!
//! | layer | what | cost |
//! |---|---|---|
//! | L2 [`SchemaCoercion`] | `"12"` → `12` where the schema wants a number, before every dispatch | none |
//! | L2.5 [`DeterministicRepair`] | enum near-misses, a tool's `suggestion` for its `field` | none |
//! | L3 [`LlmCorrector`] | a model fixes the payload from the (redacted, fenced) error | one model call |
//! | L4 [`ContextualReresolution`] | a model re-derives parameters from the user's request and earlier results | one model call |
//!
//! [`CorrectionChain`] runs 2.5 → 3 → 4 and gates every candidate: an object,
//! different from what failed, protected values intact, no field the schema
//! does not know, valid after coercion. Why a gate at all, when the model was
//! told the rules? Because instructions are not guarantees: a model may
//! "helpfully" round a protected amount or add a field a hostile error message
//! asked for. The gate is the only part of correction that does not have to be
//! trusted.

mod admit;
#[cfg(feature = "llm")]
mod ask;
mod chain;
mod coerce;
mod corrector;
#[cfg(feature = "llm")]
mod debug;
mod gate;
mod layer_costs;
#[cfg(feature = "llm")]
mod llm_fix;
#[cfg(feature = "llm")]
mod model_view;
#[cfg(feature = "llm")]
mod models;
mod near_miss;
mod paths;
#[cfg(feature = "llm")]
mod prompt;
mod repair;
#[cfg(feature = "llm")]
mod reply;
#[cfg(feature = "llm")]
mod reresolve;
mod trajectory;

pub use crate::schema::{Schema, SchemaViolation};
pub use admit::{Admission, Admitted, AsIs};
pub use chain::{ChainInContext, CorrectionChain, NO_MODEL};
pub use coerce::SchemaCoercion;
pub use corrector::{Correction, CorrectionRequest, Corrector, LayerVerdict};
#[cfg(feature = "llm")]
pub use debug::{
    DebugMessage, LLM_DEBUG_VERSION, LlmDebugDir, LlmDebugEntry, LlmDebugRecord, LlmDebugStore,
    LlmExchange,
};
pub(crate) use gate::{Rejection, gate};
#[cfg(feature = "llm")]
pub use llm_fix::LlmCorrector;
pub use repair::DeterministicRepair;
#[cfg(feature = "llm")]
pub use reresolve::ContextualReresolution;
pub use trajectory::{FailedAttempt, Trajectory};
