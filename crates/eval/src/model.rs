//! Which model correction layers 3 and 4 ask during an evaluation.
//!
//! `--model scripted` replays each scenario's reference replies through
//! [`ScriptedModel`], a real [`LanguageModel`]: the prompts are built, sent and
//! answered exactly as with a hosted model, so the whole correction path —
//! prompt, reply parsing, gate — is exercised. It proves the plumbing, not a
//! model's judgement, and the report says so.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use recourse::llm::{
    Completion, CompletionRequest, LanguageModel, LlmConfig, LlmError, estimate_tokens,
};
use recourse::transport::BoxFuture;

use super::error::EvalError;

/// A model that answers with a fixed list of replies, in order (the last repeats).
#[derive(Debug)]
pub(crate) struct ScriptedModel {
    replies: Vec<String>,
    next: AtomicUsize,
}

impl ScriptedModel {
    pub(crate) fn new(replies: Vec<String>) -> Self {
        Self {
            replies,
            next: AtomicUsize::new(0),
        }
    }
}

impl LanguageModel for ScriptedModel {
    fn complete<'a>(
        &'a self,
        request: &'a CompletionRequest,
    ) -> BoxFuture<'a, Result<Completion, LlmError>> {
        let n = self.next.fetch_add(1, Ordering::SeqCst);
        let text = self
            .replies
            .get(n.min(self.replies.len().saturating_sub(1)))
            .cloned()
            .unwrap_or_default();
        let prompt: u64 = request
            .messages
            .iter()
            .map(|m| estimate_tokens(&m.content))
            .sum();
        let usage = recourse::record::TokenUsage {
            prompt,
            completion: estimate_tokens(&text),
        };
        Box::pin(async move { Ok(Completion { text, usage }) })
    }
}

/// The model an evaluation uses for scenarios that need one.
///
/// ```
/// use recourse_eval::ModelChoice;
///
/// // Without a model, the scenarios that need one are skipped, never passed.
/// let none = ModelChoice::Absent;
/// assert!(matches!(none, ModelChoice::Absent));
/// ```
#[derive(Debug, Clone)]
pub enum ModelChoice {
    /// None configured: those scenarios are skipped.
    Absent,
    /// Each scenario's reference replies: a plumbing check.
    Scripted,
    /// The model the environment configures.
    Configured(LlmConfig),
}

impl ModelChoice {
    /// What the report calls it.
    pub(crate) fn label(&self) -> String {
        match self {
            Self::Absent => "none".to_owned(),
            Self::Scripted => "scripted".to_owned(),
            Self::Configured(c) => c.model.clone(),
        }
    }

    /// Whether the run is only a plumbing check.
    pub(crate) fn is_plumbing_check(&self) -> bool {
        matches!(self, Self::Scripted)
    }

    /// The model for a scenario with `replies`, or `None` when there is none.
    pub(crate) fn model_for(
        &self,
        replies: &[String],
    ) -> Result<Option<Arc<dyn LanguageModel>>, EvalError> {
        Ok(match self {
            Self::Absent => None,
            Self::Scripted => Some(Arc::new(ScriptedModel::new(replies.to_vec()))),
            Self::Configured(config) => Some(Arc::new(
                recourse::llm::OpenAiCompatible::new(config.clone())
                    .map_err(|e| EvalError::caused("the model client", e))?,
            )),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use recourse::llm::ChatMessage;

    #[tokio::test]
    async fn replays_in_order_and_repeats_the_last() {
        let model = ScriptedModel::new(vec!["a".into(), "b".into()]);
        let request = CompletionRequest {
            messages: vec![ChatMessage::user("fix it")],
            temperature: 0.1,
            max_tokens: 300,
        };
        let texts: Vec<String> = [
            model.complete(&request).await,
            model.complete(&request).await,
            model.complete(&request).await,
        ]
        .into_iter()
        .map(|c| c.unwrap().text)
        .collect();
        assert_eq!(texts, ["a", "b", "b"]);
    }
}
