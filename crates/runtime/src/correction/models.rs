//! Layers 3 and 4 of the correction chain: the parts that need a model
//! (the `llm` feature).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use super::chain::CorrectionChain;
use super::layer_costs::Tally;
use super::model_view::Hidden;
use crate::correction::{ContextualReresolution, LlmCorrector, LlmDebugStore, Trajectory};
use crate::correction::{Correction, CorrectionRequest};
use crate::llm::{LanguageModel, LlmConfig, OpenAiCompatible};
use recourse_core::config::ConfigError;
use recourse_core::record::CorrectionLayer;

impl CorrectionChain {
    /// This chain with the model `vars` configure, if any.
    pub(super) fn with_configured_model(
        self,
        vars: &HashMap<String, String>,
    ) -> Result<Self, ConfigError> {
        let Some(llm) = LlmConfig::from_vars(vars)? else {
            return Ok(self);
        };
        let (temperature, max_tokens, timeout) = (llm.temperature, llm.max_tokens, llm.timeout);
        let model = OpenAiCompatible::new(llm)?;
        Ok(self
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

    /// The LLM debug store, when `llm_debug` is on or one was given.
    pub fn debug_store(&self) -> Option<&Arc<LlmDebugStore>> {
        self.debug.as_ref()
    }

    /// L3, then L4, after repair could not fix it.
    pub(super) async fn model_layers(
        &self,
        llm: &LlmCorrector,
        request: &CorrectionRequest<'_>,
        trajectory: Option<&Trajectory>,
        mut tally: Tally,
    ) -> Correction {
        let s = self.settings;
        // The model sees the payload redacted; what it proposes gets the
        // hidden values back, and is gated with them protected.
        let hidden = Hidden::of(request);
        let (shown, gated) = (hidden.shown(request), hidden.gated(request));
        if s.ai_correction {
            let proposed = async { hidden.restored(llm.propose(&shown).await, request.payload) };
            if let Some(done) = tally.ask(CorrectionLayer::Llm, &gated, proposed).await {
                return done;
            }
        } else {
            tally.skip(CorrectionLayer::Llm, "off (RECOURSE_AI_CORRECTION)");
        }
        let from_intent = request.intent.map(Trajectory::new);
        let skip = match trajectory.or(from_intent.as_ref()) {
            _ if !s.semantic_retry => "off (RECOURSE_SEMANTIC_RETRY)".to_owned(),
            None => "no original request (--intent)".to_owned(),
            Some(t) if t.steps.is_empty() && !s.semantic_independent_steps => {
                "off for steps without dependencies".to_owned()
            }
            Some(_) if request.attempt > s.max_semantic => {
                format!("limit of {} reached", s.max_semantic)
            }
            Some(t) => {
                let reresolution = ContextualReresolution::new(llm.clone());
                let proposed = async {
                    hidden.restored(reresolution.propose(&shown, t).await, request.payload)
                };
                if let Some(done) = tally.ask(CorrectionLayer::Semantic, &gated, proposed).await {
                    return done;
                }
                return tally.cannot_fix();
            }
        };
        tally.skip(CorrectionLayer::Semantic, skip);
        tally.cannot_fix()
    }
}
