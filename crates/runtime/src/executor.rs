//! The executor: configuration and shared state; the loop itself lives in `run`.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::{
    Admission, AsIs, Call, CallReport, CircuitBreakers, Clock, ConfigError, Corrector,
    ExecutorConfig, Journal, Policy, Reconciler, RetryBudget, SystemClock, Transport,
};

/// Runs calls: admits, dispatches, parses, asks the [`Policy`], and carries out its action.
///
/// One executor serves many concurrent calls; its retry budget and circuit
/// breakers are shared by all of them (and by clones of it).
///
/// ```no_run
/// use recourse::{Call, Executor, HttpTransport};
/// use serde_json::json;
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let executor = Executor::builder(HttpTransport::builder().build()?).build();
/// let report = executor
///     .execute(Call::new("http://127.0.0.1:8700/api/stock/quote", json!({"symbol": "TSLA"})))
///     .await;
/// println!("{} after {} attempt(s)", report.outcome.name(), report.attempts.len());
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Executor {
    pub(crate) config: ExecutorConfig,
    pub(crate) policy: Policy,
    pub(crate) transport: Arc<dyn Transport>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) budget: Option<Arc<RetryBudget>>,
    pub(crate) breakers: Option<Arc<CircuitBreakers>>,
    pub(crate) corrector: Option<Arc<dyn Corrector>>,
    pub(crate) reconciler: Option<Arc<dyn Reconciler>>,
    pub(crate) admission: Arc<dyn Admission>,
    pub(crate) jitter_seed: Option<u64>,
    pub(crate) journal: Option<Arc<dyn Journal>>,
}

impl std::fmt::Debug for Executor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Executor")
            .field("config", &self.config)
            .field("corrector", &self.corrector.is_some())
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
    /// A builder with SPEC §7's defaults around `transport`.
    pub fn builder(transport: impl Transport + 'static) -> ExecutorBuilder {
        Self::builder_arc(Arc::new(transport))
    }

    /// Like [`builder`](Self::builder), for a shared transport.
    pub fn builder_arc(transport: Arc<dyn Transport>) -> ExecutorBuilder {
        ExecutorBuilder {
            executor: Executor {
                config: ExecutorConfig::default(),
                policy: Policy::default(),
                transport,
                clock: Arc::new(SystemClock),
                budget: None,
                breakers: None,
                corrector: None,
                reconciler: None,
                admission: Arc::new(AsIs),
                jitter_seed: None,
                journal: None,
            },
            default_budget: true,
            default_breakers: true,
        }
    }

    /// Runs `call` to its end.
    pub async fn execute(&self, call: Call) -> CallReport {
        self.execute_with_cancel(call, CancellationToken::new())
            .await
    }

    /// Runs `call` until it ends or `cancel` fires (between attempts or while waiting).
    pub async fn execute_with_cancel(&self, call: Call, cancel: CancellationToken) -> CallReport {
        crate::run::Run::start(self, call, cancel).run().await
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
}

impl ExecutorBuilder {
    /// Replaces the whole configuration.
    ///
    /// # Errors
    /// None today; validated so that future settings can refuse bad values.
    pub fn with_config(mut self, config: ExecutorConfig) -> Result<Self, ConfigError> {
        if config.request_timeout.is_zero() {
            return Err(ConfigError::new(
                "request timeout",
                "must be greater than zero",
            ));
        }
        self.executor.policy = Policy::new(config.limits);
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

    /// Admits every payload through `admission` before dispatch.
    #[must_use]
    pub fn with_admission(mut self, admission: Arc<dyn Admission>) -> Self {
        self.executor.admission = admission;
        self
    }

    /// Records every call and attempt in `journal`, before dispatch.
    #[must_use]
    pub fn with_journal(mut self, journal: Arc<dyn Journal>) -> Self {
        self.executor.journal = Some(journal);
        self
    }

    /// Fixes the backoff jitter's seed (each call still gets its own schedule).
    #[must_use]
    pub fn with_jitter_seed(mut self, seed: u64) -> Self {
        self.executor.jitter_seed = Some(seed);
        self
    }

    /// Builds the executor. Default budget and breakers use the configured clock.
    pub fn build(self) -> Executor {
        let mut executor = self.executor;
        if self.default_budget {
            let clock = Arc::clone(&executor.clock);
            executor.budget = Some(Arc::new(RetryBudget::with_clock(
                0.2,
                10.0,
                Duration::from_secs(10),
                clock,
            )));
        }
        if self.default_breakers {
            let clock = Arc::clone(&executor.clock);
            executor.breakers = Some(Arc::new(CircuitBreakers::new(
                5,
                Duration::from_secs(5),
                clock,
            )));
        }
        executor
    }
}
