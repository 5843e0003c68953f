//! A call's record as a timeline: each attempt — the payload it sent and
//! which layer made it, what changed since the one before, the answer, what
//! the policy decided — and what recourse did around it (coercions,
//! corrections, waits and why, lookups, read-backs, the journal's states),
//! then how the call ended and how it was settled.
//!
//! The record is read as the JSON the API answers (`docs/record.md`), into
//! `recourse::record::view::RecordView`, whose every field may be absent: the
//! console shows a record, it decides nothing from it, and a record written
//! by a newer version (a field, an event kind this one does not know) still
//! shows. `recourse journal show` prints the same view as text.

use maud::{Markup, html};
use recourse::record::view::{AttemptView, EventView, RecordView, SettlementView};
use recourse_protocol::truncate_chars;
use serde_json::Value;

/// The most characters of JSON (a payload, a result) a page shows.
const MAX_JSON_CHARS: usize = 20_000;

/// How the call ended, how it was settled, and what the model is told.
pub(crate) fn ending(view: &RecordView) -> Markup {
    html! {
        dl.ending { (stop(view)) (write(view)) (told(view)) }
        @if let Some(s) = &view.settlement { (settlement(s)) }
        @if let Some(data) = view.end.data.as_ref().filter(|d| !d.is_null()) {
            details { summary { "Result" } pre { (json(data)) } }
        }
    }
}

/// The outcome, why the call stopped, and the last error.
fn stop(view: &RecordView) -> Markup {
    let end = &view.end;
    let outcome = end.outcome.as_deref();
    html! {
        dt { "Outcome" }
        dd { span class={ "state " (outcome.unwrap_or("")) } { (outcome.unwrap_or("—")) } }
        @if let Some(text) = &end.reason_text {
            dt { "Why it stopped" }
            dd { (text) @if let Some(code) = &end.reason { " (" code { (code) } ")" } }
        }
        @if let Some(kind) = &end.stop_kind { dt { "Kind" } dd { code { (kind) } } }
        @if let Some(e) = &end.error {
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
fn write(view: &RecordView) -> Markup {
    let (w, cost) = (&view.write, &view.cost);
    html! {
        @if let Some(v) = &w.verification { dt { "Verification" } dd { code { (v) } } }
        @if let Some(key) = &w.idempotency_key { dt { "Idempotency key" } dd { code { (key) } } }
        @if let Some(op) = &w.operation_id { dt { "Operation id" } dd { code { (op) } } }
        @if let Some(i) = &w.idempotency {
            dt { "Idempotent" }
            dd { (if i.idempotent { "yes" } else { "no" }) ", by " (i.from.as_deref().unwrap_or("—")) }
        }
        dt { "Sent" }
        dd { (cost.http_calls.unwrap_or(0)) " request(s), " (cost.llm_calls.unwrap_or(0)) " model call(s), "
             (cost.elapsed_ms.unwrap_or(0)) " ms" }
    }
}

/// What the model is told (the record's `next`).
fn told(view: &RecordView) -> Markup {
    html! {
        @if let Some(next) = &view.next {
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
pub(crate) fn timeline(view: &RecordView) -> Markup {
    html! {
        @if view.attempts.is_empty() {
            p.empty { "The journal has no attempt's details: the call's process stopped before it wrote its record, or it is still running." }
        } @else {
            ol.timeline {
                @for (i, attempt) in view.attempts.iter().enumerate() {
                    (render_attempt(attempt, i.checked_sub(1).and_then(|p| view.attempts.get(p))))
                }
            }
        }
    }
}

fn settlement(s: &SettlementView) -> Markup {
    html! {
        div.settlement #settlement {
            h3 { "Settled by " (s.by.as_deref().unwrap_or("—")) }
            p {
                @if let Some(who) = &s.who { strong { (who) } " · " }
                (s.at.as_deref().unwrap_or(""))
            }
            @if let Some(note) = &s.note { blockquote { (note) } }
        }
    }
}

fn render_attempt(attempt: &AttemptView, previous: Option<&AttemptView>) -> Markup {
    let changed = previous.and_then(|p| attempt.changes_since(p));
    html! {
        li.attempt id={ "attempt-" (attempt.n) } {
            h3 { "Attempt " (attempt.n) " " span.source { "payload by " (attempt.source.as_deref().unwrap_or("caller")) } }
            @if let Some(changed) = changed {
                p.changed { "Changed since attempt " (attempt.n.saturating_sub(1)) ": " code { (changed) } }
            }
            details { summary { "Payload sent" } pre { (json(&attempt.payload)) } }
            p.answer { (answer(attempt)) }
            @if !attempt.events.is_empty() {
                ul.events { @for event in &attempt.events { li { (render_event(event)) } } }
            }
            p.decision {
                "Decision: " code { (attempt.action.as_deref().unwrap_or("—")) }
                @if let Some(ms) = attempt.wait_ms { " after " (ms) " ms" }
                @if let Some(reason) = &attempt.reason { " (" code { (reason) } ")" }
            }
        }
    }
}

fn answer(attempt: &AttemptView) -> Markup {
    html! {
        @if let Some(failure) = &attempt.transport_error {
            "No answer: " span.tool-text { (failure) }
        } @else {
            "HTTP " (attempt.status.map_or_else(|| "—".to_owned(), |s| s.to_string()))
            @if let Some(c) = &attempt.category { " " (c) }
            @if let Some(c) = &attempt.code { " " code { (c) } }
        }
        @if let Some(p) = &attempt.retry_permission { " · retry " (p) }
        @if let Some(t) = attempt.timeout_ms { " · within " (t) " ms" }
    }
}

fn render_event(event: &EventView) -> Markup {
    html! {
        @match event {
            EventView::Coerced { changes } => {
                "Coerced: "
                @for (i, c) in changes.iter().enumerate() {
                    @if i > 0 { ", " }
                    code { (c.pointer) } " " (json_inline(&c.from)) " → "
                    (c.to.as_ref().map_or_else(|| "(omitted)".to_owned(), json_inline))
                    " (" (c.rule) ")"
                }
            }
            EventView::Correction { layer, verdict, rule, reason } => {
                "Correction by " strong { (layer) } ": " code { (verdict) }
                @if let Some(rule) = rule { " (" (rule) ")" }
                " — " span.tool-text { (reason) }
            }
            EventView::Waited { ms, cause } => { "Waited " (ms) " ms (" (cause) ")" }
            EventView::Lookup { result, detail } => {
                "Lookup: " code { (result) }
                @if let Some(d) = detail { " — " span.tool-text { (d) } }
            }
            EventView::Verify { phase, result, detail } => {
                "Read-back " (phase) " the write: " code { (result) }
                @if let Some(d) = detail { " — " span.tool-text { (d) } }
            }
            EventView::Journal { state } => { "Journal: " code { (state) } }
            _ => { "An event this console does not know" }
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

    fn page(record: &Value) -> String {
        let view = RecordView::read(record).unwrap();
        html! { (ending(&view)) (timeline(&view)) }.into_string()
    }

    #[test]
    fn a_record_reads_as_a_timeline_with_changed_pointers() {
        let page = page(&corrected());
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
        let page = page(&corrected());
        assert!(!page.contains("<script"), "{page}");
        assert!(!page.contains("<b>lookup"), "{page}");
        assert!(page.contains("&lt;script&gt;document.title=&quot;pwned&quot;&lt;/script&gt;"));
    }

    #[test]
    fn a_record_without_attempts_says_so() {
        let empty = RecordView::read(&json!({})).unwrap();
        assert!(timeline(&empty).into_string().contains("no attempt"));
    }
}
