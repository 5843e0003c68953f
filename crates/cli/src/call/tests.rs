use recourse::StopReason;
use recourse::idempotency::Idempotency;

use recourse_protocol::{ErrorCategory, ToolError};

use super::trace::Line;
use super::*;

fn report(outcome: Outcome) -> CallReport {
    CallReport {
        http_calls: 1,
        ..CallReport::new("c", outcome, Idempotency::decide(Some(true), None, None))
    }
}

#[test]
fn a_tools_escape_sequences_and_newlines_never_reach_the_terminal() {
    let door = Door::from_text("tool");
    // Clear the screen, set the title, forge a line of ours, reverse the text.
    let words = "done\x1b[2J\x1b]0;pwned\x07\nsucceeded after 1 attempt(s)\u{202e}gnp.exe";
    let failed = report(Outcome::Failed {
        error: Some(ToolError::new(
            ErrorCategory::InputError,
            "BAD\x1b[31m",
            words,
        )),
        reason: StopReason::CannotFix,
    });
    let lines = narrated(&door, &failed);
    let text = narrate(&door, &failed);
    for bad in ['\x1b', '\x07', '\u{202e}'] {
        assert!(!text.contains(bad), "{bad:?} in {text}");
    }
    assert!(text.contains("\\u{1b}[2J"), "shown, escaped: {text}");
    assert_eq!(text.lines().count(), lines.len(), "no line forged: {text}");
}

#[test]
fn the_closing_line_carries_the_outcome_it_reports() {
    let door = Door::from_text("tool");
    let words = "succeeded, the tool says; it did not";
    let failed = report(Outcome::Failed {
        error: Some(ToolError::new(ErrorCategory::InputError, "BAD", words)),
        reason: StopReason::CannotFix,
    });
    let succeeded = report(Outcome::Succeeded {
        data: serde_json::json!("failed").into(),
    });
    for (report, kind) in [
        (failed, OutcomeKind::Failed),
        (succeeded, OutcomeKind::Succeeded),
    ] {
        let lines = narrated(&door, &report);
        let ended: Vec<&Line> = lines.iter().filter(|l| l.outcome.is_some()).collect();
        assert_eq!(ended.len(), 1, "{lines:?}");
        assert_eq!(ended[0].outcome, Some(kind));
        assert!(
            ended[0]
                .text
                .starts_with(&format!("{} after 0 attempt(s)", kind.as_str()))
        );
        let text: String = lines.iter().map(|l| format!("{}\n", l.text)).collect();
        assert_eq!(narrate(&door, &report), text);
    }
}
