//! Asking a model for a JSON object, with the guards every layer needs: a
//! time limit, token accounting, the debug store, and failure as a value.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};

use super::debug::{LlmDebugStore, LlmExchange};
use super::reply::first_json_object;
use crate::correction::{Correction, CorrectionRequest, LayerVerdict};
use crate::llm::{ChatMessage, CompletionRequest, LanguageModel};
use recourse_core::record::{CorrectionLayer, TokenUsage, Verdict};

/// The longest a layer waits for a model, whatever the model's own timeout.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// A model and how to ask it.
#[derive(Clone)]
pub(crate) struct Asker {
    model: Arc<dyn LanguageModel>,
    pub(crate) temperature: f32,
    pub(crate) max_tokens: u32,
    pub(crate) timeout: Duration,
    pub(crate) debug: Option<Arc<LlmDebugStore>>,
}

/// What one question cost and what came of it.
pub(crate) struct Asked {
    /// The reply's JSON object, or why there is none.
    pub(crate) reply: Result<Map<String, Value>, String>,
    pub(crate) llm_calls: u32,
    pub(crate) tokens: TokenUsage,
}

impl Asked {
    /// The correction a layer makes of this exchange: the payload its reply
    /// proposed (with the model's analysis as the note), or why it cannot fix.
    pub(crate) fn into_correction(
        self,
        verdict: impl FnOnce(Map<String, Value>) -> Result<(Value, String), String>,
        layer: CorrectionLayer,
    ) -> Correction {
        let (llm_calls, tokens) = (self.llm_calls, self.tokens);
        match self.reply.and_then(verdict) {
            Ok((payload, reason)) => Correction::Corrected {
                payload,
                layer,
                reason,
                tried: Vec::new(),
                llm_calls,
                tokens,
            },
            Err(why) => Correction::CannotFix {
                tried: vec![LayerVerdict {
                    layer,
                    verdict: Verdict::CannotFix,
                    reason: why,
                }],
                llm_calls,
                tokens,
            },
        }
    }
}

impl Asker {
    pub(crate) fn new(model: Arc<dyn LanguageModel>) -> Self {
        Self {
            model,
            temperature: 0.1,
            max_tokens: 300,
            timeout: DEFAULT_TIMEOUT,
            debug: None,
        }
    }

    /// Asks once. A failing, slow or unreadable model is an `Err` reply.
    pub(crate) async fn ask(
        &self,
        layer: CorrectionLayer,
        request: &CorrectionRequest<'_>,
        messages: Vec<ChatMessage>,
    ) -> Asked {
        // Every part of a prompt is redacted as it is built; this is the last
        // guard, and what the debug store keeps is exactly what was sent.
        let messages = messages
            .into_iter()
            .map(|mut m| {
                m.content = recourse_protocol::redact(&m.content);
                m
            })
            .collect();
        let completion = CompletionRequest {
            messages,
            temperature: self.temperature,
            max_tokens: self.max_tokens,
        };
        let at = std::time::SystemTime::now();
        let answer = tokio::time::timeout(self.timeout, self.model.complete(&completion)).await;
        let (text, tokens) = match answer {
            Ok(Ok(c)) => (Ok(c.text), c.usage),
            Ok(Err(e)) => (Err(e.to_string()), TokenUsage::default()),
            Err(_) => (
                Err(format!("model gave no answer within {:?}", self.timeout)),
                TokenUsage::default(),
            ),
        };
        if let Some(store) = &self.debug {
            store.record(LlmExchange {
                layer: layer.as_str(),
                target: request.target.endpoint().to_owned(),
                attempt: request.attempt,
                at,
                tokens,
                prompt: completion.messages,
                reply: text.clone(),
            });
        }
        let reply = text.and_then(|t| {
            first_json_object(&t).ok_or_else(|| "the model's reply holds no JSON object".to_owned())
        });
        Asked {
            reply,
            llm_calls: 1,
            tokens,
        }
    }
}
