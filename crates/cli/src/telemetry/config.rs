//! The standard OpenTelemetry variables recourse reads, checked once.
//!
//! Export is off unless an OTLP endpoint is set: `OTEL_EXPORTER_OTLP_ENDPOINT`
//! for both signals (`/v1/traces` and `/v1/metrics` are appended), or
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` / `OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`
//! for one (used as given). `OTEL_TRACES_EXPORTER` / `OTEL_METRICS_EXPORTER`
//! set to `none` turn one signal off, `OTEL_SDK_DISABLED=true` both.
//! `OTEL_SERVICE_NAME` names the service (default `recourse`);
//! `OTEL_EXPORTER_OTLP_TIMEOUT` bounds each export in milliseconds (default
//! 10000); `OTEL_EXPORTER_OTLP_HEADERS` is passed on by the exporter. The only
//! protocol is `http/protobuf`: any other `OTEL_EXPORTER_OTLP_*PROTOCOL` is an
//! error rather than a silent fallback.

use std::collections::HashMap;
use std::time::Duration;

use recourse::ConfigError;
use recourse::config::parse_bool;

/// The service name when `OTEL_SERVICE_NAME` is unset.
const DEFAULT_SERVICE: &str = "recourse";

/// The export timeout when `OTEL_EXPORTER_OTLP_TIMEOUT` is unset.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// Which signals go where, as the environment says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TelemetryConfig {
    /// Whether spans are exported.
    pub(crate) traces: bool,
    /// Whether metrics are exported.
    pub(crate) metrics: bool,
    /// `service.name` of every span and metric.
    pub(crate) service_name: String,
    /// How long one export request may take.
    pub(crate) timeout: Duration,
}

impl TelemetryConfig {
    /// Reads and checks the `OTEL_*` variables in `vars`.
    ///
    /// # Errors
    /// An endpoint that is not an http(s) URL, a protocol other than
    /// `http/protobuf`, an exporter other than `otlp` or `none`, a timeout
    /// that is not a number of milliseconds, or a non-boolean
    /// `OTEL_SDK_DISABLED`.
    pub(crate) fn from_vars(vars: &HashMap<String, String>) -> Result<Self, ConfigError> {
        let get = |name: &str| vars.get(name).map(|v| v.trim()).filter(|v| !v.is_empty());
        let endpoint = |name: &str| -> Result<bool, ConfigError> {
            let Some(value) = get(name) else {
                return Ok(false);
            };
            match reqwest::Url::parse(value) {
                Ok(url) if matches!(url.scheme(), "http" | "https") && url.has_host() => Ok(true),
                _ => Err(ConfigError::new(
                    name,
                    format!("{value:?} is not an http(s) URL"),
                )),
            }
        };
        let both = endpoint("OTEL_EXPORTER_OTLP_ENDPOINT")?;
        let mut traces = endpoint("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")? || both;
        let mut metrics = endpoint("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT")? || both;
        for name in [
            "OTEL_EXPORTER_OTLP_PROTOCOL",
            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
            "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
        ] {
            if let Some(p) = get(name).filter(|p| *p != "http/protobuf") {
                return Err(ConfigError::new(
                    name,
                    format!("{p:?}: recourse exports OTLP over http/protobuf only"),
                ));
            }
        }
        for (name, on) in [
            ("OTEL_TRACES_EXPORTER", &mut traces),
            ("OTEL_METRICS_EXPORTER", &mut metrics),
        ] {
            match get(name) {
                None | Some("otlp") => {}
                Some("none") => *on = false,
                Some(other) => {
                    return Err(ConfigError::new(
                        name,
                        format!("{other:?}: recourse exports with otlp (or none)"),
                    ));
                }
            }
        }
        if let Some(v) = get("OTEL_SDK_DISABLED")
            && parse_bool("OTEL_SDK_DISABLED", v)?
        {
            (traces, metrics) = (false, false);
        }
        let timeout = match get("OTEL_EXPORTER_OTLP_TIMEOUT") {
            None => DEFAULT_TIMEOUT,
            Some(v) => match v.parse::<u64>() {
                Ok(ms) if ms > 0 => Duration::from_millis(ms),
                _ => {
                    return Err(ConfigError::new(
                        "OTEL_EXPORTER_OTLP_TIMEOUT",
                        format!("{v:?} is not a positive number of milliseconds"),
                    ));
                }
            },
        };
        Ok(Self {
            traces,
            metrics,
            service_name: get("OTEL_SERVICE_NAME")
                .unwrap_or(DEFAULT_SERVICE)
                .to_owned(),
            timeout,
        })
    }

    /// Whether anything is exported.
    pub(crate) fn is_on(&self) -> bool {
        self.traces || self.metrics
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(pairs: &[(&str, &str)]) -> Result<TelemetryConfig, ConfigError> {
        let vars = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        TelemetryConfig::from_vars(&vars)
    }

    #[test]
    fn off_unless_an_endpoint_is_set() {
        let c = config(&[("OTEL_SERVICE_NAME", "agent")]).unwrap();
        assert!(!c.is_on());
        assert_eq!(c.service_name, "agent");
        let c = config(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")]).unwrap();
        assert!(c.traces && c.metrics);
        assert_eq!(
            (c.service_name.as_str(), c.timeout),
            ("recourse", DEFAULT_TIMEOUT)
        );
        let c = config(&[(
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            "https://collector/v1/traces",
        )])
        .unwrap();
        assert!(c.traces && !c.metrics);
    }

    #[test]
    fn signals_can_be_switched_off() {
        let endpoint = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318");
        let c = config(&[endpoint, ("OTEL_METRICS_EXPORTER", "none")]).unwrap();
        assert!(c.traces && !c.metrics);
        let c = config(&[endpoint, ("OTEL_SDK_DISABLED", "true")]).unwrap();
        assert!(!c.is_on());
    }

    #[test]
    fn each_bad_value_is_named() {
        for (name, value) in [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "127.0.0.1:4318"),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "ftp://collector"),
            ("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "not a url"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
            ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/json"),
            ("OTEL_TRACES_EXPORTER", "zipkin"),
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "soon"),
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "0"),
            ("OTEL_SDK_DISABLED", "maybe"),
        ] {
            let e = config(&[(name, value)]).unwrap_err();
            assert_eq!(e.setting(), name, "{name}={value:?}");
        }
    }
}
