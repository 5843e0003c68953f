//! Prometheus metrics from call reports (protocol §7), rendered as text exposition.
//!
//! A small fixed set of counters, fed from [`CallReport`]s and the shared
//! budget and breakers, so any host (the gateway, an agent process) can serve
//! `/metrics` without a global recorder. Every name is prefixed `recourse_`.
//! [`Metrics::families`] gives the same families as data, for an exporter
//! other than Prometheus text (the CLI's OpenTelemetry export reads them).
//!
//! # What a label may hold
//!
//! The only label a caller's input reaches is the breakers' `endpoint`: the
//! endpoint template (scheme, host, port and path; never userinfo or the
//! query), passed through the redactor once more in case a path holds a key.
//! A gateway's callers choose their targets, so the number of series is capped:
//! the `MAX_ENDPOINT_SERIES` (100) most telling endpoints (open first, then
//! half-open, then closed, each by name) get their own series, and the rest
//! share one `endpoint="other"` series holding the worst of their states.
//! `recourse_breakers` counts every tracked endpoint by state, so nothing is
//! hidden by the cap.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::{Mutex, PoisonError};

use crate::breaker::{BreakerPhase, BreakerState, CircuitBreakers};
use crate::budget::RetryBudget;
use crate::shared::SharedMode;
use recourse_core::record::{CallReport, Event};
use strum::IntoEnumIterator;

/// The most breaker series rendered; the rest share one `other` series.
const MAX_ENDPOINT_SERIES: usize = 100;

/// The label of the series the endpoints past the cap share.
const OTHER: &str = "other";

/// Counters of calls, attempts, corrections, dispatches and model usage.
#[derive(Debug, Default)]
pub struct Metrics {
    counters: Mutex<Counters>,
}

#[derive(Debug, Default)]
struct Counters {
    calls: BTreeMap<&'static str, u64>,
    attempts: BTreeMap<&'static str, u64>,
    corrections: BTreeMap<(&'static str, &'static str), u64>,
    dispatches: u64,
    llm_calls: u64,
    prompt_tokens: u64,
    completion_tokens: u64,
    llm_seconds: f64,
}

impl Metrics {
    /// Counts one finished call.
    pub fn observe(&self, report: &CallReport) {
        let mut c = self.counters.lock().unwrap_or_else(PoisonError::into_inner);
        *c.calls.entry(report.outcome.name()).or_default() += 1;
        for a in &report.attempts {
            *c.attempts.entry(a.action.name()).or_default() += 1;
            for event in &a.events {
                if let Event::Correction { layer, verdict, .. } = event {
                    *c.corrections
                        .entry((layer.as_str(), verdict.as_str()))
                        .or_default() += 1;
                }
            }
        }
        c.dispatches += u64::from(report.http_calls);
        c.llm_calls += u64::from(report.llm_calls);
        c.prompt_tokens += report.tokens.prompt;
        c.completion_tokens += report.tokens.completion;
        c.llm_seconds += report.llm_time.as_secs_f64();
    }

    /// The Prometheus text exposition, including the budget's exhaustion count
    /// and each breaker's state (0 closed, 1 half-open, 2 open).
    pub fn render(
        &self,
        budget: Option<&RetryBudget>,
        breakers: Option<&CircuitBreakers>,
    ) -> String {
        self.render_seen(budget, breakers, &|_| true)
    }

    /// [`render`](Self::render), the breakers only of the endpoints `seen`
    /// admits (a gateway's caller sees its own endpoints, an admin all).
    pub fn render_seen(
        &self,
        budget: Option<&RetryBudget>,
        breakers: Option<&CircuitBreakers>,
        seen: &dyn Fn(&str) -> bool,
    ) -> String {
        let mut out = String::new();
        for f in self.families_seen(budget, breakers, seen) {
            render_family(&mut out, &f);
        }
        out
    }

    /// Every family `/metrics` renders, as data: what an exporter other than
    /// Prometheus (OpenTelemetry) reads, so both always show the same counters.
    /// Every family is present, with no samples where nothing was counted.
    pub fn families(
        &self,
        budget: Option<&RetryBudget>,
        breakers: Option<&CircuitBreakers>,
    ) -> Vec<MetricFamily> {
        self.families_seen(budget, breakers, &|_| true)
    }

    /// [`families`](Self::families), the breakers only of the endpoints
    /// `seen` admits.
    pub fn families_seen(
        &self,
        budget: Option<&RetryBudget>,
        breakers: Option<&CircuitBreakers>,
        seen: &dyn Fn(&str) -> bool,
    ) -> Vec<MetricFamily> {
        let c = self.counters.lock().unwrap_or_else(PoisonError::into_inner);
        let by = |label: &'static str, map: &BTreeMap<&'static str, u64>| {
            map.iter()
                .map(|(value, n)| MetricSample::labelled(vec![(label, (*value).to_owned())], *n))
                .collect()
        };
        let corrections = c
            .corrections
            .iter()
            .map(|((source, result), n)| {
                let labels = vec![
                    ("source", (*source).to_owned()),
                    ("result", (*result).to_owned()),
                ];
                MetricSample::labelled(labels, *n)
            })
            .collect();
        let tokens = vec![
            MetricSample::labelled(vec![("kind", "prompt".to_owned())], c.prompt_tokens),
            MetricSample::labelled(vec![("kind", "completion".to_owned())], c.completion_tokens),
        ];
        let latency = vec![
            MetricSample {
                suffix: "_sum",
                labels: Vec::new(),
                value: c.llm_seconds,
            },
            MetricSample {
                suffix: "_count",
                ..MetricSample::plain(c.llm_calls)
            },
        ];
        let exhausted = budget.map_or(0, RetryBudget::exhausted_count);
        let mut families = vec![
            MetricFamily::counter(
                "recourse_calls_total",
                "Logical calls by outcome.",
                by("outcome", &c.calls),
            ),
            MetricFamily::counter(
                "recourse_attempts_total",
                "Attempts by the action the policy chose.",
                by("action", &c.attempts),
            ),
            MetricFamily::counter(
                "recourse_corrections_total",
                "Correction layers asked, by layer (repair, llm, semantic) and verdict (fixed, cannot_fix, rejected_by_gate, skipped).",
                corrections,
            ),
            MetricFamily::counter(
                "recourse_dispatches_total",
                "Requests sent to tools.",
                vec![MetricSample::plain(c.dispatches)],
            ),
            MetricFamily::counter(
                "recourse_llm_calls_total",
                "Model calls made by correctors.",
                vec![MetricSample::plain(c.llm_calls)],
            ),
            MetricFamily::counter("recourse_llm_tokens_total", "Model tokens by kind.", tokens),
            MetricFamily {
                kind: MetricKind::Summary,
                ..MetricFamily::counter(
                    "recourse_llm_latency_seconds",
                    "Time spent in corrections that called a model.",
                    latency,
                )
            },
            MetricFamily::counter(
                "recourse_retry_budget_exhausted_total",
                "Resends refused by the shared retry budget.",
                vec![MetricSample::plain(exhausted)],
            ),
        ];
        drop(c);
        families.extend(breaker_families(breakers, seen));
        families
    }
}

/// One metric family: its name, what it measures, and its samples now.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricFamily {
    /// The name, prefixed `recourse_` (`recourse_calls_total`).
    pub name: &'static str,
    /// What it measures, in a sentence.
    pub help: &'static str,
    /// Counter, gauge or summary.
    pub kind: MetricKind,
    /// One sample per series.
    pub samples: Vec<MetricSample>,
}

impl MetricFamily {
    fn counter(name: &'static str, help: &'static str, samples: Vec<MetricSample>) -> Self {
        Self {
            name,
            help,
            kind: MetricKind::Counter,
            samples,
        }
    }
}

/// How a family's values behave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricKind {
    /// Only ever grows (since the process started).
    Counter,
    /// A level now.
    Gauge,
    /// A sum and a count (samples suffixed `_sum` and `_count`), both growing.
    Summary,
}

/// One series of a family.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricSample {
    /// Appended to the family's name (`_sum`, `_count` in a summary), else empty.
    pub suffix: &'static str,
    /// Label names and values; values are bounded sets (outcomes, actions,
    /// layers) or redacted, capped endpoints.
    pub labels: Vec<(&'static str, String)>,
    /// The value.
    pub value: f64,
}

impl MetricSample {
    #[allow(clippy::cast_precision_loss)] // counts stay far below 2^53
    fn labelled(labels: Vec<(&'static str, String)>, n: u64) -> Self {
        Self {
            suffix: "",
            labels,
            value: n as f64,
        }
    }

    fn plain(n: u64) -> Self {
        Self::labelled(Vec::new(), n)
    }
}

impl Metrics {
    /// The `recourse_shared_state{state}` gauge: 1 for the mode deciding now
    /// (`shared` or `fallback`), 0 for the other. Hosts with a
    /// [`SharedState`](crate::shared::SharedState) append it to [`render`](Self::render)'s text.
    pub fn render_shared_state(mode: SharedMode) -> String {
        let mut out = String::new();
        render_family(&mut out, &Self::shared_state_family(mode));
        out
    }

    /// The `recourse_shared_state{state}` gauge as data (for exporters).
    pub fn shared_state_family(mode: SharedMode) -> MetricFamily {
        let samples = [SharedMode::Shared, SharedMode::Fallback]
            .into_iter()
            .map(|state| {
                MetricSample::labelled(vec![("state", state.to_string())], u64::from(state == mode))
            })
            .collect();
        MetricFamily {
            kind: MetricKind::Gauge,
            ..MetricFamily::counter(
                "recourse_shared_state",
                "Which state decides resends and admissions: the fleet's (shared) or this process's own (fallback).",
                samples,
            )
        }
    }
}

/// One family in the Prometheus text exposition.
fn render_family(out: &mut String, f: &MetricFamily) {
    let kind = match f.kind {
        MetricKind::Counter => "counter",
        MetricKind::Gauge => "gauge",
        MetricKind::Summary => "summary",
    };
    let _ = writeln!(
        out,
        "# HELP {} {}\n# TYPE {} {kind}",
        f.name, f.help, f.name
    );
    for sample in &f.samples {
        let _ = write!(out, "{}{}", f.name, sample.suffix);
        if !sample.labels.is_empty() {
            let labels: Vec<String> = sample
                .labels
                .iter()
                .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
                .collect();
            let _ = write!(out, "{{{}}}", labels.join(","));
        }
        let _ = writeln!(out, " {}", sample.value);
    }
}

/// The breaker families: counts by state, then one bounded series per endpoint.
fn breaker_families(
    breakers: Option<&CircuitBreakers>,
    seen: &dyn Fn(&str) -> bool,
) -> [MetricFamily; 2] {
    let mut states = breakers.map(CircuitBreakers::snapshot).unwrap_or_default();
    states.retain(|(endpoint, _)| seen(endpoint));
    let by_state = BreakerPhase::iter()
        .map(|phase| {
            let n = states.iter().filter(|(_, s)| s.phase() == phase).count();
            let name: &'static str = phase.into();
            MetricSample::labelled(vec![("state", name.to_owned())], n as u64)
        })
        .collect();
    let per_endpoint = endpoint_series(&states)
        .into_iter()
        .map(|(endpoint, level)| MetricSample::labelled(vec![("endpoint", endpoint)], level.into()))
        .collect();
    [
        MetricFamily {
            kind: MetricKind::Gauge,
            ..MetricFamily::counter(
                "recourse_breakers",
                "Endpoints whose breaker is tracked (failing now or lately), by state.",
                by_state,
            )
        },
        MetricFamily {
            kind: MetricKind::Gauge,
            ..MetricFamily::counter(
                "recourse_breaker_state",
                "Circuit breaker state per endpoint: 0 closed, 1 half-open, 2 open.",
                per_endpoint,
            )
        },
    ]
}

/// 0 closed, 1 half-open, 2 open.
fn level(state: &BreakerState) -> u8 {
    match state {
        BreakerState::Closed { .. } => 0,
        BreakerState::HalfOpen { .. } => 1,
        BreakerState::Open { .. } => 2,
    }
}

/// At most `MAX_ENDPOINT_SERIES` + 1 `(label, level)` pairs: redacted
/// endpoints, the worst state first, and `other` for the rest.
fn endpoint_series(states: &[(String, BreakerState)]) -> Vec<(String, u8)> {
    let mut by_label: BTreeMap<String, u8> = BTreeMap::new();
    for (endpoint, state) in states {
        let worst = by_label
            .entry(recourse_protocol::redact(endpoint))
            .or_default();
        *worst = (*worst).max(level(state));
    }
    let mut series: Vec<(String, u8)> = by_label.into_iter().collect();
    series.sort_by(|(a, x), (b, y)| y.cmp(x).then_with(|| a.cmp(b)));
    if series.len() > MAX_ENDPOINT_SERIES {
        let rest = series.split_off(MAX_ENDPOINT_SERIES);
        let worst = rest.iter().map(|(_, l)| *l).max().unwrap_or(0);
        match series.iter_mut().find(|(label, _)| label == OTHER) {
            Some((_, l)) => *l = (*l).max(worst),
            None => series.push((OTHER.to_owned(), worst)),
        }
    }
    series
}

/// Escapes a label value per the exposition format.
fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shared_state_gauge_marks_the_mode_deciding() {
        let text = Metrics::render_shared_state(SharedMode::Fallback);
        assert!(
            text.contains("# TYPE recourse_shared_state gauge"),
            "{text}"
        );
        assert!(
            text.contains("recourse_shared_state{state=\"shared\"} 0"),
            "{text}"
        );
        assert!(
            text.contains("recourse_shared_state{state=\"fallback\"} 1"),
            "{text}"
        );
    }

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(escape("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }

    #[test]
    fn a_report_feeds_calls_attempts_and_model_latency() {
        let report = CallReport {
            call_id: "c".into(),
            outcome: recourse_core::record::Outcome::Succeeded {
                data: recourse_protocol::ToolData::null(),
            },
            attempts: Vec::new(),
            http_calls: 2,
            llm_calls: 2,
            tokens: recourse_core::record::TokenUsage {
                prompt: 300,
                completion: 40,
            },
            llm_time: std::time::Duration::from_millis(1500),
            idempotency: recourse_core::idempotency::Idempotency::decide(None, None, None),
            idempotency_key: None,
            operation_id: None,
            verification: None,
            elapsed: std::time::Duration::from_secs(2),
            settlement: None,
            answer: None,
            ended_at: None,
        };
        let metrics = Metrics::default();
        metrics.observe(&report);
        let text = metrics.render(None, None);
        for line in [
            "recourse_calls_total{outcome=\"succeeded\"} 1",
            "recourse_dispatches_total 2",
            "recourse_llm_tokens_total{kind=\"prompt\"} 300",
            "recourse_llm_latency_seconds_sum 1.5",
            "recourse_llm_latency_seconds_count 2",
        ] {
            assert!(text.contains(line), "{line} missing from\n{text}");
        }
    }

    #[test]
    fn every_family_is_data_and_text_alike() {
        let metrics = Metrics::default();
        let families = metrics.families(None, None);
        assert_eq!(families.len(), 10);
        let text = metrics.render(None, None);
        for f in &families {
            assert!(text.contains(&format!("# TYPE {} ", f.name)), "{}", f.name);
            for sample in &f.samples {
                assert!(text.contains(&format!("{}{}", f.name, sample.suffix)));
            }
        }
        let latency = families
            .iter()
            .find(|f| f.name == "recourse_llm_latency_seconds")
            .unwrap();
        assert_eq!(latency.kind, MetricKind::Summary);
        let suffixes: Vec<&str> = latency.samples.iter().map(|s| s.suffix).collect();
        assert_eq!(suffixes, ["_sum", "_count"]);
    }

    #[test]
    fn empty_metrics_render_every_family() {
        let text = Metrics::default().render(None, None);
        for name in [
            "recourse_calls_total",
            "recourse_attempts_total",
            "recourse_retry_budget_exhausted_total 0",
        ] {
            assert!(text.contains(name), "{name}");
        }
    }

    #[test]
    fn corrections_are_counted_from_events_whatever_their_words() {
        use recourse_core::policy::Action;
        use recourse_core::record::{
            AttemptRecord, CorrectionLayer, Event, GateRule, PayloadSource, Verdict,
        };
        let correction = |verdict, reason: &str| Event::Correction {
            layer: CorrectionLayer::Llm,
            verdict,
            reason: reason.to_owned(),
        };
        let report = |reason: &str| CallReport {
            call_id: "c".into(),
            outcome: recourse_core::record::Outcome::Succeeded {
                data: recourse_protocol::ToolData::null(),
            },
            attempts: vec![AttemptRecord {
                n: 1,
                payload: serde_json::Value::Null,
                status: Some(400),
                transport_error: None,
                category: None,
                code: None,
                retry_permission: recourse_protocol::RetryPermission::Unspecified,
                action: Action::Correct,
                timeout_ms: 1000,
                source: PayloadSource::Caller,
                facts: Default::default(),
                events: vec![
                    correction(
                        Verdict::RejectedByGate {
                            rule: GateRule::Unchanged,
                        },
                        reason,
                    ),
                    correction(Verdict::Fixed, reason),
                ],
            }],
            http_calls: 2,
            llm_calls: 1,
            tokens: recourse_core::record::TokenUsage::default(),
            llm_time: std::time::Duration::ZERO,
            idempotency: recourse_core::idempotency::Idempotency::decide(None, None, None),
            idempotency_key: None,
            operation_id: None,
            verification: None,
            elapsed: std::time::Duration::ZERO,
            settlement: None,
            answer: None,
            ended_at: None,
        };
        let render = |r: &CallReport| {
            let m = Metrics::default();
            m.observe(r);
            m.render(None, None)
        };
        let text = render(&report("unchanged from the failed payload"));
        assert_eq!(text, render(&report("entirely different words")));
        assert!(
            text.contains(
                "recourse_corrections_total{source=\"llm\",result=\"rejected_by_gate\"} 1"
            )
        );
        assert!(text.contains("recourse_corrections_total{source=\"llm\",result=\"fixed\"} 1"));
    }

    fn failing(endpoints: impl IntoIterator<Item = String>, times: u32) -> CircuitBreakers {
        let breakers = CircuitBreakers::new(
            3,
            std::time::Duration::from_secs(5),
            std::sync::Arc::new(recourse_core::clock::ManualClock::new()),
        );
        for endpoint in endpoints {
            for _ in 0..times {
                breakers.record_transient_failure(&endpoint);
            }
        }
        breakers
    }

    #[test]
    fn breaker_series_are_capped_with_one_other_series() {
        let breakers = failing((0..1000).map(|i| format!("http://127.0.0.1:9/p{i}")), 1);
        for _ in 0..3 {
            breakers.record_transient_failure("http://127.0.0.1:9/zzz-down");
        }
        let text = Metrics::default().render(None, Some(&breakers));
        let series = text.matches("recourse_breaker_state{").count();
        assert_eq!(series, MAX_ENDPOINT_SERIES + 1, "{text}");
        assert!(
            text.contains("recourse_breaker_state{endpoint=\"other\"} 0"),
            "{text}"
        );
        assert!(
            text.contains("recourse_breaker_state{endpoint=\"http://127.0.0.1:9/zzz-down\"} 2"),
            "an open breaker is never hidden in other"
        );
        assert!(
            text.contains("recourse_breakers{state=\"closed\"} 1000"),
            "{text}"
        );
        assert!(
            text.contains("recourse_breakers{state=\"open\"} 1"),
            "{text}"
        );
    }

    #[test]
    fn breaker_labels_are_redacted_and_merged() {
        let breakers = failing(
            [
                "http://127.0.0.1:9/keys/sk-live0123456789abcdefghij/a".to_owned(),
                "http://127.0.0.1:9/keys/sk-live9876543210abcdefghij/a".to_owned(),
            ],
            1,
        );
        breakers.record_transient_failure("http://127.0.0.1:9/keys/sk-live9876543210abcdefghij/a");
        breakers.record_transient_failure("http://127.0.0.1:9/keys/sk-live9876543210abcdefghij/a");
        let text = Metrics::default().render(None, Some(&breakers));
        assert!(!text.contains("sk-live"), "{text}");
        assert_eq!(text.matches("recourse_breaker_state{").count(), 1, "{text}");
        assert!(
            text.contains("} 2\n"),
            "the worst of the merged states: {text}"
        );
    }
}
