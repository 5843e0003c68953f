//! The correction chain: the cheapest layer that can fix a failure, gated.
//!
//! Deterministic repair first (no model, no cost), then LLM correction (L3)
//! when a model is configured and `ai_correction` is on, then contextual
//! re-resolution (L4) when `semantic_retry` is on, the user's original request
//! is known, and this is at most the `max_semantic`-th correction of the call
//! (the chain keeps no per-call state, so the correction number bounds L4).
//! A trajectory without earlier steps (a single `recourse call --intent`)
//! counts as a step without dependencies: `semantic_independent_steps` off
//! skips L4 for it. Every
//! candidate passes the gate; one that fails it is recorded and the next layer
//! is tried. When no layer succeeds the answer is "cannot fix", saying what
//! each layer did.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use super::debug::LlmDebugStore;
use super::tally::Tally;
use crate::llm::{LanguageModel, LlmConfig, OpenAiCompatible};
use crate::transport::BoxFuture;
use crate::{
    ConfigError, ContextualReresolution, Correction, CorrectionLayer, CorrectionRequest, Corrector,
    DeterministicRepair, ExecutorConfig, LlmCorrector, Trajectory,
};

/// What the trace says when layers 3 and 4 are off for want of a model.
pub const NO_MODEL: &str = "no model configured: set RECOURSE_LLM_BASE_URL (or OPENAI_BASE_URL / OPENAI_API_KEY) to enable LLM correction";

/// Repair, then L3, then L4, each candidate gated.
///
/// ```
/// use recourse::{CorrectionChain, Executor, ExecutorConfig, InProcessTransport, SchemaCoercion};
/// use std::sync::Arc;
///
/// # fn demo(tool: InProcessTransport) -> Result<(), recourse::ConfigError> {
/// let config = ExecutorConfig::from_env()?;
/// let chain = CorrectionChain::from_env(&config)?; // a model only if RECOURSE_LLM_* / OPENAI_* say so
/// let executor = Executor::builder(tool)
///     .with_config(config)?
///     .with_admission(Arc::new(SchemaCoercion))
///     .with_corrector(Arc::new(chain))
///     .build();
/// # let _ = executor; Ok(()) }
/// ```
#[derive(Debug)]
pub struct CorrectionChain {
    llm: Option<LlmCorrector>,
    ai_correction: bool,
    semantic_retry: bool,
    semantic_independent_steps: bool,
    max_semantic: u32,
    debug: Option<Arc<LlmDebugStore>>,
}

/// A [`CorrectionChain`] bound to one workflow step's [`Trajectory`].
#[derive(Debug, Clone)]
pub struct ChainInContext {
    chain: Arc<CorrectionChain>,
    trajectory: Trajectory,
}

impl CorrectionChain {
    /// A chain with `config`'s switches and no model (repair only).
    pub fn new(config: &ExecutorConfig) -> Self {
        Self {
            llm: None,
            ai_correction: config.ai_correction,
            semantic_retry: config.semantic_retry,
            semantic_independent_steps: config.semantic_independent_steps,
            max_semantic: config.max_semantic,
            debug: config.llm_debug.then(|| Arc::new(LlmDebugStore::default())),
        }
    }

    /// A chain with the model the environment configures ([`LlmConfig::from_env`]).
    ///
    /// # Errors
    /// An unusable `RECOURSE_LLM_*` / `OPENAI_*` setting.
    pub fn from_env(config: &ExecutorConfig) -> Result<Self, ConfigError> {
        Self::from_vars(config, &std::env::vars().collect())
    }

    /// Like [`from_env`](Self::from_env), from an explicit map.
    ///
    /// # Errors
    /// As [`from_env`](Self::from_env).
    pub fn from_vars(
        config: &ExecutorConfig,
        vars: &HashMap<String, String>,
    ) -> Result<Self, ConfigError> {
        let chain = Self::new(config);
        let Some(llm) = LlmConfig::from_vars(vars)? else {
            return Ok(chain);
        };
        let (temperature, max_tokens, timeout) = (llm.temperature, llm.max_tokens, llm.timeout);
        let model = OpenAiCompatible::new(llm)?;
        Ok(chain
            .with_model(Arc::new(model))
            .with_sampling(temperature, max_tokens)
            .with_model_timeout(timeout + Duration::from_secs(1)))
    }

    /// Uses `model` for layers 3 and 4.
    #[must_use]
    pub fn with_model(mut self, model: Arc<dyn LanguageModel>) -> Self {
        let mut llm = LlmCorrector::new(model);
        if let Some(store) = &self.debug {
            llm = llm.with_debug_store(Arc::clone(store));
        }
        self.llm = Some(llm);
        self
    }

    /// Sets the model's temperature and reply token limit (defaults 0.1 and 300).
    #[must_use]
    pub fn with_sampling(mut self, temperature: f32, max_tokens: u32) -> Self {
        self.llm = self.llm.map(|l| l.with_sampling(temperature, max_tokens));
        self
    }

    /// Gives up on the model after `timeout`.
    #[must_use]
    pub fn with_model_timeout(mut self, timeout: Duration) -> Self {
        self.llm = self.llm.map(|l| l.with_timeout(timeout));
        self
    }

    /// Keeps every prompt and reply (redacted) in `store`.
    #[must_use]
    pub fn with_debug_store(mut self, store: Arc<LlmDebugStore>) -> Self {
        self.llm = self.llm.map(|l| l.with_debug_store(Arc::clone(&store)));
        self.debug = Some(store);
        self
    }

    /// Whether layers 3 and 4 have a model.
    pub fn has_model(&self) -> bool {
        self.llm.is_some()
    }

    /// The LLM debug store, when `llm_debug` is on or one was given.
    pub fn debug_store(&self) -> Option<&Arc<LlmDebugStore>> {
        self.debug.as_ref()
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
        let repaired = DeterministicRepair.propose(&request);
        if let Some(done) = tally.consider(repaired, &request) {
            return done;
        }
        let Some(llm) = &self.llm else {
            tally.skip(CorrectionLayer::Llm, NO_MODEL);
            return tally.cannot_fix();
        };
        if self.ai_correction {
            let proposed = llm.propose(&request).await;
            if let Some(done) = tally.consider(proposed, &request) {
                return done;
            }
        } else {
            tally.skip(CorrectionLayer::Llm, "off (RECOURSE_AI_CORRECTION)");
        }
        let from_intent = request.intent.map(Trajectory::new);
        let skip = match trajectory.or(from_intent.as_ref()) {
            _ if !self.semantic_retry => "off (RECOURSE_SEMANTIC_RETRY)".to_owned(),
            None => "no original request (--intent)".to_owned(),
            Some(t) if t.steps.is_empty() && !self.semantic_independent_steps => {
                "off for steps without dependencies".to_owned()
            }
            Some(_) if request.attempt > self.max_semantic => {
                format!("limit of {} reached", self.max_semantic)
            }
            Some(t) => {
                let proposed = ContextualReresolution::new(llm.clone())
                    .propose(&request, t)
                    .await;
                if let Some(done) = tally.consider(proposed, &request) {
                    return done;
                }
                return tally.cannot_fix();
            }
        };
        tally.skip(CorrectionLayer::Semantic, skip);
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
