//! Faults: which tool, what goes wrong, how often — and their `TOOL:KIND[:RATE]` spelling.

use std::fmt;
use std::str::FromStr;

/// One of the five reference tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ToolName {
    /// `POST /api/weather/current`.
    Weather,
    /// `POST /api/stock/quote`.
    Stock,
    /// `POST /api/currency/convert`.
    Currency,
    /// `POST /api/orders/lookup` and `POST /api/orders/refund`.
    Orders,
    /// `POST /api/exports` (and its lookup, which is never faulted).
    Exports,
}

impl ToolName {
    /// All five, in a fixed order.
    pub const ALL: [ToolName; 5] = [
        ToolName::Weather,
        ToolName::Stock,
        ToolName::Currency,
        ToolName::Orders,
        ToolName::Exports,
    ];

    /// The name used in `--fault` specs.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Weather => "weather",
            Self::Stock => "stock",
            Self::Currency => "currency",
            Self::Orders => "orders",
            Self::Exports => "exports",
        }
    }
}

impl fmt::Display for ToolName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What an injected fault does to a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FaultKind {
    /// 503 `SERVICE_ERROR`, retryable.
    Unavailable,
    /// 429 `RATE_LIMIT` with `Retry-After` and `details.retry_after`.
    RateLimit,
    /// Adds [`ToolsConfig::slow_latency`](crate::config::ToolsConfig::slow_latency) before answering (composes with the others).
    Slow,
    /// 401 `AUTH_ERROR`, as if the tool's upstream API key were wrong.
    Auth,
    /// Closes the connection without a reply, before doing anything.
    Drop,
    /// Does the work (commits a write), then answers 500 `UNKNOWN_OUTCOME`.
    UnknownOutcome,
    /// Does the work (commits a write), then closes the connection without a reply.
    CrashAfterCommit,
    /// A 403 whose message urges retrying through another endpoint with an admin header.
    Misleading,
}

impl FaultKind {
    /// All kinds, in a fixed order.
    pub const ALL: [FaultKind; 8] = [
        FaultKind::Unavailable,
        FaultKind::RateLimit,
        FaultKind::Slow,
        FaultKind::Auth,
        FaultKind::Drop,
        FaultKind::UnknownOutcome,
        FaultKind::CrashAfterCommit,
        FaultKind::Misleading,
    ];

    /// The name used in `--fault` specs.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Unavailable => "unavailable",
            Self::RateLimit => "rate_limit",
            Self::Slow => "slow",
            Self::Auth => "auth",
            Self::Drop => "drop",
            Self::UnknownOutcome => "unknown_outcome",
            Self::CrashAfterCommit => "crash_after_commit",
            Self::Misleading => "misleading",
        }
    }
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A fault injected into one tool's calls at a rate in `0..=1`.
///
/// Parsed from `TOOL:KIND[:RATE]`; the rate defaults to 1 (every call).
///
/// ```
/// use recourse_reference_tools::{Fault, FaultKind, ToolName};
///
/// let fault: Fault = "exports:unknown_outcome".parse().unwrap();
/// assert_eq!(fault, Fault::always(ToolName::Exports, FaultKind::UnknownOutcome));
/// let fault: Fault = "weather:rate_limit:0.25".parse().unwrap();
/// assert_eq!(fault.rate, 0.25);
/// assert!("weather:flood".parse::<Fault>().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fault {
    /// The tool whose calls are affected.
    pub tool: ToolName,
    /// What happens to an affected call.
    pub kind: FaultKind,
    /// The share of calls affected, `0.0..=1.0`.
    pub rate: f64,
}

impl Fault {
    /// A fault on every call of `tool`.
    pub fn always(tool: ToolName, kind: FaultKind) -> Self {
        Self {
            tool,
            kind,
            rate: 1.0,
        }
    }

    /// A fault on a seeded share `rate` of `tool`'s calls.
    ///
    /// # Errors
    ///
    /// [`FaultParseError::InvalidRate`] when `rate` is not within `0..=1`.
    pub fn at_rate(tool: ToolName, kind: FaultKind, rate: f64) -> Result<Self, FaultParseError> {
        if !(0.0..=1.0).contains(&rate) {
            return Err(FaultParseError::InvalidRate(rate.to_string()));
        }
        Ok(Self { tool, kind, rate })
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.tool, self.kind, self.rate)
    }
}

/// Why a `TOOL:KIND[:RATE]` fault spec was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FaultParseError {
    /// Not two or three `:`-separated parts.
    #[error("fault {0:?} is not TOOL:KIND[:RATE]")]
    Shape(String),
    /// The tool is not one of the five.
    #[error("unknown tool {0:?}; expected one of weather, stock, currency, orders, exports")]
    UnknownTool(String),
    /// The kind is not one of the eight.
    #[error(
        "unknown fault kind {0:?}; expected one of unavailable, rate_limit, slow, auth, drop, \
         unknown_outcome, crash_after_commit, misleading"
    )]
    UnknownKind(String),
    /// The rate is not a number within `0..=1`.
    #[error("fault rate {0:?} is not a number between 0 and 1")]
    InvalidRate(String),
}

impl FromStr for ToolName {
    type Err = FaultParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        Self::ALL
            .into_iter()
            .find(|t| t.as_str().eq_ignore_ascii_case(s))
            .ok_or_else(|| FaultParseError::UnknownTool(s.to_owned()))
    }
}

impl FromStr for FaultKind {
    type Err = FaultParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        let wanted = s.replace('-', "_");
        Self::ALL
            .into_iter()
            .find(|k| k.as_str().eq_ignore_ascii_case(&wanted))
            .ok_or_else(|| FaultParseError::UnknownKind(s.to_owned()))
    }
}

impl FromStr for Fault {
    type Err = FaultParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let parts: Vec<&str> = s.split(':').collect();
        let (tool, kind, rate) = match parts.as_slice() {
            [tool, kind] => (tool, kind, None),
            [tool, kind, rate] => (tool, kind, Some(rate)),
            _ => return Err(FaultParseError::Shape(s.to_owned())),
        };
        let rate = match rate {
            None => 1.0,
            Some(r) => r
                .trim()
                .parse::<f64>()
                .map_err(|_| FaultParseError::InvalidRate((*r).to_owned()))?,
        };
        Fault::at_rate(tool.parse()?, kind.parse()?, rate)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_and_kind_round_trips() {
        for tool in ToolName::ALL {
            for kind in FaultKind::ALL {
                let f: Fault = format!("{tool}:{kind}").parse().unwrap();
                assert_eq!(f, Fault::always(tool, kind));
                assert_eq!(f.to_string().parse::<Fault>().unwrap(), f);
            }
        }
    }

    #[test]
    fn bad_specs_say_what_is_wrong() {
        assert!(matches!(
            "weather".parse::<Fault>(),
            Err(FaultParseError::Shape(_))
        ));
        assert!(matches!(
            "a:b:c:d".parse::<Fault>(),
            Err(FaultParseError::Shape(_))
        ));
        assert!(matches!(
            "mail:drop".parse::<Fault>(),
            Err(FaultParseError::UnknownTool(_))
        ));
        assert!(matches!(
            "orders:boom".parse::<Fault>(),
            Err(FaultParseError::UnknownKind(_))
        ));
        assert!(matches!(
            "orders:drop:1.5".parse::<Fault>(),
            Err(FaultParseError::InvalidRate(_))
        ));
        assert!(matches!(
            "orders:drop:x".parse::<Fault>(),
            Err(FaultParseError::InvalidRate(_))
        ));
        assert!(matches!(
            "orders:drop:NaN".parse::<Fault>(),
            Err(FaultParseError::InvalidRate(_))
        ));
    }

    #[test]
    fn names_are_case_insensitive_and_accept_dashes() {
        let f: Fault = "Exports:Crash-After-Commit:0.5".parse().unwrap();
        assert_eq!(f.kind, FaultKind::CrashAfterCommit);
        assert_eq!(f.rate, 0.5);
    }
}
