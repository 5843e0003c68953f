//! The executor's flags for a command that runs many calls (`recourse mcp
//! proxy`): the same names and meanings as `recourse call`'s.

use std::time::Duration;

use clap::Args;
use recourse::ExecutorConfig;

/// How hard and how long each call tries.
#[derive(Debug, Args)]
pub(crate) struct ExecutorArgs {
    /// Same-payload resends allowed [env: RECOURSE_MAX_RETRIES] [default: 3].
    #[arg(long, value_name = "N")]
    max_retries: Option<u32>,
    /// Each call's deadline, in seconds.
    #[arg(long, value_name = "SECS", value_parser = positive_seconds)]
    deadline: Option<Duration>,
    /// The backoff base, in milliseconds [env: RECOURSE_BACKOFF_MS] [default: 1000].
    #[arg(long, value_name = "MS")]
    backoff_ms: Option<u64>,
    /// Each attempt's timeout, in seconds.
    #[arg(long, value_name = "SECS", value_parser = positive_seconds)]
    timeout: Option<Duration>,
    #[command(flatten)]
    lease: crate::settings::LeaseArg,
}

impl ExecutorArgs {
    /// `config` with what the flags say.
    pub(crate) fn apply(&self, config: &mut ExecutorConfig) {
        if let Some(n) = self.max_retries {
            config.limits.max_retries = n;
        }
        if let Some(deadline) = self.deadline {
            config.deadline = Some(deadline);
        }
        if let Some(ms) = self.backoff_ms {
            config.backoff_base = Duration::from_millis(ms);
        }
        if let Some(timeout) = self.timeout {
            config.request_timeout = timeout;
        }
        self.lease.apply(config);
    }
}

/// A positive number of seconds, fractions allowed (`0.5`).
fn positive_seconds(text: &str) -> Result<Duration, String> {
    let secs: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a number of seconds"))?;
    if !(secs.is_finite() && secs > 0.0) {
        return Err(format!("must be a positive number of seconds, not {text}"));
    }
    Duration::try_from_secs_f64(secs).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_are_positive_and_finite() {
        assert_eq!(positive_seconds("0.5"), Ok(Duration::from_millis(500)));
        for bad in ["0", "-1", "NaN", "inf", "soon", "1e300"] {
            assert!(positive_seconds(bad).is_err(), "{bad}");
        }
    }
}
