//! L3 LLM correction: a model proposes a corrected payload from the error.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::ask::Asker;
use super::debug::LlmDebugStore;
use super::prompt::correction_messages;
use super::reply::{flag, text};
use crate::correction::{Correction, CorrectionRequest, Corrector};
use crate::llm::LanguageModel;
use crate::transport::BoxFuture;
use recourse_core::record::CorrectionLayer;

/// L3: asks a model for `{"can_fix", "analysis", "corrected_payload"}`.
///
/// The model sees the redacted, size-capped, fenced error, the failed payload,
/// the schema, the protected fields and the attempt number. Its proposal is
/// only a proposal: a [`CorrectionChain`](crate::correction::CorrectionChain) gates it, and
/// the executor gates it again. Used alone as a [`Corrector`], it is not gated
/// against the schema.
#[derive(Clone)]
pub struct LlmCorrector {
    asker: Asker,
}

impl std::fmt::Debug for LlmCorrector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmCorrector")
            .field("temperature", &self.asker.temperature)
            .field("max_tokens", &self.asker.max_tokens)
            .finish_non_exhaustive()
    }
}

impl LlmCorrector {
    /// A corrector asking `model` at temperature 0.1 for at most 300 tokens.
    pub fn new(model: Arc<dyn LanguageModel>) -> Self {
        Self {
            asker: Asker::new(model),
        }
    }

    /// Sets the sampling temperature and the reply's token limit.
    #[must_use]
    pub fn with_sampling(mut self, temperature: f32, max_tokens: u32) -> Self {
        self.asker.temperature = temperature;
        self.asker.max_tokens = max_tokens;
        self
    }

    /// Gives up on the model after `timeout` (default 60 s).
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.asker.timeout = timeout;
        self
    }

    /// Keeps every prompt and reply in `store`.
    #[must_use]
    pub fn with_debug_store(mut self, store: Arc<LlmDebugStore>) -> Self {
        self.asker.debug = Some(store);
        self
    }

    pub(crate) fn asker(&self) -> &Asker {
        &self.asker
    }

    /// Asks the model once. A failing model, or a reply without `can_fix:
    /// true` and an object `corrected_payload`, is "cannot fix".
    pub async fn propose(&self, request: &CorrectionRequest<'_>) -> Correction {
        let asked = self
            .asker
            .ask(CorrectionLayer::Llm, request, correction_messages(request))
            .await;
        asked.into_correction(
            |reply| {
                let analysis = text(&reply, "analysis").to_owned();
                if flag(&reply, "can_fix") != Some(true) {
                    return Err(format!("the model cannot fix it: {analysis}"));
                }
                match reply.get("corrected_payload") {
                    Some(p @ Value::Object(_)) => Ok((p.clone(), analysis)),
                    _ => Err("the model's reply has no corrected_payload object".to_owned()),
                }
            },
            CorrectionLayer::Llm,
        )
    }
}

impl Corrector for LlmCorrector {
    fn correct<'a>(&'a self, request: CorrectionRequest<'a>) -> BoxFuture<'a, Correction> {
        Box::pin(async move { self.propose(&request).await })
    }
}
