//! The parts of a [`JournalEntry`](super::JournalEntry) that belong
//! together: what settles it, its times, its caller's key, its lease, how it
//! ended, and its approval. Each but [`Ended`] is flattened into the entry's
//! JSON, which reads as one flat object.

use serde::Serialize;
use serde_json::Value;

use crate::approval::Approval;
use crate::record::SettledBy;

/// How an unknown outcome of a call can be settled, as the call declared it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Declared {
    /// The reconcile URL template, when one was configured.
    pub reconcile: Option<String>,
    /// The declared verification (the runtime's `VerifySpec` as JSON,
    /// redacted; never headers), when one was declared.
    pub verification: Option<Value>,
}

/// When a call started, and when its record last changed (RFC 3339, UTC).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct EntryTimes {
    /// When the call started (RFC 3339, UTC).
    pub started_at: String,
    /// When the record last changed (RFC 3339, UTC).
    pub updated_at: String,
}

/// The key a caller chose for a call, and what tells a replay from a reused key.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ReplayKey {
    /// The key the caller chose, when it chose one (a second call with it is a replay).
    pub caller_key: Option<String>,
    /// A digest of the caller's request, to tell a replay from a reused key.
    pub request_hash: Option<String>,
}

/// Which process holds a call, and until when.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Lease {
    /// The process that runs (or ran) the call.
    pub owner: Option<String>,
    /// Until when `owner` holds the call (RFC 3339, UTC): while it does, no
    /// other process settles it. `None` once the call finished.
    #[serde(rename = "lease_until")]
    pub until: Option<String>,
}

/// What a finished call left: its record, and what settled it (never
/// serialized with the entry).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Ended {
    /// The call's record (its JSON), once it finished.
    pub record: Option<Value>,
    /// What settled the call after it stopped, when something did: its
    /// record's `settlement.by`, read once as the entry is read from its
    /// store ([`Settlement::by_in`](crate::record::Settlement::by_in)).
    pub settled_by: Option<SettledBy>,
}

/// A call's approval, and the request it was asked for.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ApprovalAsked {
    /// The call's approval, when it needed one (see [`crate::approval`]).
    pub approval: Option<Approval>,
    /// The request awaiting approval, as the door that asked keeps it (the
    /// gateway: its `POST /v1/calls` body), until the call ends; never
    /// serialized with the entry.
    #[serde(skip)]
    pub request: Option<Value>,
}
