//! Approvals: a person decides a call before its first dispatch.
//!
//! The types — what a call asks for ([`ApprovalSpec`]), where an approval
//! stands ([`Approval`], [`ApprovalState`]), what a person decides
//! ([`Decision`]) and what that comes to ([`Judgement`]) — come from
//! `recourse-core`; here a call is held in the journal ([`ask`]), decided
//! ([`decide`]), followed ([`find`]) and expired ([`expire_due`], which the
//! journal's sweeper runs) by whichever process shares the journal. The
//! gateway asks and dispatches; any door sharing its journal may ask (with
//! a `CallSpec` a gateway can dispatch) and follow.
//!
//! ```
//! use std::time::{Duration, SystemTime};
//! use recourse::approval::{ApprovalOf, ApprovalSpec, ApprovalState, AskApproval, Asked, Decide, Decision, ask, decide, find};
//! use recourse::call::CallSpec;
//! use serde_json::json;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let journal = recourse::journal::open_journal(":memory:").await.unwrap();
//! let request = CallSpec {
//!     url: Some("http://127.0.0.1:8700/api/orders/refund".into()),
//!     approval: Some(ApprovalSpec::new("refund over 500 EUR")),
//!     ..CallSpec::new(json!({"order_id": "ORD-7", "amount": 750}))
//! };
//! let now = SystemTime::now();
//! let asked = ask(journal.as_ref(), &AskApproval {
//!     call_id: None,
//!     target: "http://127.0.0.1:8700/api/orders/refund".into(),
//!     capability: None,
//!     caller: None,
//!     caller_key: None,
//!     request_hash: recourse::keyed::request_hash(&serde_json::to_value(&request).unwrap()),
//!     required: request.approval.as_ref().unwrap().required().unwrap(),
//!     request,
//!     dispatched_by_asker: false,
//! }, now, Duration::from_secs(30)).await.unwrap();
//! let Asked::Awaiting(entry) = asked else { unreachable!() };
//! let pending = entry.asked.approval.clone().unwrap();
//! assert_eq!(pending.state, ApprovalState::Pending);
//!
//! let decided = decide(journal.as_ref(), &Decide {
//!     approval_id: &pending.id,
//!     decision: Decision::Approve,
//!     by: "lead",
//!     note: None,
//!     request_sha256: Some(&pending.request_sha256),
//!     self_approval_allowed: false,
//!     dispatcher: None,
//! }, now, Duration::from_secs(30)).await.unwrap();
//! // The request to dispatch, exactly once, by this process.
//! assert_eq!(decided.dispatch.unwrap().payload["amount"], 750);
//! let found = find(journal.as_ref(), ApprovalOf::Call(&entry.call_id), now).await.unwrap().unwrap();
//! assert_eq!(found.asked.approval.unwrap().state, ApprovalState::Approved);
//! # });
//! ```
//!
//! # Why the journal holds the request
//!
//! The person who decides may do so on another replica than the one that
//! was asked, hours later, after restarts. So the call is journaled as
//! `awaiting_approval` with the request to dispatch once approved — the
//! request as its caller sent it, as the door that asked keeps it (the
//! gateway: its `POST /v1/calls` body). Nothing the door resolves from its
//! own configuration (a settling lookup's headers, an MCP server's
//! environment) is in it: whoever dispatches resolves those again. The
//! request stays until the call ends — a rejection, an expiry, or the end
//! of its dispatch — and is then let go.
//!
//! The decision is one conditional write: it applies only while the
//! approval is pending (and, for an approval, before its expiry), so of two
//! decisions at once exactly one wins. An approval takes the call in flight
//! under the decider's lease; the decider alone dispatches it, once. If it
//! dies before the call's first attempt, the sweeper finds the call in
//! flight with no attempt and settles it `failed` — nothing was sent, and
//! nothing ever is without a new decision.

mod ask;
mod decide;
mod shown;

pub use crate::journal::expiry::{ApprovalOf, expire_due, find, refreshed};
pub use ask::{AskApproval, Asked, ask};
pub use decide::{Decide, DecideError, Decided, decide, end_undispatched, withdraw};
pub use recourse_core::approval::{
    Approval, ApprovalSpec, ApprovalSpecError, ApprovalState, DEFAULT_EXPIRES_IN, Decider,
    Decision, ExpiresIn, Judgement, MAX_EXPIRES_IN, MAX_REASON, Required, Via,
};
pub use shown::{AskedBy, ShownApproval, ShownHeader, ShownRequest};
