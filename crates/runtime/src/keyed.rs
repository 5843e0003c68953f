//! Calls under a caller's idempotency key: the same key and the same request
//! run once, however often they arrive, in whichever process.
//!
//! # Why the journal decides
//!
//! An agent that timed out waiting for an answer sends its request again.
//! If the first is still running, or already wrote, running the second
//! would write twice. So a keyed call first claims its key in the journal —
//! an atomic insert: whoever comes second finds the first — and the second
//! request gets the first call's record instead of a second dispatch
//! (`replayed`), waits while it runs (`in progress`), or is refused when it
//! asks for something else under the same key (`key reused`). These are the
//! semantics of Stripe's API and of the IETF `Idempotency-Key` draft.

use std::sync::Arc;

use futures_util::FutureExt;
use futures_util::future::Either;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::call::Call;
use crate::executor::Executor;
use crate::journal::{give_back, process_owner};
use recourse_core::journal::{
    CallState, Claimed, Journal, JournalEntry, JournalError, KeyClaim, KeyedAnswer, keyed_answer,
};
use recourse_core::record::CallReport;

/// What a call under a caller's key came to.
#[derive(Debug, Clone, PartialEq)]
pub enum Keyed {
    /// It ran: the first request with this key (or a call without a key or journal).
    Ran(Box<CallReport>),
    /// The key's call ran before (or its process died running it): where it
    /// stands now, and its record. Nothing was dispatched.
    Replayed {
        /// The journal's state of the call.
        state: CallState,
        /// The first call's record (or, for a call that never finished, the
        /// record the journal alone gives: `unknown`, see [`JournalEntry::report`]).
        record: Box<Value>,
    },
    /// The key's call is still running in some process.
    InProgress {
        /// The running call.
        call_id: String,
    },
    /// The key belongs to a different request.
    KeyReused {
        /// The call that holds the key.
        call_id: String,
    },
}

impl Executor {
    /// Runs `call` once per caller key: with a journal and
    /// [`idempotency_key`](crate::call::CallBuilder::idempotency_key), the key is
    /// claimed first, and a second request with it is answered from the
    /// journal. `request_hash` (see [`request_hash`]) tells the same request
    /// from another under the same key.
    ///
    /// # Errors
    /// When the journal cannot be read or written: nothing was dispatched.
    pub fn execute_keyed<'a>(
        &'a self,
        call: Call,
        request_hash: &'a str,
    ) -> impl Future<Output = Result<Keyed, JournalError>> + Send + 'a {
        // Either way the run's future (about 3.5 KB) goes into a box as it
        // is made and stays there: what this returns is a pointer, and each
        // move of it on its way into the caller's task — into a wrapper, an
        // `Either`, an `async` block, a task — copies a pointer, not the
        // run. Unboxed, those moves were five copies of it per call.
        match (&self.journal, call.caller_key.clone()) {
            (Some(journal), Some(key)) => Either::Right(Box::pin(self.claim_then_run(
                journal,
                key,
                call,
                request_hash,
            ))),
            _ => Either::Left(
                Box::pin(self.execute(call)).map(|report| Ok(Keyed::Ran(Box::new(report)))),
            ),
        }
    }

    /// Claims `key` for `call` and runs it if the key is new.
    async fn claim_then_run(
        &self,
        journal: &Arc<dyn Journal>,
        key: String,
        mut call: Call,
        request_hash: &str,
    ) -> Result<Keyed, JournalError> {
        let call_id = call.call_id.clone().unwrap_or_else(crate::call::new_id);
        let claim = KeyClaim {
            call_id: call_id.clone(),
            caller_key: key,
            request_hash: request_hash.to_owned(),
            target: call.target.to_string(),
            owner: process_owner().to_owned(),
            lease: self.config.lease,
            caller: call.caller.clone(),
        };
        let left = call.limits.deadline.or(self.config.deadline);
        let claimed = crate::journal::within(
            left,
            "claiming the idempotency key",
            journal.claim_key(&claim),
        )
        .await
        .inspect_err(|_| {
            // The claim may have been made and its answer lost: it is given
            // back, by this request's own call id (no other request holds
            // it), so a resend takes the call over rather than wait out the
            // lease. Nothing was sent.
            let clock = Arc::clone(&self.clock);
            tokio::spawn(give_back(Arc::clone(journal), call_id.clone(), clock));
        })?;
        match claimed {
            Claimed::New => call.call_id = Some(call_id),
            Claimed::Exists(entry) => {
                let answer = keyed_answer(
                    &entry,
                    request_hash,
                    claim.caller.as_deref(),
                    self.clock.wall(),
                );
                let owner = process_owner();
                if answer != KeyedAnswer::TakeOver
                    || !journal
                        .take_over(&entry.call_id, owner, self.config.lease)
                        .await?
                {
                    return Ok(answered(answer, *entry));
                }
                // The same request, whose first run sent nothing and left
                // no result of its own: it runs now, under the key's call.
                call.call_id = Some(entry.call_id);
            }
        }
        Ok(Keyed::Ran(Box::new(self.execute(call).await)))
    }
}

/// What `answer` ([`keyed_answer`]) makes of the key's call `entry`: its
/// record replayed, the key reused, or the call in progress — as is a
/// take-over its caller did not carry out (another request took the call
/// over a moment ago: it runs there).
pub(crate) fn answered(answer: KeyedAnswer, entry: JournalEntry) -> Keyed {
    match answer {
        KeyedAnswer::Replay { state } => Keyed::Replayed {
            state,
            record: Box::new(entry.record_json()),
        },
        KeyedAnswer::KeyReused => Keyed::KeyReused {
            call_id: entry.call_id,
        },
        KeyedAnswer::InProgress | KeyedAnswer::TakeOver => Keyed::InProgress {
            call_id: entry.call_id,
        },
    }
}

/// A digest (SHA-256, hex) of a request, the same for the same request
/// whatever the order of its object keys.
///
/// ```
/// use serde_json::json;
///
/// let a = recourse::keyed::request_hash(&json!({"url": "http://h/x", "payload": {"a": 1, "b": [2, 3]}}));
/// let b = recourse::keyed::request_hash(&json!({"payload": {"b": [2, 3], "a": 1}, "url": "http://h/x"}));
/// assert_eq!(a, b);
/// assert_ne!(a, recourse::keyed::request_hash(&json!({"url": "http://h/x", "payload": {"a": 2}})));
/// assert_eq!(a.len(), 64);
/// ```
pub fn request_hash(request: &Value) -> String {
    let mut canonical = Vec::with_capacity(256);
    write_canonical(request, &mut canonical);
    recourse_core::hex::lower_hex(&Sha256::digest(&canonical))
}

/// JSON with object keys sorted, no whitespace. Keys and scalars are written
/// as serde_json writes them (the digests journals already hold depend on
/// these bytes), straight into `out`.
fn write_canonical(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_unstable_by_key(|&(k, _)| k);
            out.push(b'{');
            for (i, (k, v)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                json(k, out);
                out.push(b':');
                write_canonical(v, out);
            }
            out.push(b'}');
        }
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(item, out);
            }
            out.push(b']');
        }
        scalar => json(scalar, out),
    }
}

/// A string or scalar as compact JSON. Neither can fail to serialize, and a
/// `Vec` cannot fail to take bytes.
fn json(value: &(impl serde::Serialize + ?Sized), out: &mut Vec<u8>) {
    let _ = serde_json::to_writer(&mut *out, value);
}

#[cfg(test)]
mod tests {
    use super::request_hash;
    use serde_json::json;

    /// Journals hold these digests across upgrades: a retry after one must
    /// hash to what its first request did.
    #[test]
    fn the_digest_of_a_request_does_not_change() {
        let request = json!({
            "url": "http://tools.internal/api/exports",
            "payload": {
                "z": [1, -2, 3.5, 1e20, 12345678901234567890u64, null, true, false],
                "a": {"nested": "quote \" backslash \\ tab \t nul \u{0} del \u{7f} é ✓ 😀"},
                "": "",
                "B": {},
                "b": []
            },
            "idempotent": false
        });
        assert_eq!(
            request_hash(&request),
            "865262cc3c34ffe188a24f264e1f32e2281e876c98273b6483dd83291606a597"
        );
    }
}
