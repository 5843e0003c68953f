//! Fuzzes the total response parser and the redactor.
//!
//! Input layout: two bytes of status (little-endian, taken modulo 1000), then
//! a header block of `Name: value` lines ended by a NUL byte, then the body.
//! Without a NUL the rest is all body, so plain JSON corpora work too.

#![no_main]

use std::time::{Duration, SystemTime};

use libfuzzer_sys::fuzz_target;
use recourse_protocol::{RetryPermission, parse_response, parse_response_at, redact};

fuzz_target!(|input: &[u8]| {
    let (status, rest) = match input {
        [a, b, rest @ ..] => (u16::from_le_bytes([*a, *b]) % 1000, rest),
        _ => (200, input),
    };
    let (head, body) = match rest.iter().position(|&b| b == 0) {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None => (&[][..], rest),
    };
    let head = String::from_utf8_lossy(head);
    let headers: Vec<(&str, &str)> = head
        .lines()
        .map(|line| line.split_once(':').unwrap_or((line, "")))
        .collect();

    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_767_225_600);
    let parsed = parse_response_at(status, headers.iter().copied(), body, now);
    let _ = parse_response(status, headers.iter().copied(), body);

    // What the parser reports must hang together.
    assert!(!parsed.success || (200..300).contains(&status));
    assert_eq!(parsed.success, parsed.to_tool_error().is_none());
    if !parsed.format.is_structured() {
        assert_eq!(parsed.permission, RetryPermission::Unspecified);
        assert!(parsed.category.is_none());
    }

    // The redactor is total and idempotent on whatever text came in.
    let text = String::from_utf8_lossy(body);
    let once = redact(&text);
    assert_eq!(redact(&once), once);
    if let Some(message) = &parsed.message {
        let once = redact(message);
        assert_eq!(redact(&once), once);
    }
});
