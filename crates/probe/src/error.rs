//! Why a probe could not be made: a target that cannot be reached or read,
//! or options that select nothing. What a tool answers is never an error:
//! it is what the scorecard scores.

use std::fmt;

/// A probe that could not start, in words that name what and where.
///
/// ```
/// use recourse_probe::ProbeTarget;
///
/// let refused = ProbeTarget::manifest("ftp://127.0.0.1:1").unwrap_err();
/// assert!(refused.to_string().starts_with("the URL: "), "{refused}");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeError(String);

impl ProbeError {
    /// An error `text` says all of.
    pub(crate) fn new(text: impl Into<String>) -> Self {
        Self(text.into())
    }

    /// `what` failed because of `cause`, and each of its sources.
    pub(crate) fn because(what: impl fmt::Display, cause: &dyn std::error::Error) -> Self {
        let mut text = format!("{what}: {cause}");
        let mut source = cause.source();
        while let Some(s) = source {
            text.push_str(&format!(": {s}"));
            source = s.source();
        }
        Self(text)
    }
}

impl fmt::Display for ProbeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ProbeError {}
