//! The record of a call: what every attempt sent, what came back, what the
//! policy decided, and what recourse did in between — as types.
//!
//! # Why typed, all the way out
//!
//! A reliability engineer reads the record to answer "did it resend a write
//! whose outcome was unknown?", "which correction layer fixed this?", "how
//! long did it wait, and because who asked?". If the record carried those
//! answers as sentences, every consumer — the CLI, the gateway, metrics, the
//! evaluation's safety scorer — would end up matching text, and rewording a
//! note would silently change a safety verdict. So the record keeps the
//! decision ([`Action`](crate::policy::Action), [`StopReason`](crate::policy::StopReason)), the
//! parsed category and permission, the transport failure's kind, and an
//! ordered list of typed [`Event`]s. Human-readable text (`notes`,
//! `reason_text`) is generated from the types when the record is serialized,
//! and nothing reads it back.
//!
//! # The JSON form
//!
//! [`CallReport`] serializes (with serde) to the object `recourse call --json`
//! prints and the gateway returns. Its top-level `record_version` is `1`, and
//! is bumped only by an incompatible change: fields are added, never renamed
//! or retyped. Each attempt keeps the fields it always had (`action`,
//! `wait_ms`, `reason`, `source`, `notes`, `transport_error` as text, …) and
//! adds `events`, a list of objects tagged by `kind`:
//!
//! | kind | fields |
//! |---|---|
//! | `coerced` | `changes`: `[{pointer, from, to?, rule}]` — schema coercion of this attempt's payload |
//! | `correction` | `layer` (`repair`/`llm`/`semantic`), `verdict` (`fixed`/`cannot_fix`/`rejected_by_gate`/`skipped`), `rule` (with `rejected_by_gate`), `reason` |
//! | `waited` | `ms`, `cause` (`backoff`/`retry_after`/`pending_lookup`) |
//! | `lookup` | `result` (`committed`/`not_committed`/`pending`/`cannot_tell`), `detail`? |
//! | `verify` | `phase` (`before`/`after`), `result` (`holds`/`not_held`/`cannot_tell`), `detail`? |
//! | `journal` | `state` (`in_flight`/`succeeded`/`failed`/`unknown`/`awaiting_approval`) |
//!
//! An attempt's events are in the order they happened: the coercion of the
//! payload it sent, then what followed its answer.
//!
//! Next to `reason`, the record has `stop_kind` (a [`StopKind`](crate::policy::StopKind),
//! or `null` on success) and ends with `next`, what to hand back to the
//! model: `{"step", "model_message", "question"?, "operation_id"?,
//! "retry_after_ms"?}` (see [`Next`]). Both are computed from the report's
//! types when it is serialized ([`CallReport::stop_kind`],
//! [`CallReport::next`]), so they always agree with the outcome and
//! attempts they summarize.
//!
//! `verification` is what a declared read-back verification established
//! (`verified`, `already_applied`, `not_committed`, `not_applied`,
//! `cannot_tell`), or why none ran after the write (`not_applicable`: the
//! call did not fill a template it requires; `unneeded`: the write answered
//! and nothing had to be settled), or `null` when the call declared none. `settlement` says
//! how a call whose outcome was open was settled after it stopped
//! (`{"by": "verification"|"lookup"|"person"|"journal", "at", "who"?,
//! "note"?}`, see [`Settlement`]), or is `null`; a settled record's `next`
//! says what settled it. A call that needed a person's approval has
//! `approval` ([`Approval`](crate::approval::Approval)); while it waits, its
//! record is an [`AwaitingRecord`] (`outcome: "awaiting_approval"`). The
//! top-level name `replayed` is reserved for a later addition and means
//! nothing today.
//!
//! A record read back — from a journal, possibly written by another version
//! — is shown through [`view`], which reads it leniently.

mod attempt;
mod awaiting;
mod coercion;
mod diff;
mod disposition;
mod event;
mod json;
mod next_step;
mod notes;
mod outcome;
mod question;
mod read_back;
mod report;
mod settlement;
mod state;
mod tool_text;
pub mod view;

pub use crate::policy::WaitCause;
pub use attempt::{AttemptRecord, PayloadSource};
pub use awaiting::AwaitingRecord;
pub use coercion::{CoercionChange, CoercionRule};
pub use diff::describe_changes;
pub use disposition::Disposition;
pub use event::{CorrectionLayer, Event, GateRule, LookupResult, Verdict, VerifyPhase};
pub use next_step::{MODEL_MESSAGE_MAX_CHARS, Next, NextStep, TOOL_TEXT_MAX_BYTES};
pub use outcome::{Outcome, OutcomeKind, TokenUsage};
pub use recourse_protocol::ToolData;
pub use report::{CallReport, RECORD_VERSION};
pub use settlement::{SettledBy, Settlement};
pub use state::CallState;

pub use attempt::millis;
