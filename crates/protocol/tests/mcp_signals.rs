//! What MCP and JSON-RPC failures say beyond a category: whether the category
//! was stated or guessed from text, what a call needs before it can go on,
//! and the waits their conventions carry.

use std::time::{Duration, SystemTime};

use recourse_protocol::mcp::{FailureClass, TOOL_FAILURE_META_KEY, tool_failure_meta};
use recourse_protocol::{
    BodyFormat, CategoryBasis, ErrorCategory, Need, ParsedResponse, RetryPermission,
    parse_response_at,
};
use serde_json::{Value, json};

/// 2015-10-21T07:28:00Z.
fn now() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_445_412_480)
}

fn parse(body: &Value) -> ParsedResponse {
    parse_response_at(
        200,
        [("Content-Type", "application/json")],
        body.to_string().as_bytes(),
        now(),
    )
}

fn rpc_error(code: i64, data: Option<Value>) -> Value {
    let mut error = json!({"code": code, "message": "m"});
    if let Some(data) = data {
        error["data"] = data;
    }
    json!({"jsonrpc": "2.0", "id": 1, "error": error})
}

fn is_error(text: &str) -> Value {
    json!({"content": [{"type": "text", "text": text}], "isError": true})
}

// --------------------------------------------------------------- JSON-RPC

#[test]
fn an_internal_error_or_an_undefined_code_is_opaque() {
    for code in [-32603, -32000, -32099, 0, 12] {
        let p = parse(&rpc_error(code, None));
        assert_eq!(p.category, Some(ErrorCategory::ServiceError), "{code}");
        assert_eq!(p.basis, CategoryBasis::Opaque, "{code}");
        assert_eq!(p.needs, None);
    }
    for code in [-32700, -32600, -32601, -32602, -32023] {
        assert_eq!(
            parse(&rpc_error(code, None)).basis,
            CategoryBasis::Stated,
            "{code}"
        );
    }
}

#[test]
fn protocol_disagreements_need_configuration() {
    let cases = [
        (-32020, "HEADER_MISMATCH"),
        (-32021, "MISSING_CLIENT_CAPABILITY"),
        (-32022, "UNSUPPORTED_PROTOCOL_VERSION"),
    ];
    for (code, name) in cases {
        let p = parse(&rpc_error(code, Some(json!({"supported": ["2025-06-18"]}))));
        assert!(!p.success);
        assert_eq!(p.format, BodyFormat::JsonRpcError);
        assert_eq!(p.needs, Some(Need::Configuration), "{code}");
        assert_eq!(p.code.as_deref(), Some(name));
        assert_eq!(p.category, None, "no category describes a protocol stop");
        assert_eq!(p.details["data"]["supported"][0], "2025-06-18");
    }
}

#[test]
fn the_draft_rate_limit_error_waits_retry_after_ms() {
    let p = parse(&rpc_error(-32023, Some(json!({"retryAfterMs": 1500}))));
    assert_eq!(p.category, Some(ErrorCategory::RateLimit));
    assert_eq!(p.code.as_deref(), Some("RATE_LIMITED"));
    assert_eq!(p.server_wait, Some(Duration::from_millis(1500)));
    assert_eq!(p.routing_status(), Some(429));
    // Without (or with an unusable) retryAfterMs it is a rate limit with no demand.
    for data in [None, Some(json!({"retryAfterMs": -5})), Some(json!("soon"))] {
        let p = parse(&rpc_error(-32023, data));
        assert_eq!(p.category, Some(ErrorCategory::RateLimit));
        assert_eq!(p.server_wait, None);
    }
    // Only -32023 says what retryAfterMs means.
    let p = parse(&rpc_error(-32603, Some(json!({"retryAfterMs": 1500}))));
    assert_eq!(p.server_wait, None);
}

// ------------------------------------------------------- input_required

#[test]
fn a_result_asking_for_input_needs_input() {
    let result = json!({
        "resultType": "input_required",
        "inputRequests": {"confirm": {"method": "elicitation/create", "params": {"message": "Sure?"}}},
        "requestState": "opaque"
    });
    for body in [
        result.clone(),
        json!({"jsonrpc": "2.0", "id": 4, "result": result}),
    ] {
        let p = parse(&body);
        assert!(!p.success, "{body}");
        assert_eq!(p.needs, Some(Need::Input));
        assert_eq!(p.format, BodyFormat::McpResult);
        assert_eq!(p.code.as_deref(), Some("INPUT_REQUIRED"));
        assert_eq!(p.data, None);
    }
    let complete = json!({"resultType": "complete", "content": [{"type": "text", "text": "ok"}]});
    assert!(parse(&complete).success);
}

// ------------------------------------------------------ isError, text only

#[test]
fn a_transient_failure_named_in_text_is_a_guess_of_its_category() {
    let cases = [
        ("upstream 503, try later", ErrorCategory::ServiceError),
        ("HTTP 429 Too Many Requests", ErrorCategory::RateLimit),
        ("request timed out after 30s", ErrorCategory::ServiceError),
        ("Rate limit exceeded", ErrorCategory::RateLimit),
        (
            "the inventory service is temporarily unavailable",
            ErrorCategory::ServiceError,
        ),
    ];
    for (text, category) in cases {
        let p = parse(&is_error(text));
        assert_eq!(p.category, Some(category), "{text}");
        assert_eq!(p.basis, CategoryBasis::FreeText, "{text}");
        assert_eq!(p.permission, RetryPermission::Unspecified, "{text}");
        assert_eq!(p.message.as_deref(), Some(text));
        assert_eq!(p.server_wait, None);
    }
}

/// Text that names no category routes as an input error — but only as
/// recourse's assumption: the tool named none, and the basis says so.
#[test]
fn text_naming_nothing_transient_routes_as_an_assumed_input_error() {
    for text in [
        "Invalid timezone: America/NewYork",
        "HTTP 400: bad timeout value",
        "Access denied - path outside allowed directories",
        "",
    ] {
        let body = is_error(text);
        let p = parse(&body);
        assert_eq!(p.category, Some(ErrorCategory::InputError), "{text}");
        assert_eq!(p.basis, CategoryBasis::Assumed, "{text}");
        // What the tool said is kept whole, beside the reading.
        assert_eq!(p.answer.as_ref(), Some(&body), "{text}");
    }
}

// ------------------------------------------------------ failure metadata

fn with_meta(text: &str, meta: Value) -> Value {
    let mut body = is_error(text);
    body["_meta"] = json!({ TOOL_FAILURE_META_KEY: meta });
    body
}

#[test]
fn failure_metadata_outranks_text() {
    let body = with_meta(
        "upstream 503, try later",
        json!({"class": "rate_limit", "code": "QUOTA", "retryable": true,
               "retryNotBefore": "2015-10-21T07:28:02.500Z"}),
    );
    let p = parse(&body);
    assert_eq!(p.category, Some(ErrorCategory::RateLimit));
    assert_eq!(p.basis, CategoryBasis::Stated);
    assert_eq!(p.code.as_deref(), Some("QUOTA"));
    assert_eq!(p.permission, RetryPermission::Allowed);
    assert_eq!(p.server_wait, Some(Duration::from_millis(2500)));
    assert_eq!(p.message.as_deref(), Some("upstream 503, try later"));

    let refused = parse(&with_meta(
        "no",
        json!({"class": "SERVICE_ERROR", "retryable": false}),
    ));
    assert_eq!(refused.category, Some(ErrorCategory::ServiceError));
    assert_eq!(refused.permission, RetryPermission::Refused);
    assert_eq!(refused.code.as_deref(), Some("TOOL_ERROR"));
}

#[test]
fn failure_metadata_waits_read_rfc3339_and_http_dates_and_a_past_time_is_no_wait() {
    let wait = |when: &str| {
        parse(&with_meta(
            "x",
            json!({"class": "RATE_LIMIT", "retryNotBefore": when}),
        ))
        .server_wait
    };
    assert_eq!(
        wait("2015-10-21T09:28:05+02:00"),
        Some(Duration::from_secs(5))
    );
    assert_eq!(
        wait("Wed, 21 Oct 2015 07:28:09 GMT"),
        Some(Duration::from_secs(9))
    );
    assert_eq!(wait("2015-10-21T07:00:00Z"), Some(Duration::ZERO));
    assert_eq!(wait("120"), None, "a time, not a delay");
    assert_eq!(wait("soon"), None);
}

#[test]
fn failure_metadata_waits_read_epoch_milliseconds() {
    let wait = |when: Value| {
        parse(&with_meta(
            "x",
            json!({"class": "reliability", "retryNotBefore": when}),
        ))
        .server_wait
    };
    assert_eq!(
        wait(json!(1_445_412_482_500_u64)),
        Some(Duration::from_millis(2500))
    );
    let fractional = wait(json!(1_445_412_481_000.5)).unwrap();
    assert!(fractional.abs_diff(Duration::from_micros(1_000_500)) < Duration::from_micros(1));
    assert_eq!(wait(json!(1_000)), Some(Duration::ZERO), "long past");
    assert_eq!(wait(json!(-5)), None);
    assert_eq!(wait(json!(true)), None);
}

#[test]
fn failure_metadata_reads_the_proposals_classes() {
    let read = |meta: Value| parse(&with_meta("the tool's words", meta));
    let p = read(json!({"class": "reliability", "code": "UPSTREAM_DOWN", "retryable": true}));
    assert_eq!(p.category, Some(ErrorCategory::ServiceError));
    assert_eq!(p.basis, CategoryBasis::Stated);
    assert_eq!(p.code.as_deref(), Some("UPSTREAM_DOWN"));
    assert_eq!(p.permission, RetryPermission::Allowed);

    let p = read(json!({"class": "reliability", "code": "outcome_unknown", "retryable": false}));
    assert_eq!(p.category, Some(ErrorCategory::ServiceError));
    assert_eq!(p.permission, RetryPermission::Refused, "never resent");

    let p = read(json!({"class": "Capability", "code": "BAD_DATE"}));
    assert_eq!(p.category, Some(ErrorCategory::InputError));
    assert_eq!(p.permission, RetryPermission::Unspecified);

    let p = read(json!({"class": "governance", "code": "FORBIDDEN", "retryable": false}));
    assert_eq!(p.category, Some(ErrorCategory::PermissionDenied));
    assert_eq!(p.permission, RetryPermission::Refused);
}

#[test]
fn metadata_without_a_class_is_ignored_and_an_envelope_outranks_metadata() {
    let p = parse(&with_meta(
        "upstream 503",
        json!({"code": "X", "retryable": false}),
    ));
    assert_eq!(p.basis, CategoryBasis::FreeText);
    assert_eq!(p.permission, RetryPermission::Unspecified);

    let mut body = with_meta("[DENIED] no", json!({"class": "RATE_LIMIT"}));
    body["structuredContent"] = json!({"success": false, "error": {
        "code": "DENIED", "message": "no", "category": "PERMISSION_DENIED", "retryable": false}});
    let p = parse(&body);
    assert_eq!(p.category, Some(ErrorCategory::PermissionDenied));
    assert_eq!(p.permission, RetryPermission::Refused);
}

#[test]
fn the_metadata_recourse_writes_is_the_proposals_form_and_reads_back() {
    let at = now() + Duration::from_secs(3);
    for (category, retryable, class) in [
        (
            ErrorCategory::RateLimit,
            Some(true),
            FailureClass::Reliability,
        ),
        (
            ErrorCategory::UnknownOutcome,
            None,
            FailureClass::Reliability,
        ),
        (
            ErrorCategory::InputError,
            Some(false),
            FailureClass::Capability,
        ),
        (
            ErrorCategory::PolicyRejection,
            Some(false),
            FailureClass::Governance,
        ),
    ] {
        let meta = tool_failure_meta(&category, "C", retryable, Some(at));
        assert_eq!(meta["class"].as_str(), Some(class.as_str()));
        assert_eq!(meta["retryNotBefore"].as_u64(), Some(1_445_412_483_000));
        let p = parse(&with_meta("t", meta));
        assert_eq!(p.category, Some(class.category()));
        assert_eq!(p.code.as_deref(), Some("C"));
        assert_eq!(
            p.permission,
            retryable.map_or(RetryPermission::Unspecified, RetryPermission::from_flag)
        );
        assert_eq!(p.server_wait, Some(Duration::from_secs(3)));
    }
}
