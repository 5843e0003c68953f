//! Where a call goes: an http(s) URL parsed once, or a tool's name.
//!
//! A target is parsed when the call is built, by the same WHATWG URL parser
//! the HTTP client uses ([`TargetUrl`]), and the parsed URL is what is sent.
//! Checking one string and sending another is how allowlists are bypassed
//! (`http://a\@b/` is `a` to one reader and `b` to the other), so recourse
//! never re-reads a target from text after it was checked.

use std::fmt;
use std::sync::Arc;

use url::Url;

use crate::allow::TargetUrl;
use crate::config::{CallField, ConfigError};

/// The longest tool name accepted.
const MAX_NAME_CHARS: usize = 512;

/// A call's destination.
///
/// ```
/// use recourse_core::target::Target;
///
/// let t = Target::parse("http://127.0.0.1:8700/api/exports?api_key=S3CRET").unwrap();
/// assert!(t.url().is_some());
/// assert_eq!(t.endpoint(), "http://127.0.0.1:8700/api/exports");
/// assert_eq!(t.to_string(), "http://127.0.0.1:8700/api/exports?api_key=[REDACTED]");
/// assert!(Target::parse("http://user:pw@127.0.0.1/").is_err(), "credentials go in a header");
/// assert_eq!(Target::parse("get_current_time").unwrap().endpoint(), "get_current_time");
/// assert!(Target::parse("http://exa mple.com/").is_err());
/// assert!(Target::parse("  ").is_err());
/// ```
///
/// Cloning a target is cheap (its parts are shared): the executor hands one
/// to the transport with every attempt.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Target(Arc<Parts>);

#[derive(Debug, PartialEq, Eq, Hash)]
struct Parts {
    kind: Kind,
    endpoint: String,
}

#[derive(Debug, PartialEq, Eq, Hash)]
enum Kind {
    Url(TargetUrl),
    Tool(String),
}

impl Target {
    /// Parses `text`: an `http://` or `https://` URL (WHATWG rules), or else
    /// the name of a tool for a non-HTTP transport (MCP, in-process).
    ///
    /// # Errors
    /// An empty or over-long name, control characters, or an http(s) URL
    /// that does not parse, has no host, or carries a user name or password.
    pub fn parse(text: &str) -> Result<Self, ConfigError> {
        let trimmed = text.trim();
        let lower = trimmed.get(..8).unwrap_or(trimmed).to_ascii_lowercase();
        if lower.starts_with("http://") || lower.starts_with("https://") {
            let url = TargetUrl::parse(trimmed)
                .map_err(|e| ConfigError::new(CallField::Target, e.to_string()))?;
            return Ok(Self::from(url));
        }
        if trimmed.is_empty() {
            return Err(ConfigError::new(CallField::Target, "empty"));
        }
        if trimmed.chars().any(char::is_control) || trimmed.chars().count() > MAX_NAME_CHARS {
            return Err(ConfigError::new(
                CallField::Target,
                format!(
                    "a tool name has at most {MAX_NAME_CHARS} characters and no control characters"
                ),
            ));
        }
        Ok(Self::of(Kind::Tool(trimmed.to_owned()), trimmed.to_owned()))
    }

    /// The parsed URL, for HTTP targets: exactly what is sent.
    pub fn url(&self) -> Option<&Url> {
        match &self.0.kind {
            Kind::Url(url) => Some(url.url()),
            Kind::Tool(_) => None,
        }
    }

    /// The tool's name, for non-HTTP targets.
    pub fn tool_name(&self) -> Option<&str> {
        match &self.0.kind {
            Kind::Url(_) => None,
            Kind::Tool(name) => Some(name),
        }
    }

    /// The target as given to the transport: the full URL (query included)
    /// or the tool name. Print the target itself, which redacts the query.
    pub fn as_str(&self) -> &str {
        match &self.0.kind {
            Kind::Url(url) => url.as_str(),
            Kind::Tool(name) => name,
        }
    }

    /// The endpoint without credentials, query or fragment (`scheme://host:port/path`,
    /// or the tool name): what breakers and metrics are keyed by.
    pub fn endpoint(&self) -> &str {
        &self.0.endpoint
    }

    fn of(kind: Kind, endpoint: String) -> Self {
        Self(Arc::new(Parts { kind, endpoint }))
    }
}

impl fmt::Debug for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Target")
            .field("kind", &self.0.kind)
            .field("endpoint", &self.0.endpoint)
            .finish()
    }
}

impl From<TargetUrl> for Target {
    /// A target for a URL parsed (and checked) already.
    fn from(url: TargetUrl) -> Self {
        let u = url.url();
        let port = u.port().map_or(String::new(), |p| format!(":{p}"));
        let endpoint = format!("{}://{}{port}{}", u.scheme(), url.host(), u.path());
        Self::of(Kind::Url(url), endpoint)
    }
}

/// The target without credentials: secret query values redacted.
impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0.kind {
            Kind::Url(url) => f.write_str(&recourse_protocol::redact(url.as_str())),
            Kind::Tool(name) => f.write_str(name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_normalised_once_and_printed_without_credentials() {
        let t = Target::parse("HTTP://127.1:80/a/../x?token=abc").unwrap();
        assert_eq!(t.url().unwrap().host_str(), Some("127.0.0.1"));
        assert_eq!(t.endpoint(), "http://127.0.0.1/x");
        let shown = t.to_string();
        assert!(!shown.contains("abc"), "{shown}");
        let refused = Target::parse("http://admin:pa55word@127.0.0.1/x").unwrap_err();
        assert!(!refused.to_string().contains("pa55word"), "{refused}");
    }

    #[test]
    fn backslashes_are_path_separators_as_the_client_reads_them() {
        let t = Target::parse(r"http://192.0.2.2:9101\@127.0.0.1:9101/ok").unwrap();
        assert_eq!(t.url().unwrap().host_str(), Some("192.0.2.2"));
    }

    #[test]
    fn names_and_bad_urls() {
        assert_eq!(
            Target::parse(" stock.quote ").unwrap().as_str(),
            "stock.quote"
        );
        assert!(Target::parse("https://").is_err());
        assert!(Target::parse("a\nb").is_err());
        assert!(Target::parse(&"x".repeat(600)).is_err());
    }
}
