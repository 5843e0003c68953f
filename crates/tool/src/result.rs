//! `ToolResult`: what a handler returns, and how it becomes an envelope.
//!
//! A handler's success and failure are both *responses*: the success is the
//! envelope `{"success": true, "data": …}` with status 200, the failure is
//! `{"success": false, "error": …}` with the status of the error's category.
//! Because [`ToolError`] lives in the protocol crate (which knows nothing of
//! axum), failures travel as [`ToolFailure`], which `?` builds from any
//! `ToolError`.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use recourse_protocol::{ErrorCategory, ToolError, ToolResponse, parse_retry_after_detail};
use serde::Serialize;

/// What a tool handler returns: `Ok(Success(data))` or `Err(failure)`.
///
/// ```
/// use recourse_tool::{Success, ToolResult};
/// use recourse_tool::protocol::ToolError;
///
/// fn quote(symbol: &str) -> ToolResult<f64> {
///     match symbol {
///         "TSLA" => Ok(Success(468.285)),
///         other => Err(ToolError::not_found("SYMBOL_NOT_FOUND", format!("No symbol {other}")).into()),
///     }
/// }
/// assert!(quote("TSLA").is_ok());
/// ```
pub type ToolResult<T> = Result<Success<T>, ToolFailure>;

/// A successful result: answered as `{"success": true, "data": T}` with status 200.
///
/// A `T` that fails to serialise (a map with non-string keys, say) is reported
/// as a 500 `SERVICE_ERROR` envelope rather than a broken body.
#[derive(Debug, Clone, PartialEq)]
pub struct Success<T>(pub T);

impl<T: Serialize> IntoResponse for Success<T> {
    fn into_response(self) -> Response {
        match serde_json::to_value(&self.0) {
            Ok(data) => envelope_response(&ToolResponse::ok(data), None),
            Err(e) => ToolFailure::from(
                ToolError::service_error(
                    "RESULT_NOT_SERIALIZABLE",
                    format!("The tool produced a result it could not encode: {e}"),
                )
                .retryable(false),
            )
            .with_status(500)
            .into_response(),
        }
    }
}

/// A failed result: a [`ToolError`], answered with its category's status.
///
/// Every failure passes the [redactor](recourse_protocol::redact) on its way
/// out, so a credential that slipped into a message or detail never reaches
/// the agent. A `RATE_LIMIT` failure whose `details.retry_after` reads as a
/// duration (`"2"`, `"1500ms"`, `"60s"`) also gets a `Retry-After` header in
/// whole seconds, rounded up.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolFailure {
    error: ToolError,
    status: Option<u16>,
}

impl ToolFailure {
    /// A failure answered with the status of `error`'s category.
    pub fn new(error: ToolError) -> Self {
        Self {
            error,
            status: None,
        }
    }

    /// Answers with `status` instead of the category's (e.g. 502 for an
    /// upstream's failure). Statuses outside 400–599 are ignored.
    #[must_use]
    pub fn with_status(mut self, status: u16) -> Self {
        self.status = (400..=599).contains(&status).then_some(status);
        self
    }

    /// The error this failure reports (before redaction).
    pub fn error(&self) -> &ToolError {
        &self.error
    }

    /// The HTTP status this failure is answered with.
    pub fn http_status(&self) -> u16 {
        self.status.unwrap_or_else(|| self.error.http_status())
    }

    /// The error, consuming the failure.
    pub fn into_error(self) -> ToolError {
        self.error
    }
}

impl From<ToolError> for ToolFailure {
    fn from(error: ToolError) -> Self {
        Self::new(error)
    }
}

impl IntoResponse for ToolFailure {
    fn into_response(self) -> Response {
        let status = self.http_status();
        let error = self.error.redacted();
        let retry_after = retry_after_seconds(&error);
        let mut response = envelope_response(&ToolResponse::failure(error), Some(status));
        if let Some(secs) = retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        response
    }
}

/// `Retry-After` seconds for a rate-limit error that names its wait.
fn retry_after_seconds(error: &ToolError) -> Option<u64> {
    if error.category != ErrorCategory::RateLimit {
        return None;
    }
    let wait = parse_retry_after_detail(error.detail_of("retry_after")?)?;
    let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    Some(secs)
}

/// Renders `envelope` as a JSON response with `status` (or the envelope's own).
pub(crate) fn envelope_response(envelope: &ToolResponse, status: Option<u16>) -> Response {
    let status = status.unwrap_or_else(|| envelope.http_status());
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = (status, envelope.to_json_bytes()).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_limit_with_retry_after_detail_sets_header_rounded_up() {
        let failure = ToolFailure::from(
            ToolError::rate_limit("RATE_LIMITED", "slow down").detail("retry_after", "1500ms"),
        );
        let response = failure.into_response();
        assert_eq!(response.status(), 429);
        assert_eq!(response.headers()[header::RETRY_AFTER], "2");
        assert_eq!(response.headers()[header::CONTENT_TYPE], "application/json");
    }

    #[test]
    fn other_categories_never_get_retry_after() {
        let failure =
            ToolFailure::from(ToolError::service_error("DOWN", "down").detail("retry_after", "5"));
        let response = failure.into_response();
        assert_eq!(response.status(), 503);
        assert!(response.headers().get(header::RETRY_AFTER).is_none());
    }

    #[test]
    fn status_override_keeps_category_and_ignores_non_errors() {
        let f = ToolFailure::from(ToolError::service_error("UP", "upstream")).with_status(502);
        assert_eq!(f.http_status(), 502);
        let f = f.with_status(200);
        assert_eq!(f.http_status(), 503);
    }

    #[test]
    fn success_is_200() {
        assert_eq!(
            Success(serde_json::json!({"a": 1}))
                .into_response()
                .status(),
            200
        );
    }
}
