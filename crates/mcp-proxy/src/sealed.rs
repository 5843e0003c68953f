//! What a 2026-07-28 client is asked to echo back: the `requestState` of an
//! `input_required` result that puts a held call to its user, sealed so
//! that only the question this proxy asked can be answered.
//!
//! # Why sealed, and bound to the caller and the request
//!
//! The client echoes `requestState` verbatim on its retry — or anything
//! else it likes. Read as-is, a state naming one call could approve
//! another, be replayed after it was used, answer a question for another
//! caller, or outlive the approval. So the state names the call and its
//! approval and carries the approval's expiry, under an HMAC (rmcp's
//! [`RequestStateCodec`]) whose associated data is the caller and the
//! request's digest — neither stored in the state, both re-derived from the
//! retry: another caller's retry, or a retry with other arguments, does not
//! open it. The key is made once and kept with the journal, so any proxy
//! sharing the journal opens what another sealed, after restarts too. A
//! state opens until its expiry; that it decides once is the journal's
//! doing (one conditional write: a second decision is refused).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use recourse_door::RequestDigest;
use rmcp::model::{RequestStateCodec, SealOptions};
use serde::{Deserialize, Serialize};

/// The name the key is kept under in the journal.
pub(crate) const SECRET_NAME: &str = "mcp-request-state-v1";

/// What a sealed state says: the call asked about, its approval, and until
/// when (milliseconds since the epoch) the answer is taken.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Question {
    pub(crate) call_id: String,
    pub(crate) approval_id: String,
    pub(crate) until_ms: u64,
}

/// Why a state was refused: nothing was decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// Not sealed by this journal's key for this caller and request:
    /// forged, altered, another caller's, or another request's.
    NotOurs,
    /// Past the approval's expiry.
    Expired,
}

impl Refused {
    /// What the client is told.
    pub(crate) fn problem(self) -> &'static str {
        match self {
            Self::NotOurs => {
                "requestState was not issued for this caller and this request (altered, forged, \
                 or another's): nothing was decided"
            }
            Self::Expired => "requestState has expired with its approval: nothing was decided",
        }
    }
}

/// Seals and opens questions under the journal's key.
pub(crate) struct Seal {
    codec: RequestStateCodec,
}

impl std::fmt::Debug for Seal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Seal")
    }
}

impl Seal {
    /// A seal under `key`; `None` when the key is too short to be one.
    pub(crate) fn new(key: &[u8]) -> Option<Self> {
        RequestStateCodec::try_new(key.to_vec())
            .ok()
            .map(|codec| Self { codec })
    }

    /// A fresh key for a journal that keeps none yet.
    pub(crate) fn fresh_key() -> Option<[u8; 32]> {
        let mut key = [0u8; 32];
        getrandom::fill(&mut key).ok()?;
        Some(key)
    }

    /// `question`, sealed for `caller`'s `request`.
    pub(crate) fn seal(
        &self,
        question: &Question,
        caller: Option<&str>,
        request: &RequestDigest,
    ) -> String {
        let bound = bound_to(caller, request);
        let payload = serde_json::to_vec(question).unwrap_or_default();
        self.codec
            .seal_with(&payload, &SealOptions::new().associated_data(&bound))
    }

    /// The question `state` seals, when it was sealed for `caller`'s
    /// `request` and has not expired at `now`.
    pub(crate) fn open(
        &self,
        state: &str,
        caller: Option<&str>,
        request: &RequestDigest,
        now: SystemTime,
    ) -> Result<Question, Refused> {
        let bound = bound_to(caller, request);
        let payload = self
            .codec
            .open_with(state, &bound)
            .map_err(|_| Refused::NotOurs)?;
        let question: Question = serde_json::from_slice(&payload).map_err(|_| Refused::NotOurs)?;
        if millis(now) >= question.until_ms {
            return Err(Refused::Expired);
        }
        Ok(question)
    }
}

/// Milliseconds since the epoch at `at` (0 before it).
pub(crate) fn millis(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
        .as_millis()
        .try_into()
        .unwrap_or(u64::MAX)
}

/// What a state is bound to without carrying it: the caller (none over
/// stdio) and the request's digest, each length-prefixed so no two pairs
/// read alike.
fn bound_to(caller: Option<&str>, request: &RequestDigest) -> Vec<u8> {
    let caller = caller.unwrap_or_default();
    let mut bound = Vec::with_capacity(caller.len() + request.as_str().len() + 32);
    bound.extend_from_slice(b"recourse/mcp/approval\0");
    for part in [caller, request.as_str()] {
        bound.extend_from_slice(&u64::try_from(part.len()).unwrap_or(u64::MAX).to_be_bytes());
        bound.extend_from_slice(part.as_bytes());
    }
    bound
}

#[cfg(test)]
mod tests {
    use super::*;
    use recourse::CallSpec;
    use serde_json::json;

    fn digest(amount: u64) -> RequestDigest {
        RequestDigest::of(&CallSpec::new(json!({"amount": amount})))
    }

    fn question(until_ms: u64) -> Question {
        Question {
            call_id: "c-1".into(),
            approval_id: "a-1".into(),
            until_ms,
        }
    }

    const NOW: u64 = 1_800_000_000_000;

    fn at(ms: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(ms)
    }

    #[test]
    fn a_state_opens_for_its_caller_and_request_until_it_expires() {
        let seal = Seal::new(&[7; 32]).unwrap();
        let asked = question(NOW + 1_000);
        let state = seal.seal(&asked, Some("agentA"), &digest(5));
        assert_eq!(
            seal.open(&state, Some("agentA"), &digest(5), at(NOW)),
            Ok(asked)
        );
        for (caller, request, now, refused) in [
            // Another caller's retry, or none's.
            (Some("agentB"), digest(5), NOW, Refused::NotOurs),
            (None, digest(5), NOW, Refused::NotOurs),
            // The same caller with other arguments.
            (Some("agentA"), digest(50_000), NOW, Refused::NotOurs),
            // At and after the approval's expiry.
            (Some("agentA"), digest(5), NOW + 1_000, Refused::Expired),
            (Some("agentA"), digest(5), NOW + 60_000, Refused::Expired),
        ] {
            assert_eq!(
                seal.open(&state, caller, &request, at(now)),
                Err(refused),
                "{caller:?} {now}"
            );
        }
    }

    #[test]
    fn an_altered_or_foreign_state_is_refused() {
        let seal = Seal::new(&[7; 32]).unwrap();
        let state = seal.seal(&question(NOW + 1_000), None, &digest(5));
        let open = |s: &str| seal.open(s, None, &digest(5), at(NOW));
        // Another journal's key.
        let other = Seal::new(&[8; 32]).unwrap();
        let foreign = other.seal(&question(NOW + 1_000), None, &digest(5));
        assert_eq!(open(&foreign), Err(Refused::NotOurs));
        // Any one character changed.
        for i in 0..state.len() {
            let mut altered = state.clone().into_bytes();
            altered[i] = if altered[i] == b'A' { b'B' } else { b'A' };
            let altered = String::from_utf8(altered).unwrap();
            if altered != state {
                assert!(open(&altered).is_err(), "changed at {i}");
            }
        }
        for junk in ["", "rs1", "rs1..", &"x".repeat(100_000)] {
            assert_eq!(open(junk), Err(Refused::NotOurs));
        }
        // A key too short is no key.
        assert!(Seal::new(&[7; 31]).is_none());
    }
}
