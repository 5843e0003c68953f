//! What the layers of one correction spent and did, and the gate verdict
//! that ends it.
//!
//! Each layer runs in a `correction_layer` span of its own (a skipped layer
//! gets an empty one), which records the layer, its verdict, the gate's rule
//! when the gate refused its payload, and what it spent: the types, never the
//! reason text.

use std::future::Future;

use recourse_protocol::{redact, truncate_chars};
use tracing::field::Empty;
use tracing::{Instrument, Span};

use super::gate::gate;
use crate::correction::{Correction, CorrectionRequest, LayerVerdict};
use recourse_core::record::describe_changes;
use recourse_core::record::{CorrectionLayer, TokenUsage, Verdict};

/// The span of one correction layer.
fn layer_span(layer: CorrectionLayer) -> Span {
    tracing::info_span!(
        "correction_layer",
        recourse.layer = layer.as_str(),
        recourse.verdict = Empty,
        recourse.gate_rule = Empty,
        recourse.llm_calls = Empty,
        recourse.tokens.prompt = Empty,
        recourse.tokens.completion = Empty,
    )
}

/// Records `verdict` on a layer's span.
fn record_verdict(span: &Span, verdict: Verdict) {
    span.record("recourse.verdict", verdict.as_str());
    if let Verdict::RejectedByGate { rule } = verdict {
        span.record("recourse.gate_rule", rule.as_str());
    }
}

/// What the layers spent and did so far.
#[derive(Default)]
pub(crate) struct Tally {
    llm_calls: u32,
    tokens: TokenUsage,
    tried: Vec<LayerVerdict>,
}

impl Tally {
    /// Runs `layer` (its `answer`) in a span of its own, gates the answer as
    /// [`consider`](Self::consider) does, and records on the span what came
    /// of it.
    pub(crate) async fn ask(
        &mut self,
        layer: CorrectionLayer,
        request: &CorrectionRequest<'_>,
        answer: impl Future<Output = Correction>,
    ) -> Option<Correction> {
        let span = layer_span(layer);
        let answer = answer.instrument(span.clone()).await;
        let (llm_calls, tokens) = answer.spent();
        span.record("recourse.llm_calls", crate::span::int(llm_calls));
        span.record("recourse.tokens.prompt", crate::span::int(tokens.prompt));
        span.record(
            "recourse.tokens.completion",
            crate::span::int(tokens.completion),
        );
        let done = self.consider(answer, request);
        let verdict = match &done {
            Some(_) => Verdict::Fixed,
            None => self
                .tried
                .iter()
                .rev()
                .find(|v| v.layer == layer)
                .map_or(Verdict::CannotFix, |v| v.verdict),
        };
        record_verdict(&span, verdict);
        done
    }

    /// Gates a layer's answer: the finished correction, or `None` to go on.
    ///
    /// The correction carries the candidate as the layer proposed it; the
    /// executor gates it again and records the coercion it needs.
    fn consider(
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
        record_verdict(&layer_span(layer), Verdict::Skipped);
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
