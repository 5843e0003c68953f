//! The reconciler seam: who finds out whether a write with an unknown outcome committed.

use std::time::Duration;

use serde_json::Value;

use crate::target::Target;
use crate::transport::BoxFuture;

/// What a reconciler is told.
#[derive(Debug, Clone, Copy)]
pub struct ReconcileRequest<'a> {
    /// The call's target.
    pub target: &'a Target,
    /// The idempotency key every attempt carried.
    pub idempotency_key: Option<&'a str>,
    /// The tool's operation id (`details.operation_id`), if it gave one.
    pub operation_id: Option<&'a str>,
    /// The payload whose outcome is unknown.
    pub payload: &'a Value,
}

/// What a lookup found.
#[derive(Debug, Clone, PartialEq)]
pub enum Reconciliation {
    /// The write committed; here is its result.
    Committed(Value),
    /// Nothing was committed: one resend with the same key may follow.
    NotCommitted,
    /// Still in progress: look again after the wait (or a backoff).
    Pending {
        /// How long the tool suggests waiting.
        wait: Option<Duration>,
    },
    /// The lookup could not tell.
    Unknown(String),
}

/// Looks up the outcome of a write.
pub trait Reconciler: Send + Sync {
    /// Looks up the outcome described by `request`.
    fn reconcile<'a>(&'a self, request: ReconcileRequest<'a>) -> BoxFuture<'a, Reconciliation>;
}
