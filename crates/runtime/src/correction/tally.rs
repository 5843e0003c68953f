//! What the layers of one correction spent and did, and the gate verdict
//! that ends it.

use recourse_protocol::{redact, truncate_chars};

use super::diff::describe_changes;
use super::gate::gate;
use crate::{Correction, CorrectionLayer, CorrectionRequest, LayerVerdict, TokenUsage, Verdict};

/// What the layers spent and did so far.
#[derive(Default)]
pub(crate) struct Tally {
    llm_calls: u32,
    tokens: TokenUsage,
    tried: Vec<LayerVerdict>,
}

impl Tally {
    /// Gates a layer's answer: the finished correction, or `None` to go on.
    ///
    /// The correction carries the candidate as the layer proposed it; the
    /// executor gates it again and records the coercion it needs.
    pub(crate) fn consider(
        &mut self,
        answer: Correction,
        request: &CorrectionRequest<'_>,
    ) -> Option<Correction> {
        let (llm_calls, tokens) = answer.spent();
        self.spend(llm_calls, tokens);
        let (candidate, layer, reason) = match answer {
            Correction::Corrected {
                payload,
                layer,
                reason,
                tried,
                ..
            } => {
                self.tried.extend(tried);
                (payload, layer, reason)
            }
            Correction::CannotFix { tried, .. } => {
                self.tried.extend(tried);
                return None;
            }
        };
        match gate(
            candidate.clone(),
            request.payload,
            request.protected,
            request.schema,
        ) {
            Ok(admitted) => {
                let changes = describe_changes(request.payload, &admitted.payload);
                let text = if layer == CorrectionLayer::Repair || reason.is_empty() {
                    if reason.is_empty() { changes } else { reason }
                } else {
                    format!("{changes} ({})", truncate_chars(&reason, 300))
                };
                Some(Correction::Corrected {
                    payload: candidate,
                    layer,
                    reason: redact(&text),
                    tried: std::mem::take(&mut self.tried),
                    llm_calls: self.llm_calls,
                    tokens: self.tokens,
                })
            }
            Err(rejection) => {
                self.tried.push(LayerVerdict {
                    layer,
                    verdict: Verdict::RejectedByGate {
                        rule: rejection.rule,
                    },
                    reason: rejection.detail,
                });
                None
            }
        }
    }

    /// Records that `layer` was not asked, and why.
    pub(crate) fn skip(&mut self, layer: CorrectionLayer, why: impl Into<String>) {
        self.tried.push(LayerVerdict {
            layer,
            verdict: Verdict::Skipped,
            reason: why.into(),
        });
    }

    fn spend(&mut self, llm_calls: u32, tokens: TokenUsage) {
        self.llm_calls += llm_calls;
        self.tokens.prompt += tokens.prompt;
        self.tokens.completion += tokens.completion;
    }

    /// No layer could fix it: what each did.
    pub(crate) fn cannot_fix(self) -> Correction {
        Correction::CannotFix {
            tried: self.tried,
            llm_calls: self.llm_calls,
            tokens: self.tokens,
        }
    }
}
