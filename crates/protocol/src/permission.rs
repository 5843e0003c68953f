//! Retry permission: the tool's say on whether another attempt is welcome.
//!
//! A boolean is not enough. "The tool said no", "the tool said yes" and "the
//! tool said nothing" lead to different decisions: an unspecified permission
//! defers to the HTTP status, while a refusal stops the call on every status.
//! Treating a missing flag as `false` (as some frameworks do) turns every
//! plain-text 503 into a hard stop; treating it as `true` resends payloads the
//! tool never agreed to see again.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Whether the tool permits another attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum RetryPermission {
    /// The envelope said `retryable: true`.
    Allowed,
    /// The envelope said `retryable: false`.
    Refused,
    /// No recognisable flag: the HTTP status decides.
    #[default]
    Unspecified,
}

impl RetryPermission {
    /// Maps a recognised boolean flag.
    pub fn from_flag(retryable: bool) -> Self {
        if retryable {
            Self::Allowed
        } else {
            Self::Refused
        }
    }

    /// The snake-case name used in reports: `allowed`, `refused`, `unspecified`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Allowed => "allowed",
            Self::Refused => "refused",
            Self::Unspecified => "unspecified",
        }
    }
}

impl fmt::Display for RetryPermission {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
