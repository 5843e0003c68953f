//! Approvals: a person (or a rule standing in for one) sees a step's resolved
//! payload before it is sent.
//!
//! What was approved is what is sent. Every value of an approved payload
//! becomes protected, so no correction layer — coercion, repair or a model —
//! can change an amount a human agreed to; if the tool then refuses it, the
//! step stops and says so.

use serde_json::Value;

use crate::transport::BoxFuture;

/// What an approver is shown.
#[derive(Debug, Clone, Copy)]
pub struct ApprovalRequest<'a> {
    /// The plan's id.
    pub plan_id: &'a str,
    /// The step awaiting approval.
    pub step_id: &'a str,
    /// What the user asked for.
    pub original_request: &'a str,
    /// Where the payload would be sent.
    pub target: &'a str,
    /// The payload, references resolved.
    pub payload: &'a Value,
}

/// An approver's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StepApproval {
    /// Send the payload as shown.
    Approved,
    /// Do not send it.
    Rejected {
        /// Why, for the report (may be empty).
        why: String,
    },
}

impl StepApproval {
    /// A rejection saying `why`.
    pub fn rejected(why: impl Into<String>) -> Self {
        Self::Rejected { why: why.into() }
    }
}

/// Decides whether an approval step may run.
pub trait Approver: Send + Sync {
    /// Reviews one step's resolved payload.
    fn review<'a>(&'a self, request: ApprovalRequest<'a>) -> BoxFuture<'a, StepApproval>;
}

/// Approves everything (for tests, and for callers that approved the plan as a whole).
#[derive(Debug, Clone, Copy, Default)]
pub struct ApproveAll;

impl Approver for ApproveAll {
    fn review<'a>(&'a self, _request: ApprovalRequest<'a>) -> BoxFuture<'a, StepApproval> {
        Box::pin(async { StepApproval::Approved })
    }
}

/// Rejects everything: the default, so nothing needing approval runs unasked.
#[derive(Debug, Clone, Copy, Default)]
pub struct RejectAll;

impl Approver for RejectAll {
    fn review<'a>(&'a self, _request: ApprovalRequest<'a>) -> BoxFuture<'a, StepApproval> {
        Box::pin(async { StepApproval::rejected("no approver is configured") })
    }
}
