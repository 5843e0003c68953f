//! A call begun, and a key claimed for one: [`NewCall`], [`KeyClaim`], [`Claimed`].

use super::*;

/// What the journal needs when a call starts.
#[derive(Debug, Clone, PartialEq)]
pub struct NewCall {
    /// A fresh id for the call.
    pub call_id: String,
    /// The target.
    pub target: String,
    /// The capability name, if any.
    pub capability: Option<String>,
    /// The idempotency key, if any.
    pub idempotency_key: Option<String>,
    /// The reconcile template, if any.
    pub reconcile: Option<String>,
    /// The declared verification as JSON (redacted; never headers), if any.
    pub verification: Option<Value>,
    /// The caller's payload (redacted by the executor before it gets here).
    pub payload: Value,
    /// The process running the call.
    pub owner: String,
    /// How long its lease lasts unless renewed.
    pub lease: Duration,
    /// Who makes the call (a gateway caller's name), if anyone in particular.
    pub caller: Option<String>,
}

/// A caller's key, claimed for a call before it runs: exactly one call per
/// key, whichever process asks first.
#[derive(Debug, Clone, PartialEq)]
pub struct KeyClaim {
    /// The call that will run under the key.
    pub call_id: String,
    /// The caller's key.
    pub caller_key: String,
    /// A digest of the request (the runtime's `recourse::keyed::request_hash`).
    pub request_hash: String,
    /// The target, for people reading the journal.
    pub target: String,
    /// The process claiming it.
    pub owner: String,
    /// How long its lease lasts unless renewed.
    pub lease: Duration,
    /// Who makes the call (a gateway caller's name), if anyone in particular.
    pub caller: Option<String>,
}

/// What claiming a key found.
#[derive(Debug, Clone, PartialEq)]
pub enum Claimed {
    /// The key is this call's now.
    New,
    /// Another call holds the key: here is its entry.
    Exists(Box<JournalEntry>),
}
