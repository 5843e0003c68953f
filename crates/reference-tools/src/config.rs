//! Configuration: the seed, the faults to inject, and their timings.

use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use recourse_tool::ServerLimits;

use crate::fault::Fault;

/// How the reference tools run: seed, faults and timings.
///
/// ```
/// use std::time::Duration;
/// use recourse_reference_tools::ToolsConfig;
///
/// let config = ToolsConfig::default()
///     .with_seed(7)
///     .with_fault("stock:unavailable:0.5".parse().unwrap())
///     .with_slow_latency(Duration::from_millis(20));
/// assert_eq!(config.faults.len(), 1);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ToolsConfig {
    /// Seeds fault decisions and operation ids: the same seed and the same
    /// sequence of calls give the same faults and ids.
    pub seed: u64,
    /// Faults to inject; several on one tool are rolled independently, `slow`
    /// adds to whichever other fault (or none) fires first.
    pub faults: Vec<Fault>,
    /// Latency added by the `slow` fault. Default 2 s.
    pub slow_latency: Duration,
    /// The wait a `rate_limit` fault demands. Default 1 s.
    pub retry_after: Duration,
    /// The address to bind: 127.0.0.1 by default. The tools have no
    /// authentication: anything but loopback serves them to the network.
    pub bind: IpAddr,
    /// The port to bind; 0 (the default) picks a free one.
    pub port: u16,
    /// The currency tool opts a non-positive `amount` into correction
    /// (`retryable: true`). Off by default: only the caller knows the intended
    /// amount, so the tool refuses retries unless told that the caller — a
    /// workflow holding the user's request and earlier results — can work it out.
    pub correctable_amounts: bool,
    /// How long, how many and how much the server accepts (see
    /// [`ServerLimits`]); the defaults unless set.
    pub limits: ServerLimits,
    /// The manifest names `exports_create`'s lookup (`reconcile`), so a
    /// gateway settles a crashed export by itself. Off, the lookup route
    /// still answers but the manifest names none: an export whose answer is
    /// lost stays `unknown` — for trying what follows. On by default.
    pub declare_lookups: bool,
}

impl Default for ToolsConfig {
    fn default() -> Self {
        Self {
            seed: 0,
            faults: Vec::new(),
            slow_latency: Duration::from_secs(2),
            retry_after: Duration::from_secs(1),
            bind: IpAddr::V4(Ipv4Addr::LOCALHOST),
            port: 0,
            correctable_amounts: false,
            limits: ServerLimits::default(),
            declare_lookups: true,
        }
    }
}

impl ToolsConfig {
    /// The manifest names no lookup for `exports_create` (see
    /// [`declare_lookups`](Self::declare_lookups)).
    #[must_use]
    pub fn without_declared_lookups(mut self) -> Self {
        self.declare_lookups = false;
        self
    }

    /// Sets the seed.
    #[must_use]
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Adds a fault.
    #[must_use]
    pub fn with_fault(mut self, fault: Fault) -> Self {
        self.faults.push(fault);
        self
    }

    /// Sets the latency of the `slow` fault.
    #[must_use]
    pub fn with_slow_latency(mut self, latency: Duration) -> Self {
        self.slow_latency = latency;
        self
    }

    /// Sets the wait a `rate_limit` fault demands.
    #[must_use]
    pub fn with_retry_after(mut self, wait: Duration) -> Self {
        self.retry_after = wait;
        self
    }

    /// Opts the currency tool's `INVALID_AMOUNT` into correction (`retryable: true`).
    #[must_use]
    pub fn with_correctable_amounts(mut self) -> Self {
        self.correctable_amounts = true;
        self
    }

    /// Sets the server's limits.
    #[must_use]
    pub fn with_limits(mut self, limits: ServerLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Sets the address to bind (127.0.0.1 by default).
    #[must_use]
    pub fn with_bind(mut self, bind: IpAddr) -> Self {
        self.bind = bind;
        self
    }

    /// Sets the port (0 for any free one).
    #[must_use]
    pub fn with_port(mut self, port: u16) -> Self {
        self.port = port;
        self
    }
}
