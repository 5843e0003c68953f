//! [`HttpAccess`]: what a Streamable HTTP server needs besides its URL —
//! headers sent with every request ([`SecretHeader`]) and an OAuth login
//! ([`OAuthLogin`]).
//!
//! # Why a header's value is a secret
//!
//! A header sent to a remote MCP server is, nearly always, a credential: an
//! API key, a bearer token, a tenant's secret. So its value is read once,
//! at start (from the environment when it names `${VARIABLE}`), kept as a
//! sensitive [`HeaderValue`], and shown nowhere: not in `Debug`, not in an
//! error (a value the HTTP stack refuses is named by its header, never
//! quoted), not in a log line or a record. It goes only to the server's own
//! URL — never to its authorization server, never to a child process.

use std::fmt;

use http::{HeaderName, HeaderValue};
use recourse_protocol::mcp::McpError;

use crate::tokens::TokenFile;

/// Headers recourse sets itself, or that the MCP transport owns: a header
/// line may not name them.
const RESERVED: &[&str] = &[
    "accept",
    "connection",
    "content-length",
    "content-type",
    "host",
    "last-event-id",
    "mcp-protocol-version",
    "mcp-session-id",
    "te",
    "transfer-encoding",
    "upgrade",
];

/// One header sent with every request to a server, its value never shown.
///
/// ```
/// use recourse_mcp::SecretHeader;
///
/// let env = |name: &str| (name == "API_KEY").then(|| "k-0123456789".to_owned());
/// let header = SecretHeader::parse("X-Api-Key: ${API_KEY}", env).unwrap();
/// assert_eq!(header.name(), "x-api-key");
/// assert!(!format!("{header:?}").contains("k-0123456789"));
/// let missing = SecretHeader::parse("Authorization: Bearer ${TOKEN}", env).unwrap_err();
/// assert!(missing.to_string().contains("TOKEN"));
/// assert!(SecretHeader::parse("Mcp-Session-Id: 1", env).is_err());
/// ```
#[derive(Clone)]
pub struct SecretHeader {
    name: HeaderName,
    value: HeaderValue,
}

impl SecretHeader {
    /// A header from `Name: value`, each `${VARIABLE}` in the value replaced
    /// by `env(VARIABLE)`.
    ///
    /// # Errors
    /// No `:`; a name that is not a header name or is one recourse or MCP
    /// sets itself; an empty value; a `${` without its `}` or around a name
    /// that is not a variable's; a variable that is unset or empty (named);
    /// a value the HTTP stack refuses (its header named, the value never
    /// shown).
    pub fn parse(line: &str, env: impl Fn(&str) -> Option<String>) -> Result<Self, McpError> {
        let Some((name, value)) = line.split_once(':') else {
            return Err(McpError::config(
                "a header is given as 'Name: value' (the value may name ${VARIABLE})",
            ));
        };
        let name = name.trim();
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| McpError::config(format!("{name:?} is not an HTTP header name")))?;
        if RESERVED.contains(&name.as_str()) {
            return Err(McpError::config(format!(
                "the header {name} is set by recourse or the MCP transport; it cannot be given"
            )));
        }
        let value = expand(value.trim(), &env).map_err(|e| e.context(&format!("header {name}")))?;
        if value.is_empty() {
            return Err(McpError::config(format!(
                "the header {name} has an empty value"
            )));
        }
        let mut value = HeaderValue::from_str(&value).map_err(|_| {
            McpError::config(format!(
                "the value of the header {name} holds a character a header cannot (a control \
                 character or a line break)"
            ))
        })?;
        value.set_sensitive(true);
        Ok(Self { name, value })
    }

    /// The header's name, lower-case.
    pub fn name(&self) -> &str {
        self.name.as_str()
    }

    pub(crate) fn pair(&self) -> (HeaderName, HeaderValue) {
        (self.name.clone(), self.value.clone())
    }
}

/// The name only: the value is a secret.
impl fmt::Debug for SecretHeader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: [redacted]", self.name)
    }
}

/// Two headers are the same when they say the same thing (for targets compared in tests).
impl PartialEq for SecretHeader {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name && self.value == other.value
    }
}

impl Eq for SecretHeader {}

/// `value` with every `${VARIABLE}` replaced by `env(VARIABLE)`; a `$` not
/// followed by `{` stays as it is.
fn expand(value: &str, env: &impl Fn(&str) -> Option<String>) -> Result<String, McpError> {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(at) = rest.find("${") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        let Some(end) = after.find('}') else {
            return Err(McpError::config("a ${ without its closing }"));
        };
        let variable = &after[..end];
        let is_name = variable
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && variable
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !is_name {
            return Err(McpError::config(format!(
                "${{{variable}}} does not name an environment variable (letters, digits, _)"
            )));
        }
        match env(variable) {
            Some(found) if !found.is_empty() => out.push_str(&found),
            Some(_) => {
                return Err(McpError::config(format!(
                    "the environment variable {variable} is empty"
                )));
            }
            None => {
                return Err(McpError::config(format!(
                    "the environment variable {variable} is not set"
                )));
            }
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// A server's OAuth login: the file its tokens are kept in, and the command
/// that logs in again, as whoever set it up would type it (named in every
/// message that asks for a login).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthLogin {
    pub(crate) tokens: TokenFile,
    pub(crate) login_command: String,
}

impl OAuthLogin {
    /// Tokens kept in `tokens`, renewed by running `login_command`.
    pub fn new(tokens: TokenFile, login_command: impl Into<String>) -> Self {
        Self {
            tokens,
            login_command: login_command.into(),
        }
    }

    /// What to do when the login is missing or stopped working.
    pub(crate) fn fix(&self) -> String {
        format!("run `{}`", self.login_command)
    }
}

/// What a Streamable HTTP server needs besides its URL: headers sent with
/// every request, and its OAuth login, if it has one. A child process
/// (`McpTarget::Command`) ignores both.
///
/// ```
/// use recourse_mcp::{HttpAccess, SecretHeader};
///
/// let header = SecretHeader::parse("X-Tenant: acme", |_| None).unwrap();
/// let access = HttpAccess::default().with_header(header);
/// assert_eq!(access.headers().len(), 1);
/// assert!(access.oauth().is_none());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HttpAccess {
    headers: Vec<SecretHeader>,
    oauth: Option<OAuthLogin>,
}

impl HttpAccess {
    /// Sends `header` with every request too.
    #[must_use]
    pub fn with_header(mut self, header: SecretHeader) -> Self {
        self.headers.push(header);
        self
    }

    /// Uses the OAuth tokens of `login` when they exist: a bearer token on
    /// every request, refreshed before it expires and once when the server
    /// refuses it. No effect when a header sets `Authorization` itself.
    #[must_use]
    pub fn with_oauth(mut self, login: OAuthLogin) -> Self {
        self.oauth = Some(login);
        self
    }

    /// The headers sent with every request.
    pub fn headers(&self) -> &[SecretHeader] {
        &self.headers
    }

    /// The OAuth login, when one was given.
    pub fn oauth(&self) -> Option<&OAuthLogin> {
        self.oauth.as_ref()
    }

    /// The OAuth login to use: none when a header carries the credentials.
    pub(crate) fn oauth_in_use(&self) -> Option<&OAuthLogin> {
        let authorizes = self
            .headers
            .iter()
            .any(|h| h.name == http::header::AUTHORIZATION);
        self.oauth.as_ref().filter(|_| !authorizes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "TOKEN" => Some("s3cr3t-t0ken-value".to_owned()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    #[test]
    fn variables_are_read_where_they_are_named() {
        let h = SecretHeader::parse("Authorization: Bearer ${TOKEN}", env).unwrap();
        assert_eq!(h.pair().1, "Bearer s3cr3t-t0ken-value");
        let h = SecretHeader::parse("X-Price: $5 ${TOKEN}$", env).unwrap();
        assert_eq!(h.pair().1, "$5 s3cr3t-t0ken-value$");
        let h = SecretHeader::parse("X-Plain:  literal  ", env).unwrap();
        assert_eq!(h.pair().1, "literal");
    }

    #[test]
    fn a_bad_line_is_a_clear_error_that_never_shows_a_value() {
        for (line, says) in [
            ("no colon", "'Name: value'"),
            ("Bad Name: x", "not an HTTP header name"),
            ("Content-Type: text/plain", "content-type"),
            ("X-A: ${MISSING}", "MISSING is not set"),
            ("X-A: ${EMPTY}", "EMPTY is empty"),
            ("X-A: ${TOKEN", "closing }"),
            ("X-A: ${1X}", "does not name"),
            ("X-A:", "empty value"),
        ] {
            let error = SecretHeader::parse(line, env).unwrap_err().to_string();
            assert!(error.contains(says), "{line:?}: {error}");
        }
        let error = SecretHeader::parse("X-A: ${TOKEN}\u{7}", env).unwrap_err();
        let text = format!("{error} {error:?}");
        assert!(text.contains("x-a") && !text.contains("s3cr3t"), "{text}");
    }

    #[test]
    fn a_header_shows_its_name_only() {
        let h = SecretHeader::parse("X-Api-Key: ${TOKEN}", env).unwrap();
        let access = HttpAccess::default().with_header(h);
        let shown = format!("{access:?}");
        assert!(
            shown.contains("x-api-key") && !shown.contains("s3cr3t"),
            "{shown}"
        );
    }

    #[test]
    fn an_authorization_header_outranks_a_login() {
        let login = OAuthLogin::new(
            TokenFile::at(std::path::PathBuf::from("/t/a.json"), "https://a/mcp"),
            "recourse mcp login a=https://a/mcp",
        );
        let with_login = HttpAccess::default().with_oauth(login.clone());
        assert!(with_login.oauth_in_use().is_some());
        let bearer = SecretHeader::parse("Authorization: Bearer ${TOKEN}", env).unwrap();
        assert!(with_login.with_header(bearer).oauth_in_use().is_none());
    }
}
