//! The envelopes a server answers with when a limit refuses a request.
//!
//! Most refusals are ordinary responses. Three happen before hyper has a
//! request to answer — a header block too large, headers too slow, a
//! connection over the cap — so they are written straight to the socket as
//! a complete HTTP/1.1 response, then the connection is closed.

use std::time::Duration;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use recourse_protocol::{ToolError, ToolResponse};

use crate::result::ToolFailure;

/// How long a client is asked to wait after an `OVERLOADED` refusal.
pub(crate) const RETRY_AFTER_SECS: u64 = 1;

/// Too many requests or connections at once: transient, resend after a second.
pub(crate) fn overloaded(what: &str) -> ToolError {
    ToolError::service_error(
        "OVERLOADED",
        format!("This server is at its limit of {what}; try again shortly"),
    )
    .retryable(true)
    .detail("retry_after", format!("{RETRY_AFTER_SECS}s"))
}

/// The 503 `OVERLOADED` response, with `Retry-After`.
pub(crate) fn overloaded_response(what: &str) -> Response {
    let mut response = ToolFailure::from(overloaded(what))
        .with_status(503)
        .into_response();
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECS));
    response
}

/// A request's headers or body did not arrive in time: the exchange, not the
/// payload, failed, so the same request may be sent again.
pub(crate) fn timed_out(part: &str, limit: Duration) -> ToolError {
    ToolError::service_error(
        "REQUEST_TIMEOUT",
        format!(
            "The request {part} did not arrive within {}",
            seconds(limit)
        ),
    )
    .retryable(true)
    .detail("timeout", seconds(limit))
}

/// The header block is over the server's limits.
pub(crate) fn headers_too_large(max_bytes: usize, max_headers: usize) -> ToolError {
    ToolError::input_error(
        "HEADERS_TOO_LARGE",
        format!(
            "The request headers exceed this server's limit of {max_bytes} bytes or {max_headers} header lines"
        ),
    )
    .detail("max_header_bytes", max_bytes.to_string())
    .detail("max_headers", max_headers.to_string())
}

fn seconds(d: Duration) -> String {
    let ms = d.as_millis();
    if ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else {
        format!("{ms}ms")
    }
}

/// A complete `Connection: close` HTTP/1.1 response carrying `error`'s envelope.
pub(crate) fn raw_response(status: u16, error: ToolError) -> Vec<u8> {
    let body = ToolResponse::failure(error.redacted()).to_json_bytes();
    let reason = StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("Error");
    let retry_after = if status == 503 {
        format!("retry-after: {RETRY_AFTER_SECS}\r\n")
    } else {
        String::new()
    };
    let mut bytes = format!(
        "HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n{retry_after}connection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    bytes.extend_from_slice(&body);
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_raw_refusal_is_a_complete_response_with_an_envelope() {
        let raw = raw_response(503, overloaded("connections"));
        let text = String::from_utf8(raw).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 503 Service Unavailable\r\n"));
        assert!(head.contains("retry-after: 1\r\n"));
        assert!(head.contains(&format!("content-length: {}\r\n", body.len())));
        let envelope: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(envelope["error"]["code"], "OVERLOADED");
        assert_eq!(envelope["error"]["category"], "SERVICE_ERROR");
        assert_eq!(envelope["error"]["retryable"], true);
    }

    #[test]
    fn timeouts_name_their_limit() {
        let e = timed_out("headers", Duration::from_millis(300));
        assert_eq!(e.detail_str("timeout"), Some("300ms"));
        assert_eq!(
            timed_out("body", Duration::from_secs(30)).message,
            "The request body did not arrive within 30s"
        );
    }
}
