//! L4 contextual re-resolution: a model re-derives the parameters from the
//! user's original request and earlier steps' results.
//!
//! L3 sees only the failure; some failures cannot be fixed from it. "amount
//! must be greater than 0" says nothing about what the amount should be — but
//! the user asked to sell 100 shares, and an earlier step quoted the price.
//! L4 gives the model that context and asks again.

use serde_json::Value;

use super::ask::Asker;
use super::prompt::reresolution_messages;
use super::reply::{flag, text};
use crate::correction::{Correction, CorrectionRequest, Corrector};
use crate::correction::{LlmCorrector, Trajectory};
use crate::transport::BoxFuture;
use recourse_core::record::CorrectionLayer;

/// L4: asks a model for `{"should_retry", "analysis", "corrected_parameters",
/// "is_transient_error"}` given a [`Trajectory`].
#[derive(Debug, Clone)]
pub struct ContextualReresolution {
    inner: LlmCorrector,
}

impl ContextualReresolution {
    /// Re-resolution with the model and settings of `corrector`.
    pub fn new(corrector: LlmCorrector) -> Self {
        Self { inner: corrector }
    }

    fn asker(&self) -> &Asker {
        self.inner.asker()
    }

    /// Asks the model once. A failing model, a transient verdict, or a reply
    /// without `should_retry: true` and an object `corrected_parameters` is
    /// "cannot fix".
    pub async fn propose(
        &self,
        request: &CorrectionRequest<'_>,
        trajectory: &Trajectory,
    ) -> Correction {
        let asked = self
            .asker()
            .ask(
                CorrectionLayer::Semantic,
                request,
                reresolution_messages(request, trajectory),
            )
            .await;
        asked.into_correction(
            |reply| {
                let analysis = text(&reply, "analysis").to_owned();
                if flag(&reply, "is_transient_error") == Some(true) {
                    return Err(format!(
                        "the model judges the failure transient: {analysis}"
                    ));
                }
                if flag(&reply, "should_retry") != Some(true) {
                    return Err(format!("the model sees no better parameters: {analysis}"));
                }
                match reply.get("corrected_parameters") {
                    Some(p @ Value::Object(_)) => Ok((p.clone(), analysis)),
                    _ => Err("the model's reply has no corrected_parameters object".to_owned()),
                }
            },
            CorrectionLayer::Semantic,
        )
    }
}

impl Corrector for ContextualReresolution {
    fn correct<'a>(&'a self, request: CorrectionRequest<'a>) -> BoxFuture<'a, Correction> {
        Box::pin(async move {
            match request.intent {
                Some(intent) => self.propose(&request, &Trajectory::new(intent)).await,
                None => Correction::cannot_fix(
                    CorrectionLayer::Semantic,
                    "no original request to re-resolve from",
                ),
            }
        })
    }
}
