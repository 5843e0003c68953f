//! [`ProxyError`]: why a proxy could not start.

use std::error::Error;
use std::fmt;

/// A proxy could not start: its configuration is wrong
/// ([`ProxyErrorKind::Config`]: an upstream's name or command, the policy
/// file, a tool the policy names that no upstream has), or an upstream could
/// not be started or reached ([`ProxyErrorKind::Unreachable`]).
///
/// Failures while serving are not this error: a failed tool call is an
/// `isError` result, a request the proxy cannot route a JSON-RPC error.
///
/// ```
/// use recourse_mcp_proxy::{ProxyErrorKind, Upstream};
///
/// let e = Upstream::parse("two words=mcp-server-time").unwrap_err();
/// assert_eq!(e.kind(), ProxyErrorKind::Config);
/// assert!(e.to_string().contains("two words"));
/// ```
#[derive(Debug)]
pub struct ProxyError {
    kind: ProxyErrorKind,
    message: String,
    source: Option<Box<dyn Error + Send + Sync>>,
}

/// What kind of failure a [`ProxyError`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ProxyErrorKind {
    /// The configuration is wrong: fix the flags or the policy file.
    Config,
    /// An upstream could not be started, reached or read.
    Unreachable,
}

impl ProxyError {
    pub(crate) fn config(message: impl Into<String>) -> Self {
        Self::new(ProxyErrorKind::Config, message)
    }

    pub(crate) fn unreachable(message: impl Into<String>) -> Self {
        Self::new(ProxyErrorKind::Unreachable, message)
    }

    fn new(kind: ProxyErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            source: None,
        }
    }

    /// The same error, caused by `source` (its text follows the message).
    #[must_use]
    pub(crate) fn caused_by(mut self, source: impl Error + Send + Sync + 'static) -> Self {
        self.source = Some(Box::new(source));
        self
    }

    /// What kind of failure it is.
    pub fn kind(&self) -> ProxyErrorKind {
        self.kind
    }
}

impl fmt::Display for ProxyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        if let Some(source) = &self.source {
            write!(f, ": {source}")?;
        }
        Ok(())
    }
}

impl Error for ProxyError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        self.source.as_deref().map(|e| e as &(dyn Error + 'static))
    }
}

/// An upstream's error, as a proxy's.
impl From<recourse_mcp::McpError> for ProxyError {
    fn from(e: recourse_mcp::McpError) -> Self {
        let kind = if e.is_unreachable() {
            ProxyErrorKind::Unreachable
        } else {
            ProxyErrorKind::Config
        };
        Self::new(kind, e.to_string())
    }
}
