//! `recourse journal list`: the journaled calls, newest first — each with its
//! state, its attempts, the tool or URL it called and its arguments
//! (redacted, cut), its key and when it last changed.

use anyhow::Result;
use recourse::journal::{CallState, JournalEntry, ListQuery};
use recourse_protocol::{redact_value, truncate_chars};
use serde_json::Value;

use super::places::Opened;
use crate::call::printable;

/// The most characters of a call's arguments a line shows.
const MAX_ARGUMENTS_CHARS: usize = 80;

/// Lists the calls of `journals` (in `state`, when given): text lines, or a
/// JSON array as the gateway's `GET /v1/calls` lists them.
pub(super) async fn list(
    journals: &[Opened],
    state: Option<CallState>,
    as_json: bool,
) -> Result<i32> {
    let query = ListQuery {
        state,
        ..ListQuery::default()
    };
    let mut entries = Vec::new();
    for opened in journals {
        entries.extend(opened.journal.list(&query).await?);
    }
    if journals.len() > 1 {
        entries.sort_by(|a, b| {
            (b.times.started_at.as_str(), b.call_id.as_str())
                .cmp(&(a.times.started_at.as_str(), a.call_id.as_str()))
        });
    }
    if as_json {
        let all: Vec<Value> = entries.iter().map(super::entry_json).collect();
        outln!("{}", serde_json::to_string_pretty(&all)?);
        return Ok(0);
    }
    if entries.is_empty() {
        outln!("no calls");
    }
    for e in &entries {
        outln!("{}", printable(line(e)));
    }
    Ok(0)
}

/// One call in a line.
fn line(e: &JournalEntry) -> String {
    let key = e.idempotency_key.as_deref().unwrap_or("-");
    let arguments = truncate_chars(&redact_value(&e.payload).to_string(), MAX_ARGUMENTS_CHARS);
    format!(
        "{}  {:<9}  {} attempt(s)  {} {}  {arguments}  key {key}  (updated {})",
        e.call_id,
        e.state.as_str(),
        e.attempts,
        called(e),
        e.target,
        e.times.updated_at
    )
}

/// What a call's target is: `url` for an http(s) URL, else `tool` (an MCP
/// tool, or a tool in process).
pub(super) fn called(entry: &JournalEntry) -> &'static str {
    let lower = entry
        .target
        .get(..8)
        .unwrap_or(&entry.target)
        .to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") {
        "url"
    } else {
        "tool"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_line_names_the_tool_and_its_arguments_redacted_and_cut() {
        let mut entry = JournalEntry::new("c-1", CallState::Unknown);
        entry.target = "write_file".into();
        entry.payload =
            json!({"path": "/tmp/r.txt", "token": "s3cret", "content": "x".repeat(200)});
        entry.attempts = 1;
        entry.times.started_at = "2026-12-07T10:00:00Z".into();
        entry.times.updated_at = "2026-12-07T10:00:01Z".into();
        let text = line(&entry);
        assert!(
            text.starts_with(
                r#"c-1  unknown    1 attempt(s)  tool write_file  {"path":"/tmp/r.txt","token":"[REDACTED]","content":"xx"#
            ),
            "{text}"
        );
        assert!(
            text.contains("…  key -  (updated 2026-12-07T10:00:01Z)"),
            "{text}"
        );
        assert!(!text.contains("s3cret"), "{text}");
        entry.target = "HTTPS://tool.example/api".into();
        assert!(line(&entry).contains("url HTTPS://tool.example/api"));
    }
}
