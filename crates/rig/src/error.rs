//! [`SetupError`]: a tool that could not be wrapped.

use std::fmt;

/// A tool could not be wrapped: an unreachable or unreadable capability
/// manifest, an entry that is not usable, or an MCP server that would not
/// list its tools.
#[derive(Debug)]
pub struct SetupError {
    subject: String,
    reason: String,
    unreachable: bool,
}

impl SetupError {
    pub(crate) fn new(subject: impl Into<String>, reason: impl Into<String>) -> Self {
        Self {
            subject: subject.into(),
            reason: reason.into(),
            unreachable: false,
        }
    }

    pub(crate) fn unreachable(subject: impl Into<String>, reason: impl Into<String>) -> Self {
        Self {
            unreachable: true,
            ..Self::new(subject, reason)
        }
    }

    /// What could not be wrapped: a manifest URL, a capability or tool name.
    pub fn subject(&self) -> &str {
        &self.subject
    }

    /// Whether the tool server could not be reached at all (as opposed to
    /// answering with something unusable).
    pub fn is_unreachable(&self) -> bool {
        self.unreachable
    }
}

impl fmt::Display for SetupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.subject, self.reason)
    }
}

impl std::error::Error for SetupError {}
