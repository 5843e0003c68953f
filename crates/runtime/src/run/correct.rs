//! The `Correct` action: ask the corrector, and gate what it proposes.

use serde_json::Value;
use tracing::Instrument;

use super::{Flow, Run};
use crate::{Correction, CorrectionRequest, PayloadSource, Schema, StopReason, TokenUsage};
use recourse_protocol::ToolError;

impl Run<'_> {
    pub(super) async fn correct(&mut self) -> Flow {
        let Some(corrector) = self.exec.corrector.clone() else {
            return Flow::Done(self.stopped(StopReason::NoCorrector));
        };
        let error = self
            .last_error
            .clone()
            .unwrap_or_else(|| ToolError::input_error("UNSPECIFIED", "the tool gave no error"));
        let request = CorrectionRequest {
            target: &self.call.target,
            payload: &self.payload,
            error: &error,
            protected: &self.protected,
            schema: self.call.schema.as_ref(),
            intent: self.call.intent.as_deref(),
            attempt: self.corrections + 1,
        };
        let span = tracing::info_span!("correction", attempt = self.corrections + 1);
        let asked_at = self.exec.clock.now();
        let correction = corrector.correct(request).instrument(span).await;
        let took = self.exec.clock.now().saturating_duration_since(asked_at);
        self.corrections += 1;
        match correction {
            Correction::Corrected {
                payload,
                source,
                note,
                llm_calls,
                tokens,
            } => {
                self.spend(llm_calls, tokens, took);
                self.accept_correction(payload, source, &note)
            }
            Correction::CannotFix {
                why,
                llm_calls,
                tokens,
            } => {
                self.spend(llm_calls, tokens, took);
                self.note(format!("cannot fix: {why}"));
                Flow::Done(self.stopped(StopReason::CannotFix))
            }
        }
    }

    fn spend(&mut self, llm_calls: u32, tokens: TokenUsage, took: std::time::Duration) {
        if llm_calls > 0 {
            self.llm_time += took;
        }
        self.llm_calls += llm_calls;
        self.tokens.prompt += tokens.prompt;
        self.tokens.completion += tokens.completion;
    }

    fn accept_correction(&mut self, candidate: Value, source: PayloadSource, note: &str) -> Flow {
        match self.gate(candidate) {
            Ok(admitted) => {
                self.note(format!("{} correction: {note}", source.as_str()));
                self.payload = admitted;
                self.source = source;
                Flow::Next
            }
            Err(why) => {
                self.note(format!("{} correction rejected: {why}", source.as_str()));
                Flow::Done(self.stopped(StopReason::CannotFix))
            }
        }
    }

    /// The gate every corrected payload passes, whichever corrector made it:
    /// the same check [`CorrectionChain`](crate::CorrectionChain) applies to
    /// its own layers (an object, changed, protected values intact, no field
    /// the schema lacks, valid after coercion), then the executor's admission
    /// and the protected values once more.
    fn gate(&self, candidate: Value) -> Result<Value, String> {
        let schema = match &self.call.schema {
            Some(raw) => Some(
                Schema::compile(raw).map_err(|e| format!("the call's schema is unusable: {e}"))?,
            ),
            None => None,
        };
        let gated =
            crate::correction::gate(candidate, &self.payload, &self.protected, schema.as_ref())?;
        let admitted = self
            .exec
            .admission
            .admit(gated, self.call.schema.as_ref(), &self.protected);
        self.protected
            .check(&admitted.payload)
            .map_err(|v| v.to_string())?;
        if admitted.payload == self.payload {
            return Err("unchanged from the failed payload after admission".to_owned());
        }
        Ok(admitted.payload)
    }
}
