//! Verification by reading back: settling a write through the tool's own read.
//!
//! # Why read back
//!
//! When a write's reply is lost, recourse says `unknown` and does not resend.
//! An operation lookup ([`HttpReconciler`](crate::reconcile::HttpReconciler)) can settle
//! it, but only against a tool that keeps operation ids, and most do not.
//! Most have a *read* instead — `get_order_details`, `GET /users/{id}` — that
//! shows whether the write's effect is there. A [`VerifySpec`] declares that
//! read (an HTTP endpoint, or an MCP tool on the write's server), its
//! arguments as templates over the write's payload, and what its result
//! shows once the write took effect: `/status == "cancelled"`.
//!
//! The read runs once before the write (unless `after_only`), and once after
//! an unknown outcome. The two together are the evidence
//! ([`Policy::after_verification`](recourse_core::policy::Policy::after_verification)
//! decides): the effect appeared → committed (`verified`); it was there
//! before and after → `already_applied`, a success either way; it is absent
//! → not committed, and one resend with the same key may follow, read back
//! again; the read fails, or the effect vanished during the write → the
//! outcome stays unknown.
//!
//! What the read must show is a list of expectations, `POINTER OP VALUE`
//! (`expect.rs` spells them, `compare.rs` reads them, totally: a missing
//! field is "does not hold", never an error). Most state the effect
//! (`/status in ["resolved", "closed"]`, `$ contains "notes.txt"`); `grew_by`
//! states a change since the read before the write (one more order, one
//! fewer file), so a create that is not unique is never taken for one made
//! earlier — a change never holds before the write, so it is never
//! `already_applied`. A read that answers "not there" as an error says the
//! effect is absent when the verification names that error (`absent.rs`);
//! any other failure of the read cannot tell, and is never followed by a
//! resend. A template ending in `?` names an argument a call may leave out;
//! a required one a call cannot fill makes the verification not apply to it
//! (`Fit::NotApplicable`), and the write runs as one without.
//!
//! The same read catches a write that answers success and does nothing — a
//! silent no-op, the failure agents find hardest to notice. With `always`,
//! the read runs after a success too, and a success whose expectations do
//! not hold is `failed` with reason `not_applied`, never a success.
//!
//! A read is not an attempt: it carries the call's headers but never its
//! idempotency key, is not counted in `http_calls`, and is recorded as a
//! `verify` event. The journal keeps the spec (never headers) with the call,
//! so `recourse journal reconcile` can read back after a crash.

mod absent;
mod compare;
mod expect;
mod read;
mod spec;

pub use absent::AbsentWhen;
pub(crate) use read::{Against, Reading, read};
pub use spec::VerifySpec;
pub(crate) use spec::{Fit, ResolvedRead, Verifier};
