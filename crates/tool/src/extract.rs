//! `ToolJson`: a JSON body extractor whose every rejection is an envelope.
//!
//! axum's own `Json` answers a bad body with plain text, which an agent can
//! only route by status; [`ToolJson`] answers every bad body with an envelope.

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};
use recourse_protocol::{ToolError, truncate_chars};
use serde::de::DeserializeOwned;

use std::time::Duration;

use crate::result::ToolFailure;
use crate::serve::{BodyLimitError, overloaded, overloaded_response, timed_out};

/// Extracts a JSON request body as `T`, rejecting with an envelope.
///
/// axum's own `Json` answers a bad body with plain text, which an agent can
/// only route by status. A tool must say *what* was wrong and whether fixing
/// the payload can help, so each way a body can fail has its own code:
///
/// | condition | status | code | retryable |
/// |---|---|---|---|
/// | not JSON at all (syntax, truncated, empty) | 400 | `INVALID_REQUEST` | false |
/// | a required field is missing | 400 | `MISSING_REQUIRED_FIELD` (`details.field`) | true |
/// | a field has the wrong type or an unknown value | 400 | `INVALID_FORMAT` (`details.field`) | true |
/// | `Content-Type` is not JSON | 415 | `UNSUPPORTED_MEDIA_TYPE` | false |
/// | body over the limit | 413 | `PAYLOAD_TOO_LARGE` | false |
/// | body not all there within the body timeout of [`serve`](crate::serve::serve) | 408 | `REQUEST_TIMEOUT` (`SERVICE_ERROR`) | true |
/// | server holding its limit of body bytes ([`serve`](crate::serve::serve)) | 503 | `OVERLOADED` (`SERVICE_ERROR`), `Retry-After` | true |
///
/// The first five are `INPUT_ERROR`s. A missing or mistyped field is opted into
/// `retryable: true` because the tool knows exactly which field to fix; a body
/// that is not JSON says nothing a corrector could work from.
///
/// The body limit is axum's [`DefaultBodyLimit`](axum::extract::DefaultBodyLimit)
/// (2 MiB unless [`ToolServer::with_body_limit`](crate::server::ToolServer::with_body_limit)
/// changes it).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ToolJson<T>(pub T);

/// Why a [`ToolJson`] body was rejected. Each variant becomes an
/// `INPUT_ERROR` envelope (see [`ToolJson`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ToolJsonRejection {
    /// `Content-Type` is missing or not `application/json` (or `+json`).
    UnsupportedContentType,
    /// The body exceeds the configured limit.
    PayloadTooLarge,
    /// The body could not be read from the connection.
    BodyUnreadable,
    /// The whole body did not arrive within the server's body timeout.
    BodyTimedOut {
        /// The body timeout.
        timeout: Duration,
    },
    /// The server already holds as many request body bytes as it allows.
    Overloaded,
    /// The body is not valid JSON.
    MalformedJson {
        /// What the parser said, without the body's contents.
        reason: String,
    },
    /// A required field is absent.
    MissingField {
        /// The dotted path of the missing field, e.g. `address.city`.
        field: String,
    },
    /// A field holds a value of the wrong type or outside its allowed set.
    InvalidField {
        /// The dotted path of the field (empty for the body itself).
        field: String,
        /// What was expected, as the deserializer phrased it.
        reason: String,
    },
}

impl ToolJsonRejection {
    /// The envelope error this rejection is reported as.
    pub fn to_tool_error(&self) -> ToolError {
        match self {
            Self::UnsupportedContentType => ToolError::input_error(
                "UNSUPPORTED_MEDIA_TYPE",
                "Expected a request with `Content-Type: application/json`",
            )
            .detail("expected", "application/json"),
            Self::PayloadTooLarge => ToolError::input_error(
                "PAYLOAD_TOO_LARGE",
                "The request body is larger than this tool accepts",
            ),
            Self::BodyUnreadable => {
                ToolError::input_error("INVALID_REQUEST", "The request body could not be read")
            }
            Self::BodyTimedOut { timeout } => timed_out("body", *timeout),
            Self::Overloaded => overloaded("request body memory"),
            Self::MalformedJson { reason } => ToolError::input_error(
                "INVALID_REQUEST",
                format!("The request body is not valid JSON: {reason}"),
            ),
            Self::MissingField { field } => ToolError::input_error(
                "MISSING_REQUIRED_FIELD",
                format!("Missing required field `{field}`"),
            )
            .retryable(true)
            .detail("field", field.as_str()),
            Self::InvalidField { field, reason } => invalid_field_error(field, reason),
        }
    }

    /// The HTTP status this rejection is answered with (400, 408, 413, 415 or 503).
    pub fn http_status(&self) -> u16 {
        match self {
            Self::UnsupportedContentType => 415,
            Self::PayloadTooLarge => 413,
            Self::BodyTimedOut { .. } => 408,
            Self::Overloaded => 503,
            _ => 400,
        }
    }
}

fn invalid_field_error(field: &str, reason: &str) -> ToolError {
    let message = if field.is_empty() {
        format!("The request body has the wrong shape: {reason}")
    } else {
        format!("Field `{field}` has an invalid value: {reason}")
    };
    let mut error = ToolError::input_error("INVALID_FORMAT", message)
        .retryable(true)
        .detail("expected", reason);
    if !field.is_empty() {
        error = error.detail("field", field);
    }
    match allowed_variants(reason) {
        Some(allowed) => error.detail("allowed_values", allowed),
        None => error,
    }
}

/// `metric,imperial` from serde's "unknown variant `x`, expected `metric` or `imperial`".
fn allowed_variants(reason: &str) -> Option<String> {
    let (_, expected) = reason.split_once("expected ")?;
    if !reason.starts_with("unknown variant") {
        return None;
    }
    let names: Vec<&str> = expected.split('`').skip(1).step_by(2).collect();
    (!names.is_empty()).then(|| names.join(","))
}

impl IntoResponse for ToolJsonRejection {
    fn into_response(self) -> Response {
        if self == Self::Overloaded {
            return overloaded_response("request body memory");
        }
        ToolFailure::from(self.to_tool_error())
            .with_status(self.http_status())
            .into_response()
    }
}

impl<T, S> FromRequest<S> for ToolJson<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ToolJsonRejection;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let bytes = json_body(req, state).await?;
        parse_json(&bytes).map(ToolJson)
    }
}

/// Extracts a JSON request body as it came, checked to be one JSON value
/// (its syntax only), with the same rejections as [`ToolJson`] — for a
/// handler that reads the body more than one way, or not at all on some
/// paths, and should not build a `serde_json::Value` to do it.
///
/// Parse it with [`parse_json`], which rejects missing and mistyped fields
/// as [`ToolJson`] does. A handler that parses the body once anyway takes
/// [`ToolJsonBody`] instead, and spares this reading of it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolJsonBytes(pub Bytes);

impl<S> FromRequest<S> for ToolJsonBytes
where
    S: Send + Sync,
{
    type Rejection = ToolJsonRejection;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let ToolJsonBody(bytes) = ToolJsonBody::from_request(req, state).await?;
        parse_json::<serde::de::IgnoredAny>(&bytes)?;
        Ok(Self(bytes))
    }
}

/// Extracts a JSON request body as it came, not yet read: for a handler that
/// parses it once, with [`parse_json`], which rejects a body that is not
/// JSON as [`ToolJsonBytes`] would — without `ToolJsonBytes`'s reading of a
/// good body before the handler reads it again.
///
/// The content type and the server's limits are checked as for
/// [`ToolJson`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolJsonBody(pub Bytes);

impl<S> FromRequest<S> for ToolJsonBody
where
    S: Send + Sync,
{
    type Rejection = ToolJsonRejection;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        json_body(req, state).await.map(Self)
    }
}

/// The body of a request that says it is JSON, read within the server's limits.
async fn json_body<S: Send + Sync>(req: Request, state: &S) -> Result<Bytes, ToolJsonRejection> {
    if !is_json_content_type(req.headers()) {
        return Err(ToolJsonRejection::UnsupportedContentType);
    }
    Bytes::from_request(req, state).await.map_err(|rejection| {
        if rejection.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE {
            return ToolJsonRejection::PayloadTooLarge;
        }
        match body_limit_error(&rejection) {
            Some(BodyLimitError::TimedOut(timeout)) => ToolJsonRejection::BodyTimedOut { timeout },
            Some(BodyLimitError::OverBudget) => ToolJsonRejection::Overloaded,
            None => ToolJsonRejection::BodyUnreadable,
        }
    })
}

/// The server limit that cut a body short, if one did: found by type along
/// the rejection's chain of sources.
fn body_limit_error(rejection: &(dyn std::error::Error + 'static)) -> Option<BodyLimitError> {
    let mut source = rejection.source();
    while let Some(error) = source {
        if let Some(limit) = error.downcast_ref::<BodyLimitError>() {
            return Some(*limit);
        }
        source = error.source();
    }
    None
}

/// Parses `bytes` as `T`, classifying failures as a [`ToolJsonRejection`].
///
/// ```
/// use recourse_tool::{parse_json, ToolJsonRejection};
///
/// #[derive(serde::Deserialize, Debug)]
/// struct Input { amount: f64 }
///
/// let missing = parse_json::<Input>(b"{}").unwrap_err();
/// assert_eq!(missing, ToolJsonRejection::MissingField { field: "amount".into() });
/// ```
///
/// # Errors
///
/// Any way the body fails to be a `T`.
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ToolJsonRejection> {
    // Most bodies are fine: read them without tracking the path, and read a
    // failing one again with it, for the field its rejection names. A body
    // that is not JSON at all is malformed, whatever a `T` made of its
    // beginning: `[1, 2` is cut short, not a struct whose first field has
    // the wrong type. (A `T` read whole is JSON whole: serde_json reads every
    // byte of it, so a good body is read once.)
    if let Ok(value) = serde_json::from_slice(bytes) {
        return Ok(value);
    }
    traced::<serde::de::IgnoredAny>(bytes)?;
    traced(bytes)
}

/// `bytes` read as `T` with the path to a failure tracked, for its rejection.
fn traced<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ToolJsonRejection> {
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let value = serde_path_to_error::deserialize(&mut deserializer).map_err(classify)?;
    deserializer
        .end()
        .map_err(|e| ToolJsonRejection::MalformedJson {
            reason: without_position(&e),
        })?;
    Ok(value)
}

/// Deserializer messages echo the offending value; keep them short.
const MAX_REASON_CHARS: usize = 200;

fn classify(error: serde_path_to_error::Error<serde_json::Error>) -> ToolJsonRejection {
    let path = error.path().to_string();
    let parent = if path == "." { String::new() } else { path };
    let inner = error.into_inner();
    let reason = truncate_chars(&without_position(&inner), MAX_REASON_CHARS);
    if !inner.is_data() {
        return ToolJsonRejection::MalformedJson { reason };
    }
    match missing_field_name(&reason) {
        Some(name) if parent.is_empty() => ToolJsonRejection::MissingField { field: name },
        Some(name) => ToolJsonRejection::MissingField {
            field: format!("{parent}.{name}"),
        },
        None => ToolJsonRejection::InvalidField {
            field: parent,
            reason,
        },
    }
}

fn missing_field_name(reason: &str) -> Option<String> {
    let rest = reason.strip_prefix("missing field `")?;
    Some(rest.split('`').next()?.to_owned())
}

/// serde_json's message without " at line L column C".
fn without_position(error: &serde_json::Error) -> String {
    let text = error.to_string();
    match text.rfind(" at line ") {
        Some(i) if error.line() > 0 => text[..i].to_owned(),
        _ => text,
    }
}

fn is_json_content_type(headers: &HeaderMap) -> bool {
    let Some(value) = headers.get(header::CONTENT_TYPE) else {
        return false;
    };
    let Ok(value) = value.to_str() else {
        return false;
    };
    // Compared without case and without a lowered copy: this runs per request.
    let essence = value.split(';').next().unwrap_or("").trim().as_bytes();
    let (prefix, suffix) = (b"application/".as_slice(), b"+json".as_slice());
    essence.eq_ignore_ascii_case(b"application/json")
        || (essence.len() >= prefix.len() + suffix.len()
            && essence[..prefix.len()].eq_ignore_ascii_case(prefix)
            && essence[essence.len() - suffix.len()..].eq_ignore_ascii_case(suffix))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Inner {
        city: String,
    }

    #[derive(Debug, Deserialize)]
    #[serde(rename_all = "lowercase")]
    #[allow(dead_code)]
    enum Units {
        Metric,
        Imperial,
    }

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Input {
        amount: f64,
        address: Option<Inner>,
        units: Option<Units>,
    }

    #[test]
    fn syntax_errors_are_malformed() {
        for body in [&b"{"[..], b"", b"{\"amount\": }", br#"{"amount": 1} x"#] {
            assert!(matches!(
                parse_json::<Input>(body),
                Err(ToolJsonRejection::MalformedJson { .. })
            ));
        }
    }

    /// Text that is not JSON is malformed even where the part a `T` reads
    /// first is already the wrong type for it, or a field it lacks: the
    /// syntax is judged before the fields.
    #[test]
    fn a_body_that_is_not_json_is_malformed_before_its_fields_are_read() {
        for body in [
            &b"[1, 2"[..],
            br#"{"amount": "ten", "#,
            br#"{"address": {}"#,
        ] {
            assert!(
                matches!(
                    parse_json::<Input>(body),
                    Err(ToolJsonRejection::MalformedJson { .. })
                ),
                "{}",
                String::from_utf8_lossy(body)
            );
        }
    }

    #[test]
    fn missing_nested_field_names_its_path() {
        let err = parse_json::<Input>(br#"{"amount": 1, "address": {}}"#).unwrap_err();
        assert_eq!(
            err,
            ToolJsonRejection::MissingField {
                field: "address.city".into()
            }
        );
        assert_eq!(
            err.to_tool_error().detail_str("field"),
            Some("address.city")
        );
        assert!(err.to_tool_error().retryable);
    }

    #[test]
    fn wrong_type_names_the_field() {
        let err = parse_json::<Input>(br#"{"amount": "ten"}"#).unwrap_err();
        let tool_error = err.to_tool_error();
        assert_eq!(tool_error.code, "INVALID_FORMAT");
        assert_eq!(tool_error.detail_str("field"), Some("amount"));
        assert!(!tool_error.message.contains("line"));
    }

    #[test]
    fn unknown_variant_lists_allowed_values() {
        let err = parse_json::<Input>(br#"{"amount": 1, "units": "kelvin"}"#).unwrap_err();
        let tool_error = err.to_tool_error();
        assert_eq!(tool_error.detail_str("field"), Some("units"));
        assert_eq!(
            tool_error.detail_str("allowed_values"),
            Some("metric,imperial")
        );
    }

    #[test]
    fn content_types() {
        let mut h = HeaderMap::new();
        assert!(!is_json_content_type(&h));
        h.insert(
            header::CONTENT_TYPE,
            "application/json; charset=utf-8".parse().unwrap(),
        );
        assert!(is_json_content_type(&h));
        h.insert(
            header::CONTENT_TYPE,
            "application/problem+json".parse().unwrap(),
        );
        assert!(is_json_content_type(&h));
        h.insert(header::CONTENT_TYPE, "text/plain".parse().unwrap());
        assert!(!is_json_content_type(&h));
        for (value, json) in [
            (" Application/JSON ;q=1", true),
            ("APPLICATION/Problem+JSON", true),
            ("application/+json", true),
            ("application/jsonx", false),
            ("application+json", false),
            ("text/x+json", false),
            ("", false),
        ] {
            h.insert(header::CONTENT_TYPE, value.parse().unwrap());
            assert_eq!(is_json_content_type(&h), json, "{value:?}");
        }
    }
}
