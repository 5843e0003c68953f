//! Two foreign conventions the parser reads into the same model: the dict
//! convention and RFC 9457 problem documents. (JSON-RPC and MCP results have
//! their own files.)

use serde_json::{Map, Value};

use super::{BodyFormat, CategoryBasis, ParsedResponse, failure, foreign, str_field};
use crate::category::ErrorCategory;
use crate::error::ToolError;
use crate::permission::RetryPermission;

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
        basis: CategoryBasis::Stated,
        needs: None,
        answer: None,
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
