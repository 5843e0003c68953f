//! [`Upstream`]: an MCP server the proxy stands in front of, by name.

use std::fmt;

use recourse_mcp::{HttpAccess, McpTarget};

use crate::error::ProxyError;

/// The most characters an upstream's name has.
const MAX_NAME_CHARS: usize = 32;

/// What separates an upstream's name from its tool's in an offered name
/// (`NAME__TOOL`). A name cannot hold it, so the first one splits.
pub(crate) const SEPARATOR: &str = "__";

/// An MCP server behind the proxy: a command started over stdio, or a
/// Streamable HTTP endpoint, with the name its tools are offered under
/// when there is more than one (`NAME__TOOL`).
///
/// ```
/// use recourse_mcp::McpTarget;
/// use recourse_mcp_proxy::Upstream;
///
/// let time = Upstream::parse("time=mcp-server-time --local-timezone UTC").unwrap();
/// assert_eq!(time.name(), Some("time"));
/// assert!(matches!(time.target(), McpTarget::Command { program, .. } if program == "mcp-server-time"));
/// let web = Upstream::parse("web=http://127.0.0.1:9000/mcp").unwrap();
/// assert!(matches!(web.target(), McpTarget::Url(_)));
/// // One server given as a command, its tools keeping their names:
/// let only = Upstream::unnamed(McpTarget::command_line("mcp-server-time").unwrap());
/// assert_eq!(only.name(), None);
/// for bad in ["time", "=x", "a__b=x", "t=", "t='unclosed"] {
///     assert!(Upstream::parse(bad).is_err(), "{bad}");
/// }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upstream {
    name: Option<String>,
    target: McpTarget,
    /// Headers and a login, for a Streamable HTTP server.
    access: HttpAccess,
}

impl Upstream {
    /// `NAME=CMD ARGS` (a command line, split as a shell splits words and
    /// never run by one) or `NAME=http://…/mcp` (or `https://`); NAME is 1
    /// to 32 ASCII letters, digits and hyphens.
    ///
    /// # Errors
    /// No `=`, a bad name, an empty or unclosed command line, or a URL
    /// [`McpTarget::url`] refuses.
    pub fn parse(arg: &str) -> Result<Self, ProxyError> {
        let Some((name, server)) = arg.split_once('=') else {
            return Err(ProxyError::config(format!(
                "--upstream {arg:?}: give NAME=CMD ARGS or NAME=http://HOST/mcp"
            )));
        };
        check_name(name)?;
        let server = server.trim();
        let in_context = |e: recourse_mcp::McpError| {
            ProxyError::config(format!("--upstream {name}")).caused_by(e)
        };
        let target = if server.starts_with("http://") || server.starts_with("https://") {
            McpTarget::url(server).map_err(in_context)?
        } else {
            McpTarget::command_line(server).map_err(in_context)?
        };
        Ok(Self {
            name: Some(name.to_owned()),
            target,
            access: HttpAccess::default(),
        })
    }

    /// The one upstream of a proxy whose tools keep their names.
    pub fn unnamed(target: McpTarget) -> Self {
        Self {
            name: None,
            target,
            access: HttpAccess::default(),
        }
    }

    /// The same upstream, reached with `access` when it is a Streamable
    /// HTTP server: its headers on every request, its OAuth login's tokens.
    #[must_use]
    pub fn with_access(mut self, access: HttpAccess) -> Self {
        self.access = access;
        self
    }

    /// Its headers and login.
    pub fn access(&self) -> &HttpAccess {
        &self.access
    }

    /// The command that logs in to it, as the proxy spells it
    /// (`recourse mcp login NAME=URL`, the URL redacted); `None` for a
    /// command.
    pub fn login_command(&self) -> Option<String> {
        let McpTarget::Url(_) = &self.target else {
            return None;
        };
        let name = self.name.as_deref().unwrap_or("server");
        Some(format!("recourse mcp login {name}={}", self.target))
    }

    /// The same upstream, its child process also given these variables of
    /// this process's environment (see [`McpTarget::with_pass_env`]).
    ///
    /// # Errors
    /// A name that is empty or holds `=` or NUL.
    pub fn with_pass_env<I>(mut self, names: I) -> Result<Self, ProxyError>
    where
        I: IntoIterator,
        I::Item: Into<String>,
    {
        self.target = self
            .target
            .with_pass_env(names)
            .map_err(|e| ProxyError::config("--mcp-env").caused_by(e))?;
        Ok(self)
    }

    /// Its name, when it was given one.
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// Where it is.
    pub fn target(&self) -> &McpTarget {
        &self.target
    }
}

/// The upstream as shown in messages: its name and where it is (redacted).
impl fmt::Display for Upstream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.name {
            Some(name) => write!(f, "upstream {name} ({})", self.target),
            None => write!(f, "upstream {}", self.target),
        }
    }
}

fn check_name(name: &str) -> Result<(), ProxyError> {
    let fits = (1..=MAX_NAME_CHARS).contains(&name.len())
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
    if fits {
        Ok(())
    } else {
        Err(ProxyError::config(format!(
            "--upstream: the name {name:?} must be 1 to {MAX_NAME_CHARS} ASCII letters, digits \
             and hyphens"
        )))
    }
}

/// The name a tool is offered under: its own with one upstream, else
/// `NAME__TOOL`.
pub(crate) fn offered_name(upstream: Option<&str>, tool: &str) -> String {
    match upstream {
        Some(name) => format!("{name}{SEPARATOR}{tool}"),
        None => tool.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_short_ascii_words_and_hyphens() {
        for good in ["a", "time", "fs-2", "A-Z-09", &"x".repeat(32)] {
            assert!(check_name(good).is_ok(), "{good}");
        }
        for bad in ["", "a_b", "a__b", "a b", "é", "a.b", &"x".repeat(33)] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_tool_is_prefixed_only_when_named() {
        assert_eq!(offered_name(None, "read_file"), "read_file");
        assert_eq!(offered_name(Some("fs"), "read_file"), "fs__read_file");
        // The first separator splits: the name cannot hold one.
        let offered = offered_name(Some("fs"), "a__b");
        let (name, tool) = offered.split_once(SEPARATOR).unwrap();
        assert_eq!((name, tool), ("fs", "a__b"));
    }

    #[test]
    fn the_command_after_the_name_is_split_like_a_shell_would() {
        let up = Upstream::parse("fs=node '/opt/my servers/fs.js' /tmp").unwrap();
        assert_eq!(
            up.target(),
            &McpTarget::Command {
                program: "node".into(),
                args: vec!["/opt/my servers/fs.js".into(), "/tmp".into()],
                pass_env: vec![],
            }
        );
        let web = Upstream::parse("web=https://example.com/mcp").unwrap();
        assert_eq!(
            web.target(),
            &McpTarget::Url("https://example.com/mcp".into())
        );
        assert_eq!(
            web.login_command().as_deref(),
            Some("recourse mcp login web=https://example.com/mcp")
        );
        let err = Upstream::parse("web=https://u:p@example.com/mcp").unwrap_err();
        assert!(err.to_string().contains("web"), "{err}");
    }
}
