//! The recount of what recourse did for a call — the attempts, the waits,
//! the corrections — as the model message tells it.

use super::*;

/// The last attempt, when the stop is about the tool's own answer to it.
pub(super) fn tool_answer<'r>(
    report: &'r CallReport,
    reason: &StopReason,
) -> Option<&'r AttemptRecord> {
    // A journal that failed replaces the tool's error with its own.
    if matches!(reason, StopReason::JournalUnavailable) {
        return None;
    }
    report
        .attempts
        .last()
        .filter(|a| a.status.is_some() && a.transport_error.is_none())
}

/// What recourse did across the attempts, counted from their actions and events.
#[derive(Debug, Default)]
pub(super) struct Did {
    pub(super) attempts: usize,
    pub(super) resends: usize,
    pub(super) corrections: usize,
    pub(super) refused: usize,
    pub(super) lookups: usize,
    pub(super) last_lookup: Option<LookupResult>,
}

impl Did {
    /// What `report`'s attempts did. A record built from the journal alone
    /// (its process stopped before writing one) has no attempts' details:
    /// its `http_calls` counts the attempts the journal recorded.
    pub(super) fn of(report: &CallReport) -> Self {
        let attempts = &report.attempts;
        let mut did = Self {
            attempts: if attempts.is_empty() {
                report.http_calls as usize
            } else {
                attempts.len()
            },
            ..Self::default()
        };
        let before_last = attempts.len().saturating_sub(1);
        for attempt in &attempts[..before_last] {
            match attempt.action {
                Action::RetrySame { .. } | Action::Reconcile { .. } => did.resends += 1,
                Action::Correct => did.corrections += 1,
                Action::Succeed | Action::Verify | Action::Stop { .. } => {}
            }
        }
        for event in attempts.iter().flat_map(|a| &a.events) {
            match event {
                Event::Correction {
                    verdict: Verdict::RejectedByGate { .. },
                    ..
                } => did.refused += 1,
                Event::Lookup { result, .. } => {
                    did.lookups += 1;
                    did.last_lookup = Some(*result);
                }
                _ => {}
            }
        }
        did
    }

    /// "recourse made 3 attempts (2 resends), looked the write up once (last: pending)"
    pub(super) fn tally(&self) -> String {
        let mut parts = Vec::new();
        if self.resends > 0 {
            parts.push(count(self.resends, "resend"));
        }
        if self.corrections > 0 {
            parts.push(count(self.corrections, "correction"));
        }
        if self.refused > 0 {
            parts.push(format!(
                "{} refused",
                count(self.refused, "proposed correction")
            ));
        }
        let mut out = format!("recourse made {}", count(self.attempts, "attempt"));
        if !parts.is_empty() {
            out.push_str(&format!(" ({})", parts.join(", ")));
        }
        if let Some(last) = self.last_lookup {
            out.push_str(&format!(
                ", looked the write up {} (last: {})",
                times(self.lookups),
                last.as_str().replace('_', " ")
            ));
        }
        out
    }
}

/// What the corrections changed, first payload to last, when a layer corrected it.
pub(super) fn corrected(attempts: &[AttemptRecord]) -> Option<String> {
    let first = attempts.first()?;
    let last = attempts.last()?;
    let by_layer = attempts.iter().any(|a| {
        matches!(
            a.source,
            PayloadSource::Repair | PayloadSource::Llm | PayloadSource::Semantic
        )
    });
    by_layer.then(|| {
        truncate_chars(
            &describe_changes(&first.payload, &last.payload),
            MAX_CHANGES_CHARS,
        )
    })
}

pub(super) fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

pub(super) fn times(n: usize) -> String {
    match n {
        1 => "once".to_owned(),
        n => format!("{n} times"),
    }
}

/// "60 s", "1.5 s", "250 ms".
pub(super) fn human(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        format!("{ms} ms")
    } else if ms.is_multiple_of(1000) {
        format!("{} s", ms / 1000)
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}
