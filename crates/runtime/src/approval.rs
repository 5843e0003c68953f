//! Approvals: a person decides a call before its first dispatch.
//!
//! The types — what a call asks for ([`ApprovalSpec`]), where an approval
//! stands ([`Approval`], [`ApprovalState`]), what a person decides
//! ([`Decision`]) and what that comes to ([`Judgement`]) — come from
//! `recourse-core`; holding a call in the journal, deciding it, following
//! it and expiring it are [`journal::approval`](crate::journal::approval)'s,
//! named here too. The gateway asks and dispatches; any door sharing its
//! journal may ask (with a `CallSpec` a gateway can dispatch) and follow.
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
//! }, now, Duration::from_secs(30)).await.unwrap();
//! let Asked::Awaiting(entry) = asked else { unreachable!() };
//! let pending = entry.approval.clone().unwrap();
//! assert_eq!(pending.state, ApprovalState::Pending);
//!
//! let decided = decide(journal.as_ref(), &Decide {
//!     approval_id: &pending.id,
//!     decision: Decision::Approve,
//!     by: "lead",
//!     note: None,
//!     request_sha256: Some(&pending.request_sha256),
//! }, now, Duration::from_secs(30)).await.unwrap();
//! // The request to dispatch, exactly once, by this process.
//! assert_eq!(decided.dispatch.unwrap().payload["amount"], 750);
//! let found = find(journal.as_ref(), ApprovalOf::Call(&entry.call_id), now).await.unwrap().unwrap();
//! assert_eq!(found.approval.unwrap().state, ApprovalState::Approved);
//! # });
//! ```

pub use crate::journal::approval::{
    ApprovalOf, AskApproval, Asked, Decide, DecideError, Decided, ask, decide, end_undispatched,
    expire_due, find, refreshed,
};
pub use recourse_core::approval::{
    Approval, ApprovalSpec, ApprovalSpecError, ApprovalState, DEFAULT_EXPIRES_IN, Decision,
    ExpiresIn, Judgement, MAX_EXPIRES_IN, MAX_REASON, Required,
};
