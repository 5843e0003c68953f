//! The budget and breakers, local and shared, as one call sees them.
//!
//! The local budget and breakers are always fed, so a process that loses the
//! shared state decides from its own experience; the shared state decides
//! while it answers, and the local state whenever it does not (see
//! [`SharedState`](crate::shared::SharedState)).

use super::Run;
use crate::shared::EndpointHealth;

impl Run<'_> {
    /// Records the logical call in the budgets.
    pub(super) async fn deposit(&self) {
        let Some(budget) = &self.exec.budget else {
            return;
        };
        budget.deposit();
        if let Some(shared) = &self.exec.shared {
            // Unavailable: the local deposit above is the one that counts.
            let _ = shared.deposit().await;
        }
    }

    /// Takes a resend from the budget: the fleet's, else this process's.
    pub(super) async fn withdraw(&self) -> bool {
        let Some(budget) = &self.exec.budget else {
            return true;
        };
        match &self.exec.shared {
            Some(shared) => match shared.withdraw().await {
                Ok(true) => true,
                Ok(false) => {
                    budget.count_refusal();
                    false
                }
                Err(_) => budget.withdraw(),
            },
            None => budget.withdraw(),
        }
    }

    /// Whether the endpoint's breaker lets this attempt go.
    pub(super) async fn admit(&self) -> bool {
        let Some(breakers) = &self.exec.breakers else {
            return true;
        };
        let endpoint = self.call.target.endpoint();
        match &self.exec.shared {
            Some(shared) => match shared.admit(endpoint).await {
                Ok(admitted) => admitted,
                Err(_) => breakers.admit(endpoint),
            },
            None => breakers.admit(endpoint),
        }
    }

    /// Tells the breakers how the endpoint answered.
    pub(super) async fn record_health(&self, health: EndpointHealth) {
        let Some(breakers) = &self.exec.breakers else {
            return;
        };
        let endpoint = self.call.target.endpoint();
        match health {
            EndpointHealth::Healthy => breakers.record_healthy(endpoint),
            EndpointHealth::TransientFailure => breakers.record_transient_failure(endpoint),
        }
        if let Some(shared) = &self.exec.shared {
            let _ = shared.record(endpoint, health).await;
        }
    }
}
