//! The one error this crate returns.

use std::fmt;

/// The tool server's manifest could not be read, or an MCP session could not
/// be held.
///
/// Failures of a forwarded call are not this error: they reach the MCP client
/// as `isError` results carrying an envelope.
#[derive(Debug)]
pub struct McpServeError {
    message: String,
    unreachable: bool,
}

impl McpServeError {
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

    /// Whether the tool server or the MCP client could not be reached or
    /// read, as opposed to a manifest that is not a recourse manifest.
    pub fn is_unreachable(&self) -> bool {
        self.unreachable
    }
}

impl fmt::Display for McpServeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for McpServeError {}
