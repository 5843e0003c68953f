//! What reading a write back found, in the model's words: a read after the
//! write that found it absent (and the resend that followed), then what the
//! last read established — written from the record's types.

use crate::policy::{Verification, VerifyResult};
use crate::record::{CallReport, Event, Outcome, VerifyPhase};

/// What reading the write back found, when a read ran after it: a first
/// read that found it absent (and the resend that followed), then what the
/// last one established.
pub(super) fn said(report: &CallReport) -> Option<String> {
    let resent_after = report.attempts.iter().rev().skip(1).any(|a| {
        a.events.iter().any(|e| {
            matches!(
                e,
                Event::Verify {
                    phase: VerifyPhase::After,
                    result: VerifyResult::NotHeld,
                    ..
                }
            )
        })
    });
    let first = resent_after.then_some(
        "Reading it back found the write had not taken effect, so recourse sent it once more \
         with the same key.",
    );
    let last = match (report.verification?, &report.outcome) {
        (Verification::Verified, _) => {
            "Reading it back confirmed the write took effect: do not repeat it."
        }
        (Verification::AlreadyApplied, _) => {
            "Reading it back shows the effect was already there before the call: do not repeat it."
        }
        (Verification::CannotTell, Outcome::Succeeded { .. }) => {
            "Reading it back could not tell whether it took effect; the tool's answer stands."
        }
        (Verification::CannotTell, _) => {
            "Reading it back could not tell whether the write took effect."
        }
        (Verification::NotCommitted, _) if resent_after => {
            "Reading the resend back found it had not taken effect either."
        }
        (Verification::NotCommitted, _) => "Reading it back found the write had not taken effect.",
        (Verification::NotApplicable, Outcome::Unknown { .. }) => {
            "Its declared read-back did not apply to these arguments, so nothing settled it."
        }
        (Verification::NotApplied | Verification::NotApplicable | Verification::Unneeded, _) => "",
    };
    let said: Vec<&str> = first
        .into_iter()
        .chain([last])
        .filter(|s| !s.is_empty())
        .collect();
    (!said.is_empty()).then(|| said.join(" "))
}
