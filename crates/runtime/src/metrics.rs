//! Prometheus metrics from call reports (protocol §7), rendered as text exposition.
//!
//! A small fixed set of counters, fed from [`CallReport`]s and the shared
//! budget and breakers, so any host (the gateway, an agent process) can serve
//! `/metrics` without a global recorder. Every name is prefixed `recourse_`.
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

use crate::{BreakerState, CallReport, CircuitBreakers, Event, RetryBudget};

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
        let c = self.counters.lock().unwrap_or_else(PoisonError::into_inner);
        let mut out = String::new();
        family(
            &mut out,
            "recourse_calls_total",
            "Logical calls by outcome.",
            "counter",
        );
        for (outcome, n) in &c.calls {
            let _ = writeln!(out, "recourse_calls_total{{outcome=\"{outcome}\"}} {n}");
        }
        family(
            &mut out,
            "recourse_attempts_total",
            "Attempts by the action the policy chose.",
            "counter",
        );
        for (action, n) in &c.attempts {
            let _ = writeln!(out, "recourse_attempts_total{{action=\"{action}\"}} {n}");
        }
        family(
            &mut out,
            "recourse_corrections_total",
            "Correction layers asked, by layer (repair, llm, semantic) and verdict (fixed, cannot_fix, rejected_by_gate, skipped).",
            "counter",
        );
        for ((source, result), n) in &c.corrections {
            let _ = writeln!(
                out,
                "recourse_corrections_total{{source=\"{source}\",result=\"{result}\"}} {n}"
            );
        }
        scalar(
            &mut out,
            "recourse_dispatches_total",
            "Requests sent to tools.",
            c.dispatches,
        );
        scalar(
            &mut out,
            "recourse_llm_calls_total",
            "Model calls made by correctors.",
            c.llm_calls,
        );
        family(
            &mut out,
            "recourse_llm_tokens_total",
            "Model tokens by kind.",
            "counter",
        );
        let _ = writeln!(
            out,
            "recourse_llm_tokens_total{{kind=\"prompt\"}} {}",
            c.prompt_tokens
        );
        let _ = writeln!(
            out,
            "recourse_llm_tokens_total{{kind=\"completion\"}} {}",
            c.completion_tokens
        );
        family(
            &mut out,
            "recourse_llm_latency_seconds",
            "Time spent in corrections that called a model.",
            "summary",
        );
        let _ = writeln!(out, "recourse_llm_latency_seconds_sum {}", c.llm_seconds);
        let _ = writeln!(out, "recourse_llm_latency_seconds_count {}", c.llm_calls);
        let exhausted = budget.map_or(0, RetryBudget::exhausted_count);
        scalar(
            &mut out,
            "recourse_retry_budget_exhausted_total",
            "Resends refused by the shared retry budget.",
            exhausted,
        );
        render_breakers(&mut out, breakers);
        out
    }
}

/// The breaker families: counts by state, then one bounded series per endpoint.
fn render_breakers(out: &mut String, breakers: Option<&CircuitBreakers>) {
    let states = breakers.map(CircuitBreakers::snapshot).unwrap_or_default();
    family(
        out,
        "recourse_breakers",
        "Endpoints whose breaker is tracked (failing now or lately), by state.",
        "gauge",
    );
    for name in ["closed", "half_open", "open"] {
        let n = states.iter().filter(|(_, s)| s.name() == name).count();
        let _ = writeln!(out, "recourse_breakers{{state=\"{name}\"}} {n}");
    }
    family(
        out,
        "recourse_breaker_state",
        "Circuit breaker state per endpoint: 0 closed, 1 half-open, 2 open.",
        "gauge",
    );
    for (endpoint, level) in endpoint_series(&states) {
        let _ = writeln!(
            out,
            "recourse_breaker_state{{endpoint=\"{}\"}} {level}",
            escape(&endpoint)
        );
    }
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

fn family(out: &mut String, name: &str, help: &str, kind: &str) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

fn scalar(out: &mut String, name: &str, help: &str, value: u64) {
    family(out, name, help, "counter");
    let _ = writeln!(out, "{name} {value}");
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
    fn label_values_are_escaped() {
        assert_eq!(escape("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }

    #[test]
    fn a_report_feeds_calls_attempts_and_model_latency() {
        let report = CallReport {
            call_id: "c".into(),
            outcome: crate::Outcome::Succeeded {
                data: serde_json::Value::Null,
            },
            attempts: Vec::new(),
            http_calls: 2,
            llm_calls: 2,
            tokens: crate::TokenUsage {
                prompt: 300,
                completion: 40,
            },
            llm_time: std::time::Duration::from_millis(1500),
            idempotency: crate::Idempotency::decide(None, None, None),
            idempotency_key: None,
            operation_id: None,
            elapsed: std::time::Duration::from_secs(2),
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
        use crate::{
            Action, AttemptRecord, CorrectionLayer, Event, GateRule, PayloadSource, Verdict,
        };
        let correction = |verdict, reason: &str| Event::Correction {
            layer: CorrectionLayer::Llm,
            verdict,
            reason: reason.to_owned(),
        };
        let report = |reason: &str| CallReport {
            call_id: "c".into(),
            outcome: crate::Outcome::Succeeded {
                data: serde_json::Value::Null,
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
            tokens: crate::TokenUsage::default(),
            llm_time: std::time::Duration::ZERO,
            idempotency: crate::Idempotency::decide(None, None, None),
            idempotency_key: None,
            operation_id: None,
            elapsed: std::time::Duration::ZERO,
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
            std::sync::Arc::new(crate::ManualClock::new()),
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
