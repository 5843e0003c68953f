//! Why a model call failed.

use std::fmt;

/// A failed model call. The message is redacted: it never carries the API key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LlmError {
    kind: Kind,
    message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Timeout,
    Connect,
    Status(u16),
    Reply,
}

impl LlmError {
    pub(crate) fn timeout(message: impl Into<String>) -> Self {
        Self::new(Kind::Timeout, message)
    }

    pub(crate) fn connect(message: impl Into<String>) -> Self {
        Self::new(Kind::Connect, message)
    }

    pub(crate) fn status(status: u16, message: impl Into<String>) -> Self {
        Self::new(Kind::Status(status), message)
    }

    /// A reply that could not be used (not JSON, no choices, empty content).
    pub fn bad_reply(message: impl Into<String>) -> Self {
        Self::new(Kind::Reply, message)
    }

    fn new(kind: Kind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: recourse_protocol::redact(&message.into()),
        }
    }

    /// Whether the model did not answer in time.
    pub fn is_timeout(&self) -> bool {
        self.kind == Kind::Timeout
    }

    /// Whether the model's server could not be reached.
    pub fn is_connect(&self) -> bool {
        self.kind == Kind::Connect
    }

    /// The HTTP status, when the server answered with a non-2xx.
    pub fn status_code(&self) -> Option<u16> {
        match self.kind {
            Kind::Status(s) => Some(s),
            _ => None,
        }
    }

    /// Whether the server answered 2xx with something unusable.
    pub fn is_bad_reply(&self) -> bool {
        self.kind == Kind::Reply
    }
}

impl fmt::Display for LlmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            Kind::Timeout => write!(f, "model timed out: {}", self.message),
            Kind::Connect => write!(f, "model unreachable: {}", self.message),
            Kind::Status(s) => write!(f, "model answered HTTP {s}: {}", self.message),
            Kind::Reply => write!(f, "unusable model reply: {}", self.message),
        }
    }
}

impl std::error::Error for LlmError {}
