//! What an MCP exchange becomes for the executor: a [`RawResponse`] that the
//! shared parser reads (a `CallToolResult` or a JSON-RPC error body), a local
//! envelope for failures recourse detects itself, or a transport failure.
//!
//! Handing the executor the server's own JSON keeps one parser for every
//! convention: the rules for `isError` (an envelope in `structuredContent`
//! wins, then MCP failure metadata, then a transient failure the text names,
//! otherwise INPUT_ERROR with the text as message), for `input_required` and
//! for JSON-RPC error codes live in `recourse-protocol`, not here. An HTTP
//! status a Streamable HTTP server answered without a JSON-RPC message comes
//! through as that status, so it routes as it would from an HTTP tool.

use recourse::transport::{Delivery, RawResponse, TransportFailure, TransportFailureKind};
use recourse_protocol::mcp::UNKNOWN_TOOL;
use std::time::SystemTime;

use recourse_protocol::{ToolError, ToolResponse, parse_value_at};
use serde_json::{Value, json};

/// A `tools/call` that completed, with or without `isError`: read as it
/// is, a value in memory, never written to bytes and parsed back.
pub(crate) fn completed(result: &rmcp::model::CallToolResult) -> Delivery {
    match serde_json::to_value(result) {
        Ok(value) => Ok(RawResponse::read(parse_value_at(
            200,
            value,
            SystemTime::now(),
        ))),
        Err(e) => Err(TransportFailure::new(
            TransportFailureKind::FailedAfterSend,
            format!("the MCP result could not be read: {e}"),
        )),
    }
}

/// The server asked for input before the tool runs: its result as the body,
/// which the parser reads as a call that needs input.
pub(crate) fn input_required(result: &rmcp::model::InputRequiredResult) -> Delivery {
    match serde_json::to_vec(result) {
        Ok(body) => Ok(json_response(200, body)),
        Err(e) => Err(TransportFailure::new(
            TransportFailureKind::FailedAfterSend,
            format!("the MCP result could not be re-encoded: {e}"),
        )),
    }
}

/// A Streamable HTTP server answered HTTP `status` (429 or 5xx) without a
/// JSON-RPC error: that status and its `Retry-After`, with no body, so it
/// routes as the same answer from an HTTP tool does.
pub(crate) fn http_status(status: u16, retry_after: Option<&str>) -> Delivery {
    let headers = retry_after
        .map(|wait| ("retry-after".to_owned(), wait.to_owned()))
        .into_iter()
        .collect();
    Ok(RawResponse {
        status,
        headers,
        body: Vec::new(),
        read: None,
    })
}

/// A JSON-RPC error the server answered `tools/call` with.
pub(crate) fn rpc_error(error: &rmcp::model::ErrorData) -> Delivery {
    let mut err = json!({"code": error.code.0, "message": error.message});
    if let Some(data) = &error.data {
        err["data"] = data.clone();
    }
    let body = json!({"jsonrpc": "2.0", "error": err});
    Ok(json_response(200, body.to_string().into_bytes()))
}

/// The server has no tool named `name`: a stop, never retried or corrected
/// (a correction may change the payload, never the tool).
pub(crate) fn unknown_tool(name: &str, available: &[String]) -> Delivery {
    let list = if available.is_empty() {
        "it lists no tools".to_owned()
    } else {
        format!("it has: {}", available.join(", "))
    };
    let error = ToolError::not_found(
        UNKNOWN_TOOL,
        format!("the MCP server has no tool named {name:?}; {list}"),
    )
    .detail("tool", name)
    .retryable(false);
    Ok(envelope(&ToolResponse::failure(error)))
}

/// The payload is not a JSON object, which `tools/call` arguments must be.
pub(crate) fn arguments_not_object(payload: &Value) -> Delivery {
    let kind = match payload {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    };
    let error = ToolError::input_error(
        "ARGUMENTS_NOT_OBJECT",
        format!("MCP tool arguments must be a JSON object, not {kind}"),
    )
    .retryable(false);
    Ok(envelope(&ToolResponse::failure(error)))
}

fn envelope(response: &ToolResponse) -> RawResponse {
    json_response(response.http_status(), response.to_json_bytes())
}

fn json_response(status: u16, body: Vec<u8>) -> RawResponse {
    RawResponse {
        status,
        headers: vec![("content-type".to_owned(), "application/json".to_owned())],
        body,
        read: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use recourse_protocol::{ErrorCategory, RetryPermission, parse_response};

    /// What the executor reads of `delivery`: the answer read already, or
    /// its body parsed.
    fn parse(delivery: Delivery) -> recourse_protocol::ParsedResponse {
        let r = delivery.unwrap();
        match r.read {
            Some(read) => *read,
            None => parse_response(
                r.status,
                r.headers.iter().map(|(k, v)| (k.as_str(), v.as_str())),
                &r.body,
            ),
        }
    }

    /// A completed call is read as it is: nothing is written to bytes.
    #[test]
    fn a_completed_call_is_read_in_memory_whole() {
        let result: rmcp::model::CallToolResult = serde_json::from_value(json!({
            "content": [{"type": "text", "text": "done"}], "structuredContent": {"id": 7}
        }))
        .unwrap();
        let raw = completed(&result).unwrap();
        assert!(raw.body.is_empty());
        let read = raw.read.unwrap();
        assert_eq!(read.data.unwrap().to_value(), json!({"id": 7}));
        assert_eq!(read.answer, Some(serde_json::to_value(&result).unwrap()));
    }

    #[test]
    fn an_unknown_tool_is_a_refused_not_found_naming_the_tool() {
        let parsed = parse(unknown_tool(
            "get_tiem",
            &["get_current_time".into(), "convert_time".into()],
        ));
        assert!(!parsed.success);
        assert_eq!(parsed.category, Some(ErrorCategory::NotFound));
        assert_eq!(parsed.code.as_deref(), Some(UNKNOWN_TOOL));
        assert_eq!(parsed.permission, RetryPermission::Refused);
        let message = parsed.message.unwrap();
        assert!(
            message.contains("\"get_tiem\"") && message.contains("convert_time"),
            "{message}"
        );
    }

    #[test]
    fn json_rpc_errors_keep_their_code_for_the_parser() {
        let e = rmcp::model::ErrorData::invalid_params("bad timezone", None);
        let parsed = parse(rpc_error(&e));
        assert_eq!(parsed.category, Some(ErrorCategory::InputError));
        let e = rmcp::model::ErrorData::internal_error("boom", None);
        assert_eq!(
            parse(rpc_error(&e)).category,
            Some(ErrorCategory::ServiceError)
        );
    }

    #[test]
    fn is_error_results_follow_spec_section_1() {
        let plain: rmcp::model::CallToolResult = serde_json::from_value(json!({
            "content": [{"type": "text", "text": "Invalid timezone: America/NewYork"}], "isError": true
        }))
        .unwrap();
        let parsed = parse(completed(&plain));
        assert_eq!(parsed.category, Some(ErrorCategory::InputError));
        assert_eq!(parsed.permission, RetryPermission::Unspecified);
        assert_eq!(
            parsed.message.as_deref(),
            Some("Invalid timezone: America/NewYork")
        );

        let enveloped: rmcp::model::CallToolResult = serde_json::from_value(json!({
            "content": [{"type": "text", "text": "[DENIED] no"}], "isError": true,
            "structuredContent": {"success": false, "error": {"code": "DENIED", "message": "no", "category": "PERMISSION_DENIED", "retryable": false}}
        }))
        .unwrap();
        let parsed = parse(completed(&enveloped));
        assert_eq!(parsed.category, Some(ErrorCategory::PermissionDenied));
        assert_eq!(parsed.permission, RetryPermission::Refused);
    }

    #[test]
    fn an_http_status_routes_with_its_retry_after() {
        let parsed = parse(http_status(429, Some("7")));
        assert_eq!(parsed.routing_status(), Some(429));
        assert_eq!(parsed.server_wait, Some(std::time::Duration::from_secs(7)));
        let parsed = parse(http_status(502, None));
        assert_eq!(
            parsed.effective_category(),
            Some(ErrorCategory::ServiceError)
        );
        assert!(
            !parsed.format.is_structured(),
            "a bare 502, as from an HTTP tool"
        );
    }

    #[test]
    fn a_result_asking_for_input_reads_as_needing_input() {
        let result: rmcp::model::InputRequiredResult = serde_json::from_value(json!({
            "resultType": "input_required", "requestState": "s1"
        }))
        .unwrap();
        let parsed = parse(input_required(&result));
        assert!(!parsed.success);
        assert_eq!(parsed.needs, Some(recourse_protocol::Need::Input));
    }

    #[test]
    fn arguments_must_be_an_object() {
        let parsed = parse(arguments_not_object(&json!([1])));
        assert_eq!(parsed.category, Some(ErrorCategory::InputError));
        assert!(parsed.message.unwrap().contains("an array"));
    }
}
