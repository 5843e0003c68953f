//! Approvals: a person decides a call before its first dispatch.
//!
//! ```
//! use recourse_core::approval::{Approval, ApprovalSpec, ApprovalState, Decider, Decision, Judgement};
//!
//! // What a caller (or a tool's manifest) asks: a reason, and how long a person has.
//! let spec: ApprovalSpec = serde_json::from_str(r#"{"reason": "moves money", "expires_in": "90s"}"#).unwrap();
//! let required = spec.required().unwrap();
//! assert_eq!(required.expires_in.as_secs(), 90);
//!
//! // A pending approval, judged before anything is written.
//! let pending = Approval {
//!     id: "a-1".into(),
//!     call_id: "c-1".into(),
//!     state: ApprovalState::Pending,
//!     request_sha256: "ab".repeat(32),
//!     expires_at: "2026-12-04T10:01:30.000Z".into(),
//!     reason: "moves money".into(),
//!     decided_by: None,
//!     decided_at: None,
//!     note: None,
//!     self_approved: false,
//! };
//! let now = "2026-12-04T10:00:00.000Z";
//! let lead = Decider::of("lead", "agent", false);
//! assert_eq!(pending.judge(Decision::Approve, None, now, lead), Judgement::Decide(ApprovalState::Approved));
//! assert_eq!(pending.judge(Decision::Approve, Some("00"), now, lead), Judgement::Stale);
//! // The caller that asked is not the person who decides.
//! let agent = Decider::of("agent", "agent", false);
//! assert_eq!(pending.judge(Decision::Approve, None, now, agent), Judgement::SelfApproval);
//! // Past its expiry nobody may decide it: it expires instead.
//! assert_eq!(pending.judge(Decision::Approve, None, "2026-12-04T10:01:30.000Z", lead), Judgement::Expire);
//! ```
//!
//! # Why a person, and why bound to the request
//!
//! Some writes should not happen because a model decided they should: a
//! refund over a limit, a message to every customer, a deletion. recourse
//! cannot judge those; a person can. So a call may require approval before
//! its first dispatch — because its caller asked, or because the tool's
//! manifest says so — and it waits in the journal, sending nothing, until
//! an approver approves or rejects it, or until nobody did in time.
//!
//! What the person approves is one exact request, named by its SHA-256
//! (`request_sha256`). An approver who read the request may send that hash
//! with the decision: if the pending request is another (`Stale`), the
//! decision is refused rather than applied to something nobody read. Once
//! approved, every value of the payload is protected: no correction layer —
//! coercion, repair, a model — may change what a person agreed to, so a tool
//! that refuses it stops the call instead of receiving a variant of it.
//!
//! # Why the decision is a judgement, then a conditional write
//!
//! Two approvers — or two gateways sharing a journal — may decide the same
//! approval at once, and an approval may expire while someone decides it.
//! [`Approval::judge`] says, from what was read, what deciding it comes to;
//! the journal then applies it only if the approval is still pending (and,
//! for an approval, not yet expired) at that moment. Exactly one decision
//! wins; the other reads the winner's.
//!
//! Expiry is applied lazily — when the call is read, listed or decided — and
//! by the sweeper a server runs, so a call expires on time even if nobody
//! looks at it.

mod decide;
mod record;
mod spec;
mod state;

pub use decide::{Decider, Decision, Judgement};
pub use record::Approval;
pub use spec::{
    ApprovalSpec, ApprovalSpecError, DEFAULT_EXPIRES_IN, ExpiresIn, MAX_EXPIRES_IN, MAX_REASON,
    Required, Via,
};
pub use state::ApprovalState;
