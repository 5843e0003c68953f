//! Where an approval stands: [`ApprovalState`].

use serde::{Deserialize, Serialize};
use strum::{EnumIter, EnumString, IntoStaticStr, VariantNames};

/// Where an approval stands (the record's `approval.state`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
#[derive(IntoStaticStr, EnumString, EnumIter, VariantNames)]
#[strum(serialize_all = "snake_case")]
pub enum ApprovalState {
    /// Nobody decided it yet, and it has not expired: the call waits.
    Pending,
    /// A person approved it: the call is (or was) dispatched, exactly as approved.
    Approved,
    /// A person rejected it: the call failed, and nothing was sent.
    Rejected,
    /// Nobody decided it in time: the call failed, and nothing was sent.
    Expired,
}

impl ApprovalState {
    /// The snake-case name stored and reported.
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// Parses a stored name.
    pub fn parse(s: &str) -> Option<Self> {
        s.parse().ok()
    }

    /// Whether it is decided: anything but pending.
    pub fn is_decided(self) -> bool {
        self != Self::Pending
    }
}

impl std::fmt::Display for ApprovalState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
