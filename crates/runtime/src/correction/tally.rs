//! What the layers of one correction spent and said, and the gate verdict
//! that ends it.

use recourse_protocol::{redact, truncate_chars};

use super::diff::describe_changes;
use super::gate::gate;
use crate::{Correction, CorrectionRequest, PayloadSource, Schema, TokenUsage};

/// What the layers spent and said so far.
#[derive(Default)]
pub(crate) struct Tally {
    llm_calls: u32,
    tokens: TokenUsage,
    pub(crate) notes: Vec<String>,
}

impl Tally {
    /// Gates a layer's answer: the finished correction, or `None` to go on.
    pub(crate) fn consider(
        &mut self,
        layer: &str,
        answer: Correction,
        request: &CorrectionRequest<'_>,
        schema: Option<&Schema>,
    ) -> Option<Correction> {
        let (candidate, source, note) = match answer {
            Correction::Corrected {
                payload,
                source,
                note,
                llm_calls,
                tokens,
            } => {
                self.spend(llm_calls, tokens);
                (payload, source, note)
            }
            Correction::CannotFix {
                why,
                llm_calls,
                tokens,
            } => {
                self.spend(llm_calls, tokens);
                self.notes.push(format!("{layer}: {why}"));
                return None;
            }
        };
        match gate(candidate, request.payload, request.protected, schema) {
            Ok(payload) => {
                let changes = describe_changes(request.payload, &payload);
                let mut text = if note.is_empty() || source == PayloadSource::Repair {
                    note
                } else {
                    format!("{changes} ({})", truncate_chars(&note, 300))
                };
                if text.is_empty() {
                    text = changes;
                }
                if !self.notes.is_empty() {
                    text = format!("{text}; after {}", self.notes.join("; "));
                }
                Some(Correction::Corrected {
                    payload,
                    source,
                    note: redact(&text),
                    llm_calls: self.llm_calls,
                    tokens: self.tokens,
                })
            }
            Err(why) => {
                self.notes.push(format!("{layer} proposal rejected: {why}"));
                None
            }
        }
    }

    fn spend(&mut self, llm_calls: u32, tokens: TokenUsage) {
        self.llm_calls += llm_calls;
        self.tokens.prompt += tokens.prompt;
        self.tokens.completion += tokens.completion;
    }

    pub(crate) fn cannot_fix(mut self, last: &str) -> Correction {
        if !last.is_empty() {
            self.notes.push(last.to_owned());
        }
        Correction::CannotFix {
            why: redact(&self.notes.join("; ")),
            llm_calls: self.llm_calls,
            tokens: self.tokens,
        }
    }
}
