//! Which model to ask, where, and how: from the environment or by hand.

use std::collections::HashMap;
use std::fmt;
use std::time::Duration;

use recourse_core::config::ConfigError;

/// The model used when a base URL or key is configured but no model is named.
pub const DEFAULT_MODEL: &str = "gpt-4o-mini";
/// The base URL used when only an API key is configured.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// Settings of an OpenAI-compatible model.
///
/// ```
/// use recourse::llm::LlmConfig;
/// use std::collections::HashMap;
///
/// let vars = HashMap::from([("RECOURSE_LLM_BASE_URL".to_owned(), "http://127.0.0.1:11434/v1".to_owned())]);
/// let config = LlmConfig::from_vars(&vars).unwrap().unwrap();
/// assert_eq!(config.model, "gpt-4o-mini");
/// assert!(LlmConfig::from_vars(&HashMap::new()).unwrap().is_none());
/// ```
#[derive(Clone, PartialEq)]
pub struct LlmConfig {
    /// The API's base URL, e.g. `http://127.0.0.1:11434/v1`; requests go to
    /// `{base_url}/chat/completions`.
    pub base_url: String,
    /// A bearer key, if the server wants one (local servers usually don't).
    pub api_key: Option<String>,
    /// The model name.
    pub model: String,
    /// How long one model call may take in all.
    pub timeout: Duration,
    /// Sampling temperature for corrections (default 0.1).
    pub temperature: f32,
    /// The most tokens a reply may have (default 300).
    pub max_tokens: u32,
}

impl fmt::Debug for LlmConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LlmConfig")
            .field("base_url", &recourse_protocol::redact(&self.base_url))
            .field("api_key", &self.api_key.as_ref().map(|_| "[REDACTED]"))
            .field("model", &self.model)
            .field("timeout", &self.timeout)
            .field("temperature", &self.temperature)
            .field("max_tokens", &self.max_tokens)
            .finish()
    }
}

impl LlmConfig {
    /// A configuration for `model` at `base_url`, with default limits.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into(),
            api_key: None,
            model: model.into(),
            timeout: Duration::from_secs(20),
            temperature: 0.1,
            max_tokens: 300,
        }
    }

    /// Sets the bearer key.
    #[must_use]
    pub fn with_api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    /// The model configured by the environment, or `None` when neither a base
    /// URL nor an API key is set (then LLM correction is off).
    ///
    /// Reads `RECOURSE_LLM_BASE_URL`, `RECOURSE_LLM_API_KEY` and
    /// `RECOURSE_LLM_MODEL`, each falling back to `OPENAI_BASE_URL` /
    /// `OPENAI_API_KEY`; a key alone means OpenAI's API ([`DEFAULT_BASE_URL`]);
    /// the model defaults to [`DEFAULT_MODEL`]. Also `RECOURSE_LLM_TIMEOUT_MS`
    /// (20000), `RECOURSE_LLM_MAX_TOKENS` (300), `RECOURSE_LLM_TEMPERATURE` (0.1).
    ///
    /// # Errors
    /// A base URL that is not http(s), or an unusable number, naming the variable.
    pub fn from_env() -> Result<Option<Self>, ConfigError> {
        Self::from_vars(&std::env::vars().collect())
    }

    /// Like [`from_env`](Self::from_env), from an explicit map.
    ///
    /// # Errors
    /// As [`from_env`](Self::from_env).
    pub fn from_vars(vars: &HashMap<String, String>) -> Result<Option<Self>, ConfigError> {
        let get = |name: &'static str| {
            vars.get(name)
                .map(|v| v.trim())
                .filter(|v| !v.is_empty())
                .map(|v| (name, v))
        };
        let base = get("RECOURSE_LLM_BASE_URL").or_else(|| get("OPENAI_BASE_URL"));
        let key = get("RECOURSE_LLM_API_KEY").or_else(|| get("OPENAI_API_KEY"));
        if base.is_none() && key.is_none() {
            return Ok(None);
        }
        let model = get("RECOURSE_LLM_MODEL").map_or(DEFAULT_MODEL, |(_, m)| m);
        let mut config = Self::new(base.map_or(DEFAULT_BASE_URL, |(_, b)| b), model);
        config.api_key = key.map(|(_, k)| k.to_owned());
        if let Some((name, ms)) = get("RECOURSE_LLM_TIMEOUT_MS") {
            config.timeout = Duration::from_millis(positive(name, ms)?);
        }
        if let Some((name, n)) = get("RECOURSE_LLM_MAX_TOKENS") {
            config.max_tokens = u32::try_from(positive(name, n)?)
                .map_err(|_| ConfigError::new(name, "too large"))?;
        }
        if let Some((name, t)) = get("RECOURSE_LLM_TEMPERATURE") {
            config.temperature = t
                .parse::<f32>()
                .ok()
                .filter(|t| (0.0..=2.0).contains(t))
                .ok_or_else(|| {
                    ConfigError::new(name, format!("{t:?} is not a number from 0 to 2"))
                })?;
        }
        config.validate().map_err(|e| match base {
            Some((name, _)) if e.setting() == "LLM base URL" => {
                ConfigError::new(name, e.to_string())
            }
            _ => e,
        })?;
        Ok(Some(config))
    }

    /// Checks the settings.
    ///
    /// # Errors
    /// A base URL that is not an http(s) URL, an empty model name, a zero
    /// timeout or token limit.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let url = reqwest::Url::parse(&self.base_url).map_err(|e| {
            ConfigError::new(
                "LLM base URL",
                format!(
                    "{:?} is not a URL: {e}",
                    recourse_protocol::redact(&self.base_url)
                ),
            )
        })?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(ConfigError::new(
                "LLM base URL",
                "must start with http:// or https://",
            ));
        }
        if self.model.trim().is_empty() {
            return Err(ConfigError::new("LLM model", "empty"));
        }
        if self.timeout.is_zero() || self.max_tokens == 0 {
            return Err(ConfigError::new(
                "LLM limits",
                "timeout and max tokens must be positive",
            ));
        }
        Ok(())
    }

    /// The chat-completions endpoint: `{base_url}/chat/completions`, unless the
    /// base URL already names it.
    pub fn endpoint(&self) -> String {
        let base = self.base_url.trim_end_matches('/');
        if base.ends_with("/chat/completions") {
            base.to_owned()
        } else {
            format!("{base}/chat/completions")
        }
    }
}

fn positive(name: &str, value: &str) -> Result<u64, ConfigError> {
    value
        .parse::<u64>()
        .ok()
        .filter(|n| *n > 0)
        .ok_or_else(|| ConfigError::new(name, format!("{value:?} is not a positive integer")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn recourse_variables_win_over_openai_ones() {
        let c = LlmConfig::from_vars(&vars(&[
            ("RECOURSE_LLM_BASE_URL", "http://127.0.0.1:11434/v1/"),
            ("OPENAI_BASE_URL", "https://elsewhere.invalid/v1"),
            ("OPENAI_API_KEY", "sk-test"),
            ("RECOURSE_LLM_MODEL", "llama3.2"),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(c.endpoint(), "http://127.0.0.1:11434/v1/chat/completions");
        assert_eq!(c.api_key.as_deref(), Some("sk-test"));
        assert_eq!(c.model, "llama3.2");
        assert!(!format!("{c:?}").contains("sk-test"));
    }

    #[test]
    fn a_key_alone_means_openai_and_nothing_means_no_model() {
        let c = LlmConfig::from_vars(&vars(&[("OPENAI_API_KEY", "k")]))
            .unwrap()
            .unwrap();
        assert_eq!(c.base_url, DEFAULT_BASE_URL);
        assert_eq!((c.temperature, c.max_tokens), (0.1, 300));
        assert_eq!(
            LlmConfig::from_vars(&vars(&[("RECOURSE_LLM_MODEL", "m")])).unwrap(),
            None
        );
    }

    #[test]
    fn bad_values_name_their_variable() {
        let e = LlmConfig::from_vars(&vars(&[("RECOURSE_LLM_BASE_URL", "ftp://x")])).unwrap_err();
        assert_eq!(e.setting(), "RECOURSE_LLM_BASE_URL");
        let e = LlmConfig::from_vars(&vars(&[
            ("OPENAI_API_KEY", "k"),
            ("RECOURSE_LLM_MAX_TOKENS", "0"),
        ]))
        .unwrap_err();
        assert_eq!(e.setting(), "RECOURSE_LLM_MAX_TOKENS");
        let e = LlmConfig::from_vars(&vars(&[
            ("OPENAI_API_KEY", "k"),
            ("RECOURSE_LLM_TEMPERATURE", "hot"),
        ]))
        .unwrap_err();
        assert_eq!(e.setting(), "RECOURSE_LLM_TEMPERATURE");
    }
}
