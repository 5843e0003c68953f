//! The scorecard: per tool and check, as JSON and as a compact text table.

use serde_json::{Value, json};

use super::answer::Answer;
use super::battery::Over;
use super::check::{CheckId, CheckKind, CheckResult, Verdict};
use super::style::Style;
use super::subject::Subject;
use super::suggest::Suggestion;

/// One tool's verdicts and the answers they rest on.
#[derive(Debug, Clone)]
pub(crate) struct ToolCard {
    pub(crate) name: String,
    pub(crate) endpoint: String,
    pub(crate) writes: bool,
    /// Why the battery was not sent, when it was not.
    pub(crate) not_probed: Option<String>,
    pub(crate) checks: Vec<CheckResult>,
    pub(crate) answers: Vec<Answer>,
    /// For a write: the read-back to declare, when the server offers a
    /// read that matches it.
    pub(crate) suggested_verify: Option<Suggestion>,
}

impl ToolCard {
    pub(crate) fn new(
        subject: &Subject,
        not_probed: Option<String>,
        checks: Vec<CheckResult>,
        answers: Vec<Answer>,
    ) -> Self {
        Self {
            name: subject.name.clone(),
            endpoint: subject.endpoint(),
            writes: subject.writes(),
            not_probed,
            checks,
            answers,
            suggested_verify: None,
        }
    }

    fn count_failed(&self, kind: CheckKind) -> usize {
        self.checks
            .iter()
            .filter(|c| c.verdict == Verdict::Fail && c.check.kind() == kind)
            .count()
    }

    pub(crate) fn verdict(&self, check: CheckId) -> Verdict {
        self.checks
            .iter()
            .find(|c| c.check == check)
            .map_or(Verdict::Skipped, |c| c.verdict)
    }

    fn to_json(&self) -> Value {
        json!({
            "name": self.name,
            "endpoint": self.endpoint,
            "writes": self.writes,
            "probed": self.not_probed.is_none(),
            "not_probed": self.not_probed,
            "checks": self.checks.iter().map(|c| json!({
                "id": c.check.id(),
                "kind": c.check.kind().as_str(),
                "verdict": c.verdict.as_str(),
                "detail": c.detail,
            })).collect::<Vec<_>>(),
            "probes": self.answers.iter().map(Answer::to_json).collect::<Vec<_>>(),
            "suggested_verify": self.suggested_verify.as_ref().map(|s| &s.verify),
        })
    }
}

/// Everything one probe found: each tool's checks and the answers they rest
/// on, as JSON ([`to_json`](Self::to_json)), a text table
/// ([`to_text`](Self::to_text)) or one self-contained HTML page
/// ([`to_html`](Self::to_html)).
#[derive(Debug, Clone)]
pub struct ProbeScorecard {
    /// What was probed, as shown (credentials redacted).
    pub(crate) target: String,
    pub(crate) over: Over,
    pub(crate) tools: Vec<ToolCard>,
    /// The unknown-route probe (HTTP only: recourse answers an unknown MCP
    /// tool itself, from `tools/list`, so no MCP server is asked).
    pub(crate) unknown_route: Option<ToolCard>,
    /// How many requests the battery sent.
    pub(crate) requests: usize,
}

impl ProbeScorecard {
    /// The tools, then the unknown-route entry.
    pub(crate) fn cards(&self) -> impl Iterator<Item = &ToolCard> {
        self.tools.iter().chain(self.unknown_route.iter())
    }

    /// How many required checks failed, over every tool (0: recourse can
    /// trust these tools' errors).
    pub fn required_failed(&self) -> usize {
        self.cards()
            .map(|c| c.count_failed(CheckKind::Required))
            .sum()
    }

    /// How many advisory checks failed, over every tool.
    pub fn advisory_failed(&self) -> usize {
        self.cards()
            .map(|c| c.count_failed(CheckKind::Advisory))
            .sum()
    }

    pub(crate) fn transport(&self) -> &'static str {
        match self.over {
            Over::Http => "http",
            Over::Mcp => "mcp",
        }
    }

    /// The scorecard as one JSON object (its field names are a contract; see
    /// `docs/probe.md`).
    pub fn to_json(&self) -> Value {
        json!({
            "target": self.target,
            "transport": self.transport(),
            "requests": self.requests,
            "tools": self.tools.iter().map(ToolCard::to_json).collect::<Vec<_>>(),
            "unknown_route": self.unknown_route.as_ref().map(ToolCard::to_json),
            "required_failed": self.required_failed(),
            "advisory_failed": self.advisory_failed(),
        })
    }

    /// One line per tool and a cell per check, then what failed and why;
    /// verdicts in ANSI colours when `color`. A tool's own text is made
    /// printable, so that it cannot steer a terminal.
    pub fn to_text(&self, color: bool) -> String {
        let style = Style::new(color);
        let probed = self.tools.iter().filter(|t| t.not_probed.is_none()).count();
        let mut out = format!(
            "recourse probe {} ({}): {} tools, {probed} probed, {} requests\n\n",
            printable(&self.target),
            self.transport(),
            self.tools.len(),
            self.requests
        );
        let width = self
            .cards()
            .map(|c| c.name.chars().count())
            .max()
            .unwrap_or(4)
            .clamp(4, 40);
        out.push_str(&header(width));
        for card in self.cards() {
            out.push_str(&row(card, width, style));
        }
        out.push('\n');
        out.push_str(&self.failures_text(style));
        out.push_str(&self.not_probed_text());
        let (required, advisory) = (self.required_failed(), self.advisory_failed());
        let summary =
            format!("required checks failed: {required}, advisory checks failed: {advisory}");
        out.push_str(&if required == 0 {
            style.good(&summary)
        } else {
            style.bad(&summary)
        });
        out.push_str("  (- skipped; --json has every detail)\n");
        out.push_str(&self.suggested_text());
        out
    }
}

impl ProbeScorecard {
    /// `failed:` and one line per failed check, with its detail.
    fn failures_text(&self, style: Style) -> String {
        let mut out = String::new();
        for card in self.cards() {
            for c in card.checks.iter().filter(|c| c.verdict == Verdict::Fail) {
                out.push_str(&format!(
                    "  {} {} ({}): {}\n",
                    printable(&card.name),
                    style.bold(c.check.id()),
                    c.check.kind().as_str(),
                    printable(&c.detail)
                ));
            }
        }
        if out.is_empty() {
            out
        } else {
            format!("failed:\n{out}")
        }
    }

    /// `read back with:` and the `verify` to declare, per write that has one.
    fn suggested_text(&self) -> String {
        let mut out = String::new();
        for card in &self.tools {
            if let Some(s) = &card.suggested_verify {
                out.push_str(&format!(
                    "  {}: {}
    {}
",
                    printable(&card.name),
                    printable(&s.read),
                    printable(&s.verify.to_string())
                ));
            }
        }
        if out.is_empty() {
            out
        } else {
            format!(
                "\nread back with (a policy file's or manifest's verify; fill in each <POINTER …> first):\n{out}"
            )
        }
    }

    /// `not probed:` and why, per tool.
    fn not_probed_text(&self) -> String {
        let mut out = String::new();
        for card in &self.tools {
            if let Some(why) = &card.not_probed {
                out.push_str(&format!(
                    "  {}: {}\n",
                    printable(&card.name),
                    printable(why)
                ));
            }
        }
        if out.is_empty() {
            out
        } else {
            format!("not probed:\n{out}")
        }
    }
}

/// The short column label of each check.
pub(crate) fn label(check: CheckId) -> &'static str {
    match check {
        CheckId::Envelope => "env",
        CheckId::CategoryStatus => "status",
        CheckId::DetailsField => "field",
        CheckId::Replay => "replay",
        CheckId::NoLeak => "leak",
        CheckId::Retryable => "retry",
        CheckId::RetryAfter => "429",
        CheckId::AllowedValues => "enum",
        CheckId::CategoryFits => "fits",
    }
}

fn column(check: CheckId) -> usize {
    label(check).len().max(4) + 1
}

fn header(width: usize) -> String {
    let required: usize = CheckId::ALL
        .iter()
        .filter(|c| c.kind() == CheckKind::Required)
        .map(|&c| column(c))
        .sum();
    let mut line = format!(
        "{:width$}  {:required$}| advisory\n{:width$}  ",
        "", "required", "tool"
    );
    for check in CheckId::ALL {
        if check == CheckId::Retryable {
            line.push_str("| ");
        }
        line.push_str(&format!("{:w$}", label(check), w = column(check)));
    }
    line.truncate(line.trim_end().len());
    line.push('\n');
    line
}

fn row(card: &ToolCard, width: usize, style: Style) -> String {
    let name = cut(&printable(&card.name), width);
    let mut line = format!("{name:width$}  ");
    for check in CheckId::ALL {
        if check == CheckId::Retryable {
            line.push_str("| ");
        }
        let (text, paint): (&str, fn(Style, &str) -> String) = match card.verdict(check) {
            Verdict::Pass => ("ok", Style::good),
            Verdict::Fail => ("FAIL", Style::bad),
            Verdict::Skipped => ("-", Style::dim),
        };
        let cell = format!("{text:w$}", w = column(check));
        line.push_str(&paint(style, &cell));
    }
    line.truncate(line.trim_end().len());
    line.push('\n');
    line
}

/// `text` with control characters replaced: what a tool sends must not
/// steer the terminal.
fn printable(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_control() {
                char::REPLACEMENT_CHARACTER
            } else {
                c
            }
        })
        .collect()
}

/// `text` cut to `width` characters, marked with `…`.
pub(crate) fn cut(text: &str, width: usize) -> String {
    recourse_protocol::truncate_chars(text, width)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn card(name: &str, fail: Option<CheckId>) -> ToolCard {
        let checks = CheckId::ALL
            .iter()
            .map(|&c| match fail {
                Some(f) if f == c => CheckResult::new(c, Verdict::Fail, "missing_field: 500 text"),
                _ if c == CheckId::Replay => CheckResult::skipped(c, "idempotent"),
                _ => CheckResult::new(c, Verdict::Pass, "1 answer"),
            })
            .collect();
        ToolCard {
            name: name.to_owned(),
            endpoint: format!("POST http://127.0.0.1/{name}"),
            writes: false,
            not_probed: None,
            checks,
            answers: Vec::new(),
            suggested_verify: None,
        }
    }

    fn scorecard(tools: Vec<ToolCard>) -> ProbeScorecard {
        ProbeScorecard {
            target: "http://127.0.0.1/".to_owned(),
            over: Over::Http,
            tools,
            unknown_route: None,
            requests: 9,
        }
    }

    #[test]
    fn the_text_table_lines_up_and_names_each_failure() {
        let sc = scorecard(vec![
            card("weather", None),
            card("plain", Some(CheckId::Envelope)),
            card("quiet", Some(CheckId::RetryAfter)),
        ]);
        let text = sc.to_text(false);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[3],
            "tool     env  status field replay leak | retry 429  enum fits"
        );
        assert_eq!(
            lines[4],
            "weather  ok   ok     ok    -      ok   | ok    ok   ok   ok"
        );
        assert_eq!(
            lines[5],
            "plain    FAIL ok     ok    -      ok   | ok    ok   ok   ok"
        );
        assert!(
            text.contains("  plain envelope (required): missing_field: 500 text\n"),
            "{text}"
        );
        assert!(text.contains("  quiet retry_after (advisory): "), "{text}");
        assert!(
            text.contains("required checks failed: 1, advisory checks failed: 1"),
            "{text}"
        );
        assert_eq!((sc.required_failed(), sc.advisory_failed()), (1, 1));
        let json = sc.to_json();
        assert_eq!(json["tools"][1]["checks"][0]["verdict"], "fail");
        assert_eq!(json["tools"][1]["checks"][0]["kind"], "required");
        assert!(json["unknown_route"].is_null());
    }

    #[test]
    fn tool_text_cannot_steer_the_terminal() {
        let sc = scorecard(vec![card("evil\u{1b}[2J", Some(CheckId::NoLeak))]);
        let text = sc.to_text(false);
        assert!(!text.contains('\u{1b}'), "{text:?}");
    }
}
