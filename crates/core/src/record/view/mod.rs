//! A record as a person reads it: the view the gateway's console renders as
//! HTML and `recourse journal show` as text.
//!
//! # Why a view of its own
//!
//! A record is read from a journal, and a journal outlives the process that
//! wrote it: the record may come from an older or a newer recourse, with a
//! field or an event kind this one does not know. A reader shows what it can
//! and decides nothing from it, so the view is the record's JSON
//! (`docs/record.md`) read leniently — every field may be absent, an unknown
//! event is [`EventView::Other`] — rather than the typed
//! [`CallReport`](crate::record::CallReport), which must round-trip. Both
//! renderings read this one view, so they show the same attempts, the same
//! changes between them and the same events.
//!
//! ```
//! use recourse_core::record::view::{EventView, RecordView};
//! use serde_json::json;
//!
//! let record = json!({
//!     "outcome": "succeeded",
//!     "attempts": [
//!         {"n": 1, "payload": {"format": "pdff"}, "status": 400, "action": "correct",
//!          "events": [{"kind": "correction", "layer": "repair", "verdict": "fixed", "reason": "near miss"}]},
//!         {"n": 2, "payload": {"format": "pdf"}, "status": 200, "action": "succeed", "source": "repair"}
//!     ]
//! });
//! let view = RecordView::read(&record).unwrap();
//! let [first, second] = view.attempts.as_slice() else { panic!() };
//! assert!(matches!(first.events[0], EventView::Correction { .. }));
//! assert_eq!(second.changes_since(first).as_deref(), Some(r#"/format: "pdff" → "pdf""#));
//! assert_eq!(second.answer(), "HTTP 200");
//! ```

mod attempt;

pub use attempt::{AttemptView, ChangeView, EventView};

use serde::Deserialize;
use serde_json::Value;

/// A record, as a reader reads it (see the [module](self)).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
#[non_exhaustive]
pub struct RecordView {
    /// How the call ended.
    #[serde(flatten)]
    pub end: EndView,
    /// What the write was: its evidence, key and operation id.
    #[serde(flatten)]
    pub write: WriteView,
    /// What it cost.
    #[serde(flatten)]
    pub cost: CostView,
    /// What the model is told.
    pub next: Option<NextView>,
    /// How a call whose outcome was open was settled.
    pub settlement: Option<SettlementView>,
    /// The attempts, in order.
    pub attempts: Vec<AttemptView>,
}

impl RecordView {
    /// The view of `record`; `None` when it is not an object of a record's shape.
    pub fn read(record: &Value) -> Option<Self> {
        Self::deserialize(record).ok()
    }
}

/// How a call ended: its outcome, why it stopped, its last error, its data.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
#[non_exhaustive]
pub struct EndView {
    /// `succeeded`, `failed`, `unknown` or `awaiting_approval`.
    pub outcome: Option<String>,
    /// The tool's data, on success.
    pub data: Option<Value>,
    /// The last error.
    pub error: Option<ErrorView>,
    /// Why it stopped, as a code (`cannot_fix`).
    pub reason: Option<String>,
    /// Why it stopped, in words.
    pub reason_text: Option<String>,
    /// The kind of stop (`unknown_outcome`, …).
    pub stop_kind: Option<String>,
}

/// A write's evidence, key and operation id.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
#[non_exhaustive]
pub struct WriteView {
    /// Whether the call may be sent twice, and by what evidence.
    pub idempotency: Option<IdempotencyView>,
    /// The key every attempt carried.
    pub idempotency_key: Option<String>,
    /// The tool's operation id.
    pub operation_id: Option<String>,
    /// What a read-back established (`verified`, `not_committed`, …).
    pub verification: Option<String>,
}

/// What a call cost.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
#[non_exhaustive]
pub struct CostView {
    /// Requests sent to the tool.
    pub http_calls: Option<u64>,
    /// Model calls made to correct it.
    pub llm_calls: Option<u64>,
    /// How long it took.
    pub elapsed_ms: Option<u64>,
}

/// An error as a record shows it.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
#[non_exhaustive]
pub struct ErrorView {
    /// The tool's code.
    pub code: Option<String>,
    /// The tool's (redacted) message.
    pub message: Option<String>,
    /// Its category.
    pub category: Option<String>,
    /// Whether the tool said it may be retried.
    pub retryable: Option<bool>,
}

/// What the model is told.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
#[non_exhaustive]
pub struct NextView {
    /// The step (`use_result`, `do_not_repeat`, …).
    pub step: Option<String>,
    /// The message for the model.
    pub model_message: Option<String>,
    /// What a person is asked, when the model should ask one.
    pub question: Option<String>,
}

/// Whether a call may be sent twice, and by what evidence.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
#[non_exhaustive]
pub struct IdempotencyView {
    /// Whether it may.
    pub idempotent: bool,
    /// The evidence (`caller`, `manifest`, `default`, …).
    pub from: Option<String>,
}

/// How an open call was settled after it stopped.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
#[non_exhaustive]
pub struct SettlementView {
    /// What settled it: `verification`, `lookup`, `person` or `journal`.
    pub by: Option<String>,
    /// When (RFC 3339, UTC).
    pub at: Option<String>,
    /// The person, when a person did.
    pub who: Option<String>,
    /// Their note, or what the lookup found.
    pub note: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn anything_else_is_no_record() {
        assert!(RecordView::read(&json!("a string")).is_none());
        assert!(RecordView::read(&json!({"attempts": "many"})).is_none());
        let empty = RecordView::read(&json!({})).unwrap();
        assert!(empty.attempts.is_empty() && empty.end.outcome.is_none());
    }

    #[test]
    fn every_part_of_a_record_is_read() {
        let record = json!({
            "outcome": "succeeded", "reason": null, "data": {"id": 7},
            "idempotency": {"idempotent": false, "from": "caller"},
            "idempotency_key": "k-1", "operation_id": "op-1", "verification": "verified",
            "http_calls": 2, "llm_calls": 1, "elapsed_ms": 40,
            "next": {"step": "use_result", "model_message": "m"},
            "settlement": {"by": "person", "who": "dana", "note": "seen", "at": "2026-01-01T00:00:00Z"},
            "a_field_from_the_future": true
        });
        let view = RecordView::read(&record).unwrap();
        assert_eq!(view.end.outcome.as_deref(), Some("succeeded"));
        assert_eq!(view.end.data, Some(json!({"id": 7})));
        assert_eq!(view.write.operation_id.as_deref(), Some("op-1"));
        assert_eq!(
            view.write.idempotency.unwrap().from.as_deref(),
            Some("caller")
        );
        assert_eq!(
            (view.cost.http_calls, view.cost.llm_calls),
            (Some(2), Some(1))
        );
        assert_eq!(view.settlement.unwrap().who.as_deref(), Some("dana"));
        assert_eq!(view.next.unwrap().step.as_deref(), Some("use_result"));
    }
}
