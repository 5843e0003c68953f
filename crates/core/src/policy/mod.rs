//! The decision policy (protocol §3): a pure function from what happened to what to do.
//!
//! # Why a pure function
//!
//! Everything risky an agent does after a failure — resending a write,
//! rewriting a payload, giving up — is decided here, from data alone: the
//! parsed response or transport failure, the capability's traits, the attempt
//! history and the budgets. No clock, no randomness, no I/O. The executor draws
//! the jittered backoff and reads the deadline, hands both in, and carries out
//! the [`Action`] that comes back. That split makes every rule testable without
//! a runtime, and makes the executor's loop boring, which is the point.
//!
//! The rules, first match wins:
//!
//! 1. a 2xx that does not report failure → [`Action::Succeed`] (or
//!    [`Action::Verify`], when the call reads its successes back);
//! 2. a delegated orchestrator → stop after its single dispatch;
//! 3. an unknown outcome → [`Action::Reconcile`] (a lookup is not a resend):
//!    UNKNOWN_OUTCOME, or for a non-idempotent call a failure after sending,
//!    a bare 500/502/504, a JSON-RPC error that says only that the server
//!    failed, or a body over the cap after a 2xx (or a 500/502/504); what
//!    follows the lookup — an operation lookup ([`Policy::after_lookup`])
//!    or a read of the write's effect ([`Policy::after_verification`]) —
//!    is decided here too;
//! 4. `retryable: false` → stop, on every status;
//! 5. 401, 403, 405, or AUTH_ERROR / PERMISSION_DENIED / POLICY_REJECTION → stop;
//!    so does a call that needs what no attempt supplies (an MCP server asking
//!    for the user's input, or refusing the client's protocol setup);
//! 6. transient (connect failure before sending, 408, 429, 5xx) → resend the
//!    same payload after `max(backoff, server demand)`, capped, unless the wait
//!    would cross the deadline; a category only guessed from free text is
//!    resent only for an idempotent call, and otherwise stops;
//! 7. other 4xx → [`Action::Correct`] when eligible, never an unchanged resend
//!    (never for a guessed category);
//! 8. otherwise stop.
//!
//! ```
//! use std::time::Duration;
//! use recourse_core::policy::{Action, Limits, Observation, Policy, Situation, StopReason, Traits};
//! use recourse_protocol::parse_response;
//!
//! let policy = Policy::new(Limits::default());
//! let refused = parse_response(503, [("content-type", "application/json")],
//!     br#"{"success":false,"error":{"code":"DOWN","message":"down","category":"SERVICE_ERROR","retryable":false}}"#);
//! let action = policy.decide(Observation::Response(&refused), &Situation::first_attempt(Traits::default()));
//! assert_eq!(action, Action::Stop { reason: StopReason::RetryRefused });
//! ```

mod action;
mod decide;
mod kind;
mod lookup;
pub mod machine;
mod verify;
mod wait;

pub use action::{Action, ActionKind, StopReason};
pub use decide::{AnswerFacts, Limits, Observation, Policy, Situation, Traits, is_unknown_outcome};
pub use kind::StopKind;
pub use verify::{Verification, VerifyResult, WriteAnswer};
pub use wait::WaitCause;

#[cfg(test)]
pub(crate) use kind::every_reason;
