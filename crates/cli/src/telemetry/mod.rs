//! Telemetry: recourse's spans and metrics over OTLP (HTTP/protobuf) when the
//! standard `OTEL_*` variables ask for it, and only in a build with the `otel`
//! feature (on by default).
//!
//! [`Telemetry::start`] runs before a command and [`Telemetry::shutdown`]
//! after it, so a short `recourse call` exports its spans before it exits and
//! the gateway flushes on SIGTERM. A command that keeps [`recourse::metrics::Metrics`]
//! hands them to [`export_metrics`]; with export off that does nothing.

mod config;

#[cfg(feature = "otel")]
mod client;
#[cfg(feature = "otel")]
mod metrics;
#[cfg(feature = "otel")]
mod pipeline;

use std::sync::Arc;

use recourse::Executor;
use recourse::metrics::{MetricFamily, Metrics};

pub(crate) use config::TelemetryConfig;

/// What exports while a command runs.
pub(crate) struct Telemetry {
    #[cfg(feature = "otel")]
    pipeline: Option<pipeline::Pipeline>,
}

impl Telemetry {
    /// Starts exporting what `config` turns on, sending on `runtime`.
    ///
    /// # Errors
    /// When an exporter cannot be built.
    #[cfg_attr(not(feature = "otel"), allow(clippy::unnecessary_wraps))]
    pub(crate) fn start(
        config: &TelemetryConfig,
        runtime: &tokio::runtime::Handle,
    ) -> anyhow::Result<Self> {
        #[cfg(feature = "otel")]
        {
            let pipeline = config
                .is_on()
                .then(|| pipeline::Pipeline::start(config, runtime))
                .transpose()?;
            Ok(Self { pipeline })
        }
        #[cfg(not(feature = "otel"))]
        {
            let _ = runtime;
            if config.is_on() {
                eprintln!(
                    "recourse: OTEL_EXPORTER_OTLP_ENDPOINT is set, but this build exports no \
                     telemetry (the `otel` feature of recourse-cli is off)"
                );
            }
            Ok(Self {})
        }
    }

    /// Exports what is left and stops.
    pub(crate) fn shutdown(self) {
        #[cfg(feature = "otel")]
        if let Some(pipeline) = self.pipeline {
            pipeline.shutdown();
        }
    }
}

/// Exports the families `source` reads as OTLP metrics, while export is on.
pub(crate) fn export_metrics(source: impl Fn() -> Vec<MetricFamily> + Send + Sync + 'static) {
    #[cfg(feature = "otel")]
    {
        let source: metrics::FamilySource = Arc::new(source);
        metrics::register(&opentelemetry::global::meter("recourse"), &source);
    }
    #[cfg(not(feature = "otel"))]
    drop(source);
}

/// Exports `metrics` with `executor`'s budget and breakers: the families
/// `/metrics` would render for them.
pub(crate) fn export_executor_metrics(metrics: &Arc<Metrics>, executor: &Executor) {
    let metrics = Arc::clone(metrics);
    let budget = executor.retry_budget().cloned();
    let breakers = executor.circuit_breakers().cloned();
    export_metrics(move || metrics.families(budget.as_deref(), breakers.as_deref()));
}
