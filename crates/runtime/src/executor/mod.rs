//! The executor: configuration and shared state; the loop itself lives in `run`.

mod run;

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio_util::sync::CancellationToken;

use crate::breaker::CircuitBreakers;
use crate::budget::RetryBudget;
use crate::call::Call;
use crate::clock::SystemClock;
use crate::config::ExecutorConfig;
use crate::correction::Corrector;
use crate::correction::{Admission, AsIs};
use crate::correction::{CorrectionChain, SchemaCoercion};
use crate::manifest::CapabilityManifests;
use crate::shared::SharedState;
use recourse_core::clock::Clock;
use recourse_core::config::ConfigError;
use recourse_core::journal::Journal;
use recourse_core::reconcile::Reconciler;
use recourse_core::record::CallReport;
use recourse_core::transport::Transport;

/// Runs calls: admits, dispatches, parses, asks the [`Policy`](recourse_core::policy::Policy), and carries out its action.
///
/// One executor serves many concurrent calls; its retry budget and circuit
/// breakers are shared by all of them (and by clones of it).
///
/// ```no_run
/// use std::sync::Arc;
/// use recourse::{Call, Executor, HttpTransport};
/// use serde_json::json;
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// // RECOURSE_* settings, schema coercion, the correction chain (a model if
/// // RECOURSE_LLM_* / OPENAI_* configure one), a shared budget and breakers.
/// let executor = Executor::from_env(Arc::new(HttpTransport::builder().build()?))?.build();
/// let call = Call::builder("http://127.0.0.1:8700/api/stock/quote", json!({"symbol": "TSLA"})).build()?;
/// let report = executor.execute(call).await;
/// println!("{} after {} attempt(s)", report.outcome.name(), report.attempts.len());
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Executor {
    pub(crate) config: ExecutorConfig,
    pub(crate) transport: Arc<dyn Transport>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) budget: Option<Arc<RetryBudget>>,
    pub(crate) breakers: Option<Arc<CircuitBreakers>>,
    /// The fleet's budget and breakers, deciding while they answer.
    pub(crate) shared: Option<Arc<dyn SharedState>>,
    pub(crate) corrector: Option<Arc<dyn Corrector>>,
    pub(crate) reconciler: Option<Arc<dyn Reconciler>>,
    pub(crate) admission: Arc<dyn Admission>,
    pub(crate) jitter_seed: u64,
    pub(crate) calls: Arc<AtomicU64>,
    pub(crate) journal: Option<Arc<dyn Journal>>,
    pub(crate) manifests: Option<Arc<CapabilityManifests>>,
}

impl std::fmt::Debug for Executor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Executor")
            .field("config", &self.config)
            .field("corrector", &self.corrector.is_some())
            .field("shared", &self.shared)
            .field("reconciler", &self.reconciler.is_some())
            .finish_non_exhaustive()
    }
}

/// Configures an [`Executor`].
pub struct ExecutorBuilder {
    executor: Executor,
    default_budget: bool,
    default_breakers: bool,
}

impl Executor {
    /// A builder around `transport` with the default configuration, schema
    /// coercion, a retry budget and circuit breakers — and no corrector.
    pub fn builder(transport: impl Transport + 'static) -> ExecutorBuilder {
        Self::builder_arc(Arc::new(transport))
    }

    /// Like [`builder`](Self::builder), for a shared transport.
    pub fn builder_arc(transport: Arc<dyn Transport>) -> ExecutorBuilder {
        ExecutorBuilder {
            executor: Executor {
                config: ExecutorConfig::default(),
                transport,
                clock: Arc::new(SystemClock),
                budget: None,
                breakers: None,
                shared: None,
                corrector: None,
                reconciler: None,
                admission: Arc::new(SchemaCoercion),
                jitter_seed: random_seed(),
                calls: Arc::new(AtomicU64::new(0)),
                journal: None,
                manifests: None,
            },
            default_budget: true,
            default_breakers: true,
        }
    }

    /// The standard executor, configured from the environment: `RECOURSE_*`
    /// settings ([`ExecutorConfig::from_env`]), schema coercion before every
    /// dispatch, and the [`CorrectionChain`] — deterministic repair, then the
    /// model `RECOURSE_LLM_*` / `OPENAI_*` configure, if any.
    ///
    /// # Errors
    /// A `RECOURSE_*` / `OPENAI_*` variable that is set but unusable.
    pub fn from_env(transport: Arc<dyn Transport>) -> Result<ExecutorBuilder, ConfigError> {
        Self::from_vars(transport, &std::env::vars().collect())
    }

    /// Like [`from_env`](Self::from_env), from an explicit map of variables.
    ///
    /// # Errors
    /// As [`from_env`](Self::from_env).
    pub fn from_vars(
        transport: Arc<dyn Transport>,
        vars: &HashMap<String, String>,
    ) -> Result<ExecutorBuilder, ConfigError> {
        let config = ExecutorConfig::from_vars(vars.clone())?;
        let chain = CorrectionChain::from_vars(&config, vars)?;
        Self::standard(transport, config, Arc::new(chain))
    }

    /// The standard wiring around a configuration and a correction chain you
    /// made yourself (to share the chain with a workflow runner, or to give it
    /// a model of your own): schema coercion, the chain as corrector, the
    /// tools' capability manifests as evidence of idempotency, the default
    /// retry budget and circuit breakers.
    ///
    /// # Errors
    /// An unusable configuration (a zero request timeout).
    pub fn standard(
        transport: Arc<dyn Transport>,
        config: ExecutorConfig,
        chain: Arc<CorrectionChain>,
    ) -> Result<ExecutorBuilder, ConfigError> {
        Ok(Self::builder_arc(transport)
            .with_config(config)?
            .with_corrector(chain)
            .with_manifests(Arc::new(CapabilityManifests::new())))
    }

    /// This executor with another transport, sharing everything else — the
    /// retry budget, breakers, corrector, reconciler and journal.
    #[must_use]
    pub fn with_transport(&self, transport: Arc<dyn Transport>) -> Self {
        Self {
            transport,
            ..self.clone()
        }
    }

    /// A fresh seed for one call's jitter: distinct per call, reproducible
    /// when the executor's seed is fixed.
    pub(crate) fn next_jitter_seed(&self) -> u64 {
        let n = self.calls.fetch_add(1, Ordering::Relaxed);
        splitmix(self.jitter_seed ^ n.wrapping_mul(0x9E37_79B9_7F4A_7C15))
    }

    /// Runs `call` to its end.
    ///
    /// Nothing is sent until the future is polled, and the call's deadline
    /// counts from then.
    pub fn execute(&self, call: Call) -> impl Future<Output = CallReport> + Send + '_ {
        self.execute_with_cancel(call, CancellationToken::new())
    }

    /// Runs `call` until it ends or `cancel` fires (between attempts or while waiting).
    ///
    /// The run is set up here and its future returned as it is, rather than
    /// wrapped in another `async fn`'s: each wrapper would keep its own copy
    /// of the call in every call's future.
    pub fn execute_with_cancel(
        &self,
        call: Call,
        cancel: CancellationToken,
    ) -> impl Future<Output = CallReport> + Send + '_ {
        run::Run::start(self, call, cancel).run()
    }

    /// The configuration in force.
    pub fn config(&self) -> &ExecutorConfig {
        &self.config
    }

    /// The shared retry budget, if any.
    pub fn retry_budget(&self) -> Option<&Arc<RetryBudget>> {
        self.budget.as_ref()
    }

    /// The shared circuit breakers, if any.
    pub fn circuit_breakers(&self) -> Option<&Arc<CircuitBreakers>> {
        self.breakers.as_ref()
    }

    /// The fleet-wide state deciding resends and admissions, if any.
    pub fn shared_state(&self) -> Option<&Arc<dyn SharedState>> {
        self.shared.as_ref()
    }

    /// The tools' capability manifests this executor asks, if any.
    pub fn manifests(&self) -> Option<&Arc<CapabilityManifests>> {
        self.manifests.as_ref()
    }
}

impl ExecutorBuilder {
    /// Replaces the whole configuration.
    ///
    /// # Errors
    /// A zero request timeout.
    pub fn with_config(mut self, config: ExecutorConfig) -> Result<Self, ConfigError> {
        if config.request_timeout.is_zero() {
            return Err(ConfigError::new(
                "request timeout",
                "must be greater than zero",
            ));
        }
        self.executor.config = config;
        Ok(self)
    }

    /// Uses `clock` for waits, deadlines, the default budget and breakers.
    #[must_use]
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.executor.clock = clock;
        self
    }

    /// Shares `budget` with other executors.
    #[must_use]
    pub fn with_retry_budget(mut self, budget: Arc<RetryBudget>) -> Self {
        self.executor.budget = Some(budget);
        self.default_budget = false;
        self
    }

    /// No shared retry budget: only per-call limits bound resends.
    #[must_use]
    pub fn without_retry_budget(mut self) -> Self {
        self.executor.budget = None;
        self.default_budget = false;
        self
    }

    /// Shares `breakers` with other executors.
    #[must_use]
    pub fn with_circuit_breakers(mut self, breakers: Arc<CircuitBreakers>) -> Self {
        self.executor.breakers = Some(breakers);
        self.default_breakers = false;
        self
    }

    /// No circuit breakers.
    #[must_use]
    pub fn without_circuit_breakers(mut self) -> Self {
        self.executor.breakers = None;
        self.default_breakers = false;
        self
    }

    /// Lets `shared` — a budget and breakers the whole fleet sees — decide
    /// resends and admissions while it answers; the local budget and breakers
    /// are still fed, and decide whenever it does not (see [`SharedState`]).
    /// Without a local budget or breakers, the shared one of that kind is
    /// not asked either.
    #[must_use]
    pub fn with_shared_state(mut self, shared: Arc<dyn SharedState>) -> Self {
        self.executor.shared = Some(shared);
        self
    }

    /// Hands correctable failures to `corrector`.
    #[must_use]
    pub fn with_corrector(mut self, corrector: Arc<dyn Corrector>) -> Self {
        self.executor.corrector = Some(corrector);
        self
    }

    /// Hands unknown outcomes to `reconciler` (a call's own reconciler wins).
    #[must_use]
    pub fn with_reconciler(mut self, reconciler: Arc<dyn Reconciler>) -> Self {
        self.executor.reconciler = Some(reconciler);
        self
    }

    /// Admits every payload through `admission` before dispatch (the
    /// default is [`SchemaCoercion`]).
    #[must_use]
    pub fn with_admission(mut self, admission: Arc<dyn Admission>) -> Self {
        self.executor.admission = admission;
        self
    }

    /// Sends payloads as given: no schema coercion before dispatch (corrected
    /// payloads are still coerced by the correction gate).
    #[must_use]
    pub fn without_coercion(self) -> Self {
        self.with_admission(Arc::new(AsIs))
    }

    /// Asks `manifests` whether an HTTP tool declares a call idempotent, when
    /// the caller did not say (see [`Idempotency`](recourse_core::idempotency::Idempotency)).
    #[must_use]
    pub fn with_manifests(mut self, manifests: Arc<CapabilityManifests>) -> Self {
        self.executor.manifests = Some(manifests);
        self
    }

    /// Records every call and attempt in `journal`, before dispatch.
    #[must_use]
    pub fn with_journal(mut self, journal: Arc<dyn Journal>) -> Self {
        self.executor.journal = Some(journal);
        self
    }

    /// Fixes the backoff jitter's seed: runs are reproducible, and each
    /// call still gets its own schedule.
    #[must_use]
    pub fn with_jitter_seed(mut self, seed: u64) -> Self {
        self.executor.jitter_seed = seed;
        self
    }

    /// Builds the executor. Default budget and breakers use the configured clock.
    pub fn build(self) -> Executor {
        let mut executor = self.executor;
        if self.default_budget {
            let clock = Arc::clone(&executor.clock);
            executor.budget = Some(Arc::new(RetryBudget::standard(clock)));
        }
        if self.default_breakers {
            let clock = Arc::clone(&executor.clock);
            executor.breakers = Some(Arc::new(CircuitBreakers::standard(clock)));
        }
        executor
    }
}

/// A seed that differs per process and executor, without a random-number crate.
fn random_seed() -> u64 {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    hasher.finish()
}

/// SplitMix64's finaliser: spreads nearby inputs across the whole range.
fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}
