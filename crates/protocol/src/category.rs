//! The eight error categories of the wire protocol, and their HTTP statuses.
//!
//! A category says *what kind* of failure happened, which in turn decides what
//! an agent may safely do next. Unknown category strings are preserved rather
//! than rejected: a newer tool must not break an older agent.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// What kind of failure a tool reported.
///
/// Serialises as the wire string (`"INPUT_ERROR"`, …). A string that is not one
/// of the eight known categories is kept verbatim in [`ErrorCategory::Other`].
///
/// ```
/// use recourse_protocol::ErrorCategory;
///
/// assert_eq!(ErrorCategory::from_wire("RATE_LIMIT"), ErrorCategory::RateLimit);
/// assert_eq!(ErrorCategory::RateLimit.http_status(), 429);
/// assert_eq!(ErrorCategory::from_wire("QUOTA").as_str(), "QUOTA");
/// assert_eq!(ErrorCategory::from_wire("QUOTA").http_status(), 500);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ErrorCategory {
    /// Malformed or invalid input (400). Correctable when eligible.
    InputError,
    /// The resource is absent for these parameters (404). Correctable when eligible.
    NotFound,
    /// Credentials missing or invalid (401). Needs configuration, not a retry.
    AuthError,
    /// The principal lacks access (403). Never switch identity.
    PermissionDenied,
    /// Quota exceeded (429). Wait as asked, then resend the same payload.
    RateLimit,
    /// The backend is down or failing transiently (503). Back off, resend the same payload.
    ServiceError,
    /// A business rule refuses the request (422). Explain; do not retry.
    PolicyRejection,
    /// A write may or may not have committed (500). Reconcile; never resend blindly.
    UnknownOutcome,
    /// A category string this version does not know, preserved as sent.
    Other(String),
}

impl ErrorCategory {
    /// The eight categories this version knows, in wire-table order.
    pub const KNOWN: [ErrorCategory; 8] = [
        ErrorCategory::InputError,
        ErrorCategory::NotFound,
        ErrorCategory::AuthError,
        ErrorCategory::PermissionDenied,
        ErrorCategory::RateLimit,
        ErrorCategory::ServiceError,
        ErrorCategory::PolicyRejection,
        ErrorCategory::UnknownOutcome,
    ];

    /// Reads a wire string. Matching is exact (case-sensitive); anything else is
    /// preserved as [`ErrorCategory::Other`].
    pub fn from_wire(s: &str) -> Self {
        match s {
            "INPUT_ERROR" => Self::InputError,
            "NOT_FOUND" => Self::NotFound,
            "AUTH_ERROR" => Self::AuthError,
            "PERMISSION_DENIED" => Self::PermissionDenied,
            "RATE_LIMIT" => Self::RateLimit,
            "SERVICE_ERROR" => Self::ServiceError,
            "POLICY_REJECTION" => Self::PolicyRejection,
            "UNKNOWN_OUTCOME" => Self::UnknownOutcome,
            other => Self::Other(other.to_owned()),
        }
    }

    /// The wire string.
    pub fn as_str(&self) -> &str {
        match self {
            Self::InputError => "INPUT_ERROR",
            Self::NotFound => "NOT_FOUND",
            Self::AuthError => "AUTH_ERROR",
            Self::PermissionDenied => "PERMISSION_DENIED",
            Self::RateLimit => "RATE_LIMIT",
            Self::ServiceError => "SERVICE_ERROR",
            Self::PolicyRejection => "POLICY_REJECTION",
            Self::UnknownOutcome => "UNKNOWN_OUTCOME",
            Self::Other(s) => s,
        }
    }

    /// The HTTP status a tool sends with this category; 500 for unknown categories.
    pub fn http_status(&self) -> u16 {
        http_status_for_category(self)
    }

    /// The category an HTTP status implies when a body names none: the inverse
    /// of [`http_status_for_category`] for the statuses of the table, plus the
    /// obvious neighbours (other 4xx are input errors, 408 and 5xx are
    /// transient service errors). `None` for statuses that are not failures.
    ///
    /// A bare 422 is an input error, not a policy rejection: without a body
    /// that says so, it is usually a validation failure (protocol §3 corrects
    /// "other 4xx (…, 422, …)"), and only a tool naming `POLICY_REJECTION`
    /// may turn it into an honest stop.
    pub fn from_http_status(status: u16) -> Option<Self> {
        Some(match status {
            401 => Self::AuthError,
            403 => Self::PermissionDenied,
            404 | 410 => Self::NotFound,
            429 => Self::RateLimit,
            408 => Self::ServiceError,
            400..=499 => Self::InputError,
            500..=599 => Self::ServiceError,
            _ => return None,
        })
    }

    /// Whether this is one of the eight known categories.
    pub fn is_known(&self) -> bool {
        !matches!(self, Self::Other(_))
    }
}

/// The HTTP status a tool sends for `category` (protocol §1); 500 for an unknown category.
pub fn http_status_for_category(category: &ErrorCategory) -> u16 {
    match category {
        ErrorCategory::InputError => 400,
        ErrorCategory::NotFound => 404,
        ErrorCategory::AuthError => 401,
        ErrorCategory::PermissionDenied => 403,
        ErrorCategory::RateLimit => 429,
        ErrorCategory::ServiceError => 503,
        ErrorCategory::PolicyRejection => 422,
        ErrorCategory::UnknownOutcome | ErrorCategory::Other(_) => 500,
    }
}

impl fmt::Display for ErrorCategory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ErrorCategory {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// A string: one of the eight known categories, or any other, kept as sent.
#[cfg(feature = "schema")]
impl schemars::JsonSchema for ErrorCategory {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ErrorCategory".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let known: Vec<&str> = Self::KNOWN.iter().map(Self::as_str).collect();
        schemars::json_schema!({
            "type": "string",
            "description": format!(
                "What kind of failure a tool reported: one of {}; a newer tool's category is kept as sent.",
                known.join(", ")
            ),
            "examples": known,
        })
    }
}

impl<'de> Deserialize<'de> for ErrorCategory {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = String::deserialize(deserializer)?;
        Ok(Self::from_wire(&s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_known_category_round_trips_its_wire_string() {
        for c in ErrorCategory::KNOWN {
            assert_eq!(ErrorCategory::from_wire(c.as_str()), c);
            assert!(c.is_known());
        }
    }

    #[test]
    fn statuses_follow_the_wire_table() {
        let table = [
            ("INPUT_ERROR", 400),
            ("NOT_FOUND", 404),
            ("AUTH_ERROR", 401),
            ("PERMISSION_DENIED", 403),
            ("RATE_LIMIT", 429),
            ("SERVICE_ERROR", 503),
            ("POLICY_REJECTION", 422),
            ("UNKNOWN_OUTCOME", 500),
        ];
        for (wire, status) in table {
            assert_eq!(
                http_status_for_category(&ErrorCategory::from_wire(wire)),
                status
            );
        }
    }

    #[test]
    fn unknown_category_is_preserved_and_maps_to_500() {
        let c = ErrorCategory::from_wire("TEAPOT");
        assert_eq!(c, ErrorCategory::Other("TEAPOT".into()));
        assert_eq!(c.to_string(), "TEAPOT");
        assert_eq!(c.http_status(), 500);
        assert_eq!(serde_json::to_string(&c).unwrap(), "\"TEAPOT\"");
    }

    #[test]
    fn category_matching_is_case_sensitive() {
        assert_eq!(
            ErrorCategory::from_wire("rate_limit"),
            ErrorCategory::Other("rate_limit".into())
        );
    }

    #[test]
    fn statuses_imply_categories_when_no_body_names_one() {
        assert_eq!(
            ErrorCategory::from_http_status(429),
            Some(ErrorCategory::RateLimit)
        );
        assert_eq!(
            ErrorCategory::from_http_status(408),
            Some(ErrorCategory::ServiceError)
        );
        assert_eq!(
            ErrorCategory::from_http_status(409),
            Some(ErrorCategory::InputError)
        );
        assert_eq!(
            ErrorCategory::from_http_status(502),
            Some(ErrorCategory::ServiceError)
        );
        assert_eq!(ErrorCategory::from_http_status(200), None);
    }
}
