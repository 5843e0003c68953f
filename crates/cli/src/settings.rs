//! The environment's settings, read and checked once, before any command
//! prints anything.
//!
//! `main` builds [`Settings`] for every command, so a bad value stops
//! `recourse journal list` or `recourse eval` exactly as it stops
//! `recourse call`: exit 2, a message naming the variable, nothing on stdout.
//! Commands take their configuration from here rather than reading the
//! environment themselves, so there is one reading and one set of rules.
//!
//! Rules: `RECOURSE_*` numbers and booleans as [`ExecutorConfig::from_env`]
//! reads them; the model's settings as [`LlmConfig::from_env`] reads them;
//! the standard `OTEL_*` export variables as [`TelemetryConfig`] reads them; a
//! path-like setting (`RECOURSE_JOURNAL`, `RECOURSE_LLM_DEBUG_DIR`, and flags
//! such as `--journal`, `--suite`, `--html`) may not be empty; a `RECOURSE_*`,
//! `OPENAI_*` or `OTEL_*` value that is not UTF-8 is an error naming the
//! variable (other variables are not ours, and are left alone).

use std::collections::HashMap;
use std::path::PathBuf;

use recourse::llm::LlmConfig;
use recourse::{ConfigError, CorrectionChain, ExecutorConfig};

use crate::telemetry::TelemetryConfig;

/// `--lease-ms`: how long a journaled call's lease lasts unless renewed.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct LeaseArg {
    /// How long a journaled call is held by this process unless renewed (every third of it);
    /// until it expires no other process settles the call [env: RECOURSE_JOURNAL_LEASE_MS]
    /// [default: 30000].
    #[arg(long = "lease-ms", value_name = "MS", value_parser = clap::value_parser!(u64).range(1..))]
    lease_ms: Option<u64>,
}

impl LeaseArg {
    /// `config` with the flag's lease, when given.
    pub(crate) fn apply(&self, config: &mut ExecutorConfig) {
        if let Some(ms) = self.lease_ms {
            config.lease = std::time::Duration::from_millis(ms);
        }
    }
}

/// The variables recourse reads, by prefix.
const OURS: [&str; 3] = ["RECOURSE_", "OPENAI_", "OTEL_"];

/// Every setting the environment gives, checked.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    /// The executor's configuration (`RECOURSE_MAX_RETRIES`, …).
    pub(crate) executor: ExecutorConfig,
    /// The model the environment configures, if any.
    pub(crate) llm: Option<LlmConfig>,
    /// `RECOURSE_JOURNAL`, when set.
    journal: Option<String>,
    /// `RECOURSE_GATEWAY_TOKEN`, when set.
    pub(crate) gateway_token: Option<String>,
    /// `RECOURSE_SHARED_STATE`, when set.
    shared_state: Option<String>,
    /// `RECOURSE_CA_FILE`, when set.
    ca_file: Option<PathBuf>,
    /// What the `OTEL_*` variables ask to export.
    pub(crate) telemetry: TelemetryConfig,
    vars: HashMap<String, String>,
}

impl Settings {
    /// Reads and checks the process environment.
    ///
    /// # Errors
    /// The first unusable setting, named.
    pub(crate) fn from_env() -> Result<Self, ConfigError> {
        let mut vars = HashMap::new();
        for (name, value) in std::env::vars_os() {
            let Some(name) = name.to_str() else { continue };
            if !OURS.iter().any(|prefix| name.starts_with(prefix)) {
                continue;
            }
            let value = value
                .into_string()
                .map_err(|_| ConfigError::new(name, "the value is not valid UTF-8"))?;
            vars.insert(name.to_owned(), value);
        }
        Self::from_vars(vars)
    }

    /// Checks `vars` as though they were the environment.
    ///
    /// # Errors
    /// As [`from_env`](Self::from_env).
    pub(crate) fn from_vars(vars: HashMap<String, String>) -> Result<Self, ConfigError> {
        let executor = ExecutorConfig::from_vars(vars.clone())?;
        let llm = LlmConfig::from_vars(&vars)?;
        let journal = vars
            .get("RECOURSE_JOURNAL")
            .map(|v| non_empty(v).map_err(|p| ConfigError::new("RECOURSE_JOURNAL", p)))
            .transpose()?;
        let shared_state = vars
            .get("RECOURSE_SHARED_STATE")
            .map(|v| non_empty(v).map_err(|p| ConfigError::new("RECOURSE_SHARED_STATE", p)))
            .transpose()?;
        let ca_file = vars
            .get("RECOURSE_CA_FILE")
            .map(|v| non_empty(v).map_err(|p| ConfigError::new("RECOURSE_CA_FILE", p)))
            .transpose()?
            .map(PathBuf::from);
        let gateway_token = match vars.get("RECOURSE_GATEWAY_TOKEN") {
            Some(t) if t.trim().is_empty() => {
                return Err(ConfigError::new(
                    "RECOURSE_GATEWAY_TOKEN",
                    "it is set but empty; unset it or give a token",
                ));
            }
            t => t.cloned(),
        };
        let telemetry = TelemetryConfig::from_vars(&vars)?;
        Ok(Self {
            executor,
            llm,
            journal,
            gateway_token,
            shared_state,
            ca_file,
            telemetry,
            vars,
        })
    }

    /// The correction chain for `config`: deterministic repair, then the
    /// model the environment configures, if any.
    ///
    /// # Errors
    /// A model client that cannot be built.
    pub(crate) fn chain(&self, config: &ExecutorConfig) -> Result<CorrectionChain, ConfigError> {
        CorrectionChain::from_vars(config, &self.vars)
    }

    /// `RECOURSE_SHARED_STATE`: the Redis a fleet shares, when set.
    pub(crate) fn shared_state(&self) -> Option<&str> {
        self.shared_state.as_deref()
    }

    /// `RECOURSE_CA_FILE`: a PEM file of certificate authorities to trust, when set.
    pub(crate) fn ca_file(&self) -> Option<&std::path::Path> {
        self.ca_file.as_deref()
    }

    /// The journal: the `--journal` flag, else `RECOURSE_JOURNAL`.
    pub(crate) fn journal<'a>(&'a self, flag: Option<&'a str>) -> Option<&'a str> {
        flag.or(self.journal.as_deref())
    }
}

/// Why `value` is unusable as a path or location: it is empty.
fn non_empty(value: &str) -> Result<String, String> {
    if value.trim().is_empty() {
        Err("it is empty; give a path (or unset it)".to_owned())
    } else {
        Ok(value.to_owned())
    }
}

/// A clap value parser for a location flag (a path or URL) that may not be empty.
pub(crate) fn location(value: &str) -> Result<String, String> {
    non_empty(value).map_err(|_| "must not be empty".to_owned())
}

/// A clap value parser for a path flag that may not be empty.
pub(crate) fn path(value: &str) -> Result<PathBuf, String> {
    location(value).map(PathBuf::from)
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

    fn problem(pairs: &[(&str, &str)]) -> String {
        Settings::from_vars(vars(pairs)).unwrap_err().to_string()
    }

    #[test]
    fn each_bad_setting_is_named() {
        for (name, value) in [
            ("RECOURSE_MAX_RETRIES", "lots"),
            ("RECOURSE_AI_CORRECTION", "maybe"),
            ("RECOURSE_IDEMPOTENCY_HEADER", "Content-Length"),
            ("RECOURSE_JOURNAL", ""),
            ("RECOURSE_JOURNAL", "  "),
            ("RECOURSE_LLM_DEBUG_DIR", ""),
            ("RECOURSE_GATEWAY_TOKEN", ""),
            ("RECOURSE_SHARED_STATE", " "),
            ("RECOURSE_CA_FILE", ""),
            ("RECOURSE_LLM_BASE_URL", "ftp://model"),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318"),
        ] {
            let text = problem(&[(name, value)]);
            assert!(text.contains(name), "{name}={value:?}: {text}");
        }
    }

    #[test]
    fn the_flag_wins_over_the_variable() {
        let s = Settings::from_vars(vars(&[("RECOURSE_JOURNAL", "env.db")])).unwrap();
        assert_eq!(s.journal(Some("flag.db")), Some("flag.db"));
        assert_eq!(s.journal(None), Some("env.db"));
        assert!(location("").is_err() && path(" ").is_err() && path("a").is_ok());
    }
}
