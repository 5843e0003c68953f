//! The one error of recourse's MCP crates: an MCP server (or the tool
//! server behind one) could not be set up, reached, or served.

use std::error::Error;
use std::fmt;

/// An MCP session could not be set up or held: the caller's configuration is
/// wrong ([`McpErrorKind::Config`]), or the server (or client, or tool
/// server) could not be started, reached or read ([`McpErrorKind::Unreachable`]).
///
/// Failures *during* a tool call are not this error: they are data (a
/// transport's delivery, an `isError` result carrying an envelope).
///
/// ```
/// use recourse_protocol::mcp::{McpError, McpErrorKind};
///
/// let io = std::io::Error::other("no such file");
/// let e = McpError::unreachable("could not start \"mcp-server-time\"").caused_by(io);
/// assert_eq!(e.kind(), McpErrorKind::Unreachable);
/// assert_eq!(e.to_string(), "could not start \"mcp-server-time\": no such file");
/// assert!(std::error::Error::source(&e).is_some());
/// ```
#[derive(Debug)]
pub struct McpError {
    kind: McpErrorKind,
    message: String,
    source: Option<Box<dyn Error + Send + Sync>>,
}

/// What kind of failure an [`McpError`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum McpErrorKind {
    /// The configuration is wrong: an empty or unreadable command, a URL
    /// that is not http(s), a manifest that is not a recourse manifest.
    Config,
    /// The configuration is fine, but the server could not be started,
    /// reached or read, or its session failed.
    Unreachable,
}

impl McpError {
    /// A configuration that cannot be used, described by `message`.
    pub fn config(message: impl Into<String>) -> Self {
        Self::new(McpErrorKind::Config, message)
    }

    /// A server that could not be started, reached or read.
    pub fn unreachable(message: impl Into<String>) -> Self {
        Self::new(McpErrorKind::Unreachable, message)
    }

    fn new(kind: McpErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            source: None,
        }
    }

    /// The same error, caused by `source` (its text follows the message).
    #[must_use]
    pub fn caused_by(mut self, source: impl Error + Send + Sync + 'static) -> Self {
        self.source = Some(Box::new(source));
        self
    }

    /// The same error, with what was being done first (`context: message`).
    #[must_use]
    pub fn context(mut self, context: &str) -> Self {
        self.message = format!("{context}: {}", self.message);
        self
    }

    /// What kind of failure it is.
    pub fn kind(&self) -> McpErrorKind {
        self.kind
    }

    /// Whether the configuration was fine but the server could not be
    /// started or reached.
    pub fn is_unreachable(&self) -> bool {
        self.kind == McpErrorKind::Unreachable
    }
}

impl fmt::Display for McpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        if let Some(source) = &self.source {
            write!(f, ": {source}")?;
        }
        Ok(())
    }
}

impl Error for McpError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        self.source.as_deref().map(|e| e as &(dyn Error + 'static))
    }
}
