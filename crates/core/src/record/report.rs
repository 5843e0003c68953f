//! The report of a whole call: its outcome, every attempt, and what it cost.

use std::time::{Duration, SystemTime};

use serde::{Serialize, Serializer};
use serde_json::Value;

use super::attempt::millis;
use super::next_step::{self, Next};
use crate::idempotency::Idempotency;
use crate::policy::{StopKind, Verification};
use crate::record::{AttemptRecord, Outcome, Settlement, TokenUsage};

/// The `record_version` of the JSON record: bumped only by an incompatible change.
pub const RECORD_VERSION: u32 = 1;

/// Everything a call did: its outcome, every attempt, and what it cost.
///
/// Serializes to the JSON record `recourse call --json` prints and the
/// gateway returns (see the [module docs](crate#the-record)); errors in it are
/// redacted.
///
/// ```
/// use recourse_core::idempotency::{Evidence, Idempotency};
/// use recourse_core::record::{CallReport, Outcome, TokenUsage};
/// use std::time::{Duration, SystemTime};
///
/// let report = CallReport {
///     call_id: "c-1".into(),
///     outcome: Outcome::Succeeded { data: serde_json::json!({"price": 468.285}).into() },
///     attempts: Vec::new(),
///     http_calls: 1,
///     llm_calls: 0,
///     tokens: TokenUsage::default(),
///     llm_time: Duration::ZERO,
///     idempotency: Idempotency { idempotent: true, from: Evidence::Caller },
///     idempotency_key: None,
///     operation_id: None,
///     verification: None,
///     elapsed: Duration::from_millis(12),
///     settlement: None,
///     answer: None,
///     ended_at: None,
/// };
/// let json = report.to_json();
/// assert_eq!(json["record_version"], 1);
/// assert_eq!(json["outcome"], "succeeded");
/// assert_eq!(json["data"]["price"], 468.285);
/// assert_eq!(json["stop_kind"], serde_json::Value::Null);
/// assert_eq!(json["next"]["step"], "use_result");
/// assert!(json.get("answer").is_none());
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct CallReport {
    /// The call's id (as recorded in the journal).
    pub call_id: String,
    /// How it ended.
    pub outcome: Outcome,
    /// Every dispatch, in order.
    pub attempts: Vec<AttemptRecord>,
    /// Requests that were (or may have been) sent to the tool: attempts whose
    /// connection never opened, and lookups, are not counted.
    pub http_calls: u32,
    /// Model calls made by correctors.
    pub llm_calls: u32,
    /// Model tokens spent.
    pub tokens: TokenUsage,
    /// Time spent in corrections that called a model (clock time).
    pub llm_time: Duration,
    /// Whether the call was treated as idempotent, and which evidence said so.
    pub idempotency: Idempotency,
    /// The idempotency key sent with every attempt, for non-idempotent calls.
    pub idempotency_key: Option<String>,
    /// The tool's operation id, if it reported one (for reconciliation by a person).
    pub operation_id: Option<String>,
    /// What the call's declared verification established after the write,
    /// or why none ran after it; `None` when the call declared none.
    pub verification: Option<Verification>,
    /// Wall time (clock time) the call took.
    pub elapsed: Duration,
    /// How the call was settled after it stopped, when its outcome was open
    /// and something decided it later (a lookup, a read, a person).
    pub settlement: Option<Settlement>,
    /// The tool's own last answer, whole, when the call ended on it and its
    /// `data` (or error) is only a part of it: an MCP result (content,
    /// `structuredContent`, `isError`, `_meta`), or an HTTP error body that
    /// follows no convention. Kept so that what the tool said can be given
    /// back whole, a replay included. A failure's is redacted.
    pub answer: Option<Value>,
    /// When the call ended (the executor's wall clock), if known.
    pub ended_at: Option<SystemTime>,
}

impl CallReport {
    /// The report of call `call_id` that ended `outcome`, with no attempts
    /// recorded, no calls counted and nothing timed: a start for reports a
    /// door builds itself (a refusal before any attempt, a test's).
    pub fn new(call_id: impl Into<String>, outcome: Outcome, idempotency: Idempotency) -> Self {
        Self {
            call_id: call_id.into(),
            outcome,
            attempts: Vec::new(),
            http_calls: 0,
            llm_calls: 0,
            tokens: TokenUsage::default(),
            llm_time: Duration::ZERO,
            idempotency,
            idempotency_key: None,
            operation_id: None,
            verification: None,
            elapsed: Duration::ZERO,
            settlement: None,
            answer: None,
            ended_at: None,
        }
    }

    /// The record as a JSON value (what `recourse call --json` prints).
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// The kind of problem that stopped the call (the record's `stop_kind`):
    /// the stop reason's [`kind`](crate::policy::StopReason::kind), read with the last
    /// error's category. `None` when the call succeeded.
    pub fn stop_kind(&self) -> Option<StopKind> {
        let category = self.outcome.error().map(|e| &e.category);
        self.outcome.reason().map(|r| r.kind(category))
    }

    /// What to hand back to the model (the record's `next`): the step, a
    /// short redacted message, and the question for the user when the
    /// choice is theirs. Computed from the report's types each time, so it
    /// always agrees with the outcome and attempts it summarizes.
    pub fn next(&self) -> Next {
        next_step::of(self)
    }

    /// Whether the journal stopped the call before any attempt was sent: it
    /// could not record the call or its first attempt, so nothing reached
    /// the tool. A door refuses such a call rather than answer it (send it
    /// again once the journal answers), and the journal holds it as settled
    /// by itself, so that a resend under its key runs it.
    pub fn is_unsent_for_the_journal(&self) -> bool {
        self.attempts.is_empty()
            && self.outcome.reason() == Some(&crate::policy::StopReason::JournalUnavailable)
    }

    /// What its stop means — the step, the MCP failure class, whether the
    /// same call may succeed when sent again ([`Disposition`](super::Disposition)); `None` when
    /// the call succeeded.
    pub fn disposition(&self) -> Option<super::Disposition> {
        next_step::disposition(self)
    }
}

// The record's wire form: the report's fields in the documented order. Its
// doc comment is the schema's description. `CallReport::write_json`
// (json.rs) writes the same bytes by hand: a change here goes there too, and
// its property test fails until it does.
/// A call's record: how it ended, what to tell the model, every attempt, and
/// what it cost. Errors in it are redacted.
#[derive(Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schema", schemars(rename = "CallReport"))]
struct Wire<'a> {
    /// The record format's version: bumped only by an incompatible change.
    record_version: u32,
    /// The call's id (as recorded in the journal).
    call_id: &'a str,
    /// How the call ended, its result or last error, and why it stopped.
    #[serde(flatten)]
    outcome: &'a Outcome,
    /// The kind of problem that stopped the call; `null` when it succeeded.
    stop_kind: Option<StopKind>,
    /// What to hand back to the model now.
    next: Next,
    /// What the call cost.
    #[serde(flatten)]
    costs: Costs,
    /// Whether the call was treated as idempotent, and which evidence said so.
    idempotency: Idempotency,
    /// The idempotency key sent with every attempt of a non-idempotent call
    /// (the caller's, or one recourse made); `null` otherwise.
    idempotency_key: Option<&'a str>,
    /// The tool's id for the write, if it reported one (to check it by).
    operation_id: Option<&'a str>,
    /// What the call's declared verification established after the write
    /// (`verified`, `already_applied`, `not_committed`, `not_applied`,
    /// `cannot_tell`), or why none ran after it (`not_applicable`,
    /// `unneeded`); `null` when the call declared none.
    verification: Option<Verification>,
    /// Wall time the call took, in milliseconds.
    elapsed_ms: u64,
    /// How the call was settled after it stopped, when its outcome was open
    /// and something decided it later; `null` otherwise.
    settlement: Option<&'a Settlement>,
    /// The tool's own last answer, whole, when `data` or `error` is only a
    /// part of it (an MCP result; an HTTP error body of no convention);
    /// absent otherwise. A failure's is redacted.
    #[serde(skip_serializing_if = "Option::is_none")]
    answer: Option<&'a Value>,
    /// When the call ended (RFC 3339, UTC); absent when not known.
    #[serde(skip_serializing_if = "Option::is_none")]
    ended_at: Option<String>,
    /// Every dispatch, in order.
    attempts: &'a [AttemptRecord],
}

/// What a call cost, as its record says it (inline, beside the outcome).
#[derive(Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
struct Costs {
    /// Requests that were (or may have been) sent to the tool: attempts whose
    /// connection never opened, and lookups, are not counted.
    http_calls: u32,
    /// Model calls made by correctors.
    llm_calls: u32,
    /// Model tokens the corrections spent.
    tokens: TokenUsage,
    /// Time spent in corrections that called a model, in milliseconds.
    llm_ms: u64,
}

/// The record's schema: the wire form's.
#[cfg(feature = "schema")]
impl schemars::JsonSchema for CallReport {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "CallReport".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        <Wire<'static> as schemars::JsonSchema>::json_schema(generator)
    }
}

impl Serialize for CallReport {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        Wire {
            record_version: RECORD_VERSION,
            call_id: &self.call_id,
            outcome: &self.outcome,
            stop_kind: self.stop_kind(),
            next: self.next(),
            costs: Costs {
                http_calls: self.http_calls,
                llm_calls: self.llm_calls,
                tokens: self.tokens,
                llm_ms: millis(self.llm_time),
            },
            idempotency: self.idempotency,
            idempotency_key: self.idempotency_key.as_deref(),
            operation_id: self.operation_id.as_deref(),
            verification: self.verification,
            elapsed_ms: millis(self.elapsed),
            settlement: self.settlement.as_ref(),
            answer: self.answer.as_ref(),
            ended_at: self.ended_at.map(crate::timestamp::rfc3339),
            attempts: &self.attempts,
        }
        .serialize(serializer)
    }
}
