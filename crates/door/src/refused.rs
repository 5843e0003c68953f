//! [`Refused`]: a [`Refusal`] as a door answers it — its words, the call it
//! belongs to, and when sending again may help — and the refusals every
//! call path shares, each written once for both doors.

use std::time::Duration;

use recourse::journal::JournalError;
use recourse::timing;
use recourse_protocol::{ToolError, redact};

use crate::refusal::Refusal;

/// A request a door did not run (or could not finish): which [`Refusal`],
/// the error both doors show (code, category, message, details), the call
/// it concerns, and how long to wait before sending it again, when that may
/// help. The gateway renders it as an envelope with the refusal's status
/// (and `Retry-After`); the MCP proxy as an `isError` result with
/// `toolFailure` (and `retryNotBefore`).
///
/// ```
/// use std::time::Duration;
/// use recourse_door::{Refusal, Refused};
///
/// let refused = Refused::in_progress("c-1", Duration::from_secs(30));
/// assert_eq!(refused.refusal(), Refusal::CallInProgress);
/// assert_eq!(refused.retry_after(), Some(Duration::from_secs(10)));
/// assert_eq!(refused.error().details["call_id"], "c-1");
/// assert!(refused.error().retryable);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Refused {
    refusal: Refusal,
    /// Boxed: a refusal travels in `Result`s and answers that are otherwise small.
    error: Box<ToolError>,
    call_id: Option<String>,
    retry_after: Option<Duration>,
}

impl Refused {
    /// `refusal`, saying `message`.
    pub fn new(refusal: Refusal, message: impl Into<String>) -> Self {
        Self {
            refusal,
            error: Box::new(refusal.error(message)),
            call_id: None,
            retry_after: None,
        }
    }

    /// With a detail (`details.field`, `details.pointer`, …).
    #[must_use]
    pub fn detail(mut self, key: &str, value: impl Into<String>) -> Self {
        set_detail(&mut self.error, key, value.into());
        self
    }

    /// About call `call_id` (also named in `details.call_id`).
    #[must_use]
    pub fn of_call(mut self, call_id: impl Into<String>) -> Self {
        let call_id = call_id.into();
        set_detail(&mut self.error, "call_id", call_id.clone());
        self.call_id = Some(call_id);
        self
    }

    /// Sending again may help after `wait`.
    #[must_use]
    pub fn with_retry_after(mut self, wait: Duration) -> Self {
        self.retry_after = Some(wait);
        self
    }

    /// Which refusal.
    pub fn refusal(&self) -> Refusal {
        self.refusal
    }

    /// The error both doors show.
    pub fn error(&self) -> &ToolError {
        &self.error
    }

    /// The error, taken.
    pub fn into_error(self) -> ToolError {
        *self.error
    }

    /// The call it concerns, when there is one.
    pub fn call_id(&self) -> Option<&str> {
        self.call_id.as_deref()
    }

    /// How long to wait before sending the same request again, when that may help.
    pub fn retry_after(&self) -> Option<Duration> {
        self.retry_after
    }

    /// The key's call is still running somewhere: nothing was sent again;
    /// ask again after a third of a lease.
    pub fn in_progress(call_id: &str, lease: Duration) -> Self {
        Self::new(
            Refusal::CallInProgress,
            "the call with this idempotency key is still running; nothing was sent again. Send \
             the same request (same key, same arguments) again later to get its result",
        )
        .of_call(call_id)
        .with_retry_after(timing::in_progress_retry_after(lease))
    }

    /// The key belongs to call `call_id`, another request's.
    pub fn key_reused(call_id: &str) -> Self {
        Self::new(
            Refusal::IdempotencyKeyReused,
            "this idempotency key belongs to a different request (another target or other \
             arguments); nothing was sent. Use a new key for a new request",
        )
        .detail("field", "idempotency_key")
        .of_call(call_id)
    }

    /// A keyed request (or one that waits for approval in the journal) at a
    /// door that keeps no journal; `field` names what needed it.
    pub fn journal_required(field: &str, why: &str) -> Self {
        Self::new(
            Refusal::JournalRequired,
            format!(
                "{why}, and this door keeps no journal; nothing was sent. Run it with a journal"
            ),
        )
        .detail("field", field)
    }

    /// The journal could not record the call: nothing was sent, and the same
    /// request may be sent again once it answers.
    pub fn journal_unavailable(error: &JournalError) -> Self {
        Self::journal_away(&error.to_string())
    }

    /// [`journal_unavailable`](Self::journal_unavailable), in words already made.
    pub fn journal_away(why: &str) -> Self {
        Self::new(
            Refusal::JournalUnavailable,
            format!(
                "the journal could not record the call ({}); nothing was sent. Send the same \
                 request again shortly",
                redact(why)
            ),
        )
        .with_retry_after(timing::JOURNAL_RETRY_AFTER)
    }

    /// The call stopped unexpectedly inside the door (a panic); its outcome
    /// is unknown.
    pub fn aborted(call_id: Option<&str>) -> Self {
        let refused = Self::new(
            Refusal::CallAborted,
            "the call stopped unexpectedly; its outcome is unknown. Do not repeat it: check \
             whether it took effect first",
        );
        match call_id {
            Some(id) => refused.of_call(id),
            None => refused,
        }
    }
}

/// Sets `details[key]` of `error` to `value` (details made an object if needed).
fn set_detail(error: &mut ToolError, key: &str, value: String) {
    if !error.details.is_object() {
        error.details = serde_json::Value::Object(serde_json::Map::new());
    }
    if let Some(details) = error.details.as_object_mut() {
        details.insert(key.to_owned(), serde_json::Value::String(value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_shared_refusal_has_its_code_retryability_and_wait() {
        let lease = Duration::from_secs(30);
        let journal = JournalError::new(
            recourse::journal::JournalErrorKind::Operation,
            "recording",
            "down",
        );
        let cases = [
            (
                Refused::in_progress("c", lease),
                "CALL_IN_PROGRESS",
                true,
                Some(10),
            ),
            (
                Refused::key_reused("c"),
                "IDEMPOTENCY_KEY_REUSED",
                false,
                None,
            ),
            (
                Refused::journal_required("idempotency_key", "a keyed request"),
                "JOURNAL_REQUIRED",
                false,
                None,
            ),
            (
                Refused::journal_unavailable(&journal),
                "JOURNAL_UNAVAILABLE",
                true,
                Some(1),
            ),
            (Refused::aborted(Some("c")), "CALL_ABORTED", false, None),
        ];
        for (refused, code, retryable, wait) in cases {
            assert_eq!(refused.error().code, code);
            assert_eq!(refused.refusal().code(), code);
            assert_eq!(refused.error().retryable, retryable, "{code}");
            assert_eq!(refused.retry_after().map(|d| d.as_secs()), wait, "{code}");
        }
    }

    #[test]
    fn a_journals_words_are_redacted() {
        let refused = Refused::journal_away("postgres://u:hunter2@db/x refused");
        assert!(!refused.error().message.contains("hunter2"));
    }
}
