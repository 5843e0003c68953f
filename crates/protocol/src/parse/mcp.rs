//! MCP results: a `CallToolResult` (with or without `isError`), an
//! `input_required` result, and the failure metadata an `isError` result may
//! carry under `_meta["io.modelcontextprotocol/toolFailure"]`.
//!
//! An `isError` result is read by the first of these that applies:
//!
//! 1. our envelope in `structuredContent` (or a bare [`ToolError`] there);
//! 2. the failure metadata, when its `class` is a string: `class` is one of
//!    the proposal's classes (`capability`, `reliability`, `governance`,
//!    read as [`FailureClass::category`] assumes) or a category (our wire
//!    names, in any case: `RATE_LIMIT`, `rate_limit`), `code` the code, a
//!    boolean `retryable` the permission, and `retryNotBefore` (Unix epoch
//!    milliseconds, or an RFC 3339 or HTTP date) the wait;
//! 3. the text, when it names a transient failure (an HTTP status such as
//!    503 or 429, "timed out", "rate limit", "temporarily unavailable"): that
//!    category, as a guess ([`CategoryBasis::FreeText`]) with an unspecified
//!    permission;
//! 4. otherwise an INPUT_ERROR with the text as its message, its category
//!    [assumed](CategoryBasis::Assumed): the tool named none.
//!
//! The whole result is kept as the response's [`answer`](ParsedResponse::answer)
//! whenever the result's `data` (or error) is only a part of it, so that
//! what the tool said can be given back whole.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value};

use super::{BodyFormat, CategoryBasis, Need, ParsedResponse, failure, foreign, read_envelope};
use crate::category::ErrorCategory;
use crate::classify::recognise_transient;
use crate::error::ToolError;
use crate::mcp::{FailureClass, TOOL_FAILURE_META_KEY};
use crate::permission::RetryPermission;
use crate::timestamp::parse_rfc3339;
use crate::wait::parse_retry_after;

pub(super) fn is_mcp_result(obj: &Map<String, Value>) -> bool {
    let content_ok = match obj.get("content") {
        Some(Value::Array(items)) => items
            .iter()
            .all(|i| i.get("type").is_some_and(Value::is_string)),
        _ => false,
    };
    let flag_ok = matches!(obj.get("isError"), None | Some(Value::Bool(_)));
    content_ok && flag_ok
}

/// An MCP result asking the client for input before the tool runs.
pub(super) fn is_input_required(obj: &Map<String, Value>) -> bool {
    obj.get("resultType").and_then(Value::as_str) == Some("input_required")
}

pub(super) fn read_input_required(status: u16) -> ParsedResponse {
    let mut parsed = foreign(status, BodyFormat::McpResult, None, None);
    parsed.success = false;
    parsed.data = None;
    parsed.code = Some("INPUT_REQUIRED".to_owned());
    parsed.message = Some(
        "the MCP server asked for input from the user (elicitation, sampling or roots) \
         before the tool runs"
            .to_owned(),
    );
    parsed.needs = Some(Need::Input);
    parsed
}

pub(super) fn read_mcp(status: u16, obj: Map<String, Value>, now: SystemTime) -> ParsedResponse {
    let is_error = obj.get("isError") == Some(&Value::Bool(true));
    if !is_error {
        // The structured result is the data; without one, the whole result.
        let Some(structured) = obj.get("structuredContent").cloned() else {
            return foreign(
                status,
                BodyFormat::McpResult,
                Some(Value::Object(obj)),
                None,
            );
        };
        let mut parsed = foreign(status, BodyFormat::McpResult, Some(structured), None);
        parsed.answer = Some(Value::Object(obj));
        return parsed;
    }
    let whole = Value::Object(obj.clone());
    let mut parsed = read_mcp_error(status, obj, now);
    parsed.answer = Some(whole);
    parsed
}

/// An `isError` result, read by the first rule of the module's that applies.
fn read_mcp_error(status: u16, mut obj: Map<String, Value>, now: SystemTime) -> ParsedResponse {
    let structured = obj.remove("structuredContent");
    if let Some(Value::Object(inner)) = structured {
        if matches!(inner.get("success"), Some(Value::Bool(false))) {
            let mut parsed = read_envelope(status, inner);
            parsed.format = BodyFormat::McpResult;
            return parsed;
        }
        if let Ok(error) = serde_json::from_value::<ToolError>(Value::Object(inner.clone())) {
            let permission = match inner.get("retryable") {
                Some(Value::Bool(b)) => RetryPermission::from_flag(*b),
                _ => RetryPermission::Unspecified,
            };
            return failure(status, BodyFormat::McpResult, &error, permission);
        }
    }
    let text = mcp_text(obj.get("content"));
    if let Some(meta) = failure_meta(&obj) {
        return read_failure_meta(status, meta, text, now);
    }
    let (error, basis) = match recognise_transient(&text) {
        Some(category) => (
            ToolError::new(category, "TOOL_ERROR", text),
            CategoryBasis::FreeText,
        ),
        None => (
            ToolError::input_error("TOOL_ERROR", text),
            CategoryBasis::Assumed,
        ),
    };
    let mut parsed = failure(
        status,
        BodyFormat::McpResult,
        &error,
        RetryPermission::Unspecified,
    );
    parsed.basis = basis;
    parsed
}

/// The failure metadata, when it is an object with a string `class`.
fn failure_meta(obj: &Map<String, Value>) -> Option<&Map<String, Value>> {
    let meta = obj.get("_meta")?.get(TOOL_FAILURE_META_KEY)?.as_object()?;
    meta.get("class")
        .is_some_and(Value::is_string)
        .then_some(meta)
}

fn read_failure_meta(
    status: u16,
    meta: &Map<String, Value>,
    text: String,
    now: SystemTime,
) -> ParsedResponse {
    let class = meta
        .get("class")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let category = match FailureClass::from_wire(class) {
        Some(class) => class.category(),
        None => ErrorCategory::from_wire(&class.to_ascii_uppercase()),
    };
    let code = meta
        .get("code")
        .and_then(Value::as_str)
        .unwrap_or("TOOL_ERROR");
    let message = if text.is_empty() {
        class.to_owned()
    } else {
        text
    };
    let permission = match meta.get("retryable") {
        Some(Value::Bool(b)) => RetryPermission::from_flag(*b),
        _ => RetryPermission::Unspecified,
    };
    let error = ToolError::new(category, code, message);
    let mut parsed = failure(status, BodyFormat::McpResult, &error, permission);
    parsed.server_wait = meta
        .get("retryNotBefore")
        .and_then(|when| not_before(when, now));
    parsed
}

/// How long from `now` until `when` (Unix epoch milliseconds, RFC 3339, or
/// an HTTP date); zero when past.
fn not_before(when: &Value, now: SystemTime) -> Option<Duration> {
    let at = match when {
        Value::Number(ms) => UNIX_EPOCH.checked_add(epoch_ms(ms)?)?,
        Value::String(when) => return not_before_text(when, now),
        _ => return None,
    };
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// A number of milliseconds: whole, or with a fraction; never negative.
fn epoch_ms(ms: &serde_json::Number) -> Option<Duration> {
    match ms.as_u64() {
        Some(whole) => Some(Duration::from_millis(whole)),
        None => Duration::try_from_secs_f64(ms.as_f64()? / 1000.0).ok(),
    }
}

fn not_before_text(when: &str, now: SystemTime) -> Option<Duration> {
    match parse_rfc3339(when) {
        Some(at) => Some(at.duration_since(now).unwrap_or(Duration::ZERO)),
        None if when.trim().bytes().all(|b| b.is_ascii_digit()) => None,
        None => parse_retry_after(when, now),
    }
}

fn mcp_text(content: Option<&Value>) -> String {
    let Some(Value::Array(items)) = content else {
        return String::new();
    };
    items
        .iter()
        .filter_map(|i| i.get("text").and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join("\n")
}
