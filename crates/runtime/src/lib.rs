//! # recourse
//!
//! The agent-side executor: it runs tool calls and, when one fails, does what a
//! careful engineer would — waits and resends the same payload, asks for a
//! corrected payload, reconciles a write whose outcome is unknown, or stops
//! honestly — by a fixed, testable [`Policy`].
//!
//! ```
//! use recourse::{Action, Call, Executor, InProcessTransport, ManualClock, Outcome};
//! use recourse_protocol::{ToolError, ToolResponse};
//! use serde_json::json;
//! use std::sync::{Arc, atomic::{AtomicU32, Ordering}};
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! // A tool that is down once, then answers.
//! let calls = Arc::new(AtomicU32::new(0));
//! let seen = Arc::clone(&calls);
//! let tool = InProcessTransport::from_tool(move |_payload| {
//!     let n = seen.fetch_add(1, Ordering::SeqCst);
//!     async move {
//!         if n == 0 {
//!             ToolResponse::failure(ToolError::service_error("DOWN", "restarting").retryable(true))
//!         } else {
//!             ToolResponse::ok(json!({"price": 468.285}))
//!         }
//!     }
//! });
//! let executor = Executor::builder(tool).with_clock(Arc::new(ManualClock::new())).build();
//! let call = Call::builder("stock.quote", json!({"symbol": "TSLA"})).build().unwrap();
//! let report = executor.execute(call).await;
//!
//! assert!(matches!(report.outcome, Outcome::Succeeded { .. }));
//! assert!(matches!(report.attempts[0].action, Action::RetrySame { .. }));
//! assert_eq!(calls.load(Ordering::SeqCst), 2);
//! # });
//! ```
//!
//! The pieces, each in its own module: the [`machine`] that decides every
//! step of a call by the rules of the [`policy`]; [`backoff`] (an iterator
//! of waits); the [`budget`] and the [`breaker`]s shared across calls (and
//! across processes through [`shared`] state, such as `RedisSharedState`
//! with the `redis` feature); the [`transport`]s ([`HttpTransport`],
//! [`InProcessTransport`]); [`correction`] and [`reconcile`]; the
//! [`journal`], and the calls it holds for a person's [`approval`]; and
//! the [`Executor`], whose loop carries out what the
//! machine decides and yields a [`CallReport`]. [`Executor::from_env`] wires
//! the standard executor from `RECOURSE_*`. The decisions and the types
//! come from `recourse-core`, which has no I/O; the journal's stores from
//! `recourse-journal`.
//!
//! # The record
//!
//! Every call yields a [`CallReport`]: the outcome, and per attempt an
//! [`AttemptRecord`](record::AttemptRecord) — the payload sent (redacted), the status or transport
//! failure, the parsed category and retry permission, the policy's
//! [`Action`], and the typed [`Event`](record::Event)s around it (coercion, corrections and
//! their gate verdicts, waits and who asked for them, lookups, journal
//! writes). It serializes (serde) to the JSON `recourse call --json` prints;
//! `record_version` is 1, the human-readable `notes` are generated from the
//! events, and nothing in recourse reads text back to decide anything.
//!
//! Sections cited as "protocol §N" are those of the recourse protocol,
//! `docs/protocol.md` in the recourse source tree.

pub mod approval;
pub mod breaker;
pub mod budget;
pub mod call;
pub mod clock;
pub mod config;
pub mod correction;
mod executor;
mod header;
pub mod journal;
mod json_order;
pub mod keyed;
#[cfg(feature = "llm")]
pub mod llm;
pub mod manifest;
pub mod metrics;
pub mod reconcile;
mod schema;
pub mod shared;
mod span;
pub mod target;
mod template;
pub mod tls;
pub mod transport;
pub mod verify;
#[cfg(feature = "workflow")]
pub mod workflow;

pub use recourse_core::{
    backoff, duration, idempotency, machine, method, policy, protect, record, timing,
};

pub use call::{AskedLimits, Call, CallBuilder, CallSpec};
pub use clock::{Clock, ManualClock, SystemClock};
pub use config::{ConfigError, ExecutorConfig};
pub use correction::{CorrectionChain, Corrector};
pub use executor::{Executor, ExecutorBuilder};
pub use journal::Journal;
pub use method::Method;
pub use policy::{Action, Limits, Policy, StopKind, StopReason, Traits};
pub use reconcile::{HttpReconciler, Reconciler};
pub use record::{CallReport, Outcome};
pub use target::Target;
pub use transport::{HttpTransport, InProcessTransport, Transport};
pub use verify::VerifySpec;
