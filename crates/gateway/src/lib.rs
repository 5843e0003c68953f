//! # recourse-gateway
//!
//! The recourse executor as an HTTP service, for agents in any language: a
//! [`router`] (an axum [`Router`](axum::Router)) over a [`Gateway`] built
//! from a [`GatewayConfig`]. `POST /v1/calls` runs one HTTP or MCP tool
//! call with recourse's policy — resend what is safe, correct what is
//! correctable, look up a write whose outcome is unknown, stop honestly —
//! and answers its record; with an idempotency key, at most one execution
//! per key across retries and replicas (the journal). A call may wait for
//! a person's approval first: it is journaled, answered `202`, and
//! dispatched once an approver approves it (`POST /v1/approvals/{id}`).
//! `recourse serve` is this crate with flags.
//!
//! ```
//! use std::sync::Arc;
//! use axum::body::Body;
//! use axum::http::Request;
//! use recourse::ExecutorConfig;
//! use recourse_gateway::{GatewayConfig, router};
//! use tower::ServiceExt;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let gateway = Arc::new(GatewayConfig::new(ExecutorConfig::default()).with_token("t").build().unwrap());
//! // Without the token: refused, as an envelope.
//! let refused = router(Arc::clone(&gateway))
//!     .oneshot(Request::get("/v1/calls").body(Body::empty()).unwrap())
//!     .await
//!     .unwrap();
//! assert_eq!(refused.status(), 401);
//! // The health routes need none.
//! let health = router(gateway)
//!     .oneshot(Request::get("/readyz").body(Body::empty()).unwrap())
//!     .await
//!     .unwrap();
//! assert_eq!(health.status(), 200);
//! # });
//! ```
//!
//! Secure by default: calls go only to loopback targets unless
//! [`GatewayConfig::allow_target`] says otherwise; MCP server processes
//! start only for command lines an [`allow_mcp_command`](GatewayConfig::allow_mcp_command)
//! pattern matches, with a cleared environment; the token, when set, is
//! required everywhere but `/healthz` and `/readyz`; request bodies are
//! capped. [`serve`] runs the router with the server limits of
//! `recourse-tool` and a graceful drain.

mod approvals;
mod ask;
mod config;
mod console;
mod dispatch;
mod entry;
mod exposure;
mod fleet;
mod gateway;
mod guard;
mod journal_location;
mod keyed;
mod openapi;
mod ready;
mod records;
mod render;
mod request;
mod resolve;
mod routes;
mod serve;
mod sessions;
mod wait;

pub use config::{GatewayConfig, GatewayError};
pub use entry::CallEntry;
pub use exposure::{Exposure, ExposureRefused, UnauthenticatedWarning, check_exposure};
pub use fleet::connect_shared_state;
pub use gateway::Gateway;
pub use journal_location::{
    JournalLocationError, NO_JOURNAL, open_server_journal, server_journal_location, state_dir,
};
pub use openapi::document as openapi_document;
pub use recourse_door::Refusal;
pub use recourse_door::Served;
pub use recourse_door::{
    Access, Authorize, Caller, Callers, CallersError, PolicyError, ToolPolicies, authorize,
};
pub use routes::router;
pub use serve::{ServeOptions, serve, shutdown_signal};
