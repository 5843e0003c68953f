//! `--html FILE`: one self-contained page in the style of `recourse eval`'s
//! report — inline CSS, no scripts, no external assets — with the scorecard
//! matrix, what failed, and every probe's answer.

use std::fmt::Write as _;

use super::check::{CheckId, Verdict};
use super::report::{ProbeScorecard, ToolCard, label};

impl ProbeScorecard {
    /// One page with the scorecard matrix, what failed, and every probe's
    /// answer — inline CSS, no scripts, no external assets.
    pub fn to_html(&self) -> String {
        page(self)
    }
}

/// The page for `card`.
pub(crate) fn page(card: &ProbeScorecard) -> String {
    let mut html = String::from(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>recourse probe</title><style>\
         body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222}\
         table{border-collapse:collapse;margin:.5em 0 1.5em}td,th{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top}\
         code{font-size:12px}.fail{color:#b00;background:#fee}.ok{color:#070;background:#efe}.skip{color:#777}\
         </style></head><body>\n<h1>recourse probe</h1>\n",
    );
    let _ = writeln!(
        html,
        "<p><code>{}</code> over {} · {} tools · {} requests · required checks failed: \
         <strong class=\"{}\">{}</strong> · advisory checks failed: {}</p>",
        escape(&card.target),
        card.transport(),
        card.tools.len(),
        card.requests,
        if card.required_failed() == 0 {
            "ok"
        } else {
            "fail"
        },
        card.required_failed(),
        card.advisory_failed()
    );
    html.push_str(&matrix(card));
    html.push_str(&legend());
    html.push_str("<h2>Failures</h2>\n");
    html.push_str(&failures(card));
    html.push_str("<h2>Answers</h2>\n");
    for tool in card.cards() {
        html.push_str(&answers(tool));
    }
    html.push_str("</body></html>\n");
    html
}

fn class(verdict: Verdict) -> (&'static str, &'static str) {
    match verdict {
        Verdict::Pass => ("ok", "pass"),
        Verdict::Fail => ("fail", "fail"),
        Verdict::Skipped => ("skip", "–"),
    }
}

fn matrix(card: &ProbeScorecard) -> String {
    let mut html = String::from("<table><tr><th>tool</th>");
    for check in CheckId::ALL {
        let _ = write!(
            html,
            "<th title=\"{}\">{}<br><small>{}</small></th>",
            escape(check.question()),
            label(check),
            check.kind().as_str()
        );
    }
    html.push_str("</tr>\n");
    for tool in card.cards() {
        let _ = write!(html, "<tr><td><code>{}</code></td>", escape(&tool.name));
        for check in &tool.checks {
            let (class, text) = class(check.verdict);
            let _ = write!(
                html,
                "<td class=\"{class}\" title=\"{}\">{text}</td>",
                escape(&check.detail)
            );
        }
        html.push_str("</tr>\n");
    }
    html.push_str("</table>\n");
    html
}

fn legend() -> String {
    let mut html =
        String::from("<table><tr><th>column</th><th>check</th><th>kind</th><th>asks</th></tr>\n");
    for check in CheckId::ALL {
        let _ = writeln!(
            html,
            "<tr><td>{}</td><td><code>{}</code></td><td>{}</td><td>{}</td></tr>",
            label(check),
            check.id(),
            check.kind().as_str(),
            escape(check.question())
        );
    }
    html.push_str("</table>\n");
    html
}

fn failures(card: &ProbeScorecard) -> String {
    let mut html = String::from("<ul>\n");
    let mut any = false;
    for tool in card.cards() {
        for check in tool.checks.iter().filter(|c| c.verdict == Verdict::Fail) {
            any = true;
            let _ = writeln!(
                html,
                "<li class=\"fail\"><code>{}</code> {} ({}): {}</li>",
                escape(&tool.name),
                check.check.id(),
                check.check.kind().as_str(),
                escape(&check.detail)
            );
        }
    }
    if !any {
        html.push_str("<li class=\"ok\">No check failed.</li>\n");
    }
    html.push_str("</ul>\n");
    html
}

fn answers(tool: &ToolCard) -> String {
    let mut html = format!(
        "<h3><code>{}</code> <small>{}</small></h3>\n",
        escape(&tool.name),
        escape(&tool.endpoint)
    );
    if let Some(why) = &tool.not_probed {
        let _ = writeln!(html, "<p class=\"skip\">Not probed: {}</p>", escape(why));
        return html;
    }
    html.push_str(
        "<table><tr><th>probe</th><th>field</th><th>status</th><th>format</th><th>category</th>\
         <th>code</th><th>retryable</th><th>message</th></tr>\n",
    );
    for answer in &tool.answers {
        let field = answer.field.as_deref().unwrap_or("");
        let _ = write!(
            html,
            "<tr><td>{}</td><td>{}</td>",
            answer.probe.id(),
            escape(field)
        );
        match answer.response() {
            None => {
                let json = answer.to_json();
                let why = json["no_answer"].as_str().unwrap_or_default();
                let _ = write!(
                    html,
                    "<td colspan=\"6\" class=\"fail\">no answer: {}</td>",
                    escape(why)
                );
            }
            Some(r) => {
                let p = &r.parsed;
                let _ = write!(
                    html,
                    "<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>",
                    p.status,
                    p.format.as_str(),
                    escape(
                        &p.category
                            .as_ref()
                            .map(ToString::to_string)
                            .unwrap_or_default()
                    ),
                    escape(p.code.as_deref().unwrap_or("")),
                    p.permission.as_str(),
                    escape(&r.message_excerpt().unwrap_or_default())
                );
            }
        }
        html.push_str("</tr>\n");
    }
    html.push_str("</table>\n");
    html
}

/// `text` as HTML text or a quoted attribute value.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}
