//! Asking for a person's approval: the call journaled as
//! `awaiting_approval`, or — under a key already claimed — what that key
//! answers.

use std::time::{Duration, SystemTime};

use recourse_core::approval::Required;
use recourse_core::journal::{
    AwaitingCall, Claimed, Journal, JournalEntry, JournalError, JournalErrorKind, KeyClaim,
    KeyedAnswer, keyed_answer, rfc3339,
};
use recourse_protocol::{redact, redact_value};
use serde_json::Value;

use crate::call::{CallSpec, new_id};
use crate::journal::expiry::refreshed;
use crate::journal::process_owner;
use crate::keyed::{Keyed, answered};

/// A call to hold for a person's approval.
#[derive(Debug, Clone)]
pub struct AskApproval {
    /// The call's id; a new one when `None`.
    pub call_id: Option<String>,
    /// Where it goes, for people reading the journal.
    pub target: String,
    /// The capability name, if any.
    pub capability: Option<String>,
    /// Who makes it (a gateway caller's name), if anyone in particular.
    pub caller: Option<String>,
    /// Its caller's key, as claimed (see
    /// [`CallBuilder::caller`](crate::call::CallBuilder::caller)): asked
    /// once per key.
    pub caller_key: Option<String>,
    /// The digest of the request ([`request_hash`](crate::keyed::request_hash)):
    /// what the approval is bound to, and what tells a resend from another
    /// request under the same key.
    pub request_hash: String,
    /// The request to dispatch once approved, as sent (its `approval` too).
    pub request: CallSpec,
    /// Why, and how long a person has.
    pub required: Required,
    /// Whether this process sends the call once approved, whoever decides
    /// it (an MCP proxy: the process holding the upstream — no other starts
    /// a second copy of its server); otherwise the deciding process sends it.
    pub dispatched_by_asker: bool,
}

/// What asking came to.
#[derive(Debug, Clone, PartialEq)]
pub enum Asked {
    /// The call waits for a person: its entry.
    Awaiting(Box<JournalEntry>),
    /// Its key's call existed already: what the key answers — its record
    /// replayed (still awaiting, or decided, or run), in progress, or the
    /// key reused by another request. Nothing new was asked.
    Keyed(Keyed),
}

/// Holds `call` for a person's approval: journaled as `awaiting_approval`,
/// its approval pending until `now` plus its time to decide (on the wall
/// clock: pass the injected clock's [`wall`](recourse_core::clock::Clock::wall)),
/// nothing sent. Under a caller's key, the key is claimed first (`lease`
/// holding it until the call waits): a resend of the same request gets
/// the key's call as it stands — awaiting still, or decided — and never a
/// second approval; the same key with another request is
/// [`KeyReused`](Keyed::KeyReused).
///
/// # Errors
/// When the journal cannot be read or written: nothing was asked.
pub async fn ask(
    journal: &dyn Journal,
    call: &AskApproval,
    now: SystemTime,
    lease: Duration,
) -> Result<Asked, JournalError> {
    let mut call_id = call.call_id.clone().unwrap_or_else(new_id);
    if let Some(key) = &call.caller_key {
        let claim = KeyClaim {
            call_id: call_id.clone(),
            caller_key: key.clone(),
            request_hash: call.request_hash.clone(),
            target: call.target.clone(),
            owner: process_owner().to_owned(),
            lease,
            caller: call.caller.clone(),
        };
        match journal.claim_key(&claim).await? {
            Claimed::New => {}
            Claimed::Exists(entry) => match resend(journal, *entry, call, now, lease).await? {
                Resend::Answer(keyed) => return Ok(Asked::Keyed(keyed)),
                Resend::AskAgain(id) => call_id = id,
            },
        }
    }
    let awaiting = AwaitingCall {
        call_id: call_id.clone(),
        target: call.target.clone(),
        capability: call.capability.clone(),
        payload: redact_value(&call.request.payload),
        request: serde_json::to_value(&call.request).unwrap_or(Value::Null),
        request_hash: call.request_hash.clone(),
        caller: call.caller.clone(),
        approval_id: new_id(),
        reason: redact(&call.required.reason),
        expires_at: rfc3339(now + call.required.expires_in),
        dispatcher: call.dispatched_by_asker.then(|| process_owner().to_owned()),
    };
    journal.await_approval(&awaiting).await?;
    match journal.get(&call_id).await? {
        Some(entry) => Ok(Asked::Awaiting(Box::new(entry))),
        None => Err(JournalError::new(
            JournalErrorKind::Inconsistent,
            "asking for approval",
            "the call awaiting approval vanished",
        )),
    }
}

/// What a resend under a claimed key gets.
enum Resend {
    /// The key's answer.
    Answer(Keyed),
    /// The key's call never sent anything and has no result of its own:
    /// taken over, it is asked for again under its id.
    AskAgain(String),
}

async fn resend(
    journal: &dyn Journal,
    entry: JournalEntry,
    call: &AskApproval,
    now: SystemTime,
    lease: Duration,
) -> Result<Resend, JournalError> {
    let hash = call.request_hash.as_str();
    let caller = call.caller.as_deref();
    match keyed_answer(&entry, hash, caller, now) {
        KeyedAnswer::TakeOver => Ok(
            if journal
                .take_over(&entry.call_id, process_owner(), lease)
                .await?
            {
                Resend::AskAgain(entry.call_id)
            } else {
                Resend::Answer(answered(KeyedAnswer::TakeOver, entry))
            },
        ),
        KeyedAnswer::Replay { .. } => {
            // Still waiting, or decided since — an expiry applied as it is read.
            let entry = refreshed(journal, entry, now).await?;
            let answer = keyed_answer(&entry, hash, caller, now);
            Ok(Resend::Answer(answered(answer, entry)))
        }
        answer => Ok(Resend::Answer(answered(answer, entry))),
    }
}
