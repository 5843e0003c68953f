//! How a run's first failure was read — what `accept.category` expects —
//! and the categories a scenario is filed under.
//!
//! Both are types, read from the record and the scenario file, and compared
//! as types; their names appear only where a report prints them.

use std::fmt;

use recourse::record::AttemptRecord;
use recourse_protocol::ErrorCategory;
use serde::Deserialize;
use serde::de::{Deserializer, Error as _};
use strum::{EnumIter, IntoStaticStr};

/// How the first failure of a run was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FirstFailure {
    /// The tool named a category (one this version may not know).
    Category(ErrorCategory),
    /// The transport failed: the tool's answer never came.
    Transport,
    /// The tool answered with this status and named no category.
    Status(u16),
}

impl FirstFailure {
    /// How `attempt` was read: its category, else a transport failure, else
    /// its bare status (`None` with neither, which a recorded attempt does not have).
    pub(crate) fn of(attempt: &AttemptRecord) -> Option<Self> {
        match (&attempt.category, &attempt.transport_error) {
            (Some(category), _) => Some(Self::Category(category.clone())),
            (None, Some(_)) => Some(Self::Transport),
            (None, None) => attempt.status.map(Self::Status),
        }
    }
}

/// `INPUT_ERROR` and the other category names, `TRANSPORT`, or `HTTP_<status>`.
impl fmt::Display for FirstFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Category(category) => f.write_str(category.as_str()),
            Self::Transport => f.write_str(TRANSPORT),
            Self::Status(status) => write!(f, "{HTTP_PREFIX}{status}"),
        }
    }
}

const TRANSPORT: &str = "TRANSPORT";
const HTTP_PREFIX: &str = "HTTP_";

/// A known category's name, `TRANSPORT` or `HTTP_<status>`; anything else
/// is an error that says what is allowed.
impl<'de> Deserialize<'de> for FirstFailure {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = std::borrow::Cow::<'de, str>::deserialize(deserializer)?;
        if name == TRANSPORT {
            return Ok(Self::Transport);
        }
        if let Some(status) = name.strip_prefix(HTTP_PREFIX) {
            return match status.parse::<u16>() {
                Ok(status) if (100..=599).contains(&status) => Ok(Self::Status(status)),
                _ => Err(D::Error::custom(format!(
                    "{name:?} is not HTTP_ and a status from 100 to 599"
                ))),
            };
        }
        let category = ErrorCategory::from_wire(&name);
        if category.is_known() {
            return Ok(Self::Category(category));
        }
        let known: Vec<&str> = ErrorCategory::KNOWN.iter().map(|c| c.as_str()).collect();
        Err(D::Error::custom(format!(
            "{name:?} is not one of {}, {TRANSPORT} or {HTTP_PREFIX}<status>",
            known.join(", ")
        )))
    }
}

/// The categories a scenario may be filed under: the protocol's eight (§1),
/// transport faults, and the normal control. Declared in the order of their
/// names, the order the reports list them in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[derive(IntoStaticStr, EnumIter)]
#[strum(serialize_all = "SCREAMING_SNAKE_CASE")]
pub(crate) enum ScenarioCategory {
    AuthError,
    Control,
    InputError,
    NotFound,
    PermissionDenied,
    PolicyRejection,
    RateLimit,
    ServiceError,
    Transport,
    UnknownOutcome,
}

impl ScenarioCategory {
    /// The name the scenario file and the reports use (`INPUT_ERROR`, `CONTROL`, …).
    pub(crate) fn as_str(self) -> &'static str {
        self.into()
    }
}

/// The name, padded to the width asked for.
impl fmt::Display for ScenarioCategory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use strum::IntoEnumIterator;

    use super::*;

    fn read(name: &str) -> Result<FirstFailure, String> {
        serde_json::from_value(name.into()).map_err(|e| e.to_string())
    }

    #[test]
    fn a_first_failure_reads_back_from_what_the_report_prints() {
        let mut all: Vec<FirstFailure> = ErrorCategory::KNOWN
            .into_iter()
            .map(FirstFailure::Category)
            .collect();
        all.extend([FirstFailure::Transport, FirstFailure::Status(502)]);
        for failure in all {
            assert_eq!(read(&failure.to_string()), Ok(failure.clone()));
        }
        assert_eq!(FirstFailure::Status(500).to_string(), "HTTP_500");
        assert_eq!(FirstFailure::Transport.to_string(), "TRANSPORT");
    }

    #[test]
    fn an_unknown_first_failure_says_what_is_allowed() {
        let err = read("INPUT_EROR").unwrap_err();
        assert!(err.contains("INPUT_EROR"), "{err}");
        assert!(
            err.contains("NOT_FOUND") && err.contains("TRANSPORT"),
            "{err}"
        );
        assert!(read("HTTP_5000").unwrap_err().contains("status"));
        assert!(read("http_500").is_err());
    }

    #[test]
    fn scenario_categories_are_the_protocols_eight_transport_and_control() {
        let names: Vec<&str> = ScenarioCategory::iter()
            .map(ScenarioCategory::as_str)
            .collect();
        for category in ErrorCategory::KNOWN {
            assert!(names.contains(&category.as_str()), "{category}");
        }
        assert!(names.contains(&"TRANSPORT") && names.contains(&"CONTROL"));
        assert_eq!(names.len(), ErrorCategory::KNOWN.len() + 2);
        for (category, name) in ScenarioCategory::iter().zip(&names) {
            let read: ScenarioCategory = serde_json::from_value((*name).into()).unwrap();
            assert_eq!(read, category);
        }
    }

    #[test]
    fn scenario_categories_are_ordered_by_name() {
        let mut by_name: Vec<ScenarioCategory> = ScenarioCategory::iter().collect();
        by_name.sort_by_key(|c| c.as_str());
        assert_eq!(by_name, ScenarioCategory::iter().collect::<Vec<_>>());
        assert_eq!(
            format!("{:<12}|", ScenarioCategory::Control),
            "CONTROL     |"
        );
    }
}
