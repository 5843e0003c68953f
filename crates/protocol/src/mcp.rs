//! Names recourse's MCP client and MCP tool server agree on.
//!
//! MCP has no headers, so what HTTP carries in a header travels in a
//! request's `_meta`; a call to a tool the server does not have is a stop
//! with its own code, whichever side notices first; and a failed call's
//! result carries the proposed MCP failure metadata beside its envelope, so
//! an MCP client that knows no envelope still reads the failure's class,
//! code, retry permission and wait.

mod class;
mod error;

pub use class::FailureClass;
pub use error::{McpError, McpErrorKind};

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value};

use crate::category::ErrorCategory;

/// The `_meta` key of a `tools/call` that carries the executor's
/// `Idempotency-Key`; recourse's MCP tool server forwards it as that header.
pub const IDEMPOTENCY_META_KEY: &str = "recourse/idempotency-key";

/// The code of the non-retryable NOT_FOUND failure for a tool the server
/// does not have.
pub const UNKNOWN_TOOL: &str = "UNKNOWN_TOOL";

/// The `_meta` key of a `tools/call` result's failure metadata (an MCP
/// proposal, SEP #3313): `{class, code, retryable, retryNotBefore}`.
pub const TOOL_FAILURE_META_KEY: &str = "io.modelcontextprotocol/toolFailure";

/// The failure metadata for a failed call, in the form SEP #3313 proposes:
/// `class` is the category's [`FailureClass`] (`capability`, `reliability`,
/// `governance`), `code` the tool's code, `retryable` is written only when
/// the tool stated it, and `retryNotBefore` (Unix epoch milliseconds) only
/// when the tool asked for a wait.
///
/// ```
/// use std::time::{Duration, SystemTime};
/// use recourse_protocol::ErrorCategory;
/// use recourse_protocol::mcp::tool_failure_meta;
///
/// let at = SystemTime::UNIX_EPOCH + Duration::from_secs(1_445_412_480);
/// let meta = tool_failure_meta(&ErrorCategory::RateLimit, "QUOTA", Some(true), Some(at));
/// assert_eq!(
///     meta,
///     serde_json::json!({"class": "reliability", "code": "QUOTA", "retryable": true,
///                        "retryNotBefore": 1_445_412_480_000_u64})
/// );
/// ```
pub fn tool_failure_meta(
    category: &ErrorCategory,
    code: &str,
    retryable: Option<bool>,
    retry_not_before: Option<SystemTime>,
) -> Value {
    let mut meta = Map::new();
    let class = FailureClass::of(category).as_str();
    meta.insert("class".to_owned(), Value::from(class));
    meta.insert("code".to_owned(), Value::from(code));
    if let Some(retryable) = retryable {
        meta.insert("retryable".to_owned(), Value::Bool(retryable));
    }
    if let Some(ms) = retry_not_before.and_then(epoch_ms) {
        meta.insert("retryNotBefore".to_owned(), Value::from(ms));
    }
    Value::Object(meta)
}

/// `when` in milliseconds since the Unix epoch; `None` before it, or past
/// what a `u64` holds.
fn epoch_ms(when: SystemTime) -> Option<u64> {
    let since = when.duration_since(UNIX_EPOCH).ok()?;
    u64::try_from(since.as_millis()).ok()
}
