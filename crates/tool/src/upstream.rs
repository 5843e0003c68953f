//! Reporting an upstream API's failure honestly.
//!
//! A tool that wraps a third-party API must not pass that API's failure
//! through raw: the status may mean something else to an agent (an upstream
//! 404 on a misspelt city is the caller's input error, not a missing tool
//! route), and the upstream's error text often carries the request URL, with
//! its API key in the query string. [`upstream_failure`] classifies the
//! failure with [`classify_upstream_error`] (protocol §2) and redacts the text, so
//! the envelope is both correctly routed and safe to show a model. The raw
//! text goes to the `tracing` log at debug level, never into the envelope.

use recourse_protocol::{ErrorCategory, ToolError, classify_upstream_error, redact};

use crate::result::ToolFailure;

/// A failure reporting an upstream API's failure, classified and redacted.
///
/// `status` is the upstream's HTTP status when known; otherwise the status is
/// read from `text` (`"status code 429"`, `"HTTP 503"`, `"(404)"`, …). The
/// failure is answered with the classifier's status (502 for upstream
/// service errors) and retry permission. Its code is `UPSTREAM_` followed by
/// what happened; override it with [`ToolError`]'s public fields via
/// [`ToolFailure::into_error`] if the tool knows better.
///
/// ```
/// use recourse_tool::upstream_failure;
/// use recourse_tool::protocol::ErrorCategory;
///
/// let failure = upstream_failure(None, "GET https://api.example.com/v1?appid=abc123secret: HTTP 429");
/// assert_eq!(failure.http_status(), 429);
/// assert_eq!(failure.error().category, ErrorCategory::RateLimit);
/// assert!(failure.error().retryable);
/// assert!(!failure.error().message.contains("abc123secret"));
/// ```
pub fn upstream_failure(status: Option<u16>, text: &str) -> ToolFailure {
    let class = classify_upstream_error(status, text);
    tracing::debug!(upstream_status = ?status, upstream_text = text, "upstream failure");
    let code = upstream_code(&class.category);
    let message = format!("The upstream service failed: {}", redact(text.trim()));
    let mut error = ToolError::new(class.category, code, message).retryable(class.retryable);
    if let Some(status) = status {
        error = error.detail("upstream_status", status.to_string());
    }
    ToolFailure::from(error).with_status(class.http_status)
}

fn upstream_code(category: &ErrorCategory) -> &'static str {
    match category {
        ErrorCategory::InputError => "UPSTREAM_REJECTED_INPUT",
        ErrorCategory::AuthError => "UPSTREAM_AUTH_FAILED",
        ErrorCategory::PermissionDenied => "UPSTREAM_FORBIDDEN",
        ErrorCategory::RateLimit => "UPSTREAM_RATE_LIMITED",
        _ => "UPSTREAM_UNAVAILABLE",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_status_wins_over_text() {
        let f = upstream_failure(Some(401), "error 500 while calling");
        assert_eq!(f.http_status(), 401);
        assert_eq!(f.error().code, "UPSTREAM_AUTH_FAILED");
        assert!(!f.error().retryable);
        assert_eq!(f.error().detail_str("upstream_status"), Some("401"));
    }

    #[test]
    fn unknown_failures_are_transient_502s() {
        let f = upstream_failure(None, "connection reset by peer");
        assert_eq!(f.http_status(), 502);
        assert_eq!(f.error().category, ErrorCategory::ServiceError);
        assert!(f.error().retryable);
    }

    #[test]
    fn upstream_404_is_the_callers_input_error() {
        let f = upstream_failure(None, "city not found (404)");
        assert_eq!(f.http_status(), 400);
        assert_eq!(f.error().category, ErrorCategory::InputError);
        assert!(!f.error().retryable);
    }

    #[test]
    fn bearer_tokens_are_redacted() {
        let f = upstream_failure(
            Some(403),
            "sent Authorization: Bearer abcdefghijklmnopqrstuv",
        );
        assert!(!f.error().message.contains("abcdefghijklmnopqrstuv"));
    }
}
