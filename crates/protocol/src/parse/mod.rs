//! The total response parser: (HTTP status, headers, body bytes) → what the tool said.
//!
//! Every input has an answer; nothing here panics or returns `Err`. The rules
//! are protocol §1's, in this order:
//!
//! 1. An RFC 9457 `application/problem+json` body is a problem document.
//! 2. A JSON object whose `success` is a boolean is our envelope.
//! 3. The dict convention (`{"status": "error", "error_category": …}`).
//! 4. A JSON-RPC response is unwrapped (its `result` read as below, its `error` mapped).
//! 5. An MCP `CallToolResult` (`content` array, optional `isError`), or an
//!    MCP `input_required` result.
//! 6. Anything else is "not an envelope": it routes by HTTP status alone.
//!
//! `retryable` is recognised only as a boolean, and only where a convention
//! puts it: inside our envelope when `success` is the boolean `false` and
//! `error` is an object holding it; at the top of a dict-convention body or a
//! problem document; in an MCP result's failure metadata.
//!
//! # Why a category carries its basis
//!
//! Not every category is equally a statement. Our envelope, a problem
//! document or MCP failure metadata *say* what failed; a JSON-RPC internal
//! error says only that something did, like a bare HTTP 500; and a category
//! read out of an MCP error's prose ("upstream 503, try later") is a guess.
//! [`ParsedResponse::basis`] keeps that difference as a type, so the policy
//! can resend an idempotent call on a guess of a transient failure while
//! never correcting a payload or resending a write on one.

use std::time::{Duration, SystemTime};

use serde_json::{Map, Value};

mod basis;
mod conventions;
mod jsonrpc;
mod mcp;

pub use basis::{CategoryBasis, Need};
use conventions::{is_dict_convention, read_dict, read_problem};
use jsonrpc::read_jsonrpc;
use mcp::{is_input_required, is_mcp_result, read_input_required, read_mcp};

use crate::category::ErrorCategory;
use crate::data::ToolData;
use crate::error::ToolError;
use crate::permission::RetryPermission;
use crate::wait::{parse_retry_after, parse_retry_after_detail};

/// How the body was understood.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BodyFormat {
    /// No body, or only whitespace.
    Empty,
    /// Our envelope `{success, data?, error?}`.
    Envelope,
    /// The dict convention `{status, error_category, error_code, message, …}`.
    DictConvention,
    /// An MCP `CallToolResult`, possibly inside a JSON-RPC response.
    McpResult,
    /// A JSON-RPC error object.
    JsonRpcError,
    /// An RFC 9457 problem document.
    Problem,
    /// JSON that follows none of the conventions above.
    Json,
    /// A body that is not JSON (HTML, plain text, binary).
    Text,
}

impl BodyFormat {
    /// A short snake-case name for reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Empty => "empty",
            Self::Envelope => "envelope",
            Self::DictConvention => "dict_convention",
            Self::McpResult => "mcp_result",
            Self::JsonRpcError => "jsonrpc_error",
            Self::Problem => "problem",
            Self::Json => "json",
            Self::Text => "text",
        }
    }

    /// Whether the body followed a convention that can carry a category.
    pub fn is_structured(self) -> bool {
        !matches!(self, Self::Empty | Self::Json | Self::Text)
    }
}

/// What a tool's HTTP response said, in the terms the decision policy needs.
///
/// ```
/// use recourse_protocol::{parse_response, ErrorCategory, RetryPermission};
///
/// let body = br#"{"success":false,"error":{"code":"DOWN","message":"db offline","category":"SERVICE_ERROR","retryable":true}}"#;
/// let parsed = parse_response(503, [("Retry-After", "2")], body);
/// assert!(!parsed.success);
/// assert_eq!(parsed.category, Some(ErrorCategory::ServiceError));
/// assert_eq!(parsed.permission, RetryPermission::Allowed);
/// assert_eq!(parsed.server_wait, Some(std::time::Duration::from_secs(2)));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedResponse {
    /// The HTTP status as received.
    pub status: u16,
    /// How the body was understood.
    pub format: BodyFormat,
    /// Whether the call succeeded: a 2xx whose body does not report a failure.
    pub success: bool,
    /// The result on success (the envelope's `data`, or the whole JSON body).
    pub data: Option<ToolData>,
    /// The category the body named, if it followed a convention that names one.
    pub category: Option<ErrorCategory>,
    /// The error code the body named.
    pub code: Option<String>,
    /// A human-readable message: the body's own, or an excerpt of a foreign body.
    /// Raw: pass it through [`crate::redact::redact`] before showing it to a model.
    pub message: Option<String>,
    /// The error's details as sent (`Value::Null` when none).
    pub details: Value,
    /// The tool's retry permission.
    pub permission: RetryPermission,
    /// The wait the server asked for: the longest of `Retry-After`,
    /// `details.retry_after` and a wait the body's convention states (a
    /// JSON-RPC `data.retryAfterMs`, MCP failure metadata's `retryNotBefore`).
    pub server_wait: Option<Duration>,
    /// What [`category`](Self::category) rests on.
    pub basis: CategoryBasis,
    /// What the call needs before it can go on, when that is neither a resend
    /// nor a correction.
    pub needs: Option<Need>,
    /// The tool's whole answer, when [`data`](Self::data) (or the failure)
    /// is only a part of it: an MCP result's content, `structuredContent`,
    /// `isError` and `_meta`, kept so that what the tool said can be given
    /// back whole.
    pub answer: Option<Value>,
}

/// Parses a response using the current time for HTTP-date `Retry-After` values.
/// See [`parse_response_at`].
pub fn parse_response<I, K, V>(status: u16, headers: I, body: &[u8]) -> ParsedResponse
where
    I: IntoIterator<Item = (K, V)>,
    K: AsRef<str>,
    V: AsRef<str>,
{
    parse_response_at(status, headers, body, SystemTime::now())
}

/// Parses a response, resolving HTTP-date `Retry-After` values against `now`.
/// Header names are matched case-insensitively. Total: never panics.
pub fn parse_response_at<I, K, V>(
    status: u16,
    headers: I,
    body: &[u8],
    now: SystemTime,
) -> ParsedResponse
where
    I: IntoIterator<Item = (K, V)>,
    K: AsRef<str>,
    V: AsRef<str>,
{
    // The last `Content-Type` decides, as the last `Retry-After` does.
    let mut is_problem = false;
    let mut retry_after = None;
    for (name, value) in headers {
        let name = name.as_ref();
        if name.eq_ignore_ascii_case("content-type") {
            is_problem = value.as_ref().split(';').next().is_some_and(|media| {
                media
                    .trim()
                    .eq_ignore_ascii_case("application/problem+json")
            });
        } else if name.eq_ignore_ascii_case("retry-after") {
            retry_after = parse_retry_after(value.as_ref(), now);
        }
    }

    let mut parsed = read_body(status, body, is_problem, now);
    let detail_wait = parsed
        .details
        .as_object()
        .and_then(|d| d.get("retry_after"))
        .and_then(parse_retry_after_detail);
    let body_wait = parsed.server_wait.take();
    parsed.server_wait = [retry_after, detail_wait, body_wait]
        .into_iter()
        .flatten()
        .max();
    parsed
}

/// Reads an answer already in memory as a JSON value — what a transport
/// that holds a typed answer (an MCP result) hands over instead of bytes —
/// exactly as [`parse_response_at`] reads the same value's text with no
/// headers. Total: never panics.
///
/// ```
/// use recourse_protocol::{BodyFormat, parse_value_at};
/// use serde_json::json;
///
/// let result = json!({"content": [{"type": "text", "text": "done"}], "structuredContent": {"id": 7}});
/// let parsed = parse_value_at(200, result.clone(), std::time::SystemTime::now());
/// assert!(parsed.success);
/// assert_eq!(parsed.format, BodyFormat::McpResult);
/// assert_eq!(parsed.data.unwrap().to_value(), json!({"id": 7}));
/// assert_eq!(parsed.answer, Some(result));
/// ```
pub fn parse_value_at(status: u16, value: Value, now: SystemTime) -> ParsedResponse {
    match value {
        Value::Object(obj) => read_object(status, obj, now),
        other => foreign(status, BodyFormat::Json, Some(other), None),
    }
}

fn is_2xx(status: u16) -> bool {
    (200..300).contains(&status)
}

fn read_body(status: u16, body: &[u8], is_problem: bool, now: SystemTime) -> ParsedResponse {
    if body.iter().all(u8::is_ascii_whitespace) {
        return foreign(status, BodyFormat::Empty, None, None);
    }
    if !is_problem
        && is_2xx(status)
        && let Some(parsed) = read_success(status, body)
    {
        return parsed;
    }
    let value: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(_) => return foreign(status, BodyFormat::Text, None, text_excerpt(body)),
    };
    match value {
        Value::Object(obj) if is_problem => read_problem(status, obj),
        Value::Object(obj) => read_object(status, obj, now),
        other => foreign(status, BodyFormat::Json, Some(other), None),
    }
}

/// Our envelope's success, the common answer, read without building a tree:
/// its `data` is kept as the text the tool sent. `None` for anything else —
/// a failure, another convention, a duplicated field, text that is not one
/// JSON object — which the full reading below decides.
fn read_success(status: u16, body: &[u8]) -> Option<ParsedResponse> {
    // serde's derived struct also reads a JSON array as its fields in order,
    // so `[true]` would pass for `{"success": true}`: only an object may.
    if body.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return None;
    }
    #[derive(serde::Deserialize)]
    struct Success<'a> {
        success: bool,
        #[serde(borrow, default)]
        data: Option<&'a serde_json::value::RawValue>,
    }
    let envelope: Success<'_> = serde_json::from_slice(body).ok()?;
    if !envelope.success {
        return None;
    }
    let mut parsed = foreign(status, BodyFormat::Envelope, None, None);
    parsed.data = envelope.data.map(|raw| ToolData::from_raw(raw.to_owned()));
    Some(parsed)
}

fn read_object(status: u16, obj: Map<String, Value>, now: SystemTime) -> ParsedResponse {
    if matches!(obj.get("success"), Some(Value::Bool(_))) {
        return read_envelope(status, obj);
    }
    if is_dict_convention(&obj) {
        return read_dict(status, obj);
    }
    if obj.contains_key("jsonrpc") {
        return read_jsonrpc(status, obj, now);
    }
    if is_mcp_result(&obj) {
        return read_mcp(status, obj, now);
    }
    if is_input_required(&obj) {
        return read_input_required(status);
    }
    let message = error_message_hint(&obj);
    foreign(status, BodyFormat::Json, Some(Value::Object(obj)), message)
}

/// A response whose body follows no convention: success iff 2xx, no category,
/// permission unspecified.
fn foreign(
    status: u16,
    format: BodyFormat,
    data: Option<Value>,
    message: Option<String>,
) -> ParsedResponse {
    let success = is_2xx(status);
    ParsedResponse {
        status,
        format,
        success,
        data: if success {
            data.map(ToolData::from)
        } else {
            None
        },
        category: None,
        code: None,
        message: if success { None } else { message },
        details: Value::Null,
        permission: RetryPermission::Unspecified,
        server_wait: None,
        basis: CategoryBasis::Stated,
        needs: None,
        answer: None,
    }
}

fn failure(
    status: u16,
    format: BodyFormat,
    error: &ToolError,
    permission: RetryPermission,
) -> ParsedResponse {
    ParsedResponse {
        status,
        format,
        success: false,
        data: None,
        category: Some(error.category.clone()),
        code: Some(error.code.clone()),
        message: Some(error.message.clone()),
        details: error.details.clone(),
        permission,
        server_wait: None,
        basis: CategoryBasis::Stated,
        needs: None,
        answer: None,
    }
}

pub(super) fn read_envelope(status: u16, mut obj: Map<String, Value>) -> ParsedResponse {
    let said_success = obj.get("success") == Some(&Value::Bool(true));
    if said_success {
        // `success: true` on a non-2xx is a failure that routes by status;
        // any `retryable` in it is misplaced, hence unspecified.
        let data = obj.remove("data").filter(|d| !d.is_null());
        return foreign(status, BodyFormat::Envelope, data, None);
    }
    let error = obj.remove("error").unwrap_or(Value::Null);
    let mut parsed = foreign(status, BodyFormat::Envelope, None, None);
    parsed.success = false;
    match error {
        Value::Object(e) => {
            parsed.permission = match e.get("retryable") {
                Some(Value::Bool(b)) => RetryPermission::from_flag(*b),
                _ => RetryPermission::Unspecified,
            };
            parsed.category = str_field(&e, "category").map(|c| ErrorCategory::from_wire(&c));
            parsed.code = str_field(&e, "code");
            parsed.message = str_field(&e, "message");
            parsed.details = e
                .get("details")
                .cloned()
                .filter(|d| !is_empty_details(d))
                .unwrap_or(Value::Null);
        }
        Value::String(s) => parsed.message = Some(s),
        _ => {}
    }
    parsed
}

fn is_empty_details(v: &Value) -> bool {
    v.is_null() || v.as_object().is_some_and(Map::is_empty)
}

fn str_field(obj: &Map<String, Value>, key: &str) -> Option<String> {
    obj.get(key).and_then(Value::as_str).map(str::to_owned)
}

/// A message from a foreign JSON error body (`{"error": {"message": …}}`,
/// `{"message": …}`), for humans only: it grants no category or permission.
fn error_message_hint(obj: &Map<String, Value>) -> Option<String> {
    match obj.get("error") {
        Some(Value::String(s)) => return Some(s.clone()),
        Some(Value::Object(e)) => {
            if let Some(m) = str_field(e, "message") {
                return Some(m);
            }
        }
        _ => {}
    }
    str_field(obj, "message").or_else(|| str_field(obj, "detail"))
}

const EXCERPT_CHARS: usize = 300;

/// How far past the cut an excerpt is redacted first, so a secret straddling
/// the cut is recognised whole rather than left as an unrecognisable prefix.
const REDACT_WINDOW_CHARS: usize = EXCERPT_CHARS + 1024;

/// The first [`EXCERPT_CHARS`] characters of `text`, redacted before the cut.
fn excerpt(text: &str) -> String {
    let window: String = text.chars().take(REDACT_WINDOW_CHARS).collect();
    crate::redact::redact(&window)
        .chars()
        .take(EXCERPT_CHARS)
        .collect()
}

fn text_excerpt(body: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(&body[..body.len().min(64 * 1024)]);
    let text = text.trim();
    if let Some(title) = html_title(text) {
        return Some(title);
    }
    Some(excerpt(text))
}

fn html_title(text: &str) -> Option<String> {
    let lower = text.to_ascii_lowercase();
    let start = lower.find("<title>")? + "<title>".len();
    let end = start + lower[start..].find("</title>")?;
    let title = text.get(start..end)?.trim();
    (!title.is_empty()).then(|| excerpt(title))
}

impl ParsedResponse {
    /// The status this response routes as (protocol §1): the HTTP status, except
    /// that a 2xx reporting a failure routes as its category's status. `None`
    /// for a 2xx failure that names no category: the call stops, unclassified.
    pub fn routing_status(&self) -> Option<u16> {
        if self.success || !is_2xx(self.status) {
            return Some(self.status);
        }
        self.category.as_ref().map(ErrorCategory::http_status)
    }

    /// The category that routes this response: the one named, else the one the
    /// routing status implies.
    pub fn effective_category(&self) -> Option<ErrorCategory> {
        self.category.clone().or_else(|| {
            self.routing_status()
                .and_then(ErrorCategory::from_http_status)
        })
    }

    /// The failure as a [`ToolError`], synthesised from the status when the
    /// body named no code or category. `None` on success.
    pub fn to_tool_error(&self) -> Option<ToolError> {
        if self.success {
            return None;
        }
        let category = self
            .effective_category()
            .unwrap_or_else(|| ErrorCategory::Other("UNCLASSIFIED".to_owned()));
        let code = self
            .code
            .clone()
            .unwrap_or_else(|| format!("HTTP_{}", self.status));
        let message = self
            .message
            .clone()
            .unwrap_or_else(|| format!("HTTP {} ({} body)", self.status, self.format.as_str()));
        let mut error = ToolError::new(category, code, message)
            .retryable(self.permission == RetryPermission::Allowed);
        error.details = self.details.clone();
        Some(error)
    }
}
