//! An attempt as a reader reads it: what it sent, what came back, what was
//! decided, and the events around it — each event one sentence in plain
//! text ([`EventView`]'s `Display`), for a terminal; the console renders the
//! same parts as HTML.

use std::fmt;

use recourse_protocol::truncate_chars;
use serde::Deserialize;
use serde_json::Value;

use crate::record::diff::describe_changes;

/// The most characters of a value an event shows inline.
const MAX_INLINE_CHARS: usize = 200;

/// One attempt of a record.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
#[non_exhaustive]
pub struct AttemptView {
    /// Its number, from 1.
    pub n: u32,
    /// The payload it sent (redacted).
    pub payload: Value,
    /// The HTTP status, when one came back.
    pub status: Option<u16>,
    /// Why no answer came back, when none did.
    pub transport_error: Option<String>,
    /// The answer's category.
    pub category: Option<String>,
    /// The answer's code.
    pub code: Option<String>,
    /// What the answer allowed (`never`, `same_payload`, …).
    pub retry_permission: Option<String>,
    /// What the policy decided (`retry_same`, `correct`, …).
    pub action: Option<String>,
    /// How long it waited before the next attempt.
    pub wait_ms: Option<u64>,
    /// Why it stopped, when it did.
    pub reason: Option<String>,
    /// The attempt's time limit.
    pub timeout_ms: Option<u64>,
    /// Who made its payload: the caller, coercion, repair, a model.
    pub source: Option<String>,
    /// What happened around it, in order.
    pub events: Vec<EventView>,
}

impl AttemptView {
    /// What changed in the payload since `previous` (`/format: "pdff" →
    /// "pdf"`), or `None` when it sent the same.
    pub fn changes_since(&self, previous: &AttemptView) -> Option<String> {
        (previous.payload != self.payload)
            .then(|| describe_changes(&previous.payload, &self.payload))
    }

    /// The answer in a line: `HTTP 400 INPUT_ERROR BAD_FORMAT · retry never`,
    /// or `no answer: …`.
    pub fn answer(&self) -> String {
        let mut line = match &self.transport_error {
            Some(failure) => format!("no answer: {failure}"),
            None => {
                let status = self
                    .status
                    .map_or_else(|| "—".to_owned(), |s| s.to_string());
                let mut line = format!("HTTP {status}");
                for part in [&self.category, &self.code].into_iter().flatten() {
                    line.push(' ');
                    line.push_str(part);
                }
                line
            }
        };
        if let Some(permission) = &self.retry_permission {
            line.push_str(&format!(" · retry {permission}"));
        }
        if let Some(ms) = self.timeout_ms {
            line.push_str(&format!(" · within {ms} ms"));
        }
        line
    }
}

/// An event, by its `kind`; one this version does not know is [`EventView::Other`].
#[derive(Debug, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum EventView {
    /// The payload was coerced to its schema.
    Coerced {
        /// Each value changed.
        #[serde(default)]
        changes: Vec<ChangeView>,
    },
    /// A correction layer's verdict.
    Correction {
        /// `repair`, `llm` or `semantic`.
        #[serde(default)]
        layer: String,
        /// `fixed`, `cannot_fix`, `rejected_by_gate` or `skipped`.
        #[serde(default)]
        verdict: String,
        /// The gate's rule, when the gate rejected it.
        #[serde(default)]
        rule: Option<String>,
        /// Why, in words.
        #[serde(default)]
        reason: String,
    },
    /// A wait before the next attempt.
    Waited {
        /// How long.
        #[serde(default)]
        ms: u64,
        /// Why: `backoff`, `retry_after` or `pending_lookup`.
        #[serde(default)]
        cause: String,
    },
    /// A lookup of the write.
    Lookup {
        /// `committed`, `not_committed`, `pending` or `cannot_tell`.
        #[serde(default)]
        result: String,
        /// What it found, in words.
        #[serde(default)]
        detail: Option<String>,
    },
    /// A read-back of the write.
    Verify {
        /// `before` or `after` the write.
        #[serde(default)]
        phase: String,
        /// `holds`, `not_held` or `cannot_tell`.
        #[serde(default)]
        result: String,
        /// What it read, in words.
        #[serde(default)]
        detail: Option<String>,
    },
    /// The journal's state for the call.
    Journal {
        /// The state written.
        #[serde(default)]
        state: String,
    },
    /// An event this version does not know.
    #[serde(other)]
    Other,
}

impl fmt::Display for EventView {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Coerced { changes } => {
                f.write_str("coerced: ")?;
                for (i, c) in changes.iter().enumerate() {
                    let to = c.to.as_ref().map_or_else(|| "(omitted)".to_owned(), inline);
                    let sep = if i > 0 { ", " } else { "" };
                    write!(
                        f,
                        "{sep}{} {} → {to} ({})",
                        c.pointer,
                        inline(&c.from),
                        c.rule
                    )?;
                }
                Ok(())
            }
            Self::Correction {
                layer,
                verdict,
                rule,
                reason,
            } => {
                write!(f, "correction by {layer}: {verdict}")?;
                if let Some(rule) = rule {
                    write!(f, " ({rule})")?;
                }
                write!(f, " — {reason}")
            }
            Self::Waited { ms, cause } => write!(f, "waited {ms} ms ({cause})"),
            Self::Lookup { result, detail } => {
                write!(f, "lookup: {result}")?;
                detail.iter().try_for_each(|d| write!(f, " — {d}"))
            }
            Self::Verify {
                phase,
                result,
                detail,
            } => {
                write!(f, "read-back {phase} the write: {result}")?;
                detail.iter().try_for_each(|d| write!(f, " — {d}"))
            }
            Self::Journal { state } => write!(f, "journal: {state}"),
            Self::Other => f.write_str("an event this version does not know"),
        }
    }
}

/// One value coercion changed.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
#[non_exhaustive]
pub struct ChangeView {
    /// Where, as a JSON Pointer.
    pub pointer: String,
    /// The value sent.
    pub from: Value,
    /// What it became; `None` when it was omitted.
    pub to: Option<Value>,
    /// The coercion's rule.
    pub rule: String,
}

/// `value` as compact JSON, cut to [`MAX_INLINE_CHARS`].
pub(super) fn inline(value: &Value) -> String {
    truncate_chars(&value.to_string(), MAX_INLINE_CHARS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn events(json: Value) -> Vec<String> {
        Vec::<EventView>::deserialize(json)
            .unwrap()
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn each_event_is_one_sentence() {
        let said = events(json!([
            {"kind": "coerced", "changes": [{"pointer": "/amount", "from": "100", "to": 100, "rule": "integer_string"}]},
            {"kind": "correction", "layer": "repair", "verdict": "rejected_by_gate", "rule": "protected", "reason": "r"},
            {"kind": "waited", "ms": 1200, "cause": "retry_after"},
            {"kind": "lookup", "result": "cannot_tell", "detail": "lookup down"},
            {"kind": "verify", "phase": "after", "result": "holds"},
            {"kind": "journal", "state": "unknown"},
            {"kind": "a_kind_from_the_future", "x": 1}
        ]));
        assert_eq!(
            said,
            [
                r#"coerced: /amount "100" → 100 (integer_string)"#,
                "correction by repair: rejected_by_gate (protected) — r",
                "waited 1200 ms (retry_after)",
                "lookup: cannot_tell — lookup down",
                "read-back after the write: holds",
                "journal: unknown",
                "an event this version does not know",
            ]
        );
    }

    #[test]
    fn an_answer_names_its_transport_failure_or_its_status() {
        let lost = AttemptView {
            transport_error: Some("failed_after_send: reset".into()),
            retry_permission: Some("never".into()),
            ..AttemptView::default()
        };
        assert_eq!(
            lost.answer(),
            "no answer: failed_after_send: reset · retry never"
        );
        let refused = AttemptView {
            status: Some(400),
            category: Some("INPUT_ERROR".into()),
            code: Some("BAD".into()),
            timeout_ms: Some(30),
            ..AttemptView::default()
        };
        assert_eq!(refused.answer(), "HTTP 400 INPUT_ERROR BAD · within 30 ms");
        assert!(refused.changes_since(&lost).is_none(), "the same payload");
    }
}
