//! Calls left in doubt: a call whose record said "do not repeat" is not sent
//! again with the same arguments.
//!
//! # Why the adapter remembers
//!
//! The record tells the model not to repeat a write whose outcome is unknown,
//! and rig's loop resends nothing on its own (every failure is
//! `retryable: false`). A model can still ignore what it read and call the
//! tool again with the same arguments; a second export, refund or payment is
//! exactly what the unknown outcome warned of. So each tool remembers the
//! arguments of its calls that ended in [`NextStep::DoNotRepeat`] and
//! answers an identical call with the same step, without sending it. The
//! memory is bounded ([`MAX_REMEMBERED`], oldest forgotten first) and lasts
//! as long as the tool value (and its clones); arguments that differ in any
//! value are another call, and are sent.

use std::collections::VecDeque;
use std::sync::{Mutex, PoisonError};

use recourse::record::{Next, NextStep};
use serde_json::{Value, json};

/// The most calls in doubt one tool remembers.
pub const MAX_REMEMBERED: usize = 1024;

/// The calls of one tool whose record said not to repeat them.
#[derive(Debug, Default)]
pub(crate) struct InDoubt {
    calls: Mutex<VecDeque<(String, Next)>>,
}

impl InDoubt {
    /// The `Next` of an earlier call of `tool` with these `arguments` that
    /// must not be repeated, if there was one.
    pub(crate) fn earlier(&self, tool: &str, arguments: &Value) -> Option<Next> {
        let hash = hash(tool, arguments);
        let calls = self.calls.lock().unwrap_or_else(PoisonError::into_inner);
        calls
            .iter()
            .find(|(h, _)| *h == hash)
            .map(|(_, n)| n.clone())
    }

    /// Remembers the call when its `next` says not to repeat it.
    pub(crate) fn record(&self, tool: &str, arguments: &Value, next: &Next) {
        if next.step != NextStep::DoNotRepeat {
            return;
        }
        let hash = hash(tool, arguments);
        let mut calls = self.calls.lock().unwrap_or_else(PoisonError::into_inner);
        if calls.iter().any(|(h, _)| *h == hash) {
            return;
        }
        if calls.len() >= MAX_REMEMBERED {
            calls.pop_front();
        }
        calls.push_back((hash, next.clone()));
    }
}

fn hash(tool: &str, arguments: &Value) -> String {
    recourse::keyed::request_hash(&json!({"tool": tool, "arguments": arguments}))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn next(step: NextStep) -> Next {
        Next {
            step,
            model_message: "m".into(),
            question: None,
            operation_id: None,
            retry_after_ms: None,
        }
    }

    #[test]
    fn only_calls_not_to_repeat_are_remembered_by_tool_and_arguments() {
        let memory = InDoubt::default();
        let args = json!({"source_id": "sales-2024", "format": "pdf"});
        memory.record("exports_create", &args, &next(NextStep::GiveUp));
        assert!(memory.earlier("exports_create", &args).is_none());
        memory.record("exports_create", &args, &next(NextStep::DoNotRepeat));
        let reordered = json!({"format": "pdf", "source_id": "sales-2024"});
        assert!(memory.earlier("exports_create", &reordered).is_some());
        assert!(memory.earlier("other_tool", &args).is_none());
        let changed = json!({"source_id": "sales-2024", "format": "csv"});
        assert!(memory.earlier("exports_create", &changed).is_none());
    }

    #[test]
    fn the_memory_is_bounded_and_forgets_the_oldest() {
        let memory = InDoubt::default();
        for n in 0..=MAX_REMEMBERED {
            memory.record("t", &json!({ "n": n }), &next(NextStep::DoNotRepeat));
        }
        assert!(memory.earlier("t", &json!({"n": 0})).is_none());
        assert!(
            memory
                .earlier("t", &json!({ "n": MAX_REMEMBERED }))
                .is_some()
        );
        assert_eq!(memory.calls.lock().unwrap().len(), MAX_REMEMBERED);
    }
}
