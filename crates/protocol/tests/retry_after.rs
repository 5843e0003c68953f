//! protocol §3's server demand, as the parser reads it: every `Retry-After` form
//! and `details.retry_after`, the longer winning when both are present.

use std::time::{Duration, SystemTime};

use recourse_protocol::{parse_response_at, parse_retry_after, parse_retry_after_detail};
use serde_json::json;

/// Wed, 21 Oct 2015 07:28:00 GMT.
const DATE_SECS: u64 = 1_445_412_480;

fn at(secs: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(secs)
}

fn wait(headers: &[(&str, &str)], body: &str, now: SystemTime) -> Option<Duration> {
    parse_response_at(429, headers.iter().copied(), body.as_bytes(), now).server_wait
}

fn header_wait(value: &str, now: SystemTime) -> Option<Duration> {
    wait(&[("Retry-After", value)], "", now)
}

fn envelope_with_retry_after(v: serde_json::Value) -> String {
    json!({"success": false, "error": {
        "code": "SLOW", "message": "m", "category": "RATE_LIMIT", "retryable": true,
        "details": {"retry_after": v}
    }})
    .to_string()
}

#[test]
fn retry_after_delay_seconds() {
    assert_eq!(header_wait("120", at(0)), Some(Duration::from_secs(120)));
    assert_eq!(header_wait("0", at(0)), Some(Duration::ZERO));
    assert_eq!(header_wait("  5 ", at(0)), Some(Duration::from_secs(5)));
}

#[test]
fn retry_after_imf_fixdate_is_relative_to_now() {
    let now = at(DATE_SECS - 30);
    assert_eq!(
        header_wait("Wed, 21 Oct 2015 07:28:00 GMT", now),
        Some(Duration::from_secs(30))
    );
}

#[test]
fn retry_after_rfc850_date_is_read() {
    let now = at(DATE_SECS - 45);
    assert_eq!(
        header_wait("Wednesday, 21-Oct-15 07:28:00 GMT", now),
        Some(Duration::from_secs(45))
    );
}

#[test]
fn retry_after_asctime_date_is_read() {
    let now = at(DATE_SECS - 60);
    assert_eq!(
        header_wait("Wed Oct 21 07:28:00 2015", now),
        Some(Duration::from_secs(60))
    );
}

#[test]
fn retry_after_date_in_the_past_is_zero() {
    let now = at(DATE_SECS + 3600);
    assert_eq!(
        header_wait("Wed, 21 Oct 2015 07:28:00 GMT", now),
        Some(Duration::ZERO)
    );
}

#[test]
fn retry_after_negative_fractional_or_garbage_is_none() {
    for v in [
        "-1",
        "-0",
        "+5",
        "1.5",
        "1e3",
        "",
        "  ",
        "soon",
        "12abc",
        "0x10",
        "Wed, 32 Oct 2015 07:28:00 GMT",
    ] {
        assert_eq!(header_wait(v, at(0)), None, "{v:?}");
        assert_eq!(parse_retry_after(v, at(0)), None, "{v:?}");
    }
}

#[test]
fn retry_after_too_large_to_represent_is_longer_than_any_limit_never_absent() {
    for v in ["99999999999999999999999", "18446744073709551616"] {
        assert_eq!(header_wait(v, at(0)), Some(Duration::MAX), "{v:?}");
        assert_eq!(parse_retry_after(v, at(0)), Some(Duration::MAX), "{v:?}");
    }
}

#[test]
fn retry_after_huge_value_is_not_capped_here() {
    assert_eq!(
        header_wait("31536000", at(0)),
        Some(Duration::from_secs(31_536_000))
    );
}

#[test]
fn retry_after_header_name_is_case_insensitive() {
    for name in ["Retry-After", "retry-after", "RETRY-AFTER", "rEtRy-AfTeR"] {
        assert_eq!(
            wait(&[(name, "7")], "", at(0)),
            Some(Duration::from_secs(7)),
            "{name}"
        );
    }
}

#[test]
fn other_headers_are_not_a_wait() {
    assert_eq!(
        wait(&[("Retry-After-Ms", "7"), ("X-Retry", "9")], "", at(0)),
        None
    );
}

#[test]
fn details_retry_after_units() {
    let cases = [
        (json!("60s"), Duration::from_secs(60)),
        (json!("1500ms"), Duration::from_millis(1500)),
        (json!("2"), Duration::from_secs(2)),
        (json!(3), Duration::from_secs(3)),
        (json!("1.5s"), Duration::from_millis(1500)),
        (json!("2m"), Duration::from_secs(120)),
    ];
    for (v, want) in cases {
        assert_eq!(parse_retry_after_detail(&v), Some(want), "{v}");
        let body = envelope_with_retry_after(v.clone());
        assert_eq!(wait(&[], &body, at(0)), Some(want), "{v}");
    }
}

#[test]
fn details_retry_after_negative_or_garbage_is_none() {
    for v in [
        json!("-5s"),
        json!(-1),
        json!("later"),
        json!(""),
        json!(true),
        json!({"s": 1}),
    ] {
        assert_eq!(parse_retry_after_detail(&v), None, "{v}");
        let body = envelope_with_retry_after(v.clone());
        assert_eq!(wait(&[], &body, at(0)), None, "{v}");
    }
}

#[test]
fn both_present_the_longer_wins() {
    let body = envelope_with_retry_after(json!("60s"));
    assert_eq!(
        wait(&[("Retry-After", "5")], &body, at(0)),
        Some(Duration::from_secs(60))
    );
    let body = envelope_with_retry_after(json!("1500ms"));
    assert_eq!(
        wait(&[("Retry-After", "5")], &body, at(0)),
        Some(Duration::from_secs(5))
    );
}

#[test]
fn garbage_header_falls_back_to_details() {
    let body = envelope_with_retry_after(json!("2"));
    assert_eq!(
        wait(&[("Retry-After", "soon")], &body, at(0)),
        Some(Duration::from_secs(2))
    );
}

#[test]
fn no_header_and_no_detail_is_no_wait() {
    let body = envelope_with_retry_after(json!(null));
    assert_eq!(wait(&[], &body, at(0)), None);
    assert_eq!(wait(&[], "<html>busy</html>", at(0)), None);
}

#[test]
fn retry_after_on_a_non_envelope_body_is_still_read() {
    assert_eq!(
        wait(&[("Retry-After", "3")], "<html>busy</html>", at(0)),
        Some(Duration::from_secs(3))
    );
}
