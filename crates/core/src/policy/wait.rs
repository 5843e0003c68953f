//! Whose wait it is: the executor's backoff, the tool's demand, or a pending write.

use serde::{Deserialize, Serialize};
use strum::{EnumIter, EnumString, IntoStaticStr, VariantNames};

/// Why the executor waited.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
#[derive(IntoStaticStr, EnumString, EnumIter, VariantNames)]
#[strum(serialize_all = "snake_case")]
pub enum WaitCause {
    /// Its own jittered backoff.
    Backoff,
    /// The tool's demand (`Retry-After`, `details.retry_after`).
    RetryAfter,
    /// A lookup said the write is still pending.
    PendingLookup,
}

impl WaitCause {
    /// The cause's snake-case name.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}
