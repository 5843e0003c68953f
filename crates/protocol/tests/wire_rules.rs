//! protocol §1: the envelope, where `retryable` is recognised, 2xx failures,
//! non-envelope bodies, unknown categories and `to_tool_error` synthesis.
//! Each test is named for the rule it pins.

use recourse_protocol::{
    BodyFormat, ErrorCategory, ParsedResponse, RetryPermission, ToolError, ToolResponse,
    parse_response,
};
use serde_json::{Value, json};

const JSON: [(&str, &str); 1] = [("content-type", "application/json")];

fn parse(status: u16, body: &str) -> ParsedResponse {
    parse_response(status, JSON, body.as_bytes())
}

fn parse_value(status: u16, body: &Value) -> ParsedResponse {
    parse(status, &body.to_string())
}

/// A well-formed failure envelope whose `error` object is `error`.
fn failure_with(error: Value) -> Value {
    json!({"success": false, "error": error})
}

fn rate_limit_error(retryable: Value) -> Value {
    json!({"code": "SLOW_DOWN", "message": "quota exceeded", "category": "RATE_LIMIT", "retryable": retryable})
}

// ---------------------------------------------------------------- retryable

#[test]
fn retryable_true_inside_error_of_failed_envelope_is_allowed() {
    let p = parse_value(429, &failure_with(rate_limit_error(json!(true))));
    assert_eq!(p.format, BodyFormat::Envelope);
    assert!(!p.success);
    assert_eq!(p.permission, RetryPermission::Allowed);
    assert_eq!(p.category, Some(ErrorCategory::RateLimit));
    assert_eq!(p.code.as_deref(), Some("SLOW_DOWN"));
    assert_eq!(p.message.as_deref(), Some("quota exceeded"));
    assert_eq!(p.details, Value::Null);
}

#[test]
fn retryable_false_inside_error_of_failed_envelope_is_refused() {
    let p = parse_value(429, &failure_with(rate_limit_error(json!(false))));
    assert_eq!(p.permission, RetryPermission::Refused);
    assert_eq!(p.category, Some(ErrorCategory::RateLimit));
}

#[test]
fn retryable_missing_is_unspecified() {
    let body = failure_with(json!({"code": "X", "message": "m", "category": "SERVICE_ERROR"}));
    let p = parse_value(503, &body);
    assert_eq!(p.format, BodyFormat::Envelope);
    assert_eq!(p.permission, RetryPermission::Unspecified);
    assert_eq!(p.category, Some(ErrorCategory::ServiceError));
}

#[test]
fn retryable_null_is_unspecified() {
    let p = parse_value(429, &failure_with(rate_limit_error(Value::Null)));
    assert_eq!(p.permission, RetryPermission::Unspecified);
    assert_eq!(p.category, Some(ErrorCategory::RateLimit));
}

#[test]
fn retryable_as_string_is_unspecified() {
    for flag in [json!("false"), json!("true"), json!("False")] {
        let p = parse_value(429, &failure_with(rate_limit_error(flag.clone())));
        assert_eq!(p.permission, RetryPermission::Unspecified, "{flag}");
    }
}

#[test]
fn retryable_as_number_or_container_is_unspecified() {
    for flag in [json!(0), json!(1), json!([true]), json!({"value": false})] {
        let p = parse_value(429, &failure_with(rate_limit_error(flag.clone())));
        assert_eq!(p.permission, RetryPermission::Unspecified, "{flag}");
    }
}

#[test]
fn retryable_at_top_level_is_unspecified() {
    for flag in [true, false] {
        let body = json!({
            "success": false,
            "retryable": flag,
            "error": {"code": "X", "message": "m", "category": "SERVICE_ERROR"}
        });
        let p = parse_value(503, &body);
        assert_eq!(p.format, BodyFormat::Envelope);
        assert_eq!(p.permission, RetryPermission::Unspecified, "{flag}");
    }
}

#[test]
fn retryable_with_success_absent_is_unspecified() {
    let body = json!({"error": rate_limit_error(json!(true))});
    let p = parse_value(429, &body);
    assert_eq!(p.format, BodyFormat::Json);
    assert!(!p.success);
    assert_eq!(p.permission, RetryPermission::Unspecified);
    assert_eq!(p.category, None);
    assert_eq!(p.code, None);
    // The foreign body's message is kept for humans, but grants nothing.
    assert_eq!(p.message.as_deref(), Some("quota exceeded"));
}

#[test]
fn retryable_with_success_true_is_unspecified() {
    let body = json!({"success": true, "error": rate_limit_error(json!(false))});
    let p = parse_value(503, &body);
    assert_eq!(p.format, BodyFormat::Envelope);
    assert!(!p.success, "a non-2xx is a failure whatever the body says");
    assert_eq!(p.permission, RetryPermission::Unspecified);
    assert_eq!(p.category, None);
    assert_eq!(p.routing_status(), Some(503));
}

#[test]
fn success_as_string_false_is_not_an_envelope() {
    let body = json!({"success": "false", "error": rate_limit_error(json!(true))});
    let p = parse_value(429, &body);
    assert_eq!(p.format, BodyFormat::Json);
    assert!(!p.success);
    assert_eq!(p.permission, RetryPermission::Unspecified);
    assert_eq!(p.category, None);
    assert_eq!(p.routing_status(), Some(429));

    // On a 2xx it is just a JSON body: success, with the whole body as data.
    let p = parse_value(200, &body);
    assert!(p.success);
    assert_eq!(p.data.as_ref().map(|d| d.to_value()), Some(body));
    assert_eq!(p.permission, RetryPermission::Unspecified);
}

#[test]
fn retryable_key_is_case_sensitive() {
    let body = failure_with(json!({
        "code": "SLOW_DOWN", "message": "m", "category": "RATE_LIMIT", "Retryable": true
    }));
    let p = parse_value(429, &body);
    assert_eq!(p.format, BodyFormat::Envelope);
    assert_eq!(p.permission, RetryPermission::Unspecified);
    assert_eq!(p.category, Some(ErrorCategory::RateLimit));
}

#[test]
fn success_key_is_case_sensitive() {
    let body = json!({"Success": false, "error": rate_limit_error(json!(true))});
    let p = parse_value(429, &body);
    assert_eq!(p.format, BodyFormat::Json);
    assert_eq!(p.permission, RetryPermission::Unspecified);
    assert_eq!(p.category, None);
}

#[test]
fn error_key_is_case_sensitive() {
    let body = json!({"success": false, "Error": rate_limit_error(json!(true))});
    let p = parse_value(429, &body);
    assert_eq!(p.format, BodyFormat::Envelope);
    assert_eq!(p.permission, RetryPermission::Unspecified);
    assert_eq!(p.category, None);
    assert_eq!(p.code, None);
}

#[test]
fn error_key_names_are_case_sensitive_inside_error() {
    let body = failure_with(json!({
        "Code": "X", "Message": "m", "Category": "RATE_LIMIT", "retryable": false
    }));
    let p = parse_value(429, &body);
    assert_eq!(p.permission, RetryPermission::Refused);
    assert_eq!(p.category, None);
    assert_eq!(p.code, None);
    assert_eq!(p.message, None);
}

#[test]
fn error_that_is_not_an_object_leaves_permission_unspecified() {
    for error in [
        json!(null),
        json!(true),
        json!(42),
        json!(["retryable", true]),
    ] {
        let p = parse_value(503, &failure_with(error.clone()));
        assert_eq!(p.format, BodyFormat::Envelope, "{error}");
        assert!(!p.success);
        assert_eq!(p.permission, RetryPermission::Unspecified, "{error}");
        assert_eq!(p.category, None);
        assert_eq!(p.message, None);
    }
}

#[test]
fn error_as_string_is_the_message_with_permission_unspecified() {
    let p = parse_value(503, &failure_with(json!("database offline")));
    assert_eq!(p.permission, RetryPermission::Unspecified);
    assert_eq!(p.message.as_deref(), Some("database offline"));
    assert_eq!(p.category, None);
}

#[test]
fn failed_envelope_without_error_is_unspecified() {
    let p = parse(500, r#"{"success": false}"#);
    assert_eq!(p.format, BodyFormat::Envelope);
    assert!(!p.success);
    assert_eq!(p.permission, RetryPermission::Unspecified);
    assert_eq!(p.category, None);
}

// ------------------------------------------------------------ the envelope

#[test]
fn success_envelope_on_2xx_carries_its_data() {
    let p = parse(200, r#"{"success": true, "data": {"price": 468.25}}"#);
    assert_eq!(p.format, BodyFormat::Envelope);
    assert!(p.success);
    assert_eq!(
        p.data.as_ref().map(|d| d.to_value()),
        Some(json!({"price": 468.25}))
    );
    assert_eq!(p.category, None);
    assert_eq!(p.message, None);
    assert_eq!(p.permission, RetryPermission::Unspecified);
    assert_eq!(p.routing_status(), Some(200));
    assert_eq!(p.to_tool_error(), None);
}

#[test]
fn success_envelope_with_null_or_no_data_has_no_data() {
    for body in [r#"{"success": true, "data": null}"#, r#"{"success": true}"#] {
        let p = parse(200, body);
        assert!(p.success, "{body}");
        assert_eq!(p.data, None, "{body}");
    }
}

#[test]
fn envelope_details_are_preserved_as_any_json() {
    let details =
        json!({"field": "date", "allowed_values": ["a", "b"], "n": 3, "nested": {"x": null}});
    let body = failure_with(json!({
        "code": "BAD_DATE", "message": "m", "category": "INPUT_ERROR", "retryable": true,
        "details": details
    }));
    let p = parse_value(400, &body);
    assert_eq!(p.details, details);

    let body = failure_with(json!({
        "code": "X", "message": "m", "category": "INPUT_ERROR", "retryable": true,
        "details": "free text"
    }));
    assert_eq!(parse_value(400, &body).details, json!("free text"));
}

#[test]
fn empty_or_null_details_read_as_null() {
    for details in [json!({}), json!(null)] {
        let body = failure_with(json!({
            "code": "X", "message": "m", "category": "INPUT_ERROR", "retryable": true,
            "details": details
        }));
        assert_eq!(parse_value(400, &body).details, Value::Null);
    }
}

#[test]
fn writer_emits_success_and_retryable_and_omits_empty_parts() {
    let ok = serde_json::to_value(ToolResponse::ok(Value::Null)).unwrap();
    assert_eq!(ok, json!({"success": true}));
    let failed =
        serde_json::to_value(ToolResponse::failure(ToolError::input_error("BAD", "bad"))).unwrap();
    assert_eq!(
        failed,
        json!({"success": false, "error": {"code": "BAD", "message": "bad", "category": "INPUT_ERROR", "retryable": false}})
    );
}

#[test]
fn tool_error_display_is_code_in_brackets_then_message() {
    let e = ToolError::policy_rejection("REFUND_WINDOW_CLOSED", "Past 30 days");
    assert_eq!(e.to_string(), "[REFUND_WINDOW_CLOSED] Past 30 days");
}

// ------------------------------------------------ 2xx with success: false

#[test]
fn two_hundred_with_success_false_is_a_failure() {
    let p = parse_value(200, &failure_with(rate_limit_error(json!(true))));
    assert!(!p.success);
    assert_eq!(p.status, 200);
    assert_eq!(p.data, None);
    assert_eq!(p.permission, RetryPermission::Allowed);
}

#[test]
fn two_hundred_with_success_false_routes_as_its_category_status() {
    for category in ErrorCategory::KNOWN {
        let body = failure_with(json!({
            "code": "X", "message": "m", "category": category.as_str(), "retryable": false
        }));
        for status in [200, 201, 204, 299] {
            let p = parse_value(status, &body);
            assert!(!p.success);
            assert_eq!(
                p.routing_status(),
                Some(category.http_status()),
                "{category} on {status}"
            );
            assert_eq!(p.effective_category(), Some(category.clone()));
        }
    }
}

#[test]
fn two_hundred_with_success_false_and_no_category_has_no_routing_status() {
    let body = failure_with(json!({"code": "X", "message": "m", "retryable": true}));
    let p = parse_value(200, &body);
    assert!(!p.success);
    assert_eq!(p.category, None);
    assert_eq!(p.routing_status(), None);
    assert_eq!(p.effective_category(), None);
    assert_eq!(p.permission, RetryPermission::Allowed);
}

#[test]
fn non_2xx_failure_routes_by_its_http_status_even_with_a_category() {
    let body = failure_with(json!({
        "code": "X", "message": "m", "category": "INPUT_ERROR", "retryable": false
    }));
    let p = parse_value(503, &body);
    assert_eq!(p.routing_status(), Some(503));
    assert_eq!(p.effective_category(), Some(ErrorCategory::InputError));
}

// ------------------------------------------------------- unknown category

#[test]
fn unknown_category_is_preserved_verbatim() {
    let body = failure_with(json!({
        "code": "OVER", "message": "m", "category": "QUOTA_EXCEEDED", "retryable": true
    }));
    let p = parse_value(429, &body);
    assert_eq!(
        p.category,
        Some(ErrorCategory::Other("QUOTA_EXCEEDED".into()))
    );
    assert_eq!(p.permission, RetryPermission::Allowed);
}

#[test]
fn unknown_category_routes_by_http_status() {
    let body = failure_with(json!({
        "code": "OVER", "message": "m", "category": "QUOTA_EXCEEDED", "retryable": true
    }));
    assert_eq!(parse_value(429, &body).routing_status(), Some(429));
    assert_eq!(parse_value(404, &body).routing_status(), Some(404));
    // On a 2xx the category's status decides, and an unknown category's is 500.
    assert_eq!(parse_value(200, &body).routing_status(), Some(500));
}

#[test]
fn category_wire_strings_are_case_sensitive() {
    let body = failure_with(json!({
        "code": "X", "message": "m", "category": "rate_limit", "retryable": true
    }));
    let p = parse_value(429, &body);
    assert_eq!(p.category, Some(ErrorCategory::Other("rate_limit".into())));
}

// ---------------------------------------------------- non-envelope bodies

const NGINX_502: &str = "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n";

#[test]
fn html_body_routes_by_status_with_permission_unspecified() {
    let p = parse_response(502, [("Content-Type", "text/html")], NGINX_502.as_bytes());
    assert_eq!(p.format, BodyFormat::Text);
    assert!(!p.success);
    assert_eq!(p.category, None);
    assert_eq!(p.code, None);
    assert_eq!(p.permission, RetryPermission::Unspecified);
    assert_eq!(p.routing_status(), Some(502));
    assert_eq!(p.effective_category(), Some(ErrorCategory::ServiceError));
}

#[test]
fn html_body_message_is_its_title() {
    let p = parse_response(502, [("Content-Type", "text/html")], NGINX_502.as_bytes());
    assert_eq!(p.message.as_deref(), Some("502 Bad Gateway"));
    let upper = "<HTML><HEAD><TITLE> Service Unavailable </TITLE></HEAD></HTML>";
    let p = parse(503, upper);
    assert_eq!(p.message.as_deref(), Some("Service Unavailable"));
}

#[test]
fn html_body_without_title_gives_a_text_excerpt() {
    let p = parse(500, "  <h1>Internal Server Error</h1>\n");
    assert_eq!(p.format, BodyFormat::Text);
    assert_eq!(p.message.as_deref(), Some("<h1>Internal Server Error</h1>"));
}

#[test]
fn long_text_body_message_is_cut_to_300_characters() {
    let body = "é".repeat(1000);
    let p = parse(500, &body);
    assert_eq!(p.message.as_deref(), Some("é".repeat(300).as_str()));
}

#[test]
fn a_secret_straddling_the_cut_is_redacted_whole_not_left_as_a_prefix() {
    let body = format!("{} sk-CUTa1b2c3d4e5f6g7h8i9 trailing", "x".repeat(289));
    let p = parse(500, &body);
    let message = p.message.unwrap();
    assert_eq!(message.chars().count(), 300);
    assert!(!message.contains("sk-CUT"), "{message}");
    assert!(message.ends_with(" [REDACTED]"), "{message}");
}

#[test]
fn html_body_on_2xx_is_a_success_without_data() {
    let p = parse(200, "<html><title>Welcome</title></html>");
    assert_eq!(p.format, BodyFormat::Text);
    assert!(p.success);
    assert_eq!(p.data, None);
    assert_eq!(p.message, None);
}

#[test]
fn empty_body_routes_by_status_with_permission_unspecified() {
    for body in ["", "   ", "\r\n\t "] {
        let p = parse(503, body);
        assert_eq!(p.format, BodyFormat::Empty, "{body:?}");
        assert!(!p.success);
        assert_eq!(p.category, None);
        assert_eq!(p.message, None);
        assert_eq!(p.permission, RetryPermission::Unspecified);
        assert_eq!(p.routing_status(), Some(503));
    }
}

#[test]
fn empty_body_on_2xx_is_a_success() {
    let p = parse(204, "");
    assert_eq!(p.format, BodyFormat::Empty);
    assert!(p.success);
    assert_eq!(p.data, None);
}

#[test]
fn non_utf8_body_is_text_read_lossily() {
    let p = parse_response(500, JSON, b"bad \xff\xfe gateway");
    assert_eq!(p.format, BodyFormat::Text);
    assert_eq!(p.message.as_deref(), Some("bad \u{fffd}\u{fffd} gateway"));
}

#[test]
fn non_envelope_json_routes_by_status_with_permission_unspecified() {
    let body = json!({"error": {"message": "boom", "retryable": true, "category": "INPUT_ERROR"}});
    let p = parse_value(500, &body);
    assert_eq!(p.format, BodyFormat::Json);
    assert!(!p.success);
    assert_eq!(p.category, None);
    assert_eq!(p.code, None);
    assert_eq!(p.permission, RetryPermission::Unspecified);
    assert_eq!(p.message.as_deref(), Some("boom"));
    assert_eq!(p.routing_status(), Some(500));
}

#[test]
fn non_envelope_json_message_hints() {
    let cases = [
        (json!({"error": "invalid api key"}), Some("invalid api key")),
        (json!({"message": "not here"}), Some("not here")),
        (json!({"detail": "Not Found"}), Some("Not Found")),
        (
            json!({"error": {"message": "inner"}, "message": "outer"}),
            Some("inner"),
        ),
        (
            json!({"error": {"code": 7}, "message": "outer"}),
            Some("outer"),
        ),
        (json!({"unrelated": 1}), None),
        (json!([1, 2, 3]), None),
        (json!("plain string"), None),
    ];
    for (body, want) in cases {
        let p = parse_value(404, &body);
        assert_eq!(p.format, BodyFormat::Json, "{body}");
        assert_eq!(p.message.as_deref(), want, "{body}");
        assert_eq!(p.permission, RetryPermission::Unspecified);
    }
}

#[test]
fn non_envelope_json_on_2xx_is_a_success_with_the_whole_body_as_data() {
    // The arrays are our envelope's fields in order: a reader that takes a
    // sequence for a struct would see `{"success": true, "data": 5}` in them.
    let bodies = [
        json!({"temp": 21}),
        json!([1, 2]),
        json!(7),
        json!(null),
        json!([true]),
        json!([true, 5]),
        json!([true, {"data": 1}]),
    ];
    for body in bodies {
        let p = parse_value(200, &body);
        assert_eq!(p.format, BodyFormat::Json, "{body}");
        assert!(p.success);
        assert_eq!(p.data.as_ref().map(|d| d.to_value()), Some(body));
    }
}

#[test]
fn non_2xx_statuses_outside_4xx_5xx_are_failures() {
    for status in [0, 100, 302, 600, 999] {
        let p = parse(status, r#"{"success": true, "data": 1}"#);
        assert!(!p.success, "{status}");
        assert_eq!(p.data, None);
        assert_eq!(p.routing_status(), Some(status));
    }
}

// ------------------------------------------------------ to_tool_error

#[test]
fn to_tool_error_is_none_on_success() {
    assert_eq!(parse(200, r#"{"success": true}"#).to_tool_error(), None);
    assert_eq!(parse(204, "").to_tool_error(), None);
}

#[test]
fn to_tool_error_gives_back_the_envelope_error() {
    let sent = ToolError::not_found("LOCATION_NOT_FOUND", "no such place")
        .retryable(true)
        .detail("suggestion", "Flower Mound, Texas, US");
    let reply = ToolResponse::failure(sent.clone());
    let p = parse_response(reply.http_status(), JSON, &reply.to_json_bytes());
    assert_eq!(p.to_tool_error(), Some(sent));
}

#[test]
fn to_tool_error_is_retryable_only_when_allowed() {
    for (flag, want) in [
        (json!(true), true),
        (json!(false), false),
        (json!("true"), false),
    ] {
        let p = parse_value(429, &failure_with(rate_limit_error(flag.clone())));
        assert_eq!(p.to_tool_error().unwrap().retryable, want, "{flag}");
    }
}

#[test]
fn to_tool_error_synthesises_code_and_category_from_status() {
    let p = parse_response(502, [("Content-Type", "text/html")], NGINX_502.as_bytes());
    assert_eq!(
        p.to_tool_error(),
        Some(ToolError::service_error("HTTP_502", "502 Bad Gateway"))
    );
}

#[test]
fn to_tool_error_message_names_the_body_when_there_is_none() {
    assert_eq!(
        parse(500, "").to_tool_error(),
        Some(ToolError::service_error(
            "HTTP_500",
            "HTTP 500 (empty body)"
        ))
    );
    assert_eq!(
        parse(404, "[]").to_tool_error(),
        Some(ToolError::not_found("HTTP_404", "HTTP 404 (json body)"))
    );
}

#[test]
fn to_tool_error_maps_bare_statuses_to_categories() {
    let cases = [
        (400, ErrorCategory::InputError),
        (401, ErrorCategory::AuthError),
        (403, ErrorCategory::PermissionDenied),
        (404, ErrorCategory::NotFound),
        (409, ErrorCategory::InputError),
        (410, ErrorCategory::NotFound),
        // A bare 422 (a validation error) is correctable input, not a policy rejection.
        (422, ErrorCategory::InputError),
        (429, ErrorCategory::RateLimit),
        (408, ErrorCategory::ServiceError),
        (500, ErrorCategory::ServiceError),
        (503, ErrorCategory::ServiceError),
        (302, ErrorCategory::Other("UNCLASSIFIED".into())),
    ];
    for (status, want) in cases {
        let e = parse(status, "oops").to_tool_error().unwrap();
        assert_eq!(e.category, want, "{status}");
        assert_eq!(e.code, format!("HTTP_{status}"));
        assert!(!e.retryable);
    }
}

#[test]
fn to_tool_error_for_uncategorised_2xx_failure_is_unclassified() {
    let body = failure_with(json!({"code": "X", "message": "m", "retryable": true}));
    let e = parse_value(200, &body).to_tool_error().unwrap();
    assert_eq!(e.category, ErrorCategory::Other("UNCLASSIFIED".into()));
    assert_eq!(e.code, "X");
    assert!(e.retryable);
}

#[test]
fn to_tool_error_keeps_the_named_code_and_message() {
    let body = failure_with(json!({"code": "X", "message": "m", "category": "QUOTA"}));
    let e = parse_value(429, &body).to_tool_error().unwrap();
    assert_eq!(
        e,
        ToolError::new(ErrorCategory::Other("QUOTA".into()), "X", "m")
    );
}
