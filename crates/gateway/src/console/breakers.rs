//! `GET /console/breakers`: the circuit breakers of the endpoints failing
//! now or lately, and the retry budget — this process's, read without
//! changing either. What `/metrics` shows every caller, as a page.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::response::Response;
use maud::{Markup, html};
use recourse::breaker::{BreakerState, CircuitBreakers};
use recourse::budget::BudgetSnapshot;
use recourse::shared::SharedMode;
use recourse_protocol::redact;

use super::viewer::Viewer;
use crate::gateway::Gateway;

/// The most breakers listed (the worst first).
const SHOWN: usize = 200;

/// `GET /console/breakers`.
pub(crate) async fn page(State(g): State<Arc<Gateway>>, viewer: Viewer) -> Response {
    let executor = &g.executor;
    let budget = executor.retry_budget().map(|b| b.snapshot());
    let caller = viewer.caller();
    let breakers = executor
        .circuit_breakers()
        .map(|b| listed(b, Instant::now(), &|e| g.sees_endpoint(caller, e)))
        .unwrap_or_default();
    let shared = executor.shared_state().map(|s| s.mode());
    viewer.page(
        "Breakers and the retry budget",
        render(budget.as_ref(), &breakers, shared),
    )
}

/// One endpoint's breaker, as a person reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Listed {
    /// The endpoint, redacted.
    endpoint: String,
    /// `closed`, `half_open` or `open`.
    state: &'static str,
    /// How bad: 2 open, 1 half-open, 0 closed.
    level: u8,
    /// The state in words: failures so far, or how long until a probe.
    detail: String,
}

/// The tracked breakers `seen` admits, worst first, at most [`SHOWN`].
fn listed(breakers: &CircuitBreakers, now: Instant, seen: &dyn Fn(&str) -> bool) -> Vec<Listed> {
    let mut listed: Vec<Listed> = breakers
        .snapshot()
        .into_iter()
        .filter(|(endpoint, _)| seen(endpoint))
        .map(|(endpoint, state)| {
            let (level, detail) = match state {
                BreakerState::Closed { failures } => {
                    (0, format!("{failures} transient failure(s) in a row"))
                }
                BreakerState::HalfOpen { since } => (
                    1,
                    format!(
                        "one probe in flight for {}",
                        seconds(now.saturating_duration_since(since))
                    ),
                ),
                BreakerState::Open { until } if until > now => (
                    2,
                    format!(
                        "failing fast; a probe may go in {}",
                        seconds(until.saturating_duration_since(now))
                    ),
                ),
                BreakerState::Open { .. } => {
                    (2, "its wait is over: the next call is a probe".to_owned())
                }
            };
            Listed {
                endpoint: redact(&endpoint),
                state: state.name(),
                level,
                detail,
            }
        })
        .collect();
    listed.sort_by(|a, b| {
        b.level
            .cmp(&a.level)
            .then_with(|| a.endpoint.cmp(&b.endpoint))
    });
    listed.truncate(SHOWN);
    listed
}

fn seconds(d: Duration) -> String {
    format!("{:.1} s", d.as_secs_f64())
}

fn render(
    budget: Option<&BudgetSnapshot>,
    breakers: &[Listed],
    shared: Option<SharedMode>,
) -> Markup {
    html! {
        @if let Some(mode) = shared {
            p.hint #shared {
                "This gateway shares its budget and breakers with its fleet (" code { (mode) } "). "
                @if mode == SharedMode::Shared {
                    "The shared store decides; below is what this process has seen itself."
                } @else {
                    "The shared store is unreachable: this process's own, below, decide."
                }
            }
        }
        section #budget {
            h2 { "Retry budget" }
            @if let Some(b) = budget {
                table.counts {
                    tbody {
                        tr { th { "Resends allowed now" } td.n #resends-left { (b.resends_left) } }
                        tr { th { "Resends refused so far" } td.n { (b.exhausted) } }
                        tr { th { "Earned per call" } td.n { (format!("{:.2}", b.ratio)) } }
                        tr { th { "Allowed each second regardless" } td.n { (format!("{:.1}", b.min_per_sec)) } }
                        tr { th { "Earned resends remembered for" } td.n { (seconds(b.ttl)) } }
                    }
                }
                p.hint { "Every call earns a share of a resend and every resend spends one, so an outage costs a bounded multiple of the load, not one per retry." }
            } @else {
                p.empty { "This gateway runs without a retry budget." }
            }
        }
        section #breakers {
            h2 { "Circuit breakers " span.count { (breakers.len()) } }
            @if breakers.is_empty() {
                p.empty { "Every endpoint is healthy: no breaker is tracking failures." }
            } @else {
                table {
                    thead { tr { th { "Endpoint" } th { "State" } th { "Now" } } }
                    tbody {
                        @for b in breakers {
                            tr {
                                td { code { (b.endpoint) } }
                                td { span class={ "breaker " (b.state) } { (b.state) } }
                                td { (b.detail) }
                            }
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use recourse::{Clock, ManualClock};

    #[test]
    fn breakers_are_listed_worst_first_and_redacted() {
        let clock = ManualClock::new();
        let breakers = CircuitBreakers::new(2, Duration::from_secs(5), Arc::new(clock.clone()));
        breakers.record_transient_failure("http://127.0.0.1:9/a");
        for _ in 0..2 {
            breakers
                .record_transient_failure("http://127.0.0.1:9/keys/sk-live9876543210abcdefghij");
        }
        let now = clock.now();
        let listed = listed(&breakers, now, &|_| true);
        assert_eq!(listed.len(), 2);
        assert_eq!(listed[0].state, "open");
        assert!(!listed[0].endpoint.contains("sk-live"), "{:?}", listed[0]);
        assert!(listed[0].detail.contains("5.0 s"), "{:?}", listed[0]);
        assert_eq!(listed[1].state, "closed");
        let page = render(None, &listed, None).into_string();
        assert!(page.contains("without a retry budget"));
        assert!(!page.contains("sk-live"));
    }
}
