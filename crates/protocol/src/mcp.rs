//! Names recourse's MCP client and MCP tool server agree on.
//!
//! MCP has no headers, so what HTTP carries in a header travels in a
//! request's `_meta`; a call to a tool the server does not have is a stop
//! with its own code, whichever side notices first; and a failed call's
//! result carries the proposed MCP failure metadata beside its envelope, so
//! an MCP client that knows no envelope still reads the failure's class,
//! code, retry permission and wait.

mod error;

pub use error::{McpError, McpErrorKind};

use std::time::SystemTime;

use serde_json::{Map, Value};

use crate::category::ErrorCategory;

/// The `_meta` key of a `tools/call` that carries the executor's
/// `Idempotency-Key`; recourse's MCP tool server forwards it as that header.
pub const IDEMPOTENCY_META_KEY: &str = "recourse/idempotency-key";

/// The code of the non-retryable NOT_FOUND failure for a tool the server
/// does not have.
pub const UNKNOWN_TOOL: &str = "UNKNOWN_TOOL";

/// The `_meta` key of a `tools/call` result's failure metadata (an MCP
/// proposal): `{class, code, retryable, retryNotBefore}`.
pub const TOOL_FAILURE_META_KEY: &str = "io.modelcontextprotocol/toolFailure";

/// The failure metadata for a failed call: `class` is the category's wire
/// name, `retryable` is written only when the tool stated it, and
/// `retryNotBefore` (RFC 3339, UTC) only when the tool asked for a wait.
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
///     serde_json::json!({"class": "RATE_LIMIT", "code": "QUOTA", "retryable": true,
///                        "retryNotBefore": "2015-10-21T07:28:00.000Z"})
/// );
/// ```
pub fn tool_failure_meta(
    category: &ErrorCategory,
    code: &str,
    retryable: Option<bool>,
    retry_not_before: Option<SystemTime>,
) -> Value {
    let mut meta = Map::new();
    meta.insert("class".to_owned(), Value::from(category.as_str()));
    meta.insert("code".to_owned(), Value::from(code));
    if let Some(retryable) = retryable {
        meta.insert("retryable".to_owned(), Value::Bool(retryable));
    }
    if let Some(when) = retry_not_before {
        let when = crate::timestamp::format_rfc3339(when);
        meta.insert("retryNotBefore".to_owned(), Value::String(when));
    }
    Value::Object(meta)
}
