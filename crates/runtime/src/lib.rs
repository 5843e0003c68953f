//! # recourse
//!
//! The agent-side executor: it runs tool calls and, when one fails, does what a
//! careful engineer would — waits and resends the same payload, asks for a
//! corrected payload, reconciles a write whose outcome is unknown, or stops
//! honestly — by a fixed, testable [`Policy`].
//!
//! ```
//! use recourse::{Call, Executor, InProcessTransport, ManualClock};
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
//! assert_eq!(report.outcome.name(), "succeeded");
//! assert_eq!(report.attempts[0].action.name(), "retry_same");
//! assert_eq!(calls.load(Ordering::SeqCst), 2);
//! # });
//! ```
//!
//! The pieces, each in its own module: [`Policy`] (pure decisions),
//! [`Backoff`] (an iterator of waits), [`RetryBudget`] and [`CircuitBreakers`]
//! (shared across calls; across processes through a [`SharedState`], such as
//! `RedisSharedState` with the `redis` feature), [`Transport`]s ([`HttpTransport`],
//! [`InProcessTransport`]), the [`Corrector`] and [`Reconciler`] seams, and the
//! [`Executor`] loop that ties them together and yields a [`CallReport`].
//! [`Executor::from_env`] wires the standard executor from `RECOURSE_*`.
//!
//! # The record
//!
//! Every call yields a [`CallReport`]: the outcome, and per attempt an
//! [`AttemptRecord`] — the payload sent (redacted), the status or transport
//! failure, the parsed category and retry permission, the policy's
//! [`Action`], and the typed [`Event`]s around it (coercion, corrections and
//! their gate verdicts, waits and who asked for them, lookups, journal
//! writes). It serializes (serde) to the JSON `recourse call --json` prints;
//! `record_version` is 1, the human-readable `notes` are generated from the
//! events, and nothing in recourse reads text back to decide anything.
//!
//! Sections cited as "protocol §N" are those of the recourse protocol,
//! `docs/protocol.md` in the recourse source tree.

mod admit;
mod allow;
mod backoff;
mod breaker;
mod budget;
mod call;
mod clock;
mod config;
mod correct;
mod correction;
mod executor;
mod hex;
mod http_reconciler;
mod idempotency;
mod journal;
mod json_order;
mod keyed;
#[cfg(feature = "llm")]
mod llm;
mod manifest;
mod method;
mod metrics;
mod policy;
mod protect;
mod reconcile;
mod record;
mod run;
mod shared;
mod target;
mod template;
mod transport;
mod verify;
#[cfg(feature = "workflow")]
mod workflow;

pub use admit::{Admission, Admitted, AsIs};
pub use allow::{TargetAllowlist, TargetError, TargetErrorKind, TargetPattern, TargetUrl};
pub use backoff::Backoff;
pub use breaker::{BreakerState, CircuitBreakers};
pub use budget::RetryBudget;
pub use call::{Call, CallBuilder, check_header};
pub use clock::{Clock, ManualClock, SystemClock};
pub use config::{ConfigError, ExecutorConfig, parse_bool, parse_header_name};
pub use correct::{Correction, CorrectionRequest, Corrector, LayerVerdict};
pub use correction::{
    ChainInContext, CoercionChange, CoercionRule, CorrectionChain, DeterministicRepair,
    FailedAttempt, NO_MODEL, Schema, SchemaCoercion, SchemaViolation, Trajectory,
};
#[cfg(feature = "llm")]
pub use correction::{
    ContextualReresolution, DebugMessage, LLM_DEBUG_VERSION, LlmCorrector, LlmDebugDir,
    LlmDebugEntry, LlmDebugRecord, LlmDebugStore, LlmExchange,
};
pub use executor::{Executor, ExecutorBuilder};
pub use http_reconciler::HttpReconciler;
pub use idempotency::{Evidence, Idempotency};
#[cfg(feature = "postgres")]
pub use journal::PostgresJournal;
#[cfg(feature = "sqlite")]
pub use journal::SqliteJournal;
pub use journal::{
    AttemptResult, CallState, Claimed, Journal, JournalEntry, JournalError, JournalResult,
    KeyClaim, ListQuery, MAX_LIST, NewCall, RecordJson, RecordSummary, SettleOptions, Settlement,
    open_journal, process_owner, rfc3339, settle, settle_with,
};
pub use keyed::{Keyed, request_hash};
#[cfg(feature = "llm")]
pub use llm::{
    ChatMessage, Completion, CompletionRequest, DEFAULT_BASE_URL, DEFAULT_MODEL, LanguageModel,
    LlmConfig, LlmError, OpenAiCompatible, Role, estimate_tokens,
};
pub use manifest::{CapabilityManifests, MANIFEST_PATH};
pub use method::Method;
pub use metrics::{MetricFamily, MetricKind, MetricSample, Metrics};
pub use policy::machine;
pub use policy::{
    Action, Limits, Observation, Policy, Situation, StopKind, StopReason, Traits, Verification,
    VerifyResult, WriteAnswer, is_unknown_outcome,
};
pub use protect::{Protected, ProtectionViolation, validate_pointer};
pub use reconcile::{ReconcileRequest, Reconciler, Reconciliation};
pub use record::{
    AttemptRecord, CallReport, CorrectionLayer, Event, GateRule, LookupResult,
    MODEL_MESSAGE_MAX_CHARS, Next, NextStep, Outcome, PayloadSource, RECORD_VERSION, TokenUsage,
    Verdict, VerifyPhase, WaitCause,
};
pub use recourse_protocol::ToolData;
pub use shared::{EndpointHealth, SharedMode, SharedState, SharedUnavailable};
#[cfg(feature = "redis")]
pub use shared::{RedisSharedState, RedisSharedStateBuilder, SharedStateError};
pub use target::Target;
pub use transport::{
    BoxFuture, DEFAULT_MAX_BODY_BYTES, Delivery, HttpTransport, HttpTransportBuilder,
    InProcessTransport, RawResponse, Request, Transport, TransportFailure, TransportFailureKind,
};
pub use url::Url;
pub use verify::VerifySpec;
#[cfg(feature = "workflow")]
pub use workflow::{
    Approval, ApprovalRequest, ApproveAll, Approver, CAPABILITIES_PATH, Catalogue, CatalogueEntry,
    DEFAULT_CONCURRENCY, Plan, PlanError, PlanStep, RejectAll, StepOutcome, StepReport, Workflow,
    WorkflowReport, WorkflowRunner,
};
