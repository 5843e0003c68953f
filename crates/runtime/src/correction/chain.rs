//! The correction chain: the cheapest layer that can fix a failure, gated.
//!
//! Deterministic repair first (no model, no cost), then LLM correction (L3)
//! when a model is configured and `ai_correction` is on, then contextual
//! re-resolution (L4) when `semantic_retry` is on, the user's original request
//! is known, and this is at most the `max_semantic`-th correction of the call
//! (the chain keeps no per-call state, so the correction number bounds L4).
//! A trajectory without earlier steps (a single `recourse call --intent`)
//! counts as a step without dependencies: `semantic_independent_steps` off
//! skips L4 for it. Every candidate passes the gate; one that fails it is
//! recorded and the next layer is tried. When no layer succeeds the answer is
//! "cannot fix", saying what each layer did. Built without the `llm` feature,
//! the chain is repair only.

use std::collections::HashMap;
use std::sync::Arc;

use super::layer_costs::Tally;
use crate::config::ExecutorConfig;
use crate::correction::{Correction, CorrectionRequest, Corrector};
use crate::correction::{DeterministicRepair, Trajectory};
#[cfg(feature = "llm")]
use crate::correction::{LlmCorrector, LlmDebugStore};
use crate::transport::BoxFuture;
use recourse_core::config::ConfigError;
use recourse_core::record::CorrectionLayer;

/// What the trace says when layers 3 and 4 are off for want of a model.
#[cfg(feature = "llm")]
pub const NO_MODEL: &str = "no model configured: set RECOURSE_LLM_BASE_URL (or OPENAI_BASE_URL / OPENAI_API_KEY) to enable LLM correction";

/// What the trace says when layers 3 and 4 are off for want of a model.
#[cfg(not(feature = "llm"))]
pub const NO_MODEL: &str =
    "this build has no model support (the `llm` cargo feature of `recourse` is off)";

/// Repair, then L3, then L4, each candidate gated.
///
/// ```
/// use recourse::{CorrectionChain, Executor, ExecutorConfig, InProcessTransport};
/// use std::sync::Arc;
///
/// # fn demo(tool: InProcessTransport) -> Result<(), recourse::ConfigError> {
/// let config = ExecutorConfig::from_env()?;
/// let chain = CorrectionChain::from_env(&config)?; // a model only if RECOURSE_LLM_* / OPENAI_* say so
/// let executor = Executor::standard(Arc::new(tool), config, Arc::new(chain))?.build();
/// # let _ = executor; Ok(()) }
/// ```
#[derive(Debug)]
pub struct CorrectionChain {
    #[cfg(feature = "llm")]
    pub(super) llm: Option<LlmCorrector>,
    #[cfg(feature = "llm")]
    pub(super) settings: ModelSettings,
    #[cfg(feature = "llm")]
    pub(super) debug: Option<Arc<LlmDebugStore>>,
}

/// The switches of layers 3 and 4.
#[cfg(feature = "llm")]
#[derive(Debug, Clone, Copy)]
pub(super) struct ModelSettings {
    pub(super) ai_correction: bool,
    pub(super) semantic_retry: bool,
    pub(super) semantic_independent_steps: bool,
    pub(super) max_semantic: u32,
}

/// A [`CorrectionChain`] bound to one workflow step's [`Trajectory`].
#[derive(Debug, Clone)]
pub struct ChainInContext {
    chain: Arc<CorrectionChain>,
    trajectory: Trajectory,
}

impl CorrectionChain {
    /// A chain with `config`'s switches and no model (repair only).
    #[cfg_attr(not(feature = "llm"), allow(unused_variables))]
    pub fn new(config: &ExecutorConfig) -> Self {
        Self {
            #[cfg(feature = "llm")]
            llm: None,
            #[cfg(feature = "llm")]
            settings: ModelSettings {
                ai_correction: config.ai_correction,
                semantic_retry: config.semantic_retry,
                semantic_independent_steps: config.semantic_independent_steps,
                max_semantic: config.max_semantic,
            },
            #[cfg(feature = "llm")]
            debug: config.llm_debug.then(|| {
                let store = LlmDebugStore::default();
                Arc::new(match &config.llm_debug_dir {
                    Some(dir) => store.with_dir(dir),
                    None => store,
                })
            }),
        }
    }

    /// A chain with the model the environment configures (`RECOURSE_LLM_*`,
    /// falling back to `OPENAI_*`); repair only when none is.
    ///
    /// # Errors
    /// An unusable `RECOURSE_LLM_*` / `OPENAI_*` setting.
    pub fn from_env(config: &ExecutorConfig) -> Result<Self, ConfigError> {
        Self::from_vars(config, &std::env::vars().collect())
    }

    /// Like [`from_env`](Self::from_env), from an explicit map. Built without
    /// the `llm` feature, the model variables are not read.
    ///
    /// # Errors
    /// As [`from_env`](Self::from_env), and a debug directory
    /// (`config.llm_debug_dir`) that cannot be created or written.
    #[cfg_attr(not(feature = "llm"), allow(unused_variables))]
    pub fn from_vars(
        config: &ExecutorConfig,
        vars: &HashMap<String, String>,
    ) -> Result<Self, ConfigError> {
        let chain = Self::new(config);
        #[cfg(feature = "llm")]
        if let Some(dir) = chain.debug.as_ref().and_then(|s| s.dir()) {
            dir.prepare().map_err(|e| {
                ConfigError::new(
                    "RECOURSE_LLM_DEBUG_DIR",
                    format!("{}: {e}", dir.path().display()),
                )
            })?;
        }
        #[cfg(feature = "llm")]
        let chain = chain.with_configured_model(vars)?;
        Ok(chain)
    }

    /// Whether layers 3 and 4 have a model.
    pub fn has_model(&self) -> bool {
        #[cfg(feature = "llm")]
        return self.llm.is_some();
        #[cfg(not(feature = "llm"))]
        false
    }

    /// Binds the chain to a workflow step's context, for its executor.
    pub fn in_context(self: &Arc<Self>, trajectory: Trajectory) -> ChainInContext {
        ChainInContext {
            chain: Arc::clone(self),
            trajectory,
        }
    }

    /// Corrects `request`, giving L4 `trajectory` (or, without one, the
    /// request's intent as the original request).
    pub async fn correct_in_context(
        &self,
        request: CorrectionRequest<'_>,
        trajectory: Option<&Trajectory>,
    ) -> Correction {
        let mut tally = Tally::default();
        let repaired = async { DeterministicRepair.propose(&request) };
        if let Some(done) = tally.ask(CorrectionLayer::Repair, &request, repaired).await {
            return done;
        }
        #[cfg(feature = "llm")]
        if let Some(llm) = &self.llm {
            return self.model_layers(llm, &request, trajectory, tally).await;
        }
        #[cfg(not(feature = "llm"))]
        let _ = trajectory;
        tally.skip(CorrectionLayer::Llm, NO_MODEL);
        tally.cannot_fix()
    }
}

impl Corrector for CorrectionChain {
    fn correct<'a>(&'a self, request: CorrectionRequest<'a>) -> BoxFuture<'a, Correction> {
        Box::pin(self.correct_in_context(request, None))
    }
}

impl Corrector for ChainInContext {
    fn correct<'a>(&'a self, request: CorrectionRequest<'a>) -> BoxFuture<'a, Correction> {
        Box::pin(
            self.chain
                .correct_in_context(request, Some(&self.trajectory)),
        )
    }
}
