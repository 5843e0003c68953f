//! The `Correct` command: ask the corrector, and gate what it proposes.

use recourse_protocol::{ToolError, redact};
use serde_json::Value;
use tracing::{Instrument, Span};

use super::Run;
use crate::correction::Admitted;
use crate::correction::{Correction, CorrectionRequest, LayerVerdict};
use crate::correction::{Rejection, gate};
use crate::span;
use recourse_core::machine::Corrected;
use recourse_core::record::{CorrectionLayer, Event, TokenUsage, Verdict};

impl Run<'_> {
    /// Correction `n` of the call: what the corrector proposed, past the gate.
    pub(super) async fn correct(&mut self, n: u32) -> Corrected {
        let Some(corrector) = self.exec.corrector.clone() else {
            return Corrected::CannotFix;
        };
        let error = self
            .last
            .error
            .clone()
            .unwrap_or_else(|| ToolError::input_error("UNSPECIFIED", "the tool gave no error"));
        let request = CorrectionRequest {
            target: &self.call.target,
            payload: &self.payload.value,
            error: &error,
            protected: &self.payload.protected,
            schema: self.call.described.schema.as_ref(),
            intent: self.call.described.intent.as_deref(),
            attempt: n,
        };
        let span = span::correction(n);
        let asked_at = self.exec.clock.now();
        let correction = corrector.correct(request).instrument(span.clone()).await;
        let took = self.exec.clock.now().saturating_duration_since(asked_at);
        let (llm_calls, tokens) = correction.spent();
        self.spend(llm_calls, tokens, took);
        span.record("recourse.llm_calls", crate::span::int(llm_calls));
        span.record("recourse.tokens.prompt", crate::span::int(tokens.prompt));
        span.record(
            "recourse.tokens.completion",
            crate::span::int(tokens.completion),
        );
        match correction {
            Correction::Corrected {
                payload,
                layer,
                reason,
                tried,
                ..
            } => {
                self.verdicts(tried);
                span.record("recourse.layer", layer.as_str());
                self.accept(payload, layer, &reason, &span)
            }
            Correction::CannotFix { tried, .. } => {
                self.verdicts(tried);
                span.record("recourse.verdict", Verdict::CannotFix.as_str());
                Corrected::CannotFix
            }
        }
    }

    fn spend(&mut self, llm_calls: u32, tokens: TokenUsage, took: std::time::Duration) {
        if llm_calls > 0 {
            self.spent.llm_time += took;
        }
        self.spent.llm_calls += llm_calls;
        self.spent.tokens.prompt += tokens.prompt;
        self.spent.tokens.completion += tokens.completion;
    }

    fn verdicts(&mut self, tried: Vec<LayerVerdict>) {
        for v in tried {
            self.event(Event::Correction {
                layer: v.layer,
                verdict: v.verdict,
                reason: redact(&v.reason),
            });
        }
    }

    fn accept(
        &mut self,
        candidate: Value,
        layer: CorrectionLayer,
        reason: &str,
        span: &Span,
    ) -> Corrected {
        match self.gate(candidate) {
            Ok(admitted) => {
                span.record("recourse.verdict", Verdict::Fixed.as_str());
                self.event(Event::Correction {
                    layer,
                    verdict: Verdict::Fixed,
                    reason: redact(reason),
                });
                self.payload.value = admitted.payload;
                self.payload.source = layer.into();
                self.coerced(admitted.changes);
                Corrected::Accepted {
                    mutable_inputs: self
                        .payload
                        .protected
                        .has_mutable_inputs(&self.payload.value),
                }
            }
            Err(rejection) => {
                let verdict = Verdict::RejectedByGate {
                    rule: rejection.rule,
                };
                span.record("recourse.verdict", verdict.as_str());
                span.record("recourse.gate_rule", rejection.rule.as_str());
                self.event(Event::Correction {
                    layer,
                    verdict,
                    reason: rejection.detail,
                });
                Corrected::CannotFix
            }
        }
    }

    /// The gate every corrected payload passes, whichever corrector made it:
    /// the same check [`CorrectionChain`](crate::correction::CorrectionChain) applies to
    /// its own layers (an object, changed, protected values intact, no field
    /// the schema lacks, valid after coercion), then the executor's admission
    /// and the protected values once more.
    fn gate(&self, candidate: Value) -> Result<Admitted, Rejection> {
        let schema = self.call.described.schema.as_ref();
        let gated = gate(
            candidate,
            &self.payload.value,
            &self.payload.protected,
            schema,
        )?;
        let mut admitted =
            self.exec
                .admission
                .admit(gated.payload, schema, &self.payload.protected);
        self.payload
            .protected
            .check(&admitted.payload)
            .map_err(|v| Rejection::protected(&v))?;
        if admitted.payload == self.payload.value {
            return Err(Rejection::unchanged());
        }
        let mut changes = gated.changes;
        changes.append(&mut admitted.changes);
        admitted.changes = changes;
        Ok(admitted)
    }
}
