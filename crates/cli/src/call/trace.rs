//! A call's report as a readable trace: where it went ([`Door`]), and what
//! each attempt came to, line by line.

use super::*;

/// Where a narrated call went, as its trace names it.
pub(crate) enum Door {
    /// An HTTP endpoint, with the method it was sent with.
    Http { method: Method, url: String },
    /// An MCP or in-process tool, by name.
    Tool(String),
}

impl Door {
    /// Where `call` goes (its target as shown: redacted).
    pub(crate) fn of(call: &Call) -> Self {
        Self::new(call.target(), call.method())
    }

    /// A target written as text (a plan step's, a demo scene's): a URL is
    /// POSTed, anything else names a tool.
    pub(crate) fn from_text(target: &str) -> Self {
        match Target::parse(target) {
            Ok(parsed) => Self::new(&parsed, Method::Post),
            Err(_) => Self::Tool(target.to_owned()),
        }
    }

    fn new(target: &Target, method: Method) -> Self {
        match target.url() {
            Some(_) => Self::Http {
                method,
                url: target.to_string(),
            },
            None => Self::Tool(target.to_string()),
        }
    }
}

/// A readable trace of a call report. HTTP statuses and "HTTP call(s)" are
/// named only for HTTP calls; an MCP call's answer is its category.
pub(crate) fn narrate(door: &Door, report: &CallReport) -> String {
    narrated(door, report)
        .into_iter()
        .map(|line| line.text + "\n")
        .collect()
}

/// One line of a narrated call (control characters a note or an error
/// carried are escaped: see [`printable`]). The line that says how the call ended carries that
/// outcome, so a reader styles it by type, not by its words.
#[derive(Debug)]
pub(crate) struct Line {
    pub(crate) text: String,
    pub(crate) outcome: Option<OutcomeKind>,
}

/// The lines of a narrated call being written.
#[derive(Default)]
struct Lines {
    lines: Vec<Line>,
}

impl Lines {
    fn say(&mut self, text: String) {
        self.lines.push(Line {
            text: printable(text),
            outcome: None,
        });
    }

    /// The line that says how the call ended.
    fn ended(&mut self, outcome: OutcomeKind, text: String) {
        self.lines.push(Line {
            text: printable(text),
            outcome: Some(outcome),
        });
    }
}

/// `text` safe for a terminal: a tool's words may hold escape sequences
/// (to move the cursor, rewrite earlier lines, set the title), newlines (to
/// forge a line of ours) or bidirectional overrides (to show text other than
/// it is). Each such character is written as its escape (`\u{1b}`); every
/// other character stays.
pub(crate) fn printable(text: String) -> String {
    let unsafe_char = |c: char| {
        c.is_control()
            || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
    };
    if !text.chars().any(unsafe_char) {
        return text;
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if unsafe_char(c) {
            out.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}

/// [`narrate`]'s lines, the closing one with its outcome.
pub(crate) fn narrated(door: &Door, report: &CallReport) -> Vec<Line> {
    let (verb, target, over_http) = match door {
        Door::Http { method, url } => (method.as_str(), url.as_str(), true),
        Door::Tool(name) => ("call", name.as_str(), false),
    };
    let mut out = Lines::default();
    for a in &report.attempts {
        out.say(format!(
            "→ attempt {} ({}) {verb} {target} {}",
            a.n,
            a.source.as_str(),
            a.payload
        ));
        let status = a.status.filter(|_| over_http);
        let heard = match (&a.status, &a.transport_error) {
            (Some(_), _) if a.action == Action::Succeed => match status {
                Some(s) => format!("{s} OK"),
                None => "OK".to_owned(),
            },
            (Some(_), _) => {
                let cat = a
                    .category
                    .as_ref()
                    .map_or("no category".to_owned(), ToString::to_string);
                let code = a
                    .code
                    .as_deref()
                    .map_or(String::new(), |c| format!(" [{c}]"));
                let status = status.map_or(String::new(), |s| format!("{s} "));
                format!("{status}{cat}{code}, retry {}", a.retry_permission)
            }
            (None, Some(t)) => t.to_string(),
            (None, None) => "nothing".to_owned(),
        };
        let mut decided = a.action.name().to_owned();
        if let Some(w) = a.wait_ms() {
            decided.push_str(&format!(", waited {w} ms"));
        }
        if let Action::Stop { reason } = &a.action {
            decided.push_str(&format!(" ({})", reason.code()));
        }
        out.say(format!("  ← {heard} ⇒ {decided}"));
        for note in a.notes() {
            out.say(format!("    · {note}"));
        }
    }
    out.ended(
        report.outcome.kind(),
        format!(
            "{} after {} attempt(s): {} {} call(s), {} LLM call(s)",
            report.outcome.name(),
            report.attempts.len(),
            report.http_calls,
            if over_http { "HTTP" } else { "tool" },
            report.llm_calls
        ),
    );
    if let Some(reason) = report.outcome.reason() {
        out.say(format!("reason: {reason}"));
    }
    if let Some(error) = report.outcome.error() {
        out.say(format!("error: {}", error.redacted()));
    }
    let idempotency = &report.idempotency;
    let said = match idempotency.from {
        Evidence::Caller => "as the caller said",
        Evidence::Manifest => "as the tool's manifest says",
        Evidence::McpAnnotation => "as the tool's MCP annotations say",
        Evidence::Method => "by its HTTP method",
        Evidence::Default => "nothing said otherwise",
    };
    let treated = if idempotency.idempotent {
        "idempotent"
    } else {
        "not idempotent"
    };
    match &report.idempotency_key {
        Some(key) => out.say(format!("{treated} ({said}); idempotency key: {key}")),
        None => out.say(format!("{treated} ({said})")),
    }
    if let Some(op) = &report.operation_id {
        out.say(format!("operation id: {op}"));
    }
    if let Some(verification) = report.verification {
        out.say(format!("verification: {verification}"));
    }
    let next = report.next();
    match report.stop_kind() {
        Some(kind) => out.say(format!("next: {} (stop kind {kind})", next.step)),
        None => out.say(format!("next: {}", next.step)),
    }
    if let Some(question) = &next.question {
        out.say(format!("ask the user: {question}"));
    }
    out.say(format!("tell the model: {}", next.model_message));
    if let Outcome::Succeeded { data } = &report.outcome
        && !data.is_null()
    {
        out.say(format!("{data}"));
    }
    out.lines
}
