//! The OTLP pipeline: a tracer provider fed by the `tracing` spans recourse
//! opens, a meter provider reading the `/metrics` families, both exporting
//! over HTTP/protobuf through [`OtlpClient`], and their flush on exit.
//!
//! Only spans reach OpenTelemetry, and only recourse's own (targets starting
//! `recourse`): their fields are the record's types. Events — log lines that
//! may quote an error's text — and other crates' spans stay out.

use std::time::Duration;

use anyhow::{Context, Result};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::Layer as _;
use tracing_subscriber::filter::filter_fn;
use tracing_subscriber::layer::SubscriberExt as _;

use super::TelemetryConfig;
use super::client::OtlpClient;

/// How long exiting waits for the last export of each signal.
const FLUSH_GRACE: Duration = Duration::from_secs(5);

/// The providers exporting now.
pub(super) struct Pipeline {
    tracer: Option<SdkTracerProvider>,
    meter: Option<SdkMeterProvider>,
}

impl Pipeline {
    /// Starts what `config` turns on, sending on `runtime`.
    pub(super) fn start(
        config: &TelemetryConfig,
        runtime: &tokio::runtime::Handle,
    ) -> Result<Self> {
        let resource = Resource::builder()
            .with_service_name(config.service_name.clone())
            .build();
        let client = || OtlpClient::new(runtime.clone(), config.timeout);
        let tracer = if config.traces {
            let exporter = opentelemetry_otlp::SpanExporter::builder()
                .with_http()
                .with_protocol(Protocol::HttpBinary)
                .with_timeout(config.timeout)
                .with_http_client(client()?)
                .build()
                .context("building the OTLP span exporter")?;
            let provider = SdkTracerProvider::builder()
                .with_batch_exporter(exporter)
                .with_resource(resource.clone())
                .build();
            install_subscriber(&provider)?;
            Some(provider)
        } else {
            None
        };
        let meter = if config.metrics {
            let exporter = opentelemetry_otlp::MetricExporter::builder()
                .with_http()
                .with_protocol(Protocol::HttpBinary)
                .with_timeout(config.timeout)
                .with_http_client(client()?)
                .build()
                .context("building the OTLP metric exporter")?;
            let provider = SdkMeterProvider::builder()
                .with_reader(PeriodicReader::builder(exporter).build())
                .with_resource(resource)
                .build();
            opentelemetry::global::set_meter_provider(provider.clone());
            Some(provider)
        } else {
            None
        };
        Ok(Self { tracer, meter })
    }

    /// Exports what is left, waiting at most [`FLUSH_GRACE`] for each signal
    /// (both at once).
    pub(super) fn shutdown(self) {
        let meter = self.meter.map(|m| {
            std::thread::spawn(move || {
                let _ = m.shutdown_with_timeout(FLUSH_GRACE);
            })
        });
        if let Some(tracer) = self.tracer {
            let _ = tracer.shutdown_with_timeout(FLUSH_GRACE);
        }
        if let Some(meter) = meter {
            let _ = meter.join();
        }
    }
}

/// Sends recourse's spans to `provider`, for the rest of the process.
fn install_subscriber(provider: &SdkTracerProvider) -> Result<()> {
    let layer = tracing_opentelemetry::layer()
        .with_tracer(provider.tracer("recourse"))
        .with_threads(false)
        .with_location(false)
        .with_filter(filter_fn(|meta| {
            meta.is_span() && meta.target().starts_with("recourse")
        }));
    let subscriber = tracing_subscriber::registry().with(layer);
    tracing::subscriber::set_global_default(subscriber)
        .context("installing the OpenTelemetry span subscriber")
}
