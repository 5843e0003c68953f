//! Classifying an upstream failure for a tool to report (protocol §2).
//!
//! A tool that wraps a third-party API must translate that API's failures into
//! our categories. The upstream often gives only an error string
//! (`"request failed: status code 429"`), so the status is extracted from text
//! too — carefully: `4000ms`, `ORD-4042` or `v1.404` hold digits but no status.

use crate::category::ErrorCategory;

/// How a tool should report an upstream failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpstreamClassification {
    /// The status the tool should answer with.
    pub http_status: u16,
    /// The category to report.
    pub category: ErrorCategory,
    /// The retry permission to report. Opting a known-correctable upstream
    /// condition into `true` is the tool author's explicit choice.
    pub retryable: bool,
}

/// Classifies an upstream failure from its status, or from its error text when
/// no status is known.
///
/// 400/404/409/422 → (400, INPUT_ERROR, false); 401 → (401, AUTH_ERROR, false);
/// 403 → (403, PERMISSION_DENIED, false); 429 → (429, RATE_LIMIT, true);
/// 5xx, 408 and anything unrecognised → (502, SERVICE_ERROR, true).
///
/// ```
/// use recourse_protocol::{classify_upstream_error, ErrorCategory};
///
/// let c = classify_upstream_error(None, "upstream said: HTTP 429 Too Many Requests");
/// assert_eq!((c.http_status, c.category, c.retryable), (429, ErrorCategory::RateLimit, true));
///
/// let c = classify_upstream_error(None, "timed out after 4000ms");
/// assert_eq!(c.category, ErrorCategory::ServiceError);
/// ```
pub fn classify_upstream_error(status: Option<u16>, text: &str) -> UpstreamClassification {
    let status = status.or_else(|| extract_status(text));
    let (http_status, category, retryable) = match status {
        Some(400 | 404 | 409 | 422) => (400, ErrorCategory::InputError, false),
        Some(401) => (401, ErrorCategory::AuthError, false),
        Some(403) => (403, ErrorCategory::PermissionDenied, false),
        Some(429) => (429, ErrorCategory::RateLimit, true),
        _ => (502, ErrorCategory::ServiceError, true),
    };
    UpstreamClassification {
        http_status,
        category,
        retryable,
    }
}

/// Phrases that name a rate limit in error text (matched lowercase, from a word start).
const RATE_LIMIT_PHRASES: [&str; 5] = [
    "rate limit",
    "rate-limit",
    "ratelimit",
    "too many requests",
    "throttl",
];

/// Phrases that name a transient service failure in error text.
const TRANSIENT_PHRASES: [&str; 10] = [
    "timeout",
    "timed out",
    "temporarily unavailable",
    "service unavailable",
    "try again later",
    "overloaded",
    "bad gateway",
    "internal server error",
    "connection reset",
    "connection refused",
];

/// The transient failure free text names, if it names one: an HTTP status
/// that is transient (408, 429, 5xx, found as [`extract_status`] finds it),
/// else a phrase ("timed out", "rate limit", "temporarily unavailable", …).
/// A status that is not transient (`HTTP 400: bad timeout value`) wins over
/// any phrase, and yields `None`, as does text that names nothing transient.
///
/// This is the agent side's reading of a failure that came with prose only
/// (an MCP `isError` result without an envelope): a guess, which the parser
/// marks as such ([`CategoryBasis::FreeText`](crate::parse::CategoryBasis::FreeText)).
pub(crate) fn recognise_transient(text: &str) -> Option<ErrorCategory> {
    if let Some(status) = extract_status(text) {
        return match status {
            429 => Some(ErrorCategory::RateLimit),
            408 | 500..=599 => Some(ErrorCategory::ServiceError),
            _ => None,
        };
    }
    let lower = text.to_lowercase();
    if RATE_LIMIT_PHRASES.iter().any(|p| contains_word(&lower, p)) {
        return Some(ErrorCategory::RateLimit);
    }
    TRANSIENT_PHRASES
        .iter()
        .any(|p| contains_word(&lower, p))
        .then_some(ErrorCategory::ServiceError)
}

/// Whether `phrase` occurs in `text` at the start of a word (`timeout` in
/// "request timeout" or "timeouts", not in "settimeout").
fn contains_word(text: &str, phrase: &str) -> bool {
    text.match_indices(phrase).any(|(at, _)| {
        text[..at]
            .chars()
            .next_back()
            .is_none_or(|c| !c.is_alphanumeric() && c != '_')
    })
}

/// Keywords that introduce a status, longest first so `status code` wins over `status`.
const KEYWORDS: [&str; 6] = ["status code", "status", "error", "code", "http", "response"];

/// Extracts an HTTP status (100–599) from error text.
///
/// Understands `error 400`, `status 429`, `status: 429`, `status=429`,
/// `code: 502`, `HTTP 503`, `HTTP/1.1 503`, `status code 500` and `(404)`; failing
/// those, the first standalone three-digit number in range. A number glued to
/// letters, digits, `_`, `-`, `.` or `/` (as in `4000ms`, `ORD-404`, `v1.404`,
/// `/items/404`) is not a status.
///
/// ```
/// use recourse_protocol::extract_status;
///
/// assert_eq!(extract_status("status code 500"), Some(500));
/// assert_eq!(extract_status("not found (404)"), Some(404));
/// assert_eq!(extract_status("took 4000ms"), None);
/// assert_eq!(extract_status("order ORD-404 missing"), None);
/// ```
pub fn extract_status(text: &str) -> Option<u16> {
    let candidates = standalone_numbers(text);
    let lower = text.to_ascii_lowercase();
    let introduced = candidates.iter().find(|(start, _)| {
        let before = lower[..*start].trim_end_matches([' ', ':', '=', '\t', '#']);
        let parenthesised = lower[..*start].ends_with('(') && lower[*start + 3..].starts_with(')');
        parenthesised
            || KEYWORDS.iter().any(|k| ends_with_word(before, k))
            || before.ends_with("http/1.1")
            || before.ends_with("http/1.0")
            || before.ends_with("http/2")
    });
    introduced.or(candidates.first()).map(|(_, n)| *n)
}

/// Whether `s` ends with the word `word` (preceded by a non-alphanumeric or nothing).
fn ends_with_word(s: &str, word: &str) -> bool {
    s.ends_with(word)
        && s[..s.len() - word.len()]
            .chars()
            .next_back()
            .is_none_or(|c| !c.is_ascii_alphanumeric() && c != '_')
}

/// Byte offsets and values of three-digit numbers in 100..=599 standing alone.
fn standalone_numbers(text: &str) -> Vec<(usize, u16)> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if !bytes[i].is_ascii_digit() {
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && bytes[i].is_ascii_digit() {
            i += 1;
        }
        // ASCII digits never split a UTF-8 sequence, so `start` and `i` are
        // character boundaries.
        if i - start != 3 || !free_before(&text[..start]) || !free_after(&text[i..]) {
            continue;
        }
        let n = u16::from(bytes[start] - b'0') * 100
            + u16::from(bytes[start + 1] - b'0') * 10
            + u16::from(bytes[start + 2] - b'0');
        if (100..=599).contains(&n) {
            out.push((start, n));
        }
    }
    out
}

/// Whether `c` beside a number marks a word boundary: not a letter or digit
/// of any script, not `_ - / \` (ids, paths), not a control character other
/// than whitespace.
fn is_boundary(c: char) -> bool {
    !(c.is_alphanumeric() || matches!(c, '_' | '-' | '/' | '\\'))
        && (!c.is_control() || c.is_whitespace())
}

fn free_before(before: &str) -> bool {
    match before.chars().next_back() {
        None => true,
        // `v1.404` is a version, not a status.
        Some('.') => false,
        Some(c) => is_boundary(c),
    }
}

fn free_after(after: &str) -> bool {
    let mut chars = after.chars();
    match chars.next() {
        None => true,
        // A trailing full stop ends a sentence; `404.5` or `1.404.2` does not.
        Some('.') => chars.next().is_none_or(|c| !c.is_ascii_digit()),
        Some(c) => is_boundary(c),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn introduced_forms_are_read() {
        let cases = [
            ("error 400", 400),
            ("status 429", 429),
            ("status: 429", 429),
            ("status=429", 429),
            ("code: 502", 502),
            ("HTTP 503", 503),
            ("HTTP/1.1 503 Service Unavailable", 503),
            ("status code 500", 500),
            ("resource missing (404)", 404),
            ("Request failed with status code 401", 401),
        ];
        for (text, want) in cases {
            assert_eq!(extract_status(text), Some(want), "{text:?}");
        }
    }

    #[test]
    fn introduced_number_beats_an_earlier_bare_one() {
        assert_eq!(
            extract_status("retry 3 of 200 items: status 503"),
            Some(503)
        );
    }

    #[test]
    fn bare_standalone_number_is_a_fallback() {
        assert_eq!(
            extract_status("upstream answered 429 Too Many Requests"),
            Some(429)
        );
        assert_eq!(extract_status("503"), Some(503));
        assert_eq!(extract_status("failed: 502."), Some(502));
    }

    #[test]
    fn near_misses_are_not_statuses() {
        for text in [
            "timed out after 4000ms",
            "took 400ms",
            "order ORD-404 missing",
            "user_404 not allowed",
            "version 1.404.2",
            "GET /items/404 failed",
            "id 4041",
            "value 99 or 600",
            "abc500def",
            "",
            "no digits here",
        ] {
            assert_eq!(extract_status(text), None, "{text:?}");
        }
    }

    #[test]
    fn classification_table() {
        let cases = [
            (400, 400, ErrorCategory::InputError, false),
            (404, 400, ErrorCategory::InputError, false),
            (409, 400, ErrorCategory::InputError, false),
            (422, 400, ErrorCategory::InputError, false),
            (401, 401, ErrorCategory::AuthError, false),
            (403, 403, ErrorCategory::PermissionDenied, false),
            (429, 429, ErrorCategory::RateLimit, true),
            (500, 502, ErrorCategory::ServiceError, true),
            (503, 502, ErrorCategory::ServiceError, true),
            (408, 502, ErrorCategory::ServiceError, true),
            (418, 502, ErrorCategory::ServiceError, true),
        ];
        for (status, http, cat, retry) in cases {
            let c = classify_upstream_error(Some(status), "");
            assert_eq!(
                (c.http_status, c.category, c.retryable),
                (http, cat, retry),
                "{status}"
            );
        }
    }

    #[test]
    fn unknown_text_is_a_transient_service_error() {
        let c = classify_upstream_error(None, "connection reset by peer");
        assert_eq!(
            (c.http_status, c.category, c.retryable),
            (502, ErrorCategory::ServiceError, true)
        );
    }

    #[test]
    fn transient_failures_are_recognised_in_text() {
        let cases = [
            ("upstream 503, try later", Some(ErrorCategory::ServiceError)),
            ("HTTP 429 Too Many Requests", Some(ErrorCategory::RateLimit)),
            (
                "Rate limit exceeded for this key",
                Some(ErrorCategory::RateLimit),
            ),
            ("request throttled", Some(ErrorCategory::RateLimit)),
            ("the backend timed out", Some(ErrorCategory::ServiceError)),
            (
                "Timeout talking to the database",
                Some(ErrorCategory::ServiceError),
            ),
            (
                "Service temporarily unavailable",
                Some(ErrorCategory::ServiceError),
            ),
            ("status code 408", Some(ErrorCategory::ServiceError)),
            ("Invalid timezone: America/NewYork", None),
            ("HTTP 400: bad timeout value", None),
            ("upstream answered 404", None),
            ("settimeout is not a function", None),
            ("username unavailable", None),
            ("", None),
        ];
        for (text, want) in cases {
            assert_eq!(recognise_transient(text), want, "{text:?}");
        }
    }

    #[test]
    fn explicit_status_wins_over_text() {
        let c = classify_upstream_error(Some(401), "status 503");
        assert_eq!(c.category, ErrorCategory::AuthError);
    }
}
