//! The per-attempt trace every call yields (SPEC §3).

use recourse_protocol::RetryPermission;
use serde::Serialize;
use serde_json::Value;

/// Which layer produced the payload an attempt sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PayloadSource {
    /// The caller's payload, as given.
    Caller,
    /// The caller's or a corrected payload, changed by schema coercion (L2).
    Coercion,
    /// Deterministic repair (L2.5).
    Repair,
    /// LLM correction (L3).
    Llm,
    /// Contextual re-resolution (L4).
    Semantic,
}

impl PayloadSource {
    /// The snake-case name used in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Caller => "caller",
            Self::Coercion => "coercion",
            Self::Repair => "repair",
            Self::Llm => "llm",
            Self::Semantic => "semantic",
        }
    }
}

/// One dispatch and what the policy made of it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AttemptRecord {
    /// 1-based attempt number.
    pub n: u32,
    /// The payload sent, redacted.
    pub payload: Value,
    /// The HTTP status, when the tool answered.
    pub status: Option<u16>,
    /// The transport failure, when it did not (`connect_failed: …`).
    pub transport_error: Option<String>,
    /// The category the tool named, if any.
    pub category: Option<String>,
    /// The error code the tool named, if any.
    pub code: Option<String>,
    /// The tool's retry permission.
    pub retry_permission: RetryPermission,
    /// What the policy decided: `succeed`, `retry_same`, `correct`, `reconcile`, `stop`.
    pub action: &'static str,
    /// How long the executor waited before the next attempt.
    pub wait_ms: Option<u64>,
    /// Which layer produced this attempt's payload.
    pub source: PayloadSource,
    /// Why: the stop reason's code, when the action stopped.
    pub reason: Option<&'static str>,
    /// What happened between this attempt and the next (corrections tried,
    /// rejected, lookups made), in order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}
