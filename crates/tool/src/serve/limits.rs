//! `ServerLimits`: how long, how many and how much a server accepts.

use std::fmt;
use std::time::Duration;

/// The limits a server started with [`serve`](crate::serve::serve) enforces.
///
/// The defaults suit a service on a trusted network that still has to
/// survive a misbehaving or hostile client:
///
/// | limit | default | past it |
/// |---|---|---|
/// | header timeout | 10 s from a request's first byte | 408 `REQUEST_TIMEOUT` envelope, connection closed |
/// | body timeout | 30 s for the whole body, from the end of its headers | 408 `REQUEST_TIMEOUT` envelope from [`ToolJson`](crate::extract::ToolJson) |
/// | idle timeout | 60 s without a request on a kept-alive connection, or without the client reading any of a response | connection closed |
/// | max connections | 4,096 | the longest-idle connection is closed; with none idle, the new one gets a 503 `OVERLOADED` envelope and is closed |
/// | max in flight | 1,024 requests, until each response is written | 503 `OVERLOADED` envelope with `Retry-After` |
/// | shutdown grace | 10 s after the shutdown signal | connections still open are closed |
/// | header size | 16 KiB and 100 header lines | 431 `HEADERS_TOO_LARGE` envelope, connection closed |
/// | body memory | 64 MiB of request bodies held at once, server-wide | 503 `OVERLOADED` envelope from [`ToolJson`](crate::extract::ToolJson) |
///
/// ```
/// use std::time::Duration;
/// use recourse_tool::ServerLimits;
///
/// let limits = ServerLimits::builder()
///     .header_timeout(Duration::from_secs(5))
///     .max_in_flight(64)
///     .build()
///     .unwrap();
/// assert_eq!(limits.header_timeout(), Duration::from_secs(5));
/// assert_eq!(limits.max_connections(), 4096);
///
/// let err = ServerLimits::builder().max_in_flight(0).build().unwrap_err();
/// assert_eq!(err.to_string(), "max in-flight requests must be at least 1");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerLimits {
    header_timeout: Duration,
    body_timeout: Duration,
    idle_timeout: Duration,
    max_connections: usize,
    max_in_flight: usize,
    shutdown_grace: Duration,
    max_header_bytes: usize,
    max_headers: usize,
    max_body_memory: usize,
}

/// The largest header block a server may be configured to accept: hyper
/// refuses longer request lines by itself, without an envelope.
pub(crate) const HEADER_BYTES_CEILING: usize = 60 * 1024;

impl Default for ServerLimits {
    fn default() -> Self {
        Self {
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(60),
            max_connections: 4096,
            max_in_flight: 1024,
            shutdown_grace: Duration::from_secs(10),
            max_header_bytes: 16 * 1024,
            max_headers: 100,
            max_body_memory: 64 * 1024 * 1024,
        }
    }
}

impl ServerLimits {
    /// A builder starting from the defaults.
    pub fn builder() -> ServerLimitsBuilder {
        ServerLimitsBuilder {
            limits: Self::default(),
        }
    }

    /// How long a request's headers may take to arrive, from its first byte.
    pub fn header_timeout(&self) -> Duration {
        self.header_timeout
    }

    /// How long a request's whole body may take to arrive, from the end of its headers.
    pub fn body_timeout(&self) -> Duration {
        self.body_timeout
    }

    /// How long a kept-alive connection may wait for its next request, and
    /// how long a response may wait for the client to read any of it.
    pub fn idle_timeout(&self) -> Duration {
        self.idle_timeout
    }

    /// How many connections may be open at once.
    pub fn max_connections(&self) -> usize {
        self.max_connections
    }

    /// How many requests may be in flight (handled or being answered) at once.
    pub fn max_in_flight(&self) -> usize {
        self.max_in_flight
    }

    /// How long a graceful shutdown waits for open connections before closing them.
    pub fn shutdown_grace(&self) -> Duration {
        self.shutdown_grace
    }

    /// The largest header block accepted, in bytes (request line included).
    pub fn max_header_bytes(&self) -> usize {
        self.max_header_bytes
    }

    /// The most header lines a request may have.
    pub fn max_headers(&self) -> usize {
        self.max_headers
    }

    /// How many bytes of request bodies the server holds at once, across all requests.
    pub fn max_body_memory(&self) -> usize {
        self.max_body_memory
    }
}

/// Builds [`ServerLimits`], checking each value once, in [`build`](Self::build).
#[derive(Debug, Clone)]
#[must_use]
pub struct ServerLimitsBuilder {
    limits: ServerLimits,
}

impl ServerLimitsBuilder {
    /// See [`ServerLimits::header_timeout`].
    pub fn header_timeout(mut self, timeout: Duration) -> Self {
        self.limits.header_timeout = timeout;
        self
    }

    /// See [`ServerLimits::body_timeout`].
    pub fn body_timeout(mut self, timeout: Duration) -> Self {
        self.limits.body_timeout = timeout;
        self
    }

    /// See [`ServerLimits::idle_timeout`].
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.limits.idle_timeout = timeout;
        self
    }

    /// See [`ServerLimits::max_connections`].
    pub fn max_connections(mut self, n: usize) -> Self {
        self.limits.max_connections = n;
        self
    }

    /// See [`ServerLimits::max_in_flight`].
    pub fn max_in_flight(mut self, n: usize) -> Self {
        self.limits.max_in_flight = n;
        self
    }

    /// See [`ServerLimits::shutdown_grace`].
    pub fn shutdown_grace(mut self, grace: Duration) -> Self {
        self.limits.shutdown_grace = grace;
        self
    }

    /// See [`ServerLimits::max_header_bytes`]; at most 60 KiB.
    pub fn max_header_bytes(mut self, bytes: usize) -> Self {
        self.limits.max_header_bytes = bytes;
        self
    }

    /// See [`ServerLimits::max_headers`].
    pub fn max_headers(mut self, n: usize) -> Self {
        self.limits.max_headers = n;
        self
    }

    /// See [`ServerLimits::max_body_memory`].
    pub fn max_body_memory(mut self, bytes: usize) -> Self {
        self.limits.max_body_memory = bytes;
        self
    }

    /// The limits, once each is checked.
    ///
    /// # Errors
    ///
    /// [`InvalidLimit`] naming the first limit that is zero, or a header
    /// size above 60 KiB.
    pub fn build(self) -> Result<ServerLimits, InvalidLimit> {
        let l = self.limits;
        let zero_duration = [
            (l.header_timeout, "header timeout"),
            (l.body_timeout, "body timeout"),
            (l.idle_timeout, "idle timeout"),
            (l.shutdown_grace, "shutdown grace"),
        ];
        if let Some((_, name)) = zero_duration.iter().find(|(d, _)| d.is_zero()) {
            return Err(InvalidLimit(format!("{name} must be longer than zero")));
        }
        let zero_count = [
            (l.max_connections, "max connections"),
            (l.max_in_flight, "max in-flight requests"),
            (l.max_header_bytes, "max header bytes"),
            (l.max_headers, "max headers"),
            (l.max_body_memory, "max body memory"),
        ];
        if let Some((_, name)) = zero_count.iter().find(|(n, _)| *n == 0) {
            return Err(InvalidLimit(format!("{name} must be at least 1")));
        }
        if l.max_header_bytes > HEADER_BYTES_CEILING {
            return Err(InvalidLimit(format!(
                "max header bytes must be at most {HEADER_BYTES_CEILING}"
            )));
        }
        Ok(l)
    }
}

/// A [`ServerLimits`] value that cannot work, named.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidLimit(String);

impl fmt::Display for InvalidLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for InvalidLimit {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_documented_values() {
        let d = ServerLimits::default();
        assert_eq!(ServerLimits::builder().build(), Ok(d));
        assert_eq!(d.header_timeout(), Duration::from_secs(10));
        assert_eq!(d.body_timeout(), Duration::from_secs(30));
        assert_eq!(d.idle_timeout(), Duration::from_secs(60));
        assert_eq!(d.max_connections(), 4096);
        assert_eq!(d.max_in_flight(), 1024);
        assert_eq!(d.shutdown_grace(), Duration::from_secs(10));
    }

    #[test]
    fn zero_and_oversized_values_are_named() {
        let err = ServerLimits::builder()
            .idle_timeout(Duration::ZERO)
            .build()
            .unwrap_err();
        assert_eq!(err.to_string(), "idle timeout must be longer than zero");
        let err = ServerLimits::builder()
            .max_connections(0)
            .build()
            .unwrap_err();
        assert_eq!(err.to_string(), "max connections must be at least 1");
        assert!(
            ServerLimits::builder()
                .max_header_bytes(HEADER_BYTES_CEILING + 1)
                .build()
                .is_err()
        );
    }
}
