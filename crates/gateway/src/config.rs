//! What a gateway is made of, checked once: [`GatewayConfig`] builds a
//! [`Gateway`], or says which setting it refused ([`GatewayError`]).

use std::fmt;
use std::sync::Arc;

use recourse::clock::{Clock, SystemClock};
use recourse::journal::{Journal, SettleOptions};
use recourse::manifest::CapabilityManifests;
use recourse::shared::SharedState;
use recourse::{ConfigError, CorrectionChain, Executor, ExecutorConfig, HttpTransport};

use crate::gateway::{Gateway, McpServers};
use crate::guard::{CommandPattern, Targets, check_mcp_env};
use crate::ready::Readiness;
use crate::sessions::Sessions;
use recourse_door::Access;
use recourse_door::Callers;

/// How a gateway runs: the executor's configuration and corrector, who may
/// call it, where its calls may go, which MCP servers it may start, and its
/// journal and shared state.
///
/// Secure by default: no target but loopback, no MCP server process, no
/// token (a server binding beyond loopback should require one), no journal
/// (keyed requests are refused), no corrector.
///
/// ```
/// use recourse::ExecutorConfig;
/// use recourse_gateway::GatewayConfig;
///
/// let gateway = GatewayConfig::new(ExecutorConfig::default())
///     .with_token("s3cret")
///     .allow_target("https://api.example.com/v1/*")
///     .build()
///     .unwrap();
/// assert!(gateway.journal().is_none());
///
/// let refused = GatewayConfig::new(ExecutorConfig::default()).allow_target("api.*.com").build();
/// assert_eq!(refused.unwrap_err().setting(), "--allow-target");
/// ```
#[derive(Clone)]
pub struct GatewayConfig {
    executor: ExecutorConfig,
    corrector: Option<Arc<CorrectionChain>>,
    token: Option<String>,
    callers: Option<Callers>,
    any_host: bool,
    settle_headers: Vec<(String, String)>,
    allow_targets: Vec<String>,
    allow_mcp_commands: Vec<String>,
    mcp_policies: Vec<(String, recourse_door::ToolPolicies)>,
    mcp_env: Vec<String>,
    journal: Option<Arc<dyn Journal>>,
    shared: Option<Arc<dyn SharedState>>,
    clock: Option<Arc<dyn Clock>>,
    self_approval: bool,
    exposed: bool,
}

impl fmt::Debug for GatewayConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GatewayConfig")
            .field("executor", &self.executor)
            .field("corrector", &self.corrector.is_some())
            .field("token", &self.token.as_ref().map(|_| "[REDACTED]"))
            .field("callers", &self.callers)
            .field("any_host", &self.any_host)
            .field(
                "settle_headers",
                &self
                    .settle_headers
                    .iter()
                    .map(|(n, _)| n)
                    .collect::<Vec<_>>(),
            )
            .field("allow_targets", &self.allow_targets)
            .field("allow_mcp_commands", &self.allow_mcp_commands)
            .field(
                "mcp_policies",
                &self.mcp_policies.iter().map(|(p, _)| p).collect::<Vec<_>>(),
            )
            .field("mcp_env", &self.mcp_env)
            .field("journal", &self.journal.is_some())
            .field("shared", &self.shared.is_some())
            .field("clock", &self.clock)
            .field("self_approval", &self.self_approval)
            .field("exposed", &self.exposed)
            .finish()
    }
}

impl GatewayConfig {
    /// A gateway running calls with `executor`'s configuration, and nothing else.
    pub fn new(executor: ExecutorConfig) -> Self {
        Self {
            executor,
            corrector: None,
            token: None,
            callers: None,
            any_host: false,
            settle_headers: Vec::new(),
            allow_targets: Vec::new(),
            allow_mcp_commands: Vec::new(),
            mcp_policies: Vec::new(),
            mcp_env: Vec::new(),
            journal: None,
            shared: None,
            clock: None,
            self_approval: false,
            exposed: false,
        }
    }

    /// Corrects payloads with `chain` (deterministic repair, then a model).
    #[must_use]
    pub fn with_corrector(mut self, chain: Arc<CorrectionChain>) -> Self {
        self.corrector = Some(chain);
        self
    }

    /// Requires `Authorization: Bearer TOKEN` on every route but `/healthz`
    /// and `/readyz`.
    #[must_use]
    pub fn with_token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(token.into());
        self
    }

    /// Serves the named `callers` (a tokens file, [`Callers::from_file`]):
    /// each request needs one caller's `Authorization: Bearer` token, and
    /// sees only what its caller may. A token given by
    /// [`with_token`](Self::with_token) too joins them as caller `default`.
    #[must_use]
    pub fn with_callers(mut self, callers: Callers) -> Self {
        self.callers = Some(callers);
        self
    }

    /// Without a token, serves requests for any `Host` — what a gateway
    /// exposed beyond loopback without authentication (`--insecure-no-auth`)
    /// needs. Otherwise a gateway without a token answers only requests
    /// that name a loopback host (403 `HOST_NOT_ALLOWED`), so that a web
    /// page cannot reach it by DNS rebinding.
    #[must_use]
    pub fn serve_any_host(mut self) -> Self {
        self.any_host = true;
        self
    }

    /// Sends `name: value` with every lookup and verification read that
    /// settles a journaled call (the sweeper's, the reconcile route's): the
    /// credentials they need, which the journal never keeps (a template's
    /// `?token=` is stored redacted). Checked by [`build`](Self::build).
    #[must_use]
    pub fn with_settle_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.settle_headers.push((name.into(), value.into()));
        self
    }

    /// Allows targets (and lookups, reads and MCP URLs) matching `pattern`
    /// besides loopback: `[http[s]://]HOST[:PORT][/PATH]`, where HOST is
    /// exact, `*.DOMAIN` or `*`, PORT a number or `*`, and PATH exact or
    /// ending in `/*`. Checked by [`build`](Self::build).
    #[must_use]
    pub fn allow_target(mut self, pattern: impl Into<String>) -> Self {
        self.allow_targets.push(pattern.into());
        self
    }

    /// Allows `mcp.command` requests whose whole command line matches
    /// `pattern`: the program, named exactly, then its arguments, where `*`
    /// matches one argument and a trailing `**` any remaining ones.
    /// Without one, the gateway starts no processes.
    #[must_use]
    pub fn allow_mcp_command(mut self, pattern: impl Into<String>) -> Self {
        self.allow_mcp_commands.push(pattern.into());
        self
    }

    /// Applies `policies` (a `recourse mcp proxy --tools` file) to the MCP
    /// servers whose whole command line `pattern` matches (the form of
    /// [`allow_mcp_command`](Self::allow_mcp_command)): a tool whose entry
    /// asks for `approval` is held for a person here as at the proxy, so
    /// the gateway is no way around the proxy's approvals. Checked by
    /// [`build`](Self::build).
    #[must_use]
    pub fn with_mcp_policy(
        mut self,
        pattern: impl Into<String>,
        policies: recourse_door::ToolPolicies,
    ) -> Self {
        self.mcp_policies.push((pattern.into(), policies));
        self
    }

    /// Passes the environment variable `name` to MCP server processes (they
    /// get only PATH, HOME, LANG, LANGUAGE, LC_*, TZ and these).
    #[must_use]
    pub fn pass_mcp_env(mut self, name: impl Into<String>) -> Self {
        self.mcp_env.push(name.into());
        self
    }

    /// Journals keyed and non-idempotent calls in `journal`; without one,
    /// requests with an idempotency key are refused.
    #[must_use]
    pub fn with_journal(mut self, journal: Arc<dyn Journal>) -> Self {
        self.journal = Some(journal);
        self
    }

    /// Shares the retry budget and circuit breakers through `shared`.
    #[must_use]
    pub fn with_shared_state(mut self, shared: Arc<dyn SharedState>) -> Self {
        self.shared = Some(shared);
        self
    }

    /// Times approvals by `clock`'s wall time — when one expires, lazily
    /// as it is read or decided and in the sweeper — and has the sweeper's
    /// lookups wait on it: a [`ManualClock`](recourse::ManualClock) makes a
    /// test of an expiry deterministic. Real time by default. The executor
    /// keeps its own clock.
    #[must_use]
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = Some(clock);
        self
    }

    /// Lets the caller that asked for an approval decide it — for a
    /// one-person setup (`--allow-self-approval`); the approval then says
    /// `self_approved: true`. Otherwise the asker's decision is refused
    /// (403 `SELF_APPROVAL`), and a call needing approval that nobody else
    /// could give (one token, or none) is refused (403 `NO_OTHER_APPROVER`).
    #[must_use]
    pub fn allow_self_approval(mut self) -> Self {
        self.self_approval = true;
        self
    }

    /// Says the gateway is reachable beyond loopback: every token given as
    /// itself (one `RECOURSE_GATEWAY_TOKEN`, a tokens file's `token`) must
    /// then be at least 32 characters, or [`build`](Self::build) refuses.
    #[must_use]
    pub fn exposed_beyond_loopback(mut self) -> Self {
        self.exposed = true;
        self
    }

    /// The executor's configuration.
    pub fn executor_config(&self) -> &ExecutorConfig {
        &self.executor
    }

    /// The gateway, every setting checked.
    ///
    /// # Errors
    /// A target or command pattern that cannot be read, an environment
    /// variable name that may not be passed, a settle header that cannot be
    /// sent, or an executor configuration (or HTTP client) that cannot be built.
    pub fn build(self) -> Result<Gateway, GatewayError> {
        let mut access = Access::new(self.callers, self.token.as_deref())
            .map_err(|e| GatewayError::new("--tokens", e))?;
        if self.any_host {
            access = access.serve_any_host();
        }
        if self.exposed {
            access
                .check_exposed()
                .map_err(|e| GatewayError::new("--tokens", e))?;
        }
        let (callers, loopback_hosts_only) = access.into_parts();
        let targets = Targets::new(&self.allow_targets)
            .map_err(|e| GatewayError::new("--allow-target", e))?;
        let mcp_commands = self
            .allow_mcp_commands
            .iter()
            .map(|p| CommandPattern::new(p))
            .collect::<Result<_, _>>()
            .map_err(|e| GatewayError::new("--allow-mcp-command", e))?;
        let mcp_policies = self
            .mcp_policies
            .into_iter()
            .map(|(pattern, policies)| Ok((CommandPattern::new(&pattern)?, policies)))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e: String| GatewayError::new("--mcp-policy", e))?;
        check_mcp_env(&self.mcp_env).map_err(|e| GatewayError::new("--mcp-env", e))?;
        // How a journaled call is settled: the executor's lease and limits,
        // the targets' allowlist, the settle headers — built once.
        let clock = self.clock.unwrap_or_else(|| Arc::new(SystemClock));
        let mut settle = SettleOptions::from_config(&self.executor)
            .with_allowlist(targets.allowlist())
            .with_clock(Arc::clone(&clock));
        for (name, value) in self.settle_headers {
            settle = settle
                .with_header(name, value)
                .map_err(|e| GatewayError::new("--reconcile-header", e))?;
        }
        let transport = HttpTransport::builder()
            .build()
            .map_err(GatewayError::from)?;
        // Manifests are read only where targets may be called.
        let manifests = CapabilityManifests::new()
            .with_allowlist(targets.allowlist())
            .with_clock(Arc::clone(&clock));
        let mut executor = Executor::builder(transport).with_config(self.executor)?;
        if let Some(chain) = self.corrector {
            executor = executor.with_corrector(chain);
        }
        executor = executor.with_manifests(Arc::new(manifests));
        if let Some(shared) = &self.shared {
            executor = executor.with_shared_state(Arc::clone(shared));
        }
        if let Some(journal) = &self.journal {
            executor = executor.with_journal(Arc::clone(journal));
        }
        let executor = executor.build();
        let metrics: Arc<recourse::metrics::Metrics> = Arc::default();
        let door = recourse_door::Door::new(executor.config().lease)
            .with_journal(self.journal.clone())
            .with_clock(Arc::clone(&clock))
            .with_metrics(Arc::clone(&metrics));
        Ok(Gateway {
            executor: Arc::new(executor),
            metrics,
            door,
            targets,
            mcp: McpServers {
                commands: mcp_commands,
                policies: mcp_policies,
                env: self.mcp_env,
            },
            settle,
            callers: crate::gateway::CallerRules {
                known: callers,
                loopback_hosts_only,
                self_approval_allowed: self.self_approval,
            },
            readiness: Readiness::new(self.journal.clone(), self.shared),
            sessions: Sessions::default(),
            journal: self.journal,
            clock,
            waiting: crate::gateway::Waiting::default(),
            endpoints: std::sync::Mutex::default(),
        })
    }
}

/// A gateway setting that cannot be used: which one, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GatewayError {
    setting: String,
    problem: String,
}

impl GatewayError {
    fn new(setting: &str, problem: impl fmt::Display) -> Self {
        Self {
            setting: setting.to_owned(),
            problem: problem.to_string(),
        }
    }

    /// The setting at fault: a flag's name (`--allow-target`), or the
    /// executor configuration's setting.
    pub fn setting(&self) -> &str {
        &self.setting
    }
}

impl From<ConfigError> for GatewayError {
    fn from(e: ConfigError) -> Self {
        Self {
            setting: e.setting().to_owned(),
            problem: e.to_string(),
        }
    }
}

impl fmt::Display for GatewayError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.problem.starts_with("invalid ") {
            f.write_str(&self.problem)
        } else {
            write!(f, "{}: {}", self.setting, self.problem)
        }
    }
}

impl std::error::Error for GatewayError {}
