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
