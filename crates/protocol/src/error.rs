//! `ToolError`: the structured failure a tool reports.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use crate::category::ErrorCategory;

/// A structured tool failure: `{code, message, category, retryable, details?}`.
///
/// Build one with a category constructor and chain the optional parts:
///
/// ```
/// use recourse_protocol::{ErrorCategory, ToolError};
///
/// let err = ToolError::not_found("LOCATION_NOT_FOUND", "No place called 'Flower Mound, TX'")
///     .retryable(true)
///     .detail("suggestion", "Flower Mound, Texas, US");
/// assert_eq!(err.category, ErrorCategory::NotFound);
/// assert_eq!(err.to_string(), "[LOCATION_NOT_FOUND] No place called 'Flower Mound, TX'");
/// assert_eq!(err.detail_str("suggestion"), Some("Flower Mound, Texas, US"));
/// ```
///
/// Writers always emit `retryable`; readers accept any JSON in `details` and
/// keep it as sent. An empty `details` is omitted on the wire and reads back
/// as `Value::Null`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(
    feature = "schema",
    schemars(
        description = "A structured failure: `{code, message, category, retryable, details?}`. \
        Writers always emit `retryable`; `details` holds structured hints and is omitted when empty."
    )
)]
pub struct ToolError {
    /// A stable UPPER_SNAKE code naming the condition, e.g. `SYMBOL_NOT_FOUND`.
    pub code: String,
    /// A human-readable explanation. Model-visible: keep secrets out (see [`crate::redact::redact`]).
    pub message: String,
    /// What kind of failure this is.
    pub category: ErrorCategory,
    /// Whether the tool permits another attempt. Writers always emit it.
    #[serde(default)]
    pub retryable: bool,
    /// Structured hints (`field`, `suggestion`, `allowed_values`, `retry_after`, …).
    #[serde(
        default,
        skip_serializing_if = "details_are_empty",
        deserialize_with = "deserialize_details"
    )]
    pub details: Value,
}

fn details_are_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Object(m) => m.is_empty(),
        _ => false,
    }
}

fn deserialize_details<'de, D: Deserializer<'de>>(d: D) -> Result<Value, D::Error> {
    let v = Value::deserialize(d)?;
    Ok(if details_are_empty(&v) {
        Value::Null
    } else {
        v
    })
}

macro_rules! category_constructors {
    ($($(#[$doc:meta])* $name:ident => $cat:ident),* $(,)?) => {
        $(
            $(#[$doc])*
            pub fn $name(code: impl Into<String>, message: impl Into<String>) -> Self {
                Self::new(ErrorCategory::$cat, code, message)
            }
        )*
    };
}

impl ToolError {
    /// A failure of `category`, not retryable, without details.
    pub fn new(
        category: ErrorCategory,
        code: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Self {
            code: code.into(),
            message: message.into(),
            category,
            retryable: false,
            details: Value::Null,
        }
    }

    category_constructors! {
        /// An `INPUT_ERROR` (400).
        input_error => InputError,
        /// A `NOT_FOUND` (404).
        not_found => NotFound,
        /// An `AUTH_ERROR` (401).
        auth_error => AuthError,
        /// A `PERMISSION_DENIED` (403).
        permission_denied => PermissionDenied,
        /// A `RATE_LIMIT` (429).
        rate_limit => RateLimit,
        /// A `SERVICE_ERROR` (503).
        service_error => ServiceError,
        /// A `POLICY_REJECTION` (422).
        policy_rejection => PolicyRejection,
        /// An `UNKNOWN_OUTCOME` (500).
        unknown_outcome => UnknownOutcome,
    }

    /// Sets whether the tool permits another attempt.
    #[must_use]
    pub fn retryable(mut self, retryable: bool) -> Self {
        self.retryable = retryable;
        self
    }

    /// Adds a string detail. Replaces non-object details with an object.
    #[must_use]
    pub fn detail(self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.detail_value(key, Value::String(value.into()))
    }

    /// Adds a detail with any JSON value. Replaces non-object details with an object.
    #[must_use]
    pub fn detail_value(mut self, key: impl Into<String>, value: Value) -> Self {
        if !self.details.is_object() {
            self.details = Value::Object(Map::new());
        }
        if let Value::Object(map) = &mut self.details {
            map.insert(key.into(), value);
        }
        self
    }

    /// The detail `key`, if `details` is an object holding it.
    pub fn detail_of(&self, key: &str) -> Option<&Value> {
        self.details.as_object()?.get(key)
    }

    /// The detail `key` as a string, if it is one.
    pub fn detail_str(&self, key: &str) -> Option<&str> {
        self.detail_of(key)?.as_str()
    }

    /// The HTTP status this error's category maps to.
    pub fn http_status(&self) -> u16 {
        self.category.http_status()
    }

    /// A copy whose message and details have passed the [redactor](crate::redact::redact):
    /// what may be shown to a model or written to a user-facing report.
    pub fn redacted(&self) -> Self {
        Self {
            code: self.code.clone(),
            message: crate::redact::redact(&self.message),
            category: self.category.clone(),
            retryable: self.retryable,
            details: crate::redact::redact_value(&self.details),
        }
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}] {}", self.code, self.message)
    }
}

impl std::error::Error for ToolError {}

/// Renders a tool error as model-visible text: redacted, and cut to at most
/// `max_chars` characters (on a character boundary, marked with `…`).
///
/// ```
/// use recourse_protocol::{model_visible_error, ToolError};
///
/// let e = ToolError::auth_error("BAD_KEY", "rejected key sk-abcdefghijklmnopqrstuv");
/// let text = model_visible_error(&e, 200);
/// assert!(text.starts_with("[BAD_KEY] rejected key [REDACTED]"));
/// assert!(text.contains("AUTH_ERROR"));
/// ```
pub fn model_visible_error(error: &ToolError, max_chars: usize) -> String {
    let safe = error.redacted();
    let mut text = format!(
        "{safe}\ncategory: {}\nretryable: {}",
        safe.category, safe.retryable
    );
    if !safe.details.is_null() {
        text.push_str("\ndetails: ");
        text.push_str(&safe.details.to_string());
    }
    crate::redact::truncate_chars(&text, max_chars)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn display_is_code_in_brackets_then_message() {
        let e = ToolError::rate_limit("TOO_MANY", "slow down");
        assert_eq!(e.to_string(), "[TOO_MANY] slow down");
    }

    #[test]
    fn writer_always_emits_retryable_and_omits_empty_details() {
        let e = ToolError::service_error("DOWN", "backend down");
        let v = serde_json::to_value(&e).unwrap();
        assert_eq!(
            v,
            json!({"code": "DOWN", "message": "backend down", "category": "SERVICE_ERROR", "retryable": false})
        );
    }

    #[test]
    fn reader_preserves_non_string_details() {
        let e: ToolError = serde_json::from_value(json!({
            "code": "X", "message": "m", "category": "INPUT_ERROR", "retryable": true,
            "details": {"n": 3, "list": [1, 2]}
        }))
        .unwrap();
        assert_eq!(e.detail_of("n"), Some(&json!(3)));
        assert_eq!(e.detail_of("list"), Some(&json!([1, 2])));
    }

    #[test]
    fn detail_on_non_object_details_starts_a_fresh_object() {
        let mut e = ToolError::input_error("X", "m");
        e.details = json!("free text");
        let e = e.detail("field", "amount");
        assert_eq!(e.details, json!({"field": "amount"}));
    }

    #[test]
    fn redacted_copy_hides_secrets_in_message_and_details() {
        let e = ToolError::auth_error("BAD_KEY", "GET https://api.x.io/v1?appid=abc123 failed")
            .detail("auth", "Bearer abcdefghijklmnop");
        let r = e.redacted();
        assert!(!r.message.contains("abc123"));
        assert!(!r.detail_str("auth").unwrap().contains("abcdefghijklmnop"));
        assert_eq!(r.code, "BAD_KEY");
    }
}
