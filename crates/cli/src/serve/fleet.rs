//! Running as one replica of a fleet: shared resilience state and draining.
//!
//! `--shared-state redis://…` makes the retry budget and the circuit
//! breakers fleet-wide (see [`recourse::shared::SharedState`] for who decides when);
//! `--drain-delay` keeps serving for a while after SIGTERM with `/readyz`
//! answering 503, so a load balancer stops sending before the gateway stops
//! accepting.

use std::time::Duration;

use anyhow::Result;
use clap::Args;
use recourse::shared::{RedisSharedState, RedisSharedStateBuilder};

use crate::settings::Settings;

/// The fleet flags of `recourse serve`.
#[derive(Debug, Args)]
pub(crate) struct FleetArgs {
    /// Share the retry budget and circuit breakers with every gateway using this Redis,
    /// `redis://[:PASSWORD@]HOST[:PORT][/DB]` (no TLS). When Redis does not answer, each
    /// gateway decides on its own state until it does [env: RECOURSE_SHARED_STATE].
    #[arg(long = "shared-state", value_name = "URL", value_parser = crate::settings::location)]
    shared_state: Option<String>,
    /// Start every shared-state key with PREFIX, to keep fleets sharing one Redis apart.
    #[arg(long, value_name = "PREFIX", default_value = "recourse:")]
    shared_state_prefix: String,
    /// Milliseconds each Redis operation may take before the call decides on local state
    /// (three in a row, or any connection error, put the gateway in fallback).
    #[arg(long, value_name = "MS", default_value_t = 50, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    shared_state_timeout_ms: u64,
    /// Seconds to keep serving after SIGTERM, with /readyz answering 503 `draining`,
    /// before no new connection is accepted and in-flight calls finish.
    #[arg(long, value_name = "SECS", default_value = "0", value_parser = crate::server_limits::secs)]
    drain_delay: Duration,
}

impl FleetArgs {
    /// The shared state's settings, checked — without connecting.
    ///
    /// # Errors
    /// An unusable URL or prefix.
    pub(crate) fn shared_state(
        &self,
        settings: &Settings,
    ) -> Result<Option<RedisSharedStateBuilder>> {
        let Some(url) = self.shared_state.as_deref().or(settings.shared_state()) else {
            return Ok(None);
        };
        let builder = RedisSharedState::builder(url)
            .and_then(|b| b.with_prefix(&self.shared_state_prefix))
            .map_err(|e| anyhow::anyhow!("--shared-state: {e}"))?
            .with_op_timeout(Duration::from_millis(self.shared_state_timeout_ms));
        Ok(Some(builder))
    }

    /// How long to keep serving after SIGTERM.
    pub(crate) fn drain_delay(&self) -> Duration {
        self.drain_delay
    }
}
