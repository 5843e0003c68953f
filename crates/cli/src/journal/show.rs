//! `recourse journal show ID`: one call whole — what was asked (redacted),
//! each attempt with what it sent and what came back, the waits and why,
//! the corrections and what they changed, the lookups and read-backs, the
//! approval, how it ended and how it was settled. The gateway's console shows
//! the same record as a page; both read it through
//! `recourse::record::view`. Every line is made safe for a terminal
//! (`call::printable`): a tool's words may hold escape sequences.

use anyhow::Result;
use recourse::journal::{JournalEntry, rfc3339_now};
use recourse::record::view::{AttemptView, RecordView};
use recourse_protocol::{redact_value, truncate_chars};
use serde_json::{Value, json};

use super::places::Opened;
use crate::call::printable;

/// The most characters of a payload shown on one line.
const MAX_PAYLOAD_CHARS: usize = 2_000;

/// Prints the call `call_id` from the first journal that holds it: 0, or 1
/// when none does.
pub(super) async fn show(journals: &[Opened], call_id: &str, as_json: bool) -> Result<i32> {
    for opened in journals {
        let Some(entry) = opened.journal.get(call_id).await? else {
            continue;
        };
        if as_json {
            outln!("{}", serde_json::to_string_pretty(&as_json_value(&entry))?);
        } else {
            for line in lines(&entry, &opened.shown) {
                outln!("{}", printable(line));
            }
        }
        return Ok(0);
    }
    eprintln!("recourse: CALL_NOT_FOUND: no call {call_id} in the journal");
    Ok(1)
}

/// `{"state", "caller", "record"}` as the gateway's `GET /v1/calls/{id}`
/// answers, with the call as `journal list --json` lists it and its
/// (redacted) arguments.
fn as_json_value(entry: &JournalEntry) -> Value {
    json!({
        "state": entry.state,
        "caller": entry.caller(),
        "record": entry.record_json(),
        "call": super::entry_json(entry),
        "payload": redact_value(&entry.payload),
    })
}

/// The call in lines of text: the request, the attempts, the ending.
fn lines(entry: &JournalEntry, journal: &str) -> Vec<String> {
    let record = entry.record_json();
    let mut out = request(entry, journal);
    match RecordView::read(&record) {
        Some(view) => {
            attempts(&view, &mut out);
            ending(&view, &mut out);
        }
        None => out.push(format!("record: {record}")),
    }
    out
}

/// What was called, with what, by whom, and its approval.
fn request(entry: &JournalEntry, journal: &str) -> Vec<String> {
    let mut out = vec![
        format!("call {}  {}  in {journal}", entry.call_id, entry.state),
        format!("{} {}", super::list::called(entry), entry.target),
        format!("request {}", payload(&redact_value(&entry.payload))),
    ];
    let mut who = format!("caller {}", entry.caller());
    if let Some(capability) = &entry.capability {
        who.push_str(&format!(" · capability {capability}"));
    }
    if let Some(key) = &entry.idempotency_key {
        who.push_str(&format!(" · key {key}"));
    }
    out.push(who);
    out.push(format!(
        "started {} · last changed {}",
        entry.times.started_at, entry.times.updated_at
    ));
    if let Some(a) = &entry.asked.approval {
        let state = a.state_at(&rfc3339_now());
        let mut line = format!("approval {}: {}", state.as_str(), a.reason);
        match (&a.decided_by, &a.decided_at) {
            (Some(by), Some(at)) => line.push_str(&format!(" · decided by {by} at {at}")),
            (None, Some(at)) => line.push_str(&format!(" · at {at}")),
            _ => line.push_str(&format!(" · until {}", a.expires_at)),
        }
        if let Some(note) = &a.note {
            line.push_str(&format!(": {note}"));
        }
        out.push(line);
    }
    out
}

/// Each attempt: what it sent, what changed, what came back and what was
/// decided, then what happened around it.
fn attempts(view: &RecordView, out: &mut Vec<String>) {
    if view.attempts.is_empty() {
        out.push(
            "no attempt's details: the call's process stopped before it wrote its record, or \
             it is still running"
                .to_owned(),
        );
    }
    let mut previous: Option<&AttemptView> = None;
    for a in &view.attempts {
        let source = a.source.as_deref().unwrap_or("caller");
        out.push(format!(
            "→ attempt {} ({source}) {}",
            a.n,
            payload(&a.payload)
        ));
        if let Some(changed) = previous.and_then(|p| a.changes_since(p)) {
            out.push(format!("  changed {changed}"));
        }
        let mut decided = a.action.clone().unwrap_or_else(|| "—".to_owned());
        if let Some(ms) = a.wait_ms {
            decided.push_str(&format!(", waited {ms} ms"));
        }
        if let Some(reason) = &a.reason {
            decided.push_str(&format!(" ({reason})"));
        }
        out.push(format!("  ← {} ⇒ {decided}", a.answer()));
        out.extend(a.events.iter().map(|event| format!("    · {event}")));
        previous = Some(a);
    }
}

/// How the call ended, what it was, how it was settled, what the model is told.
fn ending(view: &RecordView, out: &mut Vec<String>) {
    let end = &view.end;
    let mut outcome = format!("outcome {}", end.outcome.as_deref().unwrap_or("—"));
    if let Some(text) = &end.reason_text {
        outcome.push_str(&format!(": {text}"));
    }
    out.push(outcome);
    if let Some(e) = &end.error {
        let mut error = format!(
            "error {} {}: {}",
            e.code.as_deref().unwrap_or("—"),
            e.category.as_deref().unwrap_or("—"),
            e.message.as_deref().unwrap_or("")
        );
        if let Some(retryable) = e.retryable {
            error.push_str(&format!(" (retryable: {retryable})"));
        }
        out.push(error);
    }
    let w = &view.write;
    if let Some(i) = &w.idempotency {
        let treated = if i.idempotent {
            "idempotent"
        } else {
            "not idempotent"
        };
        out.push(format!(
            "{treated}, by {}",
            i.from.as_deref().unwrap_or("—")
        ));
    }
    if let Some(op) = &w.operation_id {
        out.push(format!("operation id {op}"));
    }
    if let Some(v) = &w.verification {
        out.push(format!("verification {v}"));
    }
    let cost = &view.cost;
    out.push(format!(
        "sent {} request(s), {} model call(s), {} ms",
        cost.http_calls.unwrap_or(0),
        cost.llm_calls.unwrap_or(0),
        cost.elapsed_ms.unwrap_or(0)
    ));
    if let Some(s) = &view.settlement {
        let mut settled = format!("settled by {}", s.by.as_deref().unwrap_or("—"));
        if let Some(who) = &s.who {
            settled.push_str(&format!(" ({who})"));
        }
        if let Some(at) = &s.at {
            settled.push_str(&format!(" at {at}"));
        }
        if let Some(note) = &s.note {
            settled.push_str(&format!(": {note}"));
        }
        out.push(settled);
    }
    if let Some(next) = &view.next {
        out.push(format!(
            "next {}: {}",
            next.step.as_deref().unwrap_or("—"),
            next.model_message.as_deref().unwrap_or("")
        ));
    }
    if let Some(data) = end.data.as_ref().filter(|d| !d.is_null()) {
        out.push(format!("data {}", payload(data)));
    }
}

/// `value` as one line of JSON, cut to [`MAX_PAYLOAD_CHARS`].
fn payload(value: &Value) -> String {
    truncate_chars(&value.to_string(), MAX_PAYLOAD_CHARS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use recourse::journal::CallState;

    fn entry(record: Value) -> JournalEntry {
        let mut entry = JournalEntry::new("c-1", CallState::Succeeded);
        entry.target = "http://127.0.0.1:8700/api/exports".into();
        entry.idempotency_key = Some("k-1".into());
        entry.payload = json!({"format": "pdff", "api_key": "sk-proj-abcdefghijklmnopqrstu"});
        entry.attempts = 2;
        entry.times.started_at = "2026-12-07T10:00:00Z".into();
        entry.times.updated_at = "2026-12-07T10:01:00Z".into();
        entry.ended.record = Some(record);
        entry
    }

    #[test]
    fn a_call_reads_as_its_request_attempts_and_ending() {
        let record = json!({
            "outcome": "succeeded", "reason_text": null,
            "attempts": [
                {"n": 1, "payload": {"format": "pdff"}, "status": 400, "category": "INPUT_ERROR",
                 "code": "UNSUPPORTED_FORMAT", "retry_permission": "with_correction", "action": "correct",
                 "events": [{"kind": "correction", "layer": "repair", "verdict": "fixed", "reason": "allowed value"}]},
                {"n": 2, "payload": {"format": "pdf"}, "transport_error": "failed_after_send: reset",
                 "source": "repair", "action": "reconcile",
                 "events": [{"kind": "lookup", "result": "cannot_tell", "detail": "lookup down"}]}
            ],
            "settlement": {"by": "person", "who": "dana", "note": "seen in the console", "at": "2026-12-07T11:00:00Z"},
            "next": {"step": "use_result", "model_message": "a person settled it"}
        });
        let text = lines(&entry(record), "j.db").join("\n");
        for shown in [
            "call c-1  succeeded  in j.db",
            "url http://127.0.0.1:8700/api/exports",
            r#"request {"format":"pdff","api_key":"[REDACTED]"}"#,
            "caller default · key k-1",
            r#"→ attempt 1 (caller) {"format":"pdff"}"#,
            "← HTTP 400 INPUT_ERROR UNSUPPORTED_FORMAT · retry with_correction ⇒ correct",
            "· correction by repair: fixed — allowed value",
            r#"→ attempt 2 (repair) {"format":"pdf"}"#,
            r#"changed /format: "pdff" → "pdf""#,
            "← no answer: failed_after_send: reset ⇒ reconcile",
            "· lookup: cannot_tell — lookup down",
            "settled by person (dana) at 2026-12-07T11:00:00Z: seen in the console",
            "next use_result: a person settled it",
        ] {
            assert!(text.contains(shown), "{shown:?} in\n{text}");
        }
        assert!(!text.contains("sk-proj"), "{text}");
    }

    #[test]
    fn json_is_the_gateways_answer_and_more() {
        let value = as_json_value(&entry(json!({"outcome": "succeeded"})));
        assert_eq!(value["state"], "succeeded");
        assert_eq!(value["caller"], "default");
        assert_eq!(value["record"]["outcome"], "succeeded");
        assert_eq!(value["call"]["url"], "http://127.0.0.1:8700/api/exports");
        assert_eq!(value["payload"]["api_key"], "[REDACTED]");
    }
}
