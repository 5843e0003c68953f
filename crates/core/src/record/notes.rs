//! The sentences of an attempt's `notes`, generated from its typed events.
//!
//! Notes are for people reading a trace. Nothing in recourse reads them back:
//! every decision, score and metric reads the events themselves.

use crate::record::{CoercionChange, Event, Verdict, WaitCause};

/// The note for `event`, if it has one.
pub(super) fn describe(event: &Event) -> Option<String> {
    Some(match event {
        Event::Coerced { changes } => {
            let list: Vec<String> = changes.iter().map(change).collect();
            format!("coerced {}", list.join("; "))
        }
        Event::Correction {
            layer,
            verdict,
            reason,
        } => {
            let layer = layer.as_str();
            match verdict {
                Verdict::Fixed => format!("{layer} correction: {reason}"),
                Verdict::CannotFix | Verdict::Skipped => format!("{layer}: {reason}"),
                Verdict::RejectedByGate { rule } => {
                    format!("{layer} correction rejected ({}): {reason}", rule.as_str())
                }
            }
        }
        Event::Waited { ms, cause } => match cause {
            WaitCause::PendingLookup => format!("reconcile: pending, looked again after {ms} ms"),
            WaitCause::Backoff | WaitCause::RetryAfter => return None,
        },
        Event::Lookup { result, detail } => match detail {
            Some(why) => format!("reconcile: {} ({why})", spaced(result.as_str())),
            None => format!("reconcile: {}", spaced(result.as_str())),
        },
        Event::Verify {
            phase,
            result,
            detail,
        } => match detail {
            Some(why) => format!(
                "verify ({}): {} ({why})",
                phase.as_str(),
                spaced(result.as_str())
            ),
            None => format!("verify ({}): {}", phase.as_str(), spaced(result.as_str())),
        },
        Event::Journal { state } => format!("journal: {state}"),
    })
}

fn change(c: &CoercionChange) -> String {
    match &c.to {
        Some(to) => format!("{}: {} → {} ({})", c.pointer, c.from, to, c.rule.as_str()),
        None => format!("{}: {} omitted ({})", c.pointer, c.from, c.rule.as_str()),
    }
}

fn spaced(name: &str) -> String {
    name.replace('_', " ")
}
