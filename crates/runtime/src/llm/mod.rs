//! Language models: the seam correction layers 3 and 4 ask, and one client.
//!
//! A [`LanguageModel`] takes chat messages and returns text and token usage —
//! nothing else about a model matters to correction. [`OpenAiCompatible`] speaks
//! the chat-completions dialect that OpenAI, Ollama, vLLM, the llama.cpp server
//! and LiteLLM all serve, so one client covers hosted and local models by base
//! URL alone. Tests script a fake model behind the same trait or a loopback
//! server.
//!
//! A model failure is a value ([`LlmError`]), never a panic: to a corrector a
//! failing or slow model simply means "cannot fix".

mod config;
mod error;
mod openai;

use crate::transport::BoxFuture;
use recourse_core::record::TokenUsage;

pub use config::{DEFAULT_BASE_URL, DEFAULT_MODEL, LlmConfig};
pub use error::LlmError;
pub use openai::OpenAiCompatible;

/// Who said a chat message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Instructions that frame the conversation.
    System,
    /// The request.
    User,
    /// The model's earlier replies.
    Assistant,
}

impl Role {
    /// `system`, `user` or `assistant`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::System => "system",
            Self::User => "user",
            Self::Assistant => "assistant",
        }
    }
}

/// One chat message.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ChatMessage {
    /// Who said it.
    pub role: Role,
    /// What was said.
    pub content: String,
}

impl ChatMessage {
    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Self {
            role: Role::System,
            content: content.into(),
        }
    }

    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Self {
            role: Role::User,
            content: content.into(),
        }
    }
}

/// What to ask a model.
#[derive(Debug, Clone, PartialEq)]
pub struct CompletionRequest {
    /// The conversation.
    pub messages: Vec<ChatMessage>,
    /// Sampling temperature.
    pub temperature: f32,
    /// The most tokens the reply may have.
    pub max_tokens: u32,
}

/// What a model answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completion {
    /// The reply's text.
    pub text: String,
    /// Tokens spent, as the model reported them (estimated at four characters
    /// per token when it did not).
    pub usage: TokenUsage,
}

/// Something that completes chat conversations.
pub trait LanguageModel: Send + Sync {
    /// Answers `request`. Failures (timeouts, HTTP errors, unreadable replies)
    /// are [`LlmError`] values.
    fn complete<'a>(
        &'a self,
        request: &'a CompletionRequest,
    ) -> BoxFuture<'a, Result<Completion, LlmError>>;
}

/// Tokens estimated from text: one per four characters, rounded up.
pub fn estimate_tokens(text: &str) -> u64 {
    u64::try_from(text.chars().count().div_ceil(4)).unwrap_or(u64::MAX)
}
