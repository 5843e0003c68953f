//! # recourse-reference-tools
//!
//! Five small tools that report honestly, on deterministic offline data,
//! with seeded fault injection: the tools recourse's executor, evaluation and
//! demo run against. Start them in-process on a free port:
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use recourse_reference_tools::{spawn, ToolsConfig};
//!
//! let tools = spawn(ToolsConfig::default().with_fault("exports:unknown_outcome".parse()?)).await?;
//! let client = reqwest::Client::new();
//! let reply = client
//!     .post(format!("{}/api/exports", tools.base_url()))
//!     .header("Idempotency-Key", "call-1")
//!     .json(&serde_json::json!({"source_id": "sales-2024", "format": "pdf"}))
//!     .send()
//!     .await?;
//! assert_eq!(reply.status(), 500); // UNKNOWN_OUTCOME — but the export was written:
//! assert_eq!(tools.exports_committed(), 1);
//! let lookup: serde_json::Value = client
//!     .get(format!("{}/api/exports/call-1", tools.base_url()))
//!     .send().await?.json().await?;
//! assert_eq!(lookup["data"]["state"], "committed");
//! tools.shutdown().await;
//! # Ok(())
//! # }
//! ```
//!
//! ## The tools
//!
//! | route | input | notable answers |
//! |---|---|---|
//! | `POST /api/weather/current` | `{location, units?}` | `"Flower Mound, TX"` → 404 `LOCATION_NOT_FOUND`, retryable, `suggestion: "Flower Mound, Texas, US"` |
//! | `POST /api/stock/quote` | `{symbol}` | TSLA → `price: 468.285`; `"MSFT Inc"` → 404 `SYMBOL_NOT_FOUND`, `suggestion: "MSFT"` |
//! | `POST /api/currency/convert` | `{amount, from, to}` | amount ≤ 0 → 400 `INVALID_AMOUNT`, not retryable; unknown code → 400 with `allowed_values` |
//! | `POST /api/orders/lookup`, `/refund` | `{order_id}` | id not `ORD-…` → 400; ORD-1001 refunds; ORD-2002 → 422 `REFUND_WINDOW_CLOSED` |
//! | `POST /api/exports` | `{source_id, version?, format}` | not idempotent, honours `Idempotency-Key`; private source → 403; unknown version → 404 with `latest_version` |
//! | `GET /api/exports/{operation_id}` | id or idempotency key | `{state: committed \| pending \| not_committed, result?}` |
//! | `GET /api/capabilities` | | the manifest, with input schemas |
//!
//! Data sources for exports: `sales-2024` (versions 1–3), `inventory` (1–2),
//! and the private `hr-salaries`.
//!
//! ## Faults
//!
//! `TOOL:KIND[:RATE]` — see [`FaultKind`]. Each call rolls each of its tool's
//! faults with a number derived from the seed, the tool, the fault and the
//! tool's call count, so a run is reproducible from its seed. Only the tools'
//! `POST` routes are faulted; the export lookup and the manifest never are.

mod config;
mod connection;
mod currency;
mod export_store;
mod exports;
mod fault;
mod faults;
mod orders;
mod seeded;
mod serve;
mod stock;
mod text;
mod weather;

pub use config::ToolsConfig;
pub use export_store::ExportResult;
pub use fault::{Fault, FaultKind, FaultParseError, ToolName};
pub use serve::{RunningTools, SpawnError, router, spawn};

pub(crate) use serve::Shared;
