//! JSON-RPC responses: a `result` is read as the body it holds, an `error` is
//! mapped by its code.
//!
//! The codes that say what went wrong map to their categories; the MCP
//! codes that say the client and server disagree on the protocol (`-32020`
//! header mismatch, `-32021` missing client capability, `-32022` unsupported
//! protocol version) stop the call as a configuration problem, and the draft
//! rate-limit error `-32023` waits the `data.retryAfterMs` it names. The
//! internal error `-32603`, and every code with no meaning defined, say only
//! that the server failed: [`CategoryBasis::Opaque`], the JSON-RPC form of a
//! bare HTTP 500.

use std::time::{Duration, SystemTime};

use serde_json::{Map, Value};

use super::mcp::{is_input_required, is_mcp_result, read_input_required, read_mcp};
use super::{BodyFormat, CategoryBasis, Need, ParsedResponse, failure, foreign, str_field};
use crate::category::ErrorCategory;
use crate::error::ToolError;
use crate::permission::RetryPermission;

/// What a JSON-RPC error code means for a tool call.
struct Meaning {
    /// `None` for the protocol stops, which no category describes.
    category: Option<ErrorCategory>,
    code: &'static str,
    basis: CategoryBasis,
    needs: Option<Need>,
}

impl Meaning {
    fn stated(category: ErrorCategory, code: &'static str) -> Self {
        Self {
            category: Some(category),
            code,
            basis: CategoryBasis::Stated,
            needs: None,
        }
    }

    fn configuration(code: &'static str) -> Self {
        Self {
            category: None,
            code,
            basis: CategoryBasis::Stated,
            needs: Some(Need::Configuration),
        }
    }
}

fn meaning(rpc_code: i64) -> Meaning {
    match rpc_code {
        -32700 => Meaning::stated(ErrorCategory::InputError, "PARSE_ERROR"),
        -32600 => Meaning::stated(ErrorCategory::InputError, "INVALID_REQUEST"),
        -32601 => Meaning::stated(ErrorCategory::NotFound, "METHOD_NOT_FOUND"),
        -32602 => Meaning::stated(ErrorCategory::InputError, "INVALID_PARAMS"),
        -32020 => Meaning::configuration("HEADER_MISMATCH"),
        -32021 => Meaning::configuration("MISSING_CLIENT_CAPABILITY"),
        -32022 => Meaning::configuration("UNSUPPORTED_PROTOCOL_VERSION"),
        -32023 => Meaning::stated(ErrorCategory::RateLimit, "RATE_LIMITED"),
        _ => Meaning {
            category: Some(ErrorCategory::ServiceError),
            code: "INTERNAL_ERROR",
            basis: CategoryBasis::Opaque,
            needs: None,
        },
    }
}

pub(super) fn read_jsonrpc(
    status: u16,
    mut obj: Map<String, Value>,
    now: SystemTime,
) -> ParsedResponse {
    let void_result = obj.get("result") == Some(&Value::Null);
    match obj.remove("result") {
        Some(Value::Object(result)) if is_mcp_result(&result) => {
            return read_mcp(status, result, now);
        }
        Some(Value::Object(result)) if is_input_required(&result) => {
            return read_input_required(status);
        }
        Some(Value::Null) | None => {}
        Some(result) => return foreign(status, BodyFormat::Json, Some(result), None),
    }
    let Some(Value::Object(err)) = obj.remove("error") else {
        let data = (!void_result).then_some(Value::Object(obj));
        return foreign(status, BodyFormat::Json, data, None);
    };
    let rpc_code = err.get("code").and_then(Value::as_i64).unwrap_or(0);
    let message = str_field(&err, "message").unwrap_or_default();
    let meaning = meaning(rpc_code);
    let placeholder = ErrorCategory::Other(String::new());
    let category = meaning.category.clone().unwrap_or(placeholder);
    let mut error = ToolError::new(category, meaning.code, message)
        .detail_value("jsonrpc_code", Value::from(rpc_code));
    if let Some(data) = err.get("data") {
        error = error.detail_value("data", data.clone());
    }
    let mut parsed = failure(
        status,
        BodyFormat::JsonRpcError,
        &error,
        RetryPermission::Unspecified,
    );
    parsed.category = meaning.category;
    parsed.basis = meaning.basis;
    parsed.needs = meaning.needs;
    if rpc_code == -32023 {
        parsed.server_wait = err
            .get("data")
            .and_then(|d| d.get("retryAfterMs"))
            .and_then(millis);
    }
    parsed
}

/// A non-negative JSON number of milliseconds; `Duration::MAX` when too large
/// to represent, never mistaken for no wait.
fn millis(value: &Value) -> Option<Duration> {
    if let Some(ms) = value.as_u64() {
        return Some(Duration::from_millis(ms));
    }
    let ms = value.as_f64()?;
    if ms.is_nan() || ms < 0.0 {
        return None;
    }
    Some(Duration::try_from_secs_f64(ms / 1000.0).unwrap_or(Duration::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn retry_after_ms_reads_integers_and_fractions_and_refuses_negatives() {
        assert_eq!(millis(&json!(1500)), Some(Duration::from_millis(1500)));
        assert_eq!(millis(&json!(2.5)), Some(Duration::from_micros(2500)));
        assert_eq!(millis(&json!(-1)), None);
        assert_eq!(millis(&json!("100")), None);
        assert_eq!(millis(&json!(1e300)), Some(Duration::MAX));
    }
}
