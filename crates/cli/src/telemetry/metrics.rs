//! The `/metrics` families as OpenTelemetry instruments.
//!
//! Each family becomes an observable instrument of the same name (a
//! summary's `_sum` and `_count` one each), whose callback reads the families
//! afresh at every collection, so the OTLP export and `/metrics` always show
//! the same counters: counters as cumulative sums, gauges as gauges, each
//! sample's labels as attributes.

use std::sync::Arc;

use opentelemetry::KeyValue;
use opentelemetry::metrics::{AsyncInstrument, Meter};
use recourse::metrics::{MetricFamily, MetricKind};

/// What reads the families now.
pub(crate) type FamilySource = Arc<dyn Fn() -> Vec<MetricFamily> + Send + Sync>;

/// Registers one instrument per family (and per summary part) on `meter`.
pub(super) fn register(meter: &Meter, source: &FamilySource) {
    for family in source() {
        let parts: &[&'static str] = match family.kind {
            MetricKind::Summary => &["_sum", "_count"],
            MetricKind::Counter | MetricKind::Gauge => &[""],
        };
        for suffix in parts {
            let name = format!("{}{suffix}", family.name);
            let callback = observe(Arc::clone(source), family.name, suffix);
            match family.kind {
                MetricKind::Gauge => {
                    meter
                        .f64_observable_gauge(name)
                        .with_description(family.help)
                        .with_callback(callback)
                        .build();
                }
                MetricKind::Counter | MetricKind::Summary => {
                    meter
                        .f64_observable_counter(name)
                        .with_description(family.help)
                        .with_callback(callback)
                        .build();
                }
            }
        }
    }
}

/// A callback observing family `name`'s samples with `suffix`.
fn observe(
    source: FamilySource,
    name: &'static str,
    suffix: &'static str,
) -> impl Fn(&dyn AsyncInstrument<f64>) + Send + Sync + 'static {
    move |instrument| {
        let families = source();
        let Some(family) = families.iter().find(|f| f.name == name) else {
            return;
        };
        for sample in family.samples.iter().filter(|s| s.suffix == suffix) {
            let attributes: Vec<KeyValue> = sample
                .labels
                .iter()
                .map(|(k, v)| KeyValue::new(*k, v.clone()))
                .collect();
            instrument.observe(sample.value, &attributes);
        }
    }
}
