//! Executor configuration: defaults, builder values, and the environment (`docs/configuration.md`).

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

pub use recourse_core::config::{CallField, ConfigError, Setting, parse_bool, parse_header_name};

use recourse_core::policy::Limits;

/// Everything an executor needs to know, with the defaults
/// `docs/configuration.md` lists.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecutorConfig {
    /// Per-call limits the policy enforces.
    pub limits: Limits,
    /// Semantic (L4) re-resolutions allowed per call.
    pub max_semantic: u32,
    /// The backoff schedule's base (first ceiling).
    pub backoff_base: Duration,
    /// The whole call's deadline, if any.
    pub deadline: Option<Duration>,
    /// Each attempt's timeout.
    pub request_timeout: Duration,
    /// Whether LLM correction (L3) is on.
    pub ai_correction: bool,
    /// Whether semantic retry (L4) is on.
    pub semantic_retry: bool,
    /// Whether L4 also runs for workflow steps without dependencies.
    pub semantic_independent_steps: bool,
    /// Whether full LLM prompts and replies are kept (redacted) for debugging.
    pub llm_debug: bool,
    /// Where each prompt/reply pair is also written, one JSON file per
    /// exchange (`RECOURSE_LLM_DEBUG_DIR`, which turns `llm_debug` on).
    pub llm_debug_dir: Option<PathBuf>,
    /// The header carrying the idempotency key of non-idempotent calls.
    pub idempotency_header: String,
    /// How long a journaled call's lease lasts unless its process renews it
    /// (every third of it): until then no other process settles the call.
    pub lease: Duration,
}

impl Default for ExecutorConfig {
    fn default() -> Self {
        Self {
            limits: Limits::default(),
            max_semantic: 2,
            backoff_base: Duration::from_millis(1000),
            deadline: Some(Duration::from_secs(120)),
            request_timeout: Duration::from_secs(30),
            ai_correction: true,
            semantic_retry: true,
            semantic_independent_steps: true,
            llm_debug: false,
            llm_debug_dir: None,
            idempotency_header: "Idempotency-Key".to_owned(),
            lease: Duration::from_secs(30),
        }
    }
}

impl ExecutorConfig {
    /// Defaults overridden by `RECOURSE_*` environment variables.
    ///
    /// # Errors
    /// A variable that is set but unusable (`RECOURSE_MAX_RETRIES=lots`,
    /// `RECOURSE_AI_CORRECTION=maybe`) is an error naming it.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_vars(std::env::vars().collect())
    }

    /// Like [`from_env`](Self::from_env), from an explicit map (for tests and embedding).
    ///
    /// # Errors
    /// As [`from_env`](Self::from_env).
    pub fn from_vars(vars: HashMap<String, String>) -> Result<Self, ConfigError> {
        let env = Env(vars);
        let mut c = Self::default();
        if let Some(n) = env.u32("RECOURSE_MAX_RETRIES")? {
            c.limits.max_retries = n;
        }
        if let Some(n) = env.u32("RECOURSE_MAX_CORRECTIONS")? {
            c.limits.max_corrections = n;
        }
        if let Some(n) = env.u32("RECOURSE_SEMANTIC_MAX_ATTEMPTS")? {
            c.max_semantic = n;
        }
        if let Some(ms) = env.u32("RECOURSE_BACKOFF_MS")? {
            c.backoff_base = Duration::from_millis(u64::from(ms));
        }
        if let Some(ms) = env.u32("RECOURSE_MAX_BACKOFF_MS")? {
            c.limits.max_backoff = Duration::from_millis(u64::from(ms));
        }
        if let Some(b) = env.bool("RECOURSE_REQUIRE_OPT_IN")? {
            c.limits.require_opt_in = b;
        }
        if let Some(b) = env.bool("RECOURSE_AI_CORRECTION")? {
            c.ai_correction = b;
        }
        if let Some(b) = env.bool("RECOURSE_SEMANTIC_RETRY")? {
            c.semantic_retry = b;
        }
        if let Some(b) = env.bool("RECOURSE_SEMANTIC_INDEPENDENT_STEPS")? {
            c.semantic_independent_steps = b;
        }
        let debug = env.bool("RECOURSE_LLM_DEBUG")?;
        if let Some(b) = debug {
            c.llm_debug = b;
        }
        if let Some(dir) = env.0.get("RECOURSE_LLM_DEBUG_DIR") {
            if dir.trim().is_empty() {
                return Err(ConfigError::new(
                    "RECOURSE_LLM_DEBUG_DIR",
                    "it is empty; give a directory (or unset it)",
                ));
            }
            if debug == Some(false) {
                return Err(ConfigError::new(
                    "RECOURSE_LLM_DEBUG_DIR",
                    "it turns LLM debugging on, but RECOURSE_LLM_DEBUG is false; unset one of them",
                ));
            }
            c.llm_debug = true;
            c.llm_debug_dir = Some(PathBuf::from(dir));
        }
        if let Some(ms) = env.u32("RECOURSE_JOURNAL_LEASE_MS")? {
            if ms == 0 {
                return Err(ConfigError::new(
                    "RECOURSE_JOURNAL_LEASE_MS",
                    "must be greater than zero",
                ));
            }
            c.lease = Duration::from_millis(u64::from(ms));
        }
        if let Some(h) = env.get("RECOURSE_IDEMPOTENCY_HEADER") {
            c.idempotency_header = idempotency_header(h)?;
        }
        Ok(c)
    }
}

/// Headers that carry credentials or frame the request: never an idempotency key's.
const NOT_FOR_KEYS: [&str; 8] = [
    "authorization",
    "proxy-authorization",
    "cookie",
    "host",
    "content-length",
    "content-type",
    "transfer-encoding",
    "connection",
];

/// `RECOURSE_IDEMPOTENCY_HEADER`: a valid header name that is not reserved.
fn idempotency_header(value: &str) -> Result<String, ConfigError> {
    let name = parse_header_name("RECOURSE_IDEMPOTENCY_HEADER", value)?;
    let framing = crate::header::check_header(&name, "x").is_err();
    if framing || NOT_FOR_KEYS.iter().any(|r| r.eq_ignore_ascii_case(&name)) {
        return Err(ConfigError::new(
            "RECOURSE_IDEMPOTENCY_HEADER",
            format!(
                "{name} is reserved (credentials or framing); name a header of its own, such as Idempotency-Key"
            ),
        ));
    }
    Ok(name)
}

struct Env(HashMap<String, String>);

impl Env {
    fn get(&self, name: &str) -> Option<&str> {
        self.0
            .get(name)
            .map(String::as_str)
            .filter(|v| !v.trim().is_empty())
    }

    fn bool(&self, name: &str) -> Result<Option<bool>, ConfigError> {
        self.get(name).map(|v| parse_bool(name, v)).transpose()
    }

    fn u32(&self, name: &str) -> Result<Option<u32>, ConfigError> {
        self.get(name)
            .map(|v| {
                v.trim().parse::<u32>().map_err(|_| {
                    ConfigError::new(name, format!("{v:?} is not a non-negative integer"))
                })
            })
            .transpose()
    }
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
    fn defaults_match_the_spec() {
        let c = ExecutorConfig::from_vars(HashMap::new()).unwrap();
        assert_eq!(c.limits.max_retries, 3);
        assert_eq!(c.limits.max_corrections, 2);
        assert_eq!(c.max_semantic, 2);
        assert_eq!(c.backoff_base, Duration::from_millis(1000));
        assert!(
            c.ai_correction && c.semantic_retry && c.semantic_independent_steps && !c.llm_debug
        );
    }

    #[test]
    fn variables_override_defaults() {
        let c = ExecutorConfig::from_vars(vars(&[
            ("RECOURSE_MAX_RETRIES", "5"),
            ("RECOURSE_BACKOFF_MS", "250"),
            ("RECOURSE_AI_CORRECTION", "no"),
            ("RECOURSE_LLM_DEBUG", "YES"),
            ("RECOURSE_SEMANTIC_INDEPENDENT_STEPS", "0"),
        ]))
        .unwrap();
        assert_eq!(c.limits.max_retries, 5);
        assert_eq!(c.backoff_base, Duration::from_millis(250));
        assert!(!c.ai_correction && c.llm_debug && !c.semantic_independent_steps);
    }

    #[test]
    fn a_debug_dir_turns_debugging_on() {
        let c = ExecutorConfig::from_vars(vars(&[("RECOURSE_LLM_DEBUG_DIR", "/tmp/x")])).unwrap();
        assert!(c.llm_debug);
        assert_eq!(c.llm_debug_dir, Some(PathBuf::from("/tmp/x")));
        for pairs in [
            &[("RECOURSE_LLM_DEBUG_DIR", " ")][..],
            &[
                ("RECOURSE_LLM_DEBUG_DIR", "/tmp/x"),
                ("RECOURSE_LLM_DEBUG", "no"),
            ][..],
        ] {
            let e = ExecutorConfig::from_vars(vars(pairs)).unwrap_err();
            assert_eq!(e.setting(), "RECOURSE_LLM_DEBUG_DIR");
        }
    }

    #[test]
    fn bad_values_name_the_variable() {
        let e = ExecutorConfig::from_vars(vars(&[("RECOURSE_MAX_RETRIES", "lots")])).unwrap_err();
        assert_eq!(e.setting(), "RECOURSE_MAX_RETRIES");
        let e =
            ExecutorConfig::from_vars(vars(&[("RECOURSE_AI_CORRECTION", "maybe")])).unwrap_err();
        assert!(e.to_string().contains("RECOURSE_AI_CORRECTION"));
        let e = ExecutorConfig::from_vars(vars(&[("RECOURSE_MAX_RETRIES", "-1")])).unwrap_err();
        assert_eq!(e.setting(), "RECOURSE_MAX_RETRIES");
    }

    #[test]
    fn the_idempotency_header_may_not_overwrite_credentials_or_framing() {
        for reserved in ["Authorization", "cookie", "Host", "Content-Length", "TE"] {
            let e = ExecutorConfig::from_vars(vars(&[("RECOURSE_IDEMPOTENCY_HEADER", reserved)]))
                .unwrap_err();
            assert_eq!(e.setting(), "RECOURSE_IDEMPOTENCY_HEADER", "{reserved}");
        }
        let c = ExecutorConfig::from_vars(vars(&[("RECOURSE_IDEMPOTENCY_HEADER", "X-Op-Key")]))
            .unwrap();
        assert_eq!(c.idempotency_header, "X-Op-Key");
    }
}
