//! The record of a call that waits for a person's approval:
//! [`AwaitingRecord`], what the gateway answers `202` with.

use serde::Serialize;
use serde_json::Value;

use super::next_step::{self, Next};
use super::{RECORD_VERSION, TokenUsage};
use crate::approval::Approval;
use crate::idempotency::{Evidence, Idempotency};

/// The record of a call awaiting approval: the fields of a call's record,
/// its outcome `awaiting_approval`, nothing sent, and its `approval`. Its
/// `next` asks the user whether to wait for the approver's decision.
///
/// ```
/// use recourse_core::approval::{Approval, ApprovalState};
/// use recourse_core::record::AwaitingRecord;
///
/// let approval = Approval {
///     id: "a-1".into(),
///     call_id: "c-1".into(),
///     state: ApprovalState::Pending,
///     request_sha256: "ab".repeat(32),
///     expires_at: "2026-12-04T10:00:00.000Z".into(),
///     reason: "moves money".into(),
///     decided_by: None,
///     decided_at: None,
///     note: None,
///     self_approved: false,
/// };
/// let record = AwaitingRecord::new("c-1", &approval).to_json();
/// assert_eq!(record["outcome"], "awaiting_approval");
/// assert_eq!(record["next"]["step"], "ask_user");
/// assert!(record["next"]["question"].as_str().unwrap().contains("<<<moves money>>>"));
/// assert_eq!(record["approval"]["state"], "pending");
/// assert_eq!(record["http_calls"], 0);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct AwaitingRecord<'a> {
    /// The record format's version.
    record_version: u32,
    /// The call's id.
    call_id: &'a str,
    /// Always `awaiting_approval`: the call waits for a person.
    outcome: Awaiting,
    /// The outcome's other fields, all `null`: the call has not stopped.
    #[serde(flatten)]
    not_stopped: NotStopped,
    /// What to hand back to the model now: `ask_user`, with the question.
    next: Next,
    /// What the call cost: nothing yet.
    #[serde(flatten)]
    costs: NoCosts,
    /// Not decided until the call is dispatched: until then it is treated
    /// as a write (not idempotent, by default).
    idempotency: Idempotency,
    /// What a dispatch would have said, all `null`.
    #[serde(flatten)]
    not_dispatched: NotDispatched,
    /// Always `0`.
    elapsed_ms: u64,
    /// Always `null`.
    settlement: (),
    /// Always empty: nothing was sent.
    attempts: [(); 0],
    /// The approval the call waits for.
    approval: &'a Approval,
}

/// The outcome's fields of a call that has not stopped (flattened into the
/// record, in the order of a call's record).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
struct NotStopped {
    /// Always `null`: nothing ran.
    data: (),
    /// Always `null`.
    error: (),
    /// Always `null`: the call has not stopped.
    reason: (),
    /// Always `null`.
    reason_text: (),
    /// Always `null`.
    stop_kind: (),
}

/// The costs of a call nothing was sent for (flattened into the record).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
struct NoCosts {
    /// Always `0`: nothing was sent.
    http_calls: u32,
    /// Always `0`.
    llm_calls: u32,
    /// Always zero.
    tokens: TokenUsage,
    /// Always `0`.
    llm_ms: u64,
}

/// What a dispatch records, for a call not dispatched yet (flattened into
/// the record).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
struct NotDispatched {
    /// Always `null` until the call is dispatched.
    idempotency_key: (),
    /// Always `null`.
    operation_id: (),
    /// Always `null`.
    verification: (),
}

/// The outcome of a call awaiting approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
enum Awaiting {
    /// The call waits for a person's approval.
    AwaitingApproval,
}

impl<'a> AwaitingRecord<'a> {
    /// The record of call `call_id`, awaiting `approval`.
    pub fn new(call_id: &'a str, approval: &'a Approval) -> Self {
        Self {
            record_version: RECORD_VERSION,
            call_id,
            outcome: Awaiting::AwaitingApproval,
            not_stopped: NotStopped::default(),
            next: next_step::awaiting(approval),
            costs: NoCosts::default(),
            idempotency: Idempotency {
                idempotent: false,
                from: Evidence::Default,
            },
            not_dispatched: NotDispatched::default(),
            elapsed_ms: 0,
            settlement: (),
            attempts: [],
            approval,
        }
    }

    /// The record as a JSON value.
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}
