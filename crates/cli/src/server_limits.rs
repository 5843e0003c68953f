//! The server-limit flags shared by `recourse serve` and `recourse tools serve`.

use std::time::Duration;

use anyhow::Context;
use recourse_tool::ServerLimits;

/// How long, how many and how much a server accepts.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct LimitArgs {
    /// Seconds a request's headers may take to arrive, from its first byte (then 408).
    #[arg(long, value_name = "SECS", default_value = "10", value_parser = positive_secs)]
    header_timeout: Duration,
    /// Seconds a request's whole body may take to arrive (then 408).
    #[arg(long, value_name = "SECS", default_value = "30", value_parser = positive_secs)]
    body_timeout: Duration,
    /// Seconds a kept-alive connection may wait for its next request, or a response
    /// for the client to read any of it (then closed).
    #[arg(long, value_name = "SECS", default_value = "60", value_parser = positive_secs)]
    idle_timeout: Duration,
    /// Connections open at once; at the cap the longest-idle one is closed,
    /// and with none idle a new one gets 503 OVERLOADED.
    #[arg(long, value_name = "N", default_value_t = 4096, value_parser = clap::value_parser!(u32).range(1..))]
    max_connections: u32,
    /// Requests in flight at once, until each response is written (then 503 OVERLOADED).
    #[arg(long, value_name = "N", default_value_t = 1024, value_parser = clap::value_parser!(u32).range(1..))]
    max_in_flight: u32,
    /// Seconds a shutdown waits for open requests before closing what is left.
    #[arg(long, value_name = "SECS", default_value = "10", value_parser = positive_secs)]
    shutdown_grace: Duration,
}

impl LimitArgs {
    /// The limits these flags give.
    pub(crate) fn limits(&self) -> anyhow::Result<ServerLimits> {
        ServerLimits::builder()
            .header_timeout(self.header_timeout)
            .body_timeout(self.body_timeout)
            .idle_timeout(self.idle_timeout)
            .max_connections(self.max_connections as usize)
            .max_in_flight(self.max_in_flight as usize)
            .shutdown_grace(self.shutdown_grace)
            .build()
            .context("server limits")
    }

    /// The shutdown grace, for messages.
    pub(crate) fn shutdown_grace(&self) -> Duration {
        self.shutdown_grace
    }
}

/// A number of seconds, zero or more, fractions allowed (`0.5`).
pub(crate) fn secs(text: &str) -> Result<Duration, String> {
    let secs: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a number of seconds"))?;
    Duration::try_from_secs_f64(secs)
        .map_err(|_| format!("{text:?} is not a positive number of seconds"))
}

/// A positive number of seconds, fractions allowed (`0.5`).
fn positive_secs(text: &str) -> Result<Duration, String> {
    let duration = secs(text)?;
    if duration.is_zero() {
        return Err(format!("{text:?} must be more than zero seconds"));
    }
    Ok(duration)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        limits: LimitArgs,
    }

    #[test]
    fn no_flags_give_the_library_defaults() {
        let cli = Cli::try_parse_from(["x"]).unwrap();
        assert_eq!(cli.limits.limits().unwrap(), ServerLimits::default());
    }

    #[test]
    fn flags_set_each_limit() {
        let cli = Cli::try_parse_from([
            "x",
            "--header-timeout",
            "0.5",
            "--body-timeout",
            "3",
            "--idle-timeout",
            "4",
            "--max-connections",
            "5",
            "--max-in-flight",
            "6",
            "--shutdown-grace",
            "7",
        ])
        .unwrap();
        let l = cli.limits.limits().unwrap();
        assert_eq!(l.header_timeout(), Duration::from_millis(500));
        assert_eq!(l.body_timeout(), Duration::from_secs(3));
        assert_eq!(l.idle_timeout(), Duration::from_secs(4));
        assert_eq!(l.max_connections(), 5);
        assert_eq!(l.max_in_flight(), 6);
        assert_eq!(l.shutdown_grace(), Duration::from_secs(7));
    }

    #[test]
    fn zero_negative_and_junk_are_usage_errors() {
        for (arg, flag) in [
            ("--header-timeout=0", "--header-timeout"),
            ("--body-timeout=-1", "--body-timeout"),
            ("--idle-timeout=soon", "--idle-timeout"),
            ("--shutdown-grace=NaN", "--shutdown-grace"),
            ("--max-connections=0", "--max-connections"),
            ("--max-in-flight=-3", "--max-in-flight"),
        ] {
            let err = Cli::try_parse_from(["x", arg]).err().unwrap();
            assert_eq!(err.exit_code(), 2, "{arg}");
            assert!(err.to_string().contains(flag), "{err}");
        }
    }
}
