//! Where a call stands: waiting for a person's approval, in flight, or
//! finished one of three ways — what the journal keeps and the record's
//! journal events say.

use std::fmt;

use serde::{Deserialize, Serialize};
use strum::{EnumIter, EnumString, IntoStaticStr, VariantNames};

/// Where a journaled call stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
#[derive(IntoStaticStr, EnumString, EnumIter, VariantNames)]
#[strum(serialize_all = "snake_case")]
pub enum CallState {
    /// Recorded, not finished: running now, or interrupted by a crash.
    InFlight,
    /// Finished successfully.
    Succeeded,
    /// Finished without success; nothing is in doubt.
    Failed,
    /// Finished with the outcome of a write unknown.
    Unknown,
    /// Recorded, never dispatched: it waits for a person to approve it
    /// (then it goes in flight) or reject it (then it fails), or for its
    /// approval to expire (then it fails too).
    AwaitingApproval,
}

impl CallState {
    /// The snake-case name stored and reported.
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// Whether the call waits for a person: its outcome is in doubt
    /// (`unknown`) or it awaits approval — what an approver sees of every
    /// caller's calls.
    pub fn awaits_a_person(self) -> bool {
        matches!(self, Self::Unknown | Self::AwaitingApproval)
    }

    /// Every state's name, in declaration order.
    pub fn names() -> &'static [&'static str] {
        Self::VARIANTS
    }

    /// Parses a stored or user-given name (its [`FromStr`](std::str::FromStr), as an option).
    pub fn parse(s: &str) -> Option<Self> {
        s.parse().ok()
    }
}

impl fmt::Display for CallState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
