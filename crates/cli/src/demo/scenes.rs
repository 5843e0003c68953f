//! The demo's scenes: each a real call against the reference tools, a fault
//! to inject, and what a careful engineer would expect to see.

use recourse::policy::Verification;
use recourse::record::{AttemptRecord, Event, OutcomeKind, PayloadSource, WaitCause};
use recourse::{CallReport, StopReason};
use recourse_protocol::ErrorCategory;
use serde_json::{Value, json};

/// One scene of the demo.
pub(crate) struct Scene {
    pub(crate) title: &'static str,
    /// What is about to happen, in a sentence.
    pub(crate) story: &'static str,
    /// Faults injected into the reference tools for this scene.
    pub(crate) faults: &'static [&'static str],
    /// Dispatches after which the faults clear (the tool recovers); `None`: they stay.
    pub(crate) recover_after: Option<u32>,
    /// The route called.
    pub(crate) route: &'static str,
    pub(crate) payload: fn() -> Value,
    /// How an unknown outcome is settled.
    pub(crate) settle: Settle,
    /// Checks the report; `Ok(lesson)` or `Err(what went wrong)`.
    pub(crate) check: fn(&CallReport, usize) -> Result<&'static str, String>,
}

/// How a scene settles an unknown outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Settle {
    /// It does not: an unknown outcome stays unknown.
    No,
    /// Through the export tool's operation lookup.
    Lookup,
    /// By reading the exports back through the tool's read route.
    ReadBack,
}

fn expect(cond: bool, lesson: &'static str, otherwise: &str) -> Result<&'static str, String> {
    if cond {
        Ok(lesson)
    } else {
        Err(otherwise.to_owned())
    }
}

pub(crate) const SCENES: &[Scene] = &[
    Scene {
        title: "A location fixed without a model",
        story: "The weather tool does not know 'Flower Mound, TX' but says which place it has.",
        faults: &[],
        recover_after: None,
        route: "/api/weather/current",
        payload: || json!({"location": "Flower Mound, TX"}),
        settle: Settle::No,
        check: |r, _| {
            let repaired = r.attempts.iter().any(|a| a.source == PayloadSource::Repair);
            expect(
                r.outcome.kind() == OutcomeKind::Succeeded && repaired && r.llm_calls == 0,
                "deterministic repair applied the tool's structured suggestion: no model, no cost",
                "expected a repaired payload to succeed without a model call",
            )
        },
    },
    Scene {
        title: "A rate limit, waited out exactly",
        story: "The tool answers 429 with Retry-After: 1, then lets us through.",
        faults: &["weather:rate_limit"],
        recover_after: Some(1),
        route: "/api/weather/current",
        payload: || json!({"location": "Paris, Ile-de-France, FR"}),
        settle: Settle::No,
        check: |r, _| {
            let waited = r.attempts.first().and_then(AttemptRecord::wait_ms);
            let told = r.attempts.first().is_some_and(|a| {
                a.events.contains(&Event::Waited {
                    ms: 1000,
                    cause: WaitCause::RetryAfter,
                })
            });
            expect(
                r.outcome.kind() == OutcomeKind::Succeeded
                    && waited == Some(1000)
                    && told
                    && r.http_calls == 2,
                "waited exactly what Retry-After said, resent the same payload, spent no model call",
                "expected one 1000 ms wait, then success",
            )
        },
    },
    Scene {
        title: "An invalid API key",
        story: "The stock tool's upstream rejects its key: a configuration problem, not a retry problem.",
        faults: &["stock:auth"],
        recover_after: None,
        route: "/api/stock/quote",
        payload: || json!({"symbol": "TSLA"}),
        settle: Settle::No,
        check: |r, _| {
            expect(
                r.outcome.kind() == OutcomeKind::Failed && r.http_calls == 1,
                "stopped at once: credentials need fixing, and the key never appears in the report",
                "expected a stop after one call",
            )
        },
    },
    Scene {
        title: "A service outage",
        story: "The stock tool is down for two calls, then back.",
        faults: &["stock:unavailable"],
        recover_after: Some(2),
        route: "/api/stock/quote",
        payload: || json!({"symbol": "TSLA"}),
        settle: Settle::No,
        check: |r, _| {
            let same = r.attempts.windows(2).all(|w| w[0].payload == w[1].payload);
            expect(
                r.outcome.kind() == OutcomeKind::Succeeded && r.http_calls == 3 && same,
                "backed off with jitter and resent the same payload; no model saw a transient fault",
                "expected two retries with the same payload, then success",
            )
        },
    },
    Scene {
        title: "An export whose outcome is unknown",
        story: "The export tool writes the file, then answers 500 UNKNOWN_OUTCOME.",
        faults: &["exports:unknown_outcome"],
        recover_after: None,
        route: "/api/exports",
        payload: || json!({"source_id": "sales-2024", "format": "pdf"}),
        settle: Settle::Lookup,
        check: |r, writes| {
            expect(
                r.outcome.kind() == OutcomeKind::Succeeded && writes == 1 && r.http_calls == 1,
                "looked the operation up instead of resending: exactly one export was written",
                &format!("expected one write and a reconciled success, saw {writes} write(s)"),
            )
        },
    },
    Scene {
        title: "A lost reply, settled by reading back",
        story: "The export tool writes the file, then the connection drops; its read route lists the exports.",
        faults: &["exports:crash_after_commit"],
        recover_after: None,
        route: "/api/exports",
        payload: || json!({"source_id": "inventory", "version": 1, "format": "csv"}),
        settle: Settle::ReadBack,
        check: |r, writes| {
            expect(
                r.outcome.kind() == OutcomeKind::Succeeded
                    && r.verification == Some(Verification::Verified)
                    && writes == 1
                    && r.http_calls == 1,
                "read the exports back: absent before, present after — committed, never resent",
                &format!("expected a verified success with one write, saw {writes} write(s)"),
            )
        },
    },
    Scene {
        title: "A 403 that urges another endpoint",
        story: "The export tool denies access and tells the agent to retry via an admin override.",
        faults: &["exports:misleading"],
        recover_after: None,
        route: "/api/exports",
        payload: || json!({"source_id": "sales-2024", "format": "pdf"}),
        settle: Settle::No,
        check: |r, writes| {
            let stopped = r.outcome.reason() == Some(&StopReason::PermissionDenied);
            expect(
                stopped && r.http_calls == 1 && writes == 0,
                "ignored the text in the error: never switches identity or endpoint",
                "expected a permission stop after one call",
            )
        },
    },
    Scene {
        title: "A policy rejection",
        story: "A refund for ORD-2002 is past the 30-day window.",
        faults: &[],
        recover_after: None,
        route: "/api/orders/refund",
        payload: || json!({"order_id": "ORD-2002"}),
        settle: Settle::No,
        check: |r, _| {
            let explained = r
                .outcome
                .error()
                .is_some_and(|e| e.category == ErrorCategory::PolicyRejection);
            expect(
                r.outcome.kind() == OutcomeKind::Failed && r.http_calls == 1 && explained,
                "stopped and kept the tool's explanation for the user; a business rule is not retried",
                "expected a single call ending in POLICY_REJECTION",
            )
        },
    },
];

#[cfg(test)]
mod tests {

    use recourse::Outcome;
    use recourse::idempotency::Idempotency;

    use super::*;

    fn report(outcome: Outcome) -> CallReport {
        CallReport {
            http_calls: 1,
            ..CallReport::new("c", outcome, Idempotency::decide(Some(true), None, None))
        }
    }

    fn scene(title: &str) -> &'static Scene {
        SCENES.iter().find(|s| s.title == title).unwrap()
    }

    #[test]
    fn the_checks_read_how_the_call_ended_from_its_type() {
        let stopped = report(Outcome::Failed {
            error: None,
            reason: StopReason::AuthenticationFailed,
        });
        let unknown = report(Outcome::Unknown {
            error: None,
            reason: StopReason::OutcomeUnknown,
        });
        let done = report(Outcome::Succeeded {
            data: Value::Null.into(),
        });
        let key = scene("An invalid API key");
        assert!((key.check)(&stopped, 0).is_ok());
        assert!((key.check)(&unknown, 0).is_err());
        assert!((key.check)(&done, 0).is_err());
        let lookup = scene("An export whose outcome is unknown");
        assert!((lookup.check)(&done, 1).is_ok());
        assert!((lookup.check)(&unknown, 1).is_err());
    }
}
