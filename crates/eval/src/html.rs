//! `--html FILE`: one self-contained page — inline CSS and SVG, no scripts,
//! no external assets — with a bar per category and the failing traces.

use std::fmt::Write as _;

use super::report::{JudgedRun, LEGEND, RecoveryScorecard, ScenarioStatus, failure_reasons};

const BAR_WIDTH: f64 = 420.0;
const ROW: usize = 28;

impl RecoveryScorecard {
    /// One self-contained HTML page — inline CSS and SVG, no scripts, no
    /// external assets — with a bar per category and the failing traces.
    pub fn to_html(&self) -> String {
        page(self)
    }
}

/// The page for `card`.
pub(crate) fn page(card: &RecoveryScorecard) -> String {
    let total = card.total();
    let rate = if total.total == 0 {
        0.0
    } else {
        total.success as f64 / total.total as f64
    };
    let label = if card.plumbing_check {
        "model: scripted reference replies (a plumbing check)".to_owned()
    } else {
        format!("model: {}", card.model)
    };
    let mut html = String::from(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>recourse eval</title><style>\
         body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222}\
         table{border-collapse:collapse;margin:.5em 0 1.5em}td,th{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top}\
         code{font-size:12px}.fail{color:#b00}.ok{color:#070}.skip{color:#777}\
         </style></head><body>\n<h1>recourse eval</h1>\n",
    );
    let _ = writeln!(
        html,
        "<p>recourse {} · {} · pass^{}</p>",
        env!("CARGO_PKG_VERSION"),
        escape(&card.started_at),
        card.k
    );
    let _ = writeln!(
        html,
        "<p>{} scenarios, {} runs, {} skipped · success {:.1}% · false recoveries {} · \
         unnecessary stops {} · pass^{} {:.1}% · {}</p>",
        card.results.len(),
        total.total,
        card.skipped(),
        100.0 * rate,
        total.false_recoveries,
        total.unnecessary_stops,
        card.k,
        100.0 * card.pass_k(),
        escape(&label)
    );
    html.push_str("<dl>\n");
    for (term, meaning) in LEGEND {
        let _ = writeln!(
            html,
            "<dt>{}</dt><dd>{}</dd>",
            escape(term),
            escape(meaning)
        );
    }
    html.push_str("</dl>\n<h2>By category</h2>\n");
    html.push_str(&chart(card));
    html.push_str(&scenario_table(card));
    html.push_str("<h2>Failing traces</h2>\n");
    let failing: Vec<(&str, &JudgedRun)> = card
        .runs()
        .filter(|(_, r)| !r.verdict.passed)
        .map(|(s, r)| (s.scenario.id.as_str(), r))
        .collect();
    if failing.is_empty() {
        html.push_str("<p class=\"ok\">No failing runs.</p>\n");
    }
    for (id, run) in failing {
        html.push_str(&trace(id, run));
    }
    html.push_str("</body></html>\n");
    html
}

fn chart(card: &RecoveryScorecard) -> String {
    let tallies = card.by_category();
    let height = ROW * tallies.len() + 10;
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"760\" height=\"{height}\" role=\"img\" \
         aria-label=\"success per category\">\n"
    );
    for (i, (category, t)) in tallies.iter().enumerate() {
        let y = i * ROW + 5;
        let share = |n: usize| {
            if t.total == 0 {
                0.0
            } else {
                BAR_WIDTH * n as f64 / t.total as f64
            }
        };
        let (ok, fr, us) = (
            share(t.success),
            share(t.false_recoveries),
            share(t.unnecessary_stops),
        );
        let _ = writeln!(
            svg,
            "<text x=\"0\" y=\"{}\" font-size=\"12\">{}</text>\
             <rect x=\"150\" y=\"{y}\" width=\"{BAR_WIDTH}\" height=\"18\" fill=\"#eee\"/>\
             <rect x=\"150\" y=\"{y}\" width=\"{ok:.1}\" height=\"18\" fill=\"#3a3\"><title>success</title></rect>\
             <rect x=\"{:.1}\" y=\"{y}\" width=\"{fr:.1}\" height=\"18\" fill=\"#c22\"><title>false recoveries</title></rect>\
             <rect x=\"{:.1}\" y=\"{y}\" width=\"{us:.1}\" height=\"18\" fill=\"#e90\"><title>unnecessary stops</title></rect>\
             <text x=\"580\" y=\"{}\" font-size=\"12\">{}/{} ok · {} false · {} stops</text>",
            y + 13,
            escape(category.as_str()),
            150.0 + ok,
            150.0 + ok + fr,
            y + 13,
            t.success,
            t.total,
            t.false_recoveries,
            t.unnecessary_stops
        );
    }
    svg.push_str("</svg>\n");
    svg
}

fn scenario_table(card: &RecoveryScorecard) -> String {
    let mut html = String::from(
        "<h2>Scenarios</h2>\n<table><tr><th>scenario</th><th>category</th><th>status</th><th>runs passed</th><th>title</th></tr>\n",
    );
    for s in &card.results {
        let status = s.status();
        let class = match status {
            ScenarioStatus::Passed => "ok",
            ScenarioStatus::Failed => "fail",
            ScenarioStatus::Skipped => "skip",
        };
        let status = status.as_str();
        let passed = s.runs.iter().filter(|r| r.verdict.passed).count();
        let _ = writeln!(
            html,
            "<tr><td><code>{}</code></td><td>{}</td><td class=\"{class}\">{status}</td><td>{passed}/{}</td><td>{}</td></tr>",
            escape(&s.scenario.id),
            escape(s.scenario.category.as_str()),
            s.runs.len(),
            escape(&s.scenario.title)
        );
    }
    html.push_str("</table>\n");
    html
}

fn trace(id: &str, run: &JudgedRun) -> String {
    let r = &run.record;
    let mut html = format!(
        "<h3><code>{}</code> run {} — {}</h3>\n<ul>",
        escape(id),
        r.run,
        escape(r.final_state.as_str())
    );
    for reason in failure_reasons(&run.verdict) {
        let _ = write!(html, "<li class=\"fail\">{}</li>", escape(&reason));
    }
    html.push_str("</ul>\n<table><tr><th>#</th><th>source</th><th>payload</th><th>status</th><th>category</th><th>action</th><th>wait ms</th><th>notes</th></tr>\n");
    for a in &r.report.attempts {
        let heard = match (&a.status, &a.transport_error) {
            (Some(s), _) => s.to_string(),
            (None, Some(t)) => t.to_string(),
            (None, None) => String::new(),
        };
        let reason = match &a.action {
            recourse::Action::Stop { reason } => format!(" ({})", reason.code()),
            _ => String::new(),
        };
        let category = a
            .category
            .as_ref()
            .map(ToString::to_string)
            .unwrap_or_default();
        let _ = writeln!(
            html,
            "<tr><td>{}</td><td>{}</td><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}{}</td><td>{}</td><td>{}</td></tr>",
            a.n,
            a.source.as_str(),
            escape(&a.payload.to_string()),
            escape(&heard),
            escape(&category),
            a.action.name(),
            reason,
            a.wait_ms().map(|w| w.to_string()).unwrap_or_default(),
            escape(&a.notes().join("; "))
        );
    }
    html.push_str("</table>\n");
    html
}

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

#[cfg(test)]
mod tests {
    #[test]
    fn escapes_markup() {
        assert_eq!(
            super::escape("<a href='x'>&</a>"),
            "&lt;a href=&#39;x&#39;&gt;&amp;&lt;/a&gt;"
        );
    }
}
