//! # recourse-tool
//!
//! Write tool servers that report honestly. Handlers return a [`ToolResult`],
//! read their input with [`ToolJson`], and are registered on a [`ToolServer`];
//! every answer — success, business failure, bad body, unknown route, even a
//! panic — is a recourse envelope with the status of its category
//! (`recourse_protocol`; protocol §1–§2).
//!
//! ## A complete tool
//!
//! ```
//! use recourse_tool::{Capability, Success, ToolJson, ToolResult, ToolServer};
//! use recourse_tool::protocol::ToolError;
//! use serde::{Deserialize, Serialize};
//!
//! /// Input of `POST /api/greet`.
//! #[derive(Deserialize, schemars::JsonSchema)]
//! struct GreetInput {
//!     /// Who to greet.
//!     name: String,
//!     /// How many times (1–3).
//!     times: Option<u8>,
//! }
//!
//! #[derive(Serialize)]
//! struct Greeting {
//!     text: String,
//! }
//!
//! async fn greet(ToolJson(input): ToolJson<GreetInput>) -> ToolResult<Greeting> {
//!     let times = input.times.unwrap_or(1);
//!     if !(1..=3).contains(&times) {
//!         // A known-correctable input error: say which field, and opt in to retries.
//!         return Err(ToolError::input_error("TIMES_OUT_OF_RANGE", "`times` must be 1, 2 or 3")
//!             .retryable(true)
//!             .detail("field", "times")
//!             .detail("allowed_values", "1,2,3")
//!             .into());
//!     }
//!     let text = vec![format!("Hello, {}!", input.name); usize::from(times)].join(" ");
//!     Ok(Success(Greeting { text }))
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let app = ToolServer::new()
//!     .tool(
//!         Capability::post::<GreetInput>("greet", "/api/greet", "Greet someone by name").idempotent(),
//!         greet,
//!     )
//!     .into_router();
//!
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! let base = format!("http://{}", listener.local_addr()?);
//! tokio::spawn(async move { axum::serve(listener, app).await });
//!
//! let client = reqwest::Client::new();
//! let ok: serde_json::Value = client.post(format!("{base}/api/greet"))
//!     .json(&serde_json::json!({"name": "Ada", "times": 2}))
//!     .send().await?.json().await?;
//! assert_eq!(ok["data"]["text"], "Hello, Ada! Hello, Ada!");
//!
//! // A missing field is an envelope naming it, not a plain-text rejection.
//! let reply = client.post(format!("{base}/api/greet")).json(&serde_json::json!({})).send().await?;
//! assert_eq!(reply.status(), 400);
//! let body: serde_json::Value = reply.json().await?;
//! assert_eq!(body["error"]["code"], "MISSING_REQUIRED_FIELD");
//! assert_eq!(body["error"]["details"]["field"], "name");
//!
//! // The manifest describes the operation, with a JSON Schema of its input.
//! let manifest: serde_json::Value =
//!     client.get(format!("{base}/api/capabilities")).send().await?.json().await?;
//! assert_eq!(manifest["data"]["capabilities"][0]["endpoint"], "/api/greet");
//! assert_eq!(manifest["data"]["capabilities"][0]["input_schema"]["required"][0], "name");
//! # Ok(())
//! # }
//! ```
//!
//! ## Reporting failures
//!
//! A failure is a [`ToolError`](recourse_protocol::ToolError) — code,
//! message, category, `retryable`, details — turned into a [`ToolFailure`]
//! by `.into()` or `?`. Choose the category by what the *agent* should do
//! next (protocol §1): `INPUT_ERROR`/`NOT_FOUND` when a corrected payload can
//! succeed, `POLICY_REJECTION` when a business rule refuses, `RATE_LIMIT` and
//! `SERVICE_ERROR` for transient trouble, `UNKNOWN_OUTCOME` when a write may
//! have committed. Set `retryable: true` only for conditions you know a
//! corrected (or repeated) call can fix, and put the fix in `details`:
//! `field`, `allowed_values` (comma-separated), `suggestion`, `retry_after`.
//! A `RATE_LIMIT` with `details.retry_after` also gets a `Retry-After` header.
//!
//! Every failure passes the redactor on the way out, so a key that slipped
//! into a message is not shown to the model.
//!
//! ## Wrapping an upstream API
//!
//! Don't forward an upstream's status or error text: use
//! [`upstream_failure`], which classifies it (an upstream 404 is the caller's
//! input error, a 5xx is a transient 502) and redacts the text.
//!
//! ## What you get for free
//!
//! - Bad bodies: [`ToolJson`] answers malformed JSON, missing fields, wrong
//!   types, non-JSON content types and oversized bodies with envelopes (see
//!   its module table).
//! - Unknown routes: 404 `NOT_FOUND` envelope; wrong methods: 405 envelope.
//! - Panics: a 500 `SERVICE_ERROR` envelope; the server keeps serving.
//! - `GET /api/capabilities`: the manifest of every operation registered
//!   with [`ToolServer::tool`].
//!
//! ## Serving it with limits
//!
//! `axum::serve` lets one client hold a connection forever, open as many
//! as it likes, or park megabytes of half-sent bodies. [`serve`] runs the
//! same router with [`ServerLimits`] — header, body and idle timeouts, caps
//! on connections and requests in flight, a bounded graceful shutdown —
//! and answers each refusal with an envelope (408, 431, 503 `OVERLOADED`):
//!
//! ```no_run
//! # async fn run(app: axum::Router) -> std::io::Result<()> {
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8700").await?;
//! recourse_tool::serve(listener, app)
//!     .with_limits(recourse_tool::ServerLimits::default())
//!     .with_graceful_shutdown(async { let _ = tokio::signal::ctrl_c().await; })
//!     .await;
//! # Ok(())
//! # }
//! ```
//!
//! Sections cited as "protocol §N" are those of the recourse protocol,
//! `docs/protocol.md` in the recourse source tree.

mod capability;
mod extract;
pub mod host;
mod panic;
mod result;
mod serve;
mod server;
mod upstream;

pub use capability::{Capability, input_schema_for};
pub use extract::{ToolJson, ToolJsonBody, ToolJsonBytes, ToolJsonRejection, parse_json};
pub use result::{Success, ToolFailure, ToolResult};
pub use serve::{InvalidLimit, Serve, ServerLimits, ServerLimitsBuilder, Stopped, serve};
pub use server::{CAPABILITIES_PATH, DEFAULT_BODY_LIMIT, ToolServer};
pub use upstream::upstream_failure;

pub use recourse_protocol as protocol;
