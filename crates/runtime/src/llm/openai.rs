//! An OpenAI-compatible chat-completions client.
//!
//! Plain `reqwest` and serde rather than a vendor SDK: the executor already
//! depends on `reqwest`, the request and reply shapes are small and stable,
//! and the one dialect is served by OpenAI, Ollama, vLLM, the llama.cpp server
//! and LiteLLM alike — only the base URL changes. The dependency tree stays
//! lean, and every failure is ours to turn into a value.

use std::time::Duration;

use serde::Deserialize;
use serde_json::json;

use super::{Completion, CompletionRequest, LanguageModel, LlmConfig, LlmError, estimate_tokens};
use crate::transport::BoxFuture;
use recourse_core::config::ConfigError;
use recourse_core::record::TokenUsage;

/// The most reply bytes read from a model server.
const MAX_REPLY_BYTES: usize = 1 << 20;

/// A model behind an OpenAI-compatible `POST {base}/chat/completions`.
///
/// ```no_run
/// use recourse::llm::{ChatMessage, CompletionRequest, LanguageModel, LlmConfig, OpenAiCompatible};
///
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// let model = OpenAiCompatible::new(LlmConfig::new("http://127.0.0.1:11434/v1", "llama3.2"))?;
/// let reply = model
///     .complete(&CompletionRequest {
///         messages: vec![ChatMessage::user("Say hi")],
///         temperature: 0.1,
///         max_tokens: 20,
///     })
///     .await?;
/// println!("{} ({} prompt tokens)", reply.text, reply.usage.prompt);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct OpenAiCompatible {
    client: reqwest::Client,
    config: LlmConfig,
    endpoint: String,
}

#[derive(Deserialize)]
struct Reply {
    #[serde(default)]
    choices: Vec<Choice>,
    usage: Option<Usage>,
}

#[derive(Deserialize)]
struct Choice {
    message: Message,
}

#[derive(Deserialize)]
struct Message {
    content: Option<String>,
}

#[derive(Deserialize)]
struct Usage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
}

impl OpenAiCompatible {
    /// A client for `config`.
    ///
    /// # Errors
    /// Invalid settings ([`LlmConfig::validate`]), or an HTTP client that cannot be built.
    pub fn new(config: LlmConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        let client = crate::tls::client_builder()
            .connect_timeout(config.timeout.min(Duration::from_secs(5)))
            .timeout(config.timeout)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| ConfigError::new("LLM client", e.to_string()))?;
        Ok(Self {
            client,
            endpoint: config.endpoint(),
            config,
        })
    }

    /// The settings in force.
    pub fn config(&self) -> &LlmConfig {
        &self.config
    }

    async fn exchange(&self, request: &CompletionRequest) -> Result<Completion, LlmError> {
        let body = json!({
            "model": self.config.model,
            "messages": request.messages,
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
            "stream": false,
        });
        let mut builder = self.client.post(&self.endpoint).json(&body);
        if let Some(key) = &self.config.api_key {
            builder = builder.bearer_auth(key);
        }
        let mut response = builder.send().await.map_err(failure)?;
        let status = response.status().as_u16();
        let mut bytes = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(failure)? {
            if bytes.len() + chunk.len() > MAX_REPLY_BYTES {
                return Err(LlmError::bad_reply(format!(
                    "reply over {MAX_REPLY_BYTES} bytes"
                )));
            }
            bytes.extend_from_slice(&chunk);
        }
        if !(200..300).contains(&status) {
            let text = String::from_utf8_lossy(&bytes);
            return Err(LlmError::status(
                status,
                recourse_protocol::truncate_chars(&text, 300),
            ));
        }
        let reply: Reply = serde_json::from_slice(&bytes)
            .map_err(|e| LlmError::bad_reply(format!("not a chat completion: {e}")))?;
        let text = reply
            .choices
            .into_iter()
            .next()
            .and_then(|c| c.message.content)
            .filter(|t| !t.trim().is_empty())
            .ok_or_else(|| LlmError::bad_reply("no message content"))?;
        let usage = match reply.usage {
            Some(u) => TokenUsage {
                prompt: u.prompt_tokens,
                completion: u.completion_tokens,
            },
            None => TokenUsage {
                prompt: request
                    .messages
                    .iter()
                    .map(|m| estimate_tokens(&m.content))
                    .sum(),
                completion: estimate_tokens(&text),
            },
        };
        Ok(Completion { text, usage })
    }
}

fn failure(error: reqwest::Error) -> LlmError {
    let (timeout, connect) = (error.is_timeout(), error.is_connect());
    let message = error.without_url().to_string();
    if timeout {
        LlmError::timeout(message)
    } else if connect {
        LlmError::connect(message)
    } else {
        LlmError::bad_reply(message)
    }
}

impl LanguageModel for OpenAiCompatible {
    fn complete<'a>(
        &'a self,
        request: &'a CompletionRequest,
    ) -> BoxFuture<'a, Result<Completion, LlmError>> {
        Box::pin(self.exchange(request))
    }
}
