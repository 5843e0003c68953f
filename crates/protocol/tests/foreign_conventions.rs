//! protocol §1 foreign conventions: the dict convention, MCP `CallToolResult`,
//! JSON-RPC and RFC 9457 problem documents, each read into the same model.

use std::time::Duration;

use recourse_protocol::{
    BodyFormat, ErrorCategory, ParsedResponse, RetryPermission, parse_response,
};
use serde_json::{Value, json};

fn parse_json(status: u16, body: &Value) -> ParsedResponse {
    parse_response(
        status,
        [("Content-Type", "application/json")],
        body.to_string().as_bytes(),
    )
}

fn parse_problem(status: u16, content_type: &str, body: &Value) -> ParsedResponse {
    parse_response(
        status,
        [("Content-Type", content_type)],
        body.to_string().as_bytes(),
    )
}

// --------------------------------------------------------- dict convention

fn dict(category: &str) -> Value {
    json!({
        "status": "error",
        "error_category": category,
        "error_code": "BAD_DATE",
        "message": "date must be ISO 8601",
        "suggested_action": "send YYYY-MM-DD"
    })
}

#[test]
fn dict_convention_categories_map_to_ours() {
    let cases = [
        ("user_error", ErrorCategory::InputError),
        ("system_error", ErrorCategory::ServiceError),
        ("policy_rejection", ErrorCategory::PolicyRejection),
        ("policy_violation", ErrorCategory::PolicyRejection),
    ];
    for (wire, want) in cases {
        let p = parse_json(400, &dict(wire));
        assert_eq!(p.format, BodyFormat::DictConvention, "{wire}");
        assert!(!p.success);
        assert_eq!(p.category, Some(want), "{wire}");
    }
}

#[test]
fn dict_convention_code_message_and_suggested_action_detail() {
    let p = parse_json(400, &dict("user_error"));
    assert_eq!(p.code.as_deref(), Some("BAD_DATE"));
    assert_eq!(p.message.as_deref(), Some("date must be ISO 8601"));
    assert_eq!(p.details, json!({"suggested_action": "send YYYY-MM-DD"}));
    assert_eq!(p.permission, RetryPermission::Unspecified);
}

#[test]
fn dict_convention_without_suggested_action_has_no_details() {
    let mut body = dict("user_error");
    body.as_object_mut().unwrap().remove("suggested_action");
    assert_eq!(parse_json(400, &body).details, Value::Null);
}

#[test]
fn dict_convention_retryable_boolean_is_honoured() {
    for (flag, want) in [
        (json!(true), RetryPermission::Allowed),
        (json!(false), RetryPermission::Refused),
        (json!("false"), RetryPermission::Unspecified),
        (json!(null), RetryPermission::Unspecified),
    ] {
        let mut body = dict("system_error");
        body["retryable"] = flag.clone();
        assert_eq!(parse_json(503, &body).permission, want, "{flag}");
    }
}

#[test]
fn dict_convention_on_2xx_routes_as_its_category_status() {
    let p = parse_json(200, &dict("policy_violation"));
    assert!(!p.success);
    assert_eq!(p.routing_status(), Some(422));
    let p = parse_json(200, &dict("system_error"));
    assert_eq!(p.routing_status(), Some(503));
}

#[test]
fn dict_convention_unknown_category_is_preserved() {
    let p = parse_json(429, &dict("quota_error"));
    assert_eq!(p.category, Some(ErrorCategory::Other("quota_error".into())));
    assert_eq!(p.routing_status(), Some(429));
}

#[test]
fn dict_convention_without_category_is_unclassified() {
    let body = json!({"status": "error", "error_code": "OOPS", "message": "something"});
    let p = parse_json(200, &body);
    assert_eq!(p.format, BodyFormat::DictConvention);
    assert!(!p.success);
    assert_eq!(p.category, None);
    assert_eq!(p.routing_status(), None);
    assert_eq!(p.code.as_deref(), Some("OOPS"));
    assert_eq!(parse_json(502, &body).routing_status(), Some(502));
}

#[test]
fn dict_convention_success_is_a_success_with_the_body_as_data() {
    let body = json!({"status": "success", "message": "done", "result": 3});
    let p = parse_json(200, &body);
    assert_eq!(p.format, BodyFormat::DictConvention);
    assert!(p.success);
    assert_eq!(p.data.as_ref().map(|d| d.to_value()), Some(body));
}

// ------------------------------------------------------------------- MCP

fn text(t: &str) -> Value {
    json!({"type": "text", "text": t})
}

#[test]
fn mcp_is_error_with_envelope_in_structured_content_wins() {
    let body = json!({
        "content": [text("rate limited, try later")],
        "isError": true,
        "structuredContent": {
            "success": false,
            "error": {
                "code": "SLOW_DOWN", "message": "quota exceeded", "category": "RATE_LIMIT",
                "retryable": true, "details": {"retry_after": "2s"}
            }
        }
    });
    let p = parse_json(200, &body);
    assert_eq!(p.format, BodyFormat::McpResult);
    assert!(!p.success);
    assert_eq!(p.category, Some(ErrorCategory::RateLimit));
    assert_eq!(p.code.as_deref(), Some("SLOW_DOWN"));
    assert_eq!(p.message.as_deref(), Some("quota exceeded"));
    assert_eq!(p.permission, RetryPermission::Allowed);
    assert_eq!(p.details, json!({"retry_after": "2s"}));
    assert_eq!(p.server_wait, Some(Duration::from_secs(2)));
    assert_eq!(p.routing_status(), Some(429));
}

#[test]
fn mcp_structured_envelope_with_misplaced_retryable_is_unspecified() {
    let body = json!({
        "content": [text("x")],
        "isError": true,
        "structuredContent": {
            "success": false, "retryable": true,
            "error": {"code": "DOWN", "message": "m", "category": "SERVICE_ERROR"}
        }
    });
    let p = parse_json(200, &body);
    assert_eq!(p.category, Some(ErrorCategory::ServiceError));
    assert_eq!(p.permission, RetryPermission::Unspecified);
}

#[test]
fn mcp_is_error_with_bare_tool_error_in_structured_content_wins() {
    let body = json!({
        "content": [text("no such city")],
        "isError": true,
        "structuredContent": {
            "code": "CITY_NOT_FOUND", "message": "no city 'Pariss'", "category": "NOT_FOUND",
            "retryable": false, "details": {"suggestion": "Paris"}
        }
    });
    let p = parse_json(200, &body);
    assert_eq!(p.format, BodyFormat::McpResult);
    assert_eq!(p.category, Some(ErrorCategory::NotFound));
    assert_eq!(p.code.as_deref(), Some("CITY_NOT_FOUND"));
    assert_eq!(p.message.as_deref(), Some("no city 'Pariss'"));
    assert_eq!(p.permission, RetryPermission::Refused);
    assert_eq!(p.details, json!({"suggestion": "Paris"}));
    assert_eq!(p.routing_status(), Some(404));
}

#[test]
fn mcp_bare_tool_error_without_retryable_is_unspecified() {
    let body = json!({
        "content": [],
        "isError": true,
        "structuredContent": {"code": "DOWN", "message": "m", "category": "SERVICE_ERROR"}
    });
    let p = parse_json(200, &body);
    assert_eq!(p.category, Some(ErrorCategory::ServiceError));
    assert_eq!(p.permission, RetryPermission::Unspecified);
}

#[test]
fn mcp_is_error_without_structured_content_is_input_error_with_text_as_message() {
    let body = json!({
        "content": [text("Invalid date: 2024-13-01"), {"type": "image", "data": "AAAA", "mimeType": "image/png"}, text("use a real month")],
        "isError": true
    });
    let p = parse_json(200, &body);
    assert_eq!(p.format, BodyFormat::McpResult);
    assert!(!p.success);
    assert_eq!(p.category, Some(ErrorCategory::InputError));
    assert_eq!(p.code.as_deref(), Some("TOOL_ERROR"));
    assert_eq!(
        p.message.as_deref(),
        Some("Invalid date: 2024-13-01\nuse a real month")
    );
    assert_eq!(p.permission, RetryPermission::Unspecified);
    assert_eq!(p.routing_status(), Some(400));
}

#[test]
fn mcp_is_error_with_unrecognised_structured_content_is_input_error() {
    let body = json!({
        "content": [text("bad")],
        "isError": true,
        "structuredContent": {"reason": "bad", "retryable": true}
    });
    let p = parse_json(200, &body);
    assert_eq!(p.category, Some(ErrorCategory::InputError));
    assert_eq!(p.message.as_deref(), Some("bad"));
    assert_eq!(p.permission, RetryPermission::Unspecified);
}

#[test]
fn mcp_success_carries_structured_content_as_data() {
    let body = json!({
        "content": [text("{\"temp\": 21}")],
        "isError": false,
        "structuredContent": {"temp": 21}
    });
    let p = parse_json(200, &body);
    assert_eq!(p.format, BodyFormat::McpResult);
    assert!(p.success);
    assert_eq!(
        p.data.as_ref().map(|d| d.to_value()),
        Some(json!({"temp": 21}))
    );
}

#[test]
fn mcp_success_without_structured_content_carries_the_result() {
    let body = json!({"content": [text("21 degrees")]});
    let p = parse_json(200, &body);
    assert_eq!(p.format, BodyFormat::McpResult);
    assert!(p.success);
    assert_eq!(p.data.as_ref().map(|d| d.to_value()), Some(body));
}

#[test]
fn mcp_shape_with_untyped_content_is_plain_json() {
    let body = json!({"content": [{"text": "no type"}], "isError": true});
    let p = parse_json(200, &body);
    assert_eq!(p.format, BodyFormat::Json);
    assert!(p.success);
}

// -------------------------------------------------------------- JSON-RPC

#[test]
fn jsonrpc_wrapped_mcp_error_result_is_unwrapped() {
    let body = json!({
        "jsonrpc": "2.0", "id": 7,
        "result": {"content": [text("city not found")], "isError": true}
    });
    let p = parse_json(200, &body);
    assert_eq!(p.format, BodyFormat::McpResult);
    assert!(!p.success);
    assert_eq!(p.category, Some(ErrorCategory::InputError));
    assert_eq!(p.message.as_deref(), Some("city not found"));
}

#[test]
fn jsonrpc_wrapped_mcp_success_result_is_unwrapped() {
    let body = json!({
        "jsonrpc": "2.0", "id": 7,
        "result": {"content": [text("ok")], "structuredContent": {"ok": true}}
    });
    let p = parse_json(200, &body);
    assert_eq!(p.format, BodyFormat::McpResult);
    assert!(p.success);
    assert_eq!(
        p.data.as_ref().map(|d| d.to_value()),
        Some(json!({"ok": true}))
    );
}

#[test]
fn jsonrpc_plain_result_is_the_data() {
    let body = json!({"jsonrpc": "2.0", "id": 1, "result": {"sum": 3}});
    let p = parse_json(200, &body);
    assert!(p.success);
    assert_eq!(
        p.data.as_ref().map(|d| d.to_value()),
        Some(json!({"sum": 3}))
    );
}

#[test]
fn jsonrpc_scalar_result_is_the_data() {
    for result in [json!(19), json!("pong"), json!([1, 2])] {
        let body = json!({"jsonrpc": "2.0", "id": 1, "result": result});
        let p = parse_json(200, &body);
        assert!(p.success);
        assert_eq!(p.data.as_ref().map(|d| d.to_value()), Some(result));
    }
}

#[test]
fn jsonrpc_null_result_is_a_success_without_data() {
    let p = parse_json(200, &json!({"jsonrpc": "2.0", "id": 1, "result": null}));
    assert!(p.success);
    assert_eq!(p.data, None);
}

#[test]
fn jsonrpc_invalid_params_is_input_error() {
    let body = json!({
        "jsonrpc": "2.0", "id": 3,
        "error": {"code": -32602, "message": "Invalid params: 'city' is required", "data": {"field": "city"}}
    });
    let p = parse_json(200, &body);
    assert_eq!(p.format, BodyFormat::JsonRpcError);
    assert!(!p.success);
    assert_eq!(p.category, Some(ErrorCategory::InputError));
    assert_eq!(p.code.as_deref(), Some("INVALID_PARAMS"));
    assert_eq!(
        p.message.as_deref(),
        Some("Invalid params: 'city' is required")
    );
    assert_eq!(
        p.details,
        json!({"jsonrpc_code": -32602, "data": {"field": "city"}})
    );
    assert_eq!(p.permission, RetryPermission::Unspecified);
    assert_eq!(p.routing_status(), Some(400));
}

#[test]
fn jsonrpc_error_codes_map_to_categories() {
    let cases = [
        (-32700, ErrorCategory::InputError, "PARSE_ERROR"),
        (-32600, ErrorCategory::InputError, "INVALID_REQUEST"),
        (-32601, ErrorCategory::NotFound, "METHOD_NOT_FOUND"),
        (-32602, ErrorCategory::InputError, "INVALID_PARAMS"),
        (-32603, ErrorCategory::ServiceError, "INTERNAL_ERROR"),
        (-32000, ErrorCategory::ServiceError, "INTERNAL_ERROR"),
    ];
    for (rpc, category, code) in cases {
        let body = json!({"jsonrpc": "2.0", "id": 1, "error": {"code": rpc, "message": "m"}});
        let p = parse_json(200, &body);
        assert_eq!(p.category, Some(category), "{rpc}");
        assert_eq!(p.code.as_deref(), Some(code), "{rpc}");
        assert_eq!(p.details, json!({"jsonrpc_code": rpc}));
    }
}

// ---------------------------------------------------------- RFC 9457

fn out_of_credit() -> Value {
    json!({
        "type": "https://example.com/probs/out-of-credit",
        "title": "You do not have enough credit.",
        "status": 403,
        "detail": "Your current balance is 30, but that costs 50.",
        "instance": "/account/12345/msgs/abc",
        "balance": 30
    })
}

#[test]
fn problem_type_becomes_code_and_detail_becomes_message() {
    let p = parse_problem(403, "application/problem+json", &out_of_credit());
    assert_eq!(p.format, BodyFormat::Problem);
    assert!(!p.success);
    assert_eq!(p.code.as_deref(), Some("OUT_OF_CREDIT"));
    assert_eq!(
        p.message.as_deref(),
        Some("Your current balance is 30, but that costs 50.")
    );
    assert_eq!(p.category, None);
    assert_eq!(p.permission, RetryPermission::Unspecified);
    assert_eq!(p.routing_status(), Some(403));
    assert_eq!(
        p.effective_category(),
        Some(ErrorCategory::PermissionDenied)
    );
}

#[test]
fn problem_members_other_than_status_and_detail_are_kept_as_details() {
    let p = parse_problem(403, "application/problem+json", &out_of_credit());
    assert_eq!(
        p.details,
        json!({
            "type": "https://example.com/probs/out-of-credit",
            "title": "You do not have enough credit.",
            "instance": "/account/12345/msgs/abc",
            "balance": 30
        })
    );
}

#[test]
fn problem_title_becomes_code_when_type_is_absent_or_blank() {
    for body in [
        json!({"title": "Service Unavailable", "status": 503}),
        json!({"type": "about:blank", "title": "Service Unavailable", "status": 503}),
    ] {
        let p = parse_problem(503, "application/problem+json", &body);
        assert_eq!(p.code.as_deref(), Some("SERVICE_UNAVAILABLE"), "{body}");
        // Without `detail`, the title is the message.
        assert_eq!(p.message.as_deref(), Some("Service Unavailable"));
    }
}

#[test]
fn problem_type_fragment_or_urn_becomes_code() {
    for (ty, want) in [
        ("https://errors.example.com/#rate-limited", "RATE_LIMITED"),
        ("urn:problem:quota.exceeded", "QUOTA_EXCEEDED"),
        (
            "https://example.com/probs/insufficient-funds/",
            "INSUFFICIENT_FUNDS",
        ),
    ] {
        let p = parse_problem(400, "application/problem+json", &json!({"type": ty}));
        assert_eq!(p.code.as_deref(), Some(want), "{ty}");
    }
}

#[test]
fn problem_extension_members_category_retryable_code_are_honoured() {
    let body = json!({
        "type": "about:blank", "title": "Too Many Requests", "status": 429,
        "detail": "slow down", "category": "RATE_LIMIT", "retryable": true, "code": "QUOTA"
    });
    let p = parse_problem(429, "application/problem+json", &body);
    assert_eq!(p.category, Some(ErrorCategory::RateLimit));
    assert_eq!(p.permission, RetryPermission::Allowed);
    assert_eq!(p.code.as_deref(), Some("QUOTA"));
    assert_eq!(p.message.as_deref(), Some("slow down"));
    assert_eq!(
        p.details,
        json!({"type": "about:blank", "title": "Too Many Requests"})
    );
}

#[test]
fn problem_extension_retryable_must_be_boolean() {
    for (flag, want) in [
        (json!(false), RetryPermission::Refused),
        (json!("true"), RetryPermission::Unspecified),
        (json!(null), RetryPermission::Unspecified),
    ] {
        let body = json!({"title": "Conflict", "retryable": flag});
        let p = parse_problem(409, "application/problem+json", &body);
        assert_eq!(p.permission, want, "{flag}");
    }
}

#[test]
fn problem_extension_category_on_2xx_routes_as_its_status() {
    let body = json!({"title": "Refused", "category": "POLICY_REJECTION"});
    let p = parse_problem(200, "application/problem+json", &body);
    assert!(!p.success);
    assert_eq!(p.routing_status(), Some(422));
}

#[test]
fn problem_extension_retry_after_sets_the_wait() {
    let body = json!({"title": "Too Many Requests", "retry_after": "1500ms"});
    let p = parse_problem(429, "application/problem+json", &body);
    assert_eq!(p.server_wait, Some(Duration::from_millis(1500)));
}

#[test]
fn problem_content_type_with_parameters_and_case_is_recognised() {
    for ct in [
        "application/problem+json; charset=utf-8",
        "application/problem+json;charset=UTF-8",
        "Application/Problem+JSON",
        " application/problem+json ",
    ] {
        let p = parse_problem(403, ct, &out_of_credit());
        assert_eq!(p.format, BodyFormat::Problem, "{ct}");
        assert_eq!(p.code.as_deref(), Some("OUT_OF_CREDIT"), "{ct}");
    }
}

#[test]
fn problem_content_type_header_name_is_case_insensitive() {
    let body = out_of_credit().to_string();
    for name in ["content-type", "CONTENT-TYPE", "Content-type"] {
        let p = parse_response(403, [(name, "application/problem+json")], body.as_bytes());
        assert_eq!(p.format, BodyFormat::Problem, "{name}");
    }
}

#[test]
fn problem_shaped_body_as_plain_json_is_not_a_problem() {
    let p = parse_problem(403, "application/json", &out_of_credit());
    assert_eq!(p.format, BodyFormat::Json);
    assert_eq!(p.code, None);
    assert_eq!(
        p.message.as_deref(),
        Some("Your current balance is 30, but that costs 50.")
    );
}

#[test]
fn problem_content_type_with_non_object_body_is_plain_json() {
    let p = parse_problem(
        400,
        "application/problem+json",
        &json!(["not", "a", "problem"]),
    );
    assert_eq!(p.format, BodyFormat::Json);
    assert_eq!(p.code, None);
    let p = parse_response(
        400,
        [("content-type", "application/problem+json")],
        b"{oops",
    );
    assert_eq!(p.format, BodyFormat::Text);
}
