//! A journaled call as it is listed: what `GET /v1/calls` (and `recourse
//! journal list --json`) show of each entry.

use recourse::approval::Approval;
use recourse::journal::{CallState, JournalEntry};

/// A journaled call, as `journal list --json` and the gateway's `GET /v1/calls` list it.
#[derive(serde::Serialize, schemars::JsonSchema)]
pub struct CallEntry<'a> {
    /// The call's id.
    call_id: &'a str,
    /// The capability name, when the call came from a catalogue.
    capability: Option<&'a str>,
    /// The URL (or MCP tool name) called.
    url: &'a str,
    /// The idempotency key every attempt carried.
    idempotency_key: Option<&'a str>,
    /// The tool's operation id, when it reported one.
    operation_id: Option<&'a str>,
    /// Where the call stands.
    state: CallState,
    /// Attempts recorded.
    attempts: u32,
    /// When the call started (RFC 3339, UTC).
    started_at: &'a str,
    /// When the record last changed (RFC 3339, UTC).
    updated_at: &'a str,
    /// The key the caller chose, when it chose one.
    caller_key: Option<&'a str>,
    /// The process that runs (or ran) the call.
    owner: Option<&'a str>,
    /// Until when `owner` holds the call (RFC 3339, UTC); `null` once it finished.
    lease_until: Option<&'a str>,
    /// Whose call it is: the gateway caller's name (`default` for a gateway
    /// with one token or none, and for a call made outside a gateway).
    caller: &'a str,
    /// Its approval, when it needed a person's (`id`, `state`,
    /// `request_sha256`, `expires_at`, `reason`, …); `null` otherwise.
    approval: Option<&'a Approval>,
}

impl<'a> From<&'a JournalEntry> for CallEntry<'a> {
    fn from(e: &'a JournalEntry) -> Self {
        Self {
            call_id: &e.call_id,
            capability: e.capability.as_deref(),
            url: &e.target,
            idempotency_key: e.idempotency_key.as_deref(),
            operation_id: e.operation_id.as_deref(),
            state: e.state,
            attempts: e.attempts,
            started_at: &e.times.started_at,
            updated_at: &e.times.updated_at,
            caller_key: e.replay.caller_key.as_deref(),
            owner: e.lease.owner.as_deref(),
            lease_until: e.lease.until.as_deref(),
            caller: e.caller(),
            approval: e.asked.approval.as_ref(),
        }
    }
}
