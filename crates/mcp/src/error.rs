//! The one error this crate returns: an MCP server could not be set up.

use std::fmt;

/// An MCP server could not be configured or reached at setup time.
///
/// Failures *during* a call are data (a [`Delivery`](recourse::transport::Delivery)), not
/// this error; this one means the caller's configuration or the server's
/// start-up failed, before any tool call was made.
#[derive(Debug)]
pub struct McpSetupError {
    message: String,
    unreachable: bool,
}

impl McpSetupError {
    pub(crate) fn config(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            unreachable: false,
        }
    }

    pub(crate) fn unreachable(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            unreachable: true,
        }
    }

    /// The same error, with what was being done first (`context: message`).
    #[must_use]
    pub fn context(self, context: &str) -> Self {
        Self {
            message: format!("{context}: {}", self.message),
            unreachable: self.unreachable,
        }
    }

    /// Whether the configuration was fine but the server could not be started or reached.
    pub fn is_unreachable(&self) -> bool {
        self.unreachable
    }
}

impl fmt::Display for McpSetupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for McpSetupError {}
