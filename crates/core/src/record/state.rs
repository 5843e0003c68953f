//! Where a call stands: in flight, or finished one of three ways — what the
//! journal keeps and the record's journal events say.

use std::fmt;

use serde::Serialize;

/// Where a journaled call stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum CallState {
    /// Recorded, not finished: running now, or interrupted by a crash.
    InFlight,
    /// Finished successfully.
    Succeeded,
    /// Finished without success; nothing is in doubt.
    Failed,
    /// Finished with the outcome of a write unknown.
    Unknown,
}

impl CallState {
    /// The snake-case name stored and reported.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InFlight => "in_flight",
            Self::Succeeded => "succeeded",
            Self::Failed => "failed",
            Self::Unknown => "unknown",
        }
    }

    /// Parses a stored or user-given name.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "in_flight" => Self::InFlight,
            "succeeded" => Self::Succeeded,
            "failed" => Self::Failed,
            "unknown" => Self::Unknown,
            _ => return None,
        })
    }
}

impl fmt::Display for CallState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
