//! A call's record as a timeline: each attempt — the payload it sent and
//! which layer made it, what changed since the one before, the answer, what
//! the policy decided — and what recourse did around it (coercions,
//! corrections, waits and why, lookups, read-backs, the journal's states),
//! then how the call ended and how it was settled.
//!
//! The record is read as the JSON the API answers (`docs/record.md`), into
//! a view of its own whose every field may be absent: the console shows a
//! record, it decides nothing from it, and a record written by a newer
//! version (a field, an event kind this one does not know) still shows.

use maud::{Markup, html};
use recourse::record::describe_changes;
use recourse_protocol::truncate_chars;
use serde::Deserialize;
use serde_json::Value;

/// The most characters of JSON (a payload, a result) a page shows.
const MAX_JSON_CHARS: usize = 20_000;

/// A record, as the console reads it.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Record {
    outcome: Option<String>,
    data: Option<Value>,
    error: Option<ErrorView>,
    reason: Option<String>,
    reason_text: Option<String>,
    stop_kind: Option<String>,
    next: Option<NextView>,
    http_calls: Option<u64>,
    llm_calls: Option<u64>,
    idempotency: Option<IdempotencyView>,
    idempotency_key: Option<String>,
    operation_id: Option<String>,
    verification: Option<String>,
    elapsed_ms: Option<u64>,
    settlement: Option<SettlementView>,
    attempts: Vec<Attempt>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ErrorView {
    code: Option<String>,
    message: Option<String>,
    category: Option<String>,
    retryable: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct NextView {
    step: Option<String>,
    model_message: Option<String>,
    question: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct IdempotencyView {
    idempotent: bool,
    from: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct SettlementView {
    by: Option<String>,
    at: Option<String>,
    who: Option<String>,
    note: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Attempt {
    n: u32,
    payload: Value,
    status: Option<u16>,
    transport_error: Option<String>,
    category: Option<String>,
    code: Option<String>,
    retry_permission: Option<String>,
    action: Option<String>,
    wait_ms: Option<u64>,
    reason: Option<String>,
    timeout_ms: Option<u64>,
    source: Option<String>,
    events: Vec<Event>,
}

/// An event, by its `kind`; one this version does not know is [`Event::Other`].
#[derive(Debug, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Event {
    Coerced {
        #[serde(default)]
        changes: Vec<Change>,
    },
    Correction {
        #[serde(default)]
        layer: String,
        #[serde(default)]
        verdict: String,
        #[serde(default)]
        rule: Option<String>,
        #[serde(default)]
        reason: String,
    },
    Waited {
        #[serde(default)]
        ms: u64,
        #[serde(default)]
        cause: String,
    },
    Lookup {
        #[serde(default)]
        result: String,
        #[serde(default)]
        detail: Option<String>,
    },
    Verify {
        #[serde(default)]
        phase: String,
        #[serde(default)]
        result: String,
        #[serde(default)]
        detail: Option<String>,
    },
    Journal {
        #[serde(default)]
        state: String,
    },
    #[serde(other)]
    Other,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Change {
    pointer: String,
    from: Value,
    to: Option<Value>,
    rule: String,
}

impl Record {
    /// The record's view; `None` when it is not an object of a record's shape.
    pub(crate) fn read(record: &Value) -> Option<Self> {
        Self::deserialize(record).ok()
    }

    /// How the call ended, how it was settled, and what the model is told.
    pub(crate) fn ending(&self) -> Markup {
        html! {
            dl.ending { (self.stop()) (self.write()) (self.told()) }
            @if let Some(s) = &self.settlement { (s.render()) }
            @if let Some(data) = self.data.as_ref().filter(|d| !d.is_null()) {
                details { summary { "Result" } pre { (json(data)) } }
            }
        }
    }

    /// The outcome, why the call stopped, and the last error.
    fn stop(&self) -> Markup {
        let outcome = self.outcome.as_deref();
        html! {
            dt { "Outcome" }
            dd { span class={ "state " (outcome.unwrap_or("")) } { (outcome.unwrap_or("—")) } }
            @if let Some(text) = &self.reason_text {
                dt { "Why it stopped" }
                dd { (text) @if let Some(code) = &self.reason { " (" code { (code) } ")" } }
            }
            @if let Some(kind) = &self.stop_kind { dt { "Kind" } dd { code { (kind) } } }
            @if let Some(e) = &self.error {
                dt { "Last error" }
                dd.tool-text {
                    code { (e.code.as_deref().unwrap_or("")) } " "
                    (e.category.as_deref().unwrap_or("")) ": "
                    span.message { (e.message.as_deref().unwrap_or("")) }
                    @if let Some(r) = e.retryable { " (retryable: " (r) ")" }
                }
            }
        }
    }

    /// What the write was: its evidence, key and operation id, and what it cost.
    fn write(&self) -> Markup {
        html! {
            @if let Some(v) = &self.verification { dt { "Verification" } dd { code { (v) } } }
            @if let Some(key) = &self.idempotency_key { dt { "Idempotency key" } dd { code { (key) } } }
            @if let Some(op) = &self.operation_id { dt { "Operation id" } dd { code { (op) } } }
            @if let Some(i) = &self.idempotency {
                dt { "Idempotent" }
                dd { (if i.idempotent { "yes" } else { "no" }) ", by " (i.from.as_deref().unwrap_or("—")) }
            }
            dt { "Sent" }
            dd { (self.http_calls.unwrap_or(0)) " request(s), " (self.llm_calls.unwrap_or(0)) " model call(s), "
                 (self.elapsed_ms.unwrap_or(0)) " ms" }
        }
    }

    /// What the model is told (the record's `next`).
    fn told(&self) -> Markup {
        html! {
            @if let Some(next) = &self.next {
                dt { "The model is told" }
                dd {
                    code { (next.step.as_deref().unwrap_or("")) } " "
                    span.tool-text { (next.model_message.as_deref().unwrap_or("")) }
                }
                // The model's message quotes it; on its own line, it is what a person is asked.
                @if let Some(q) = &next.question { dt { "The user is asked" } dd #question { (q) } }
            }
        }
    }

    /// The attempts, in order, each with what happened around it.
    pub(crate) fn timeline(&self) -> Markup {
        html! {
            @if self.attempts.is_empty() {
                p.empty { "The journal has no attempt's details: the call's process stopped before it wrote its record, or it is still running." }
            } @else {
                ol.timeline {
                    @for (i, attempt) in self.attempts.iter().enumerate() {
                        (attempt.render(i.checked_sub(1).and_then(|p| self.attempts.get(p))))
                    }
                }
            }
        }
    }
}

impl SettlementView {
    fn render(&self) -> Markup {
        html! {
            div.settlement #settlement {
                h3 { "Settled by " (self.by.as_deref().unwrap_or("—")) }
                p {
                    @if let Some(who) = &self.who { strong { (who) } " · " }
                    (self.at.as_deref().unwrap_or(""))
                }
                @if let Some(note) = &self.note { blockquote { (note) } }
            }
        }
    }
}

impl Attempt {
    fn render(&self, previous: Option<&Attempt>) -> Markup {
        let changed = previous
            .filter(|p| p.payload != self.payload)
            .map(|p| describe_changes(&p.payload, &self.payload));
        html! {
            li.attempt id={ "attempt-" (self.n) } {
                h3 { "Attempt " (self.n) " " span.source { "payload by " (self.source.as_deref().unwrap_or("caller")) } }
                @if let Some(changed) = changed {
                    p.changed { "Changed since attempt " (self.n.saturating_sub(1)) ": " code { (changed) } }
                }
                details { summary { "Payload sent" } pre { (json(&self.payload)) } }
                p.answer { (self.answer()) }
                @if !self.events.is_empty() {
                    ul.events { @for event in &self.events { li { (event.render()) } } }
                }
                p.decision {
                    "Decision: " code { (self.action.as_deref().unwrap_or("—")) }
                    @if let Some(ms) = self.wait_ms { " after " (ms) " ms" }
                    @if let Some(reason) = &self.reason { " (" code { (reason) } ")" }
                }
            }
        }
    }

    fn answer(&self) -> Markup {
        html! {
            @if let Some(failure) = &self.transport_error {
                "No answer: " span.tool-text { (failure) }
            } @else {
                "HTTP " (self.status.map_or_else(|| "—".to_owned(), |s| s.to_string()))
                @if let Some(c) = &self.category { " " (c) }
                @if let Some(c) = &self.code { " " code { (c) } }
            }
            @if let Some(p) = &self.retry_permission { " · retry " (p) }
            @if let Some(t) = self.timeout_ms { " · within " (t) " ms" }
        }
    }
}

impl Event {
    fn render(&self) -> Markup {
        html! {
            @match self {
                Event::Coerced { changes } => {
                    "Coerced: "
                    @for (i, c) in changes.iter().enumerate() {
                        @if i > 0 { ", " }
                        code { (c.pointer) } " " (json_inline(&c.from)) " → "
                        (c.to.as_ref().map_or_else(|| "(omitted)".to_owned(), json_inline))
                        " (" (c.rule) ")"
                    }
                }
                Event::Correction { layer, verdict, rule, reason } => {
                    "Correction by " strong { (layer) } ": " code { (verdict) }
                    @if let Some(rule) = rule { " (" (rule) ")" }
                    " — " span.tool-text { (reason) }
                }
                Event::Waited { ms, cause } => { "Waited " (ms) " ms (" (cause) ")" }
                Event::Lookup { result, detail } => {
                    "Lookup: " code { (result) }
                    @if let Some(d) = detail { " — " span.tool-text { (d) } }
                }
                Event::Verify { phase, result, detail } => {
                    "Read-back " (phase) " the write: " code { (result) }
                    @if let Some(d) = detail { " — " span.tool-text { (d) } }
                }
                Event::Journal { state } => { "Journal: " code { (state) } }
                Event::Other => { "An event this console does not know" }
            }
        }
    }
}

/// `value` as indented JSON, cut to [`MAX_JSON_CHARS`].
fn json(value: &Value) -> String {
    let text = serde_json::to_string_pretty(value).unwrap_or_default();
    truncate_chars(&text, MAX_JSON_CHARS)
}

fn json_inline(value: &Value) -> String {
    truncate_chars(&value.to_string(), 200)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn corrected() -> Value {
        json!({
            "outcome": "failed",
            "error": {"code": "UNSUPPORTED_FORMAT", "category": "INPUT_ERROR", "retryable": false,
                      "message": "Format '<script>document.title=\"pwned\"</script>' is not supported"},
            "reason": "cannot_fix", "reason_text": "no layer could fix it",
            "next": {"step": "fix_arguments", "model_message": "m"},
            "attempts": [
                {"n": 1, "payload": {"format": "pdff", "amount": "100"}, "status": 400,
                 "category": "INPUT_ERROR", "code": "UNSUPPORTED_FORMAT", "action": "correct", "source": "coercion",
                 "events": [
                    {"kind": "coerced", "changes": [{"pointer": "/amount", "from": "100", "to": 100, "rule": "integer_string"}]},
                    {"kind": "correction", "layer": "repair", "verdict": "fixed", "reason": "enum near-miss"},
                    {"kind": "waited", "ms": 1200, "cause": "retry_after"},
                    {"kind": "a_kind_from_the_future", "x": 1}]},
                {"n": 2, "payload": {"format": "pdf", "amount": "100"}, "status": null,
                 "transport_error": "failed_after_send: reset", "action": "reconcile", "source": "repair",
                 "events": [
                    {"kind": "lookup", "result": "cannot_tell", "detail": "<b>lookup</b> down"},
                    {"kind": "verify", "phase": "after", "result": "not_held", "detail": "/latest is null"},
                    {"kind": "journal", "state": "unknown"}]}
            ]
        })
    }

    #[test]
    fn a_record_reads_as_a_timeline_with_changed_pointers() {
        let record = Record::read(&corrected()).unwrap();
        let page = html! { (record.ending()) (record.timeline()) }.into_string();
        for shown in [
            "Attempt 1",
            "Attempt 2",
            "Changed since attempt 1",
            "/format: &quot;pdff&quot; → &quot;pdf&quot;",
            "Coerced: ",
            "/amount",
            "integer_string",
            "Correction by <strong>repair</strong>",
            "Waited 1200 ms (retry_after)",
            "Lookup: <code>cannot_tell</code>",
            "Read-back after the write",
            "Journal: <code>unknown</code>",
            "An event this console does not know",
            "failed_after_send: reset",
            "no layer could fix it",
        ] {
            assert!(page.contains(shown), "{shown} in {page}");
        }
    }

    #[test]
    fn tool_text_is_shown_never_run() {
        let record = Record::read(&corrected()).unwrap();
        let page = html! { (record.ending()) (record.timeline()) }.into_string();
        assert!(!page.contains("<script"), "{page}");
        assert!(!page.contains("<b>lookup"), "{page}");
        assert!(page.contains("&lt;script&gt;document.title=&quot;pwned&quot;&lt;/script&gt;"));
    }

    #[test]
    fn anything_else_is_no_record() {
        assert!(Record::read(&json!("a string")).is_none());
        assert!(Record::read(&json!({"attempts": "many"})).is_none());
        let empty = Record::read(&json!({})).unwrap();
        assert!(empty.timeline().into_string().contains("no attempt"));
    }
}
