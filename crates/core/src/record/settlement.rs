//! How a call whose outcome was open came to be decided after it stopped:
//! the record's `settlement`.
//!
//! A call whose process died mid-write, or that ended `unknown`, is settled
//! later — by reading its effect back, by looking it up by its key, or by a
//! person — never by sending it again. The record then says so, and its
//! `next` tells the model what settled it.

use serde::{Deserialize, Serialize};
use strum::{EnumIter, EnumString, IntoStaticStr, VariantNames};

/// What settled a call (the record's `settlement.by`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
#[derive(IntoStaticStr, EnumString, EnumIter, VariantNames)]
#[strum(serialize_all = "snake_case")]
pub enum SettledBy {
    /// Reading the write's effect back (its declared verification).
    Verification,
    /// Looking the write up by its key or operation id (its reconcile lookup).
    Lookup,
    /// A person, who checked by hand.
    Person,
    /// The journal: no attempt of the call was ever sent, so nothing was written.
    Journal,
}

impl SettledBy {
    /// The snake-case name used in the record.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// How a call was settled after it stopped (the record's `settlement`).
///
/// ```
/// use recourse_core::record::{SettledBy, Settlement};
///
/// let settled = Settlement::new(SettledBy::Lookup, "2026-12-03T10:00:00Z");
/// let json = serde_json::to_value(&settled).unwrap();
/// assert_eq!(json, serde_json::json!({"by": "lookup", "at": "2026-12-03T10:00:00Z"}));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Settlement {
    /// What settled it.
    pub by: SettledBy,
    /// When (RFC 3339, UTC).
    pub at: String,
    /// Who, when a person settled it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub who: Option<String>,
    /// What the settler found, in words (redacted); for people, never read
    /// by recourse.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl Settlement {
    /// What settled the call whose record is `record`, if anything did: its
    /// `settlement.by`. Read as a journal's store reads an entry, so that
    /// nothing after reads the record for it
    /// ([`Ended::settled_by`](crate::journal::Ended::settled_by)).
    ///
    /// ```
    /// use recourse_core::record::{SettledBy, Settlement};
    /// use serde_json::json;
    ///
    /// let settled = json!({"outcome": "failed", "settlement": {"by": "journal", "at": "2026-12-04T00:00:00Z"}});
    /// assert_eq!(Settlement::by_in(&settled), Some(SettledBy::Journal));
    /// assert_eq!(Settlement::by_in(&json!({"outcome": "failed"})), None);
    /// assert_eq!(Settlement::by_in(&json!({"settlement": {"by": "a cat"}})), None);
    /// ```
    pub fn by_in(record: &serde_json::Value) -> Option<SettledBy> {
        record
            .get("settlement")?
            .get("by")
            .and_then(|by| SettledBy::deserialize(by).ok())
    }

    /// Settled by `by` at `at`, nobody named, no note.
    pub fn new(by: SettledBy, at: impl Into<String>) -> Self {
        Self {
            by,
            at: at.into(),
            who: None,
            note: None,
        }
    }

    /// With a note (what the settler found).
    #[must_use]
    pub fn with_note(mut self, note: impl Into<String>) -> Self {
        self.note = Some(note.into());
        self
    }

    /// With who settled it.
    #[must_use]
    pub fn with_who(mut self, who: impl Into<String>) -> Self {
        self.who = Some(who.into());
        self
    }
}
