//! # recourse-door
//!
//! What a call *is* at recourse's doors, in one library: the HTTP gateway
//! (`recourse serve`) and the MCP proxy (`recourse mcp proxy`) both take a
//! request, and this crate says what becomes of it — its [digest](RequestDigest),
//! whether its key was used before (replayed, still running, or another
//! request's), whether it waits for a person ([`Door::hold`]), whether it
//! runs to its end after its client left ([`Door::run`]), and every
//! [`Refusal`] with its code, status, category, MCP class and when sending
//! again may help — and who the caller is ([`Caller`], [`Access`]: the
//! named callers of a tokens file, one token, or loopback only; with the
//! feature `http`, the [`authorize`] layer that checks it in front of a
//! server's routes). The gateway renders a [`DoorAnswer`] as an HTTP answer
//! and the proxy as an MCP result; neither decides anything of its own, so
//! a rule cannot drift between them.
//!
//! ```
//! use std::sync::Arc;
//! use std::time::Duration;
//! use recourse::{Call, Executor, InProcessTransport};
//! use recourse_door::{Door, DoorAnswer, Refusal, RequestDigest};
//! use recourse_protocol::ToolResponse;
//! use serde_json::json;
//! use tokio_util::sync::CancellationToken;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let tool = InProcessTransport::from_tool(|_| async { ToolResponse::ok(json!({"sent": true})) });
//! let executor = Arc::new(Executor::builder(tool).build());
//! // A door without a journal cannot answer a keyed resend: it refuses the
//! // keyed request, and sends nothing.
//! let door = Door::new(Duration::from_secs(30));
//! let call = Call::builder("mail.send", json!({"to": "a@b.c"})).idempotency_key("k-1").build().unwrap();
//! let spec = serde_json::from_value(json!({"payload": {"to": "a@b.c"}, "idempotency_key": "k-1"})).unwrap();
//! let answer = door.run(executor, call, Some(&RequestDigest::of(&spec)), &CancellationToken::new()).await;
//! let Ok(DoorAnswer::Refused(refused)) = answer else { unreachable!() };
//! assert_eq!(refused.refusal(), Refusal::JournalRequired);
//! assert_eq!(refused.refusal().status(), 400);
//! assert_eq!(refused.refusal().class().as_str(), "capability");
//! # });
//! ```

mod access;
mod answer;
#[cfg(feature = "http")]
mod authorize;
mod caller;
mod digest;
mod door;
mod finish;
pub mod policy;
mod refusal;
mod refused;
mod served;
pub mod throttle;

pub use access::Access;
pub use answer::DoorAnswer;
#[cfg(feature = "http")]
pub use authorize::{Authorize, authorize};
pub use caller::{Caller, Callers, CallersError, MIN_EXPOSED_TOKEN};
pub use digest::RequestDigest;
pub use door::{ClientLeft, Door};
pub use policy::{PolicyError, ToolPolicies, ToolPolicy};
pub use refusal::Refusal;
pub use refused::Refused;
pub use served::Served;
