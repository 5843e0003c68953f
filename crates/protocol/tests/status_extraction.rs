//! protocol §2: `classify_upstream_error` and status extraction from error text.

use recourse_protocol::{ErrorCategory, classify_upstream_error, extract_status};

#[test]
fn status_extraction_introduced_forms() {
    let cases = [
        ("error 400", 400),
        ("Error 400: bad request", 400),
        ("status 429", 429),
        ("status: 429", 429),
        ("Status:429", 429),
        ("status=429", 429),
        ("code: 502", 502),
        ("error code: 502", 502),
        ("HTTP 503", 503),
        ("http 503", 503),
        ("HTTP/1.1 503 Service Unavailable", 503),
        ("HTTP/2 504", 504),
        ("status code 500", 500),
        ("Request failed with status code 401", 401),
        ("(404)", 404),
        ("resource missing (404)", 404),
        ("response 418", 418),
    ];
    for (text, want) in cases {
        assert_eq!(extract_status(text), Some(want), "{text:?}");
    }
}

#[test]
fn status_extraction_bare_three_digits_on_word_boundaries() {
    let cases = [
        ("503", 503),
        ("upstream answered 429 Too Many Requests", 429),
        ("failed: 502.", 502),
        ("got 404, giving up", 404),
        ("'500'", 500),
        ("line one\n403\nline three", 403),
        ("\t100\t", 100),
        ("599", 599),
    ];
    for (text, want) in cases {
        assert_eq!(extract_status(text), Some(want), "{text:?}");
    }
}

#[test]
fn status_extraction_unicode_punctuation_is_a_word_boundary() {
    for text in [
        "request failed with status 404…",
        "status 404—not found",
        "«404»",
        "— 503 —",
    ] {
        let want = if text.contains("503") { 503 } else { 404 };
        assert_eq!(extract_status(text), Some(want), "{text:?}");
    }
}

#[test]
fn status_extraction_prefers_an_introduced_number() {
    assert_eq!(
        extract_status("retry 3 of 200 items: status 503"),
        Some(503)
    );
    assert_eq!(extract_status("took 250 ms, then HTTP 502"), Some(502));
}

#[test]
fn status_extraction_near_misses_are_not_statuses() {
    for text in [
        "timed out after 4000ms",
        "took 400ms",
        "order ORD-404 missing",
        "order ORD-4042 missing",
        "user_404 not allowed",
        "version 1.404.2",
        "v1.404",
        "price 404.5",
        "GET /items/404 failed",
        "path C:\\data\\500",
        "id 4041",
        "status 4000",
        "status 42",
        "value 99 or 600",
        "status 099",
        "abc500def",
        "x404",
        "404x",
        "café404",
        "404é",
        "",
        "no digits here",
    ] {
        assert_eq!(extract_status(text), None, "{text:?}");
    }
}

fn classify(status: Option<u16>, text: &str) -> (u16, ErrorCategory, bool) {
    let c = classify_upstream_error(status, text);
    (c.http_status, c.category, c.retryable)
}

#[test]
fn classify_correctable_4xx_is_input_error() {
    for status in [400, 404, 409, 422] {
        assert_eq!(
            classify(Some(status), ""),
            (400, ErrorCategory::InputError, false),
            "{status}"
        );
    }
}

#[test]
fn classify_401_is_auth_error() {
    assert_eq!(
        classify(Some(401), ""),
        (401, ErrorCategory::AuthError, false)
    );
}

#[test]
fn classify_403_is_permission_denied() {
    assert_eq!(
        classify(Some(403), ""),
        (403, ErrorCategory::PermissionDenied, false)
    );
}

#[test]
fn classify_429_is_rate_limit_and_retryable() {
    assert_eq!(
        classify(Some(429), ""),
        (429, ErrorCategory::RateLimit, true)
    );
}

#[test]
fn classify_5xx_408_and_unknown_are_transient_service_errors() {
    for status in [
        Some(500),
        Some(502),
        Some(503),
        Some(504),
        Some(599),
        Some(408),
        Some(418),
        Some(302),
        None,
    ] {
        assert_eq!(
            classify(status, ""),
            (502, ErrorCategory::ServiceError, true),
            "{status:?}"
        );
    }
}

#[test]
fn classify_reads_the_status_from_text_when_none_is_given() {
    let cases = [
        (
            "upstream said: HTTP 429 Too Many Requests",
            (429, ErrorCategory::RateLimit, true),
        ),
        (
            "Request failed with status code 401",
            (401, ErrorCategory::AuthError, false),
        ),
        (
            "forbidden (403)",
            (403, ErrorCategory::PermissionDenied, false),
        ),
        (
            "error 409 conflict",
            (400, ErrorCategory::InputError, false),
        ),
        ("status: 422", (400, ErrorCategory::InputError, false)),
        ("code: 502", (502, ErrorCategory::ServiceError, true)),
        (
            "timed out after 4000ms",
            (502, ErrorCategory::ServiceError, true),
        ),
        (
            "order ORD-404 missing",
            (502, ErrorCategory::ServiceError, true),
        ),
        (
            "connection reset by peer",
            (502, ErrorCategory::ServiceError, true),
        ),
    ];
    for (text, want) in cases {
        assert_eq!(classify(None, text), want, "{text:?}");
    }
}

#[test]
fn classify_explicit_status_wins_over_text() {
    assert_eq!(
        classify(Some(401), "status 503"),
        (401, ErrorCategory::AuthError, false)
    );
}
