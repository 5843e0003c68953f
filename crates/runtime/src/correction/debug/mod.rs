//! The LLM debug store: every prompt and reply a correction made, kept in
//! memory (redacted) so a person can see exactly what the model was told,
//! and — with a [directory](LlmDebugDir) — written to disk, one file per
//! exchange, for `recourse debug llm` to list after the process is gone.
//!
//! On when `RECOURSE_LLM_DEBUG` is true, or `RECOURSE_LLM_DEBUG_DIR` names a
//! directory. A prompt is redacted as it is built (the payload as the
//! redactor leaves it, the error, the user's request, earlier results) and
//! once more as a whole before it is sent, so what the store keeps is
//! exactly what the model was sent (redacting again changes nothing). It
//! keeps the most recent exchanges only.

mod dir;

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::SystemTime;

use recourse_protocol::redact;

pub use dir::{DebugMessage, LLM_DEBUG_VERSION, LlmDebugDir, LlmDebugEntry, LlmDebugRecord};

use crate::llm::ChatMessage;
use recourse_core::record::TokenUsage;

/// How many exchanges a store keeps by default.
const DEFAULT_CAPACITY: usize = 200;

/// One model call made by a correction layer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LlmExchange {
    /// The layer: `llm` (L3) or `semantic` (L4).
    pub layer: &'static str,
    /// The call's target endpoint (no query).
    pub target: String,
    /// The correction attempt within the call.
    pub attempt: u32,
    /// When the model was asked.
    pub at: SystemTime,
    /// The tokens the model reported.
    pub tokens: TokenUsage,
    /// The messages sent, redacted.
    pub prompt: Vec<ChatMessage>,
    /// The reply text, redacted, or why there was none.
    pub reply: Result<String, String>,
}

/// Recent model exchanges, newest last.
#[derive(Debug)]
pub struct LlmDebugStore {
    entries: Mutex<VecDeque<LlmExchange>>,
    capacity: usize,
    dir: Option<LlmDebugDir>,
}

impl Default for LlmDebugStore {
    fn default() -> Self {
        Self::with_capacity(DEFAULT_CAPACITY)
    }
}

impl LlmDebugStore {
    /// A store keeping at most `capacity` exchanges.
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            entries: Mutex::new(VecDeque::new()),
            capacity: capacity.max(1),
            dir: None,
        }
    }

    /// This store, also writing each exchange as a file in `dir`.
    #[must_use]
    pub fn with_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.dir = Some(LlmDebugDir::new(dir));
        self
    }

    /// The directory exchanges are written to, if any.
    pub fn dir(&self) -> Option<&LlmDebugDir> {
        self.dir.as_ref()
    }

    /// The kept exchanges, oldest first.
    pub fn exchanges(&self) -> Vec<LlmExchange> {
        self.lock().iter().cloned().collect()
    }

    /// Forgets every exchange.
    pub fn clear(&self) {
        self.lock().clear();
    }

    pub(crate) fn record(&self, mut exchange: LlmExchange) {
        exchange.target = redact(&exchange.target);
        for message in &mut exchange.prompt {
            message.content = redact(&message.content);
        }
        exchange.reply = match exchange.reply {
            Ok(text) => Ok(redact(&text)),
            Err(why) => Err(redact(&why)),
        };
        if let Some(dir) = &self.dir
            && let Err(e) = dir.write(&exchange)
        {
            // Debugging must not fail the call; the exchange stays in memory.
            tracing::warn!(error = %e, "could not write the LLM debug file");
        }
        let mut entries = self.lock();
        if entries.len() == self.capacity {
            entries.pop_front();
        }
        entries.push_back(exchange);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<LlmExchange>> {
        // A poisoned store still holds usable text; debugging must not fail.
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_newest_and_redacts() {
        let store = LlmDebugStore::with_capacity(2);
        for n in 1..=3 {
            store.record(LlmExchange {
                layer: "llm",
                target: "t".into(),
                attempt: n,
                at: SystemTime::now(),
                tokens: TokenUsage::default(),
                prompt: vec![ChatMessage::user("key sk-abcdefghijklmnopqrstuvwx")],
                reply: Ok("{}".into()),
            });
        }
        let kept = store.exchanges();
        assert_eq!(kept.iter().map(|e| e.attempt).collect::<Vec<_>>(), [2, 3]);
        assert!(!kept[0].prompt[0].content.contains("sk-abc"));
    }
}
