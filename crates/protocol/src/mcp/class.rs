//! The three failure classes of MCP's proposed tool-failure metadata
//! (SEP #3313), and how they meet recourse's eight categories.
//!
//! # Why a class is coarser than a category
//!
//! The proposal asks one question of a failure — whose problem is it? — and
//! answers it in three words: the call could not work as made
//! (`capability`), the service failed it (`reliability`), or a rule refused
//! it (`governance`). What to do next is said apart from the class, by
//! `retryable` and `retryNotBefore`. recourse's categories say more, so
//! writing a class forgets something and reading one back assumes the most
//! common category of that class; recourse's own servers carry the envelope
//! in `structuredContent` beside the metadata, and a reader prefers it.

use crate::category::ErrorCategory;

/// A failure class of the proposed MCP tool-failure metadata.
///
/// ```
/// use recourse_protocol::ErrorCategory;
/// use recourse_protocol::mcp::FailureClass;
///
/// assert_eq!(FailureClass::of(&ErrorCategory::RateLimit), FailureClass::Reliability);
/// assert_eq!(FailureClass::of(&ErrorCategory::RateLimit).as_str(), "reliability");
/// assert_eq!(FailureClass::from_wire("Governance"), Some(FailureClass::Governance));
/// assert_eq!(FailureClass::Capability.category(), ErrorCategory::InputError);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FailureClass {
    /// The call cannot work as made: its input, or a resource it names.
    Capability,
    /// The service failed the call, or its outcome is not known.
    Reliability,
    /// A rule refused the call: credentials, access, policy.
    Governance,
}

impl FailureClass {
    /// The class of a category:
    ///
    /// | category | class |
    /// |---|---|
    /// | `INPUT_ERROR`, `NOT_FOUND` | `capability` |
    /// | `RATE_LIMIT`, `SERVICE_ERROR`, `UNKNOWN_OUTCOME`, any other | `reliability` |
    /// | `AUTH_ERROR`, `PERMISSION_DENIED`, `POLICY_REJECTION` | `governance` |
    ///
    /// A category this version does not know is a `reliability` failure, as
    /// its HTTP status (500) says.
    pub fn of(category: &ErrorCategory) -> Self {
        match category {
            ErrorCategory::InputError | ErrorCategory::NotFound => Self::Capability,
            ErrorCategory::AuthError
            | ErrorCategory::PermissionDenied
            | ErrorCategory::PolicyRejection => Self::Governance,
            ErrorCategory::RateLimit
            | ErrorCategory::ServiceError
            | ErrorCategory::UnknownOutcome
            | ErrorCategory::Other(_) => Self::Reliability,
        }
    }

    /// Reads a class name, in any case; `None` for anything else.
    pub fn from_wire(name: &str) -> Option<Self> {
        [Self::Capability, Self::Reliability, Self::Governance]
            .into_iter()
            .find(|class| class.as_str().eq_ignore_ascii_case(name))
    }

    /// The wire name: `capability`, `reliability` or `governance`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Capability => "capability",
            Self::Reliability => "reliability",
            Self::Governance => "governance",
        }
    }

    /// The category a reader assumes for a failure that names only its
    /// class: `INPUT_ERROR`, `SERVICE_ERROR` or `PERMISSION_DENIED`. None
    /// of them is resent unless `retryable` or the category allows it, and
    /// none of them claims a write was made.
    pub fn category(self) -> ErrorCategory {
        match self {
            Self::Capability => ErrorCategory::InputError,
            Self::Reliability => ErrorCategory::ServiceError,
            Self::Governance => ErrorCategory::PermissionDenied,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_category_has_the_class_the_table_gives() {
        let classes: Vec<_> = ErrorCategory::KNOWN
            .iter()
            .map(|c| (c.as_str(), FailureClass::of(c).as_str()))
            .collect();
        assert_eq!(
            classes,
            [
                ("INPUT_ERROR", "capability"),
                ("NOT_FOUND", "capability"),
                ("AUTH_ERROR", "governance"),
                ("PERMISSION_DENIED", "governance"),
                ("RATE_LIMIT", "reliability"),
                ("SERVICE_ERROR", "reliability"),
                ("POLICY_REJECTION", "governance"),
                ("UNKNOWN_OUTCOME", "reliability"),
            ]
        );
        let newer = ErrorCategory::from_wire("QUOTA");
        assert_eq!(FailureClass::of(&newer), FailureClass::Reliability);
    }

    #[test]
    fn a_class_reads_back_in_any_case_and_assumes_a_category_of_its_own() {
        for class in [
            FailureClass::Capability,
            FailureClass::Reliability,
            FailureClass::Governance,
        ] {
            assert_eq!(FailureClass::from_wire(class.as_str()), Some(class));
            let upper = class.as_str().to_ascii_uppercase();
            assert_eq!(FailureClass::from_wire(&upper), Some(class));
            assert_eq!(FailureClass::of(&class.category()), class);
        }
        assert_eq!(FailureClass::from_wire("RATE_LIMIT"), None);
        assert_eq!(FailureClass::from_wire(""), None);
    }
}
