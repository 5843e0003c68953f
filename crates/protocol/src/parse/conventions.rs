//! The foreign conventions the parser reads into the same model: the dict
//! convention, MCP `CallToolResult`s, JSON-RPC errors and RFC 9457 problem documents.

use serde_json::{Map, Value};

use super::{BodyFormat, ParsedResponse, failure, foreign, read_envelope, str_field};
use crate::{ErrorCategory, RetryPermission, ToolError};

pub(super) fn is_dict_convention(obj: &Map<String, Value>) -> bool {
    match obj.get("status").and_then(Value::as_str) {
        Some("error") => true,
        Some("success") => !obj.contains_key("error_category") || obj.contains_key("message"),
        _ => false,
    }
}

pub(super) fn read_dict(status: u16, obj: Map<String, Value>) -> ParsedResponse {
    if obj.get("status").and_then(Value::as_str) == Some("success") {
        return foreign(
            status,
            BodyFormat::DictConvention,
            Some(Value::Object(obj)),
            None,
        );
    }
    let category = match obj.get("error_category").and_then(Value::as_str) {
        Some("user_error") => Some(ErrorCategory::InputError),
        Some("system_error") => Some(ErrorCategory::ServiceError),
        Some("policy_rejection" | "policy_violation") => Some(ErrorCategory::PolicyRejection),
        Some(other) => Some(ErrorCategory::Other(other.to_owned())),
        // No category: a 2xx stops unclassified rather than routing as a 500.
        None => None,
    };
    let code = str_field(&obj, "error_code").unwrap_or_else(|| "UNSPECIFIED".to_owned());
    let message = str_field(&obj, "message").unwrap_or_default();
    let placeholder = ErrorCategory::Other(String::new());
    let mut error = ToolError::new(category.clone().unwrap_or(placeholder), code, message);
    if let Some(action) = obj.get("suggested_action") {
        error = error.detail_value("suggested_action", action.clone());
    }
    let permission = match obj.get("retryable") {
        Some(Value::Bool(b)) => RetryPermission::from_flag(*b),
        _ => RetryPermission::Unspecified,
    };
    let mut parsed = failure(status, BodyFormat::DictConvention, &error, permission);
    parsed.category = category;
    parsed
}

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

pub(super) fn read_mcp(status: u16, mut obj: Map<String, Value>) -> ParsedResponse {
    let is_error = obj.get("isError") == Some(&Value::Bool(true));
    let structured = obj.remove("structuredContent");
    if !is_error {
        let data = structured.or(Some(Value::Object(obj)));
        return foreign(status, BodyFormat::McpResult, data, None);
    }
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
    let error = ToolError::input_error("TOOL_ERROR", text);
    failure(
        status,
        BodyFormat::McpResult,
        &error,
        RetryPermission::Unspecified,
    )
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

pub(super) fn read_jsonrpc(status: u16, mut obj: Map<String, Value>) -> ParsedResponse {
    let void_result = obj.get("result") == Some(&Value::Null);
    match obj.remove("result") {
        Some(Value::Object(result)) if is_mcp_result(&result) => return read_mcp(status, result),
        Some(Value::Null) | None => {}
        Some(result) => return foreign(status, BodyFormat::Json, Some(result), None),
    }
    let Some(Value::Object(err)) = obj.remove("error") else {
        let data = (!void_result).then_some(Value::Object(obj));
        return foreign(status, BodyFormat::Json, data, None);
    };
    let rpc_code = err.get("code").and_then(Value::as_i64).unwrap_or(0);
    let message = str_field(&err, "message").unwrap_or_default();
    let (category, code) = match rpc_code {
        -32700 => (ErrorCategory::InputError, "PARSE_ERROR"),
        -32600 => (ErrorCategory::InputError, "INVALID_REQUEST"),
        -32601 => (ErrorCategory::NotFound, "METHOD_NOT_FOUND"),
        -32602 => (ErrorCategory::InputError, "INVALID_PARAMS"),
        _ => (ErrorCategory::ServiceError, "INTERNAL_ERROR"),
    };
    let mut error =
        ToolError::new(category, code, message).detail_value("jsonrpc_code", Value::from(rpc_code));
    if let Some(data) = err.get("data") {
        error = error.detail_value("data", data.clone());
    }
    let mut parsed = failure(
        status,
        BodyFormat::JsonRpcError,
        &error,
        RetryPermission::Unspecified,
    );
    parsed.success = false;
    parsed
}

pub(super) fn read_problem(status: u16, mut obj: Map<String, Value>) -> ParsedResponse {
    let permission = match obj.remove("retryable") {
        Some(Value::Bool(b)) => RetryPermission::from_flag(b),
        _ => RetryPermission::Unspecified,
    };
    let category = obj
        .remove("category")
        .and_then(|c| c.as_str().map(ErrorCategory::from_wire));
    let title = str_field(&obj, "title");
    let code = str_field(&obj, "code").or_else(|| {
        let from_type = str_field(&obj, "type")
            .filter(|t| t != "about:blank")
            .and_then(|t| {
                t.trim_end_matches('/')
                    .rsplit(['/', '#', ':'])
                    .next()
                    .map(str::to_owned)
            });
        from_type
            .or_else(|| title.clone())
            .map(|s| upper_snake(&s))
            .filter(|s| !s.is_empty())
    });
    obj.remove("code");
    let message = str_field(&obj, "detail").or(title);
    obj.remove("detail");
    obj.remove("status");
    let details = if obj.is_empty() {
        Value::Null
    } else {
        Value::Object(obj)
    };
    ParsedResponse {
        status,
        format: BodyFormat::Problem,
        success: false,
        data: None,
        category,
        code,
        message,
        details,
        permission,
        server_wait: None,
    }
}

/// `"Out of credit"` → `"OUT_OF_CREDIT"`.
fn upper_snake(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_uppercase());
        } else if !out.ends_with('_') && !out.is_empty() {
            out.push('_');
        }
    }
    out.trim_end_matches('_').to_owned()
}
