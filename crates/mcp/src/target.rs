//! Where an MCP server lives: a child process speaking over stdio, or a
//! streamable HTTP endpoint.
//!
//! # Why a child gets almost none of our environment
//!
//! The process that starts an MCP server often holds secrets in its
//! environment: a gateway's bearer token, a model provider's API key, cloud
//! credentials. A server is a program someone else wrote, and one that reads
//! its environment, or is made to by its input, would hand them on. So a
//! child starts with a cleared environment plus [`BASE_ENV`] (enough to find
//! programs, a home directory and the locale), and any other variable only
//! when the caller names it ([`McpTarget::with_pass_env`]).

use std::ffi::OsString;
use std::fmt;

use recourse_protocol::mcp::McpError;

/// The variables every MCP child process inherits (when set), besides those
/// named with [`McpTarget::with_pass_env`]; every `LC_*` variable too.
pub const BASE_ENV: &[&str] = &[
    "PATH",
    "HOME",
    "LANG",
    "LANGUAGE",
    "TZ",
    #[cfg(windows)]
    "SYSTEMROOT",
    #[cfg(windows)]
    "WINDIR",
    #[cfg(windows)]
    "PATHEXT",
    #[cfg(windows)]
    "TEMP",
    #[cfg(windows)]
    "TMP",
    #[cfg(windows)]
    "USERPROFILE",
];

/// An MCP server to call.
///
/// ```
/// use recourse_mcp::McpTarget;
///
/// let target = McpTarget::command_line("uvx 'mcp-server-time' --local-timezone \"America/New_York\"").unwrap();
/// assert_eq!(
///     target,
///     McpTarget::Command {
///         program: "uvx".into(),
///         args: vec!["mcp-server-time".into(), "--local-timezone".into(), "America/New_York".into()],
///         pass_env: vec![],
///     }
/// );
/// let target = target.with_pass_env(["UV_CACHE_DIR"]).unwrap();
/// assert!(McpTarget::command_line("uvx x").unwrap().with_pass_env(["A=B"]).is_err());
/// assert!(McpTarget::command_line("echo 'unclosed").is_err());
/// assert!(McpTarget::url("ftp://example.invalid/mcp").is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpTarget {
    /// A program started as a child process, spoken to over its stdin and stdout.
    Command {
        /// The program (looked up on `PATH` when it has no slash).
        program: String,
        /// Its arguments, passed as they are (no shell).
        args: Vec<String>,
        /// Variables passed on from this process's environment besides
        /// [`BASE_ENV`]; the child gets no others.
        pass_env: Vec<String>,
    },
    /// A streamable HTTP endpoint (`http://…/mcp` or `https://…/mcp`), as
    /// the URL parser normalised it.
    Url(String),
}

impl McpTarget {
    /// A child process from one command line, split like a POSIX shell splits
    /// words (single quotes, double quotes, backslash escapes) but never run
    /// through a shell: no variables, globs, pipes or redirections.
    ///
    /// # Errors
    /// An empty command line or an unclosed quote.
    pub fn command_line(line: &str) -> Result<Self, McpError> {
        let mut words = split_words(line)?.into_iter();
        let program = words
            .next()
            .ok_or_else(|| McpError::config("the MCP command is empty"))?;
        Ok(Self::Command {
            program,
            args: words.collect(),
            pass_env: Vec::new(),
        })
    }

    /// A streamable HTTP endpoint, `http://` or `https://`, parsed by the
    /// WHATWG URL rules (see [`TargetUrl`](recourse::target::TargetUrl));
    /// the normalised URL is the one called. Over https the server's
    /// certificate must chain to the platform's roots or the CA file this
    /// process trusts ([`recourse::tls::trust_ca_file`]).
    ///
    /// # Errors
    /// A URL that does not parse, carries user info, or is neither `http://`
    /// nor `https://`.
    pub fn url(url: &str) -> Result<Self, McpError> {
        let parsed = recourse::target::TargetUrl::parse(url)
            .map_err(|e| McpError::config("the MCP URL").caused_by(e))?;
        Ok(Self::Url(parsed.as_str().to_owned()))
    }

    /// The command line that [`command_line`](Self::command_line) splits
    /// back into this program and these arguments (each word quoted when it
    /// needs it), unredacted: what another process is handed to start the
    /// same server (a gateway dispatching an approved call). `None` for a URL.
    ///
    /// ```
    /// use recourse_mcp::McpTarget;
    ///
    /// let target = McpTarget::command_line(r#"node "/opt/my servers/fs.js" "it's" ''"#).unwrap();
    /// let line = target.to_command_line().unwrap();
    /// assert_eq!(line, r#"node '/opt/my servers/fs.js' 'it'\''s' ''"#);
    /// assert_eq!(McpTarget::command_line(&line).unwrap(), target);
    /// assert_eq!(McpTarget::url("http://127.0.0.1:9/mcp").unwrap().to_command_line(), None);
    /// ```
    pub fn to_command_line(&self) -> Option<String> {
        let Self::Command { program, args, .. } = self else {
            return None;
        };
        let words: Vec<String> = std::iter::once(program)
            .chain(args)
            .map(|word| quoted(word))
            .collect();
        Some(words.join(" "))
    }

    /// Passes these variables of this process's environment to the child
    /// (when they are set), besides [`BASE_ENV`]. No effect on a URL target.
    ///
    /// # Errors
    /// A name that is empty or holds `=` or NUL.
    pub fn with_pass_env<I>(mut self, names: I) -> Result<Self, McpError>
    where
        I: IntoIterator,
        I::Item: Into<String>,
    {
        let names: Vec<String> = names.into_iter().map(Into::into).collect();
        if let Some(bad) = names
            .iter()
            .find(|n| n.is_empty() || n.contains(['=', '\0']))
        {
            return Err(McpError::config(format!(
                "{bad:?} is not an environment variable name"
            )));
        }
        if let Self::Command { pass_env, .. } = &mut self {
            pass_env.extend(names);
        }
        Ok(self)
    }
}

/// The environment of a child started with `pass_env`: [`BASE_ENV`], every
/// `LC_*` variable, and the named ones, from `parent`.
pub(crate) fn child_env(
    parent: impl IntoIterator<Item = (OsString, OsString)>,
    pass_env: &[String],
) -> Vec<(OsString, OsString)> {
    let same = |a: &str, b: &str| {
        if cfg!(windows) {
            a.eq_ignore_ascii_case(b)
        } else {
            a == b
        }
    };
    let passes = |name: &str| {
        name.starts_with("LC_")
            || BASE_ENV
                .iter()
                .copied()
                .chain(pass_env.iter().map(String::as_str))
                .any(|n| same(n, name))
    };
    parent
        .into_iter()
        .filter(|(name, _)| name.to_str().is_some_and(passes))
        .collect()
}

/// The server as shown in messages and logs: redacted, so a credential in
/// its URL (`?token=…`, `user:pass@`) or its command line (`--api-key=sk-…`)
/// never reaches a terminal, a log line or a record.
impl fmt::Display for McpTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let raw = match self {
            Self::Command { program, args, .. } => {
                let mut line = program.clone();
                for a in args {
                    line.push(' ');
                    line.push_str(a);
                }
                line
            }
            Self::Url(url) => url.clone(),
        };
        f.write_str(&recourse_protocol::redact(&raw))
    }
}

/// `word` as one word of a command line: as it is when it holds nothing a
/// shell-like split reads, else single-quoted (a quote inside written `'\''`).
fn quoted(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-./:=,@%+".contains(&b));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// Splits `line` into words the way a POSIX shell would, without expanding anything.
fn split_words(line: &str) -> Result<Vec<String>, McpError> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => words.extend(word.take()),
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => w.push(c),
                        None => return Err(unclosed("single")),
                    }
                }
            }
            '"' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\' | '$' | '`')) => w.push(c),
                            Some(c) => {
                                w.push('\\');
                                w.push(c);
                            }
                            None => return Err(unclosed("double")),
                        },
                        Some(c) => w.push(c),
                        None => return Err(unclosed("double")),
                    }
                }
            }
            '\\' => {
                let w = word.get_or_insert_with(String::new);
                match chars.next() {
                    Some(c) => w.push(c),
                    None => {
                        return Err(McpError::config(
                            "the MCP command ends with a lone backslash",
                        ));
                    }
                }
            }
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    Ok(words)
}

fn unclosed(kind: &str) -> McpError {
    McpError::config(format!("the MCP command has an unclosed {kind} quote"))
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_credential_in_the_servers_url_or_command_line_is_never_shown() {
        let url =
            McpTarget::url("http://127.0.0.1:9/mcp?token=TKz9x8c7v6b5n4&access_token=Pw0rdPw0rd")
                .unwrap();
        let shown = url.to_string();
        assert!(
            !shown.contains("Pw0rdPw0rd") && !shown.contains("TKz9x8c7v6b5n4"),
            "{shown}"
        );
        assert!(shown.contains("127.0.0.1:9/mcp"), "{shown}");
        let command =
            McpTarget::command_line("server --api-key=sk-SKa1b2c3d4e5f6g7h8i9j0 --port 1").unwrap();
        let shown = command.to_string();
        assert!(!shown.contains("sk-SKa1b2c3d4e5f6g7h8i9j0"), "{shown}");
        assert!(shown.starts_with("server --api-key="), "{shown}");
    }

    use super::*;

    fn split(line: &str) -> Vec<String> {
        split_words(line).unwrap()
    }

    #[test]
    fn words_split_like_a_shell_without_expansion() {
        assert_eq!(split("  a  b\tc "), ["a", "b", "c"]);
        assert_eq!(
            split(r#"node "my dir/x.js" '$HOME' a\ b"#),
            ["node", "my dir/x.js", "$HOME", "a b"]
        );
        assert_eq!(split(r#""say \"hi\"" '' x"#), [r#"say "hi""#, "", "x"]);
        assert_eq!(split(r#""a\nb""#), [r"a\nb"]);
        assert_eq!(split("a'b'\"c\""), ["abc"]);
        assert!(split("").is_empty());
    }

    #[test]
    fn a_command_line_written_back_splits_into_the_same_words() {
        for words in [
            &["recourse", "tools", "serve", "--mcp"][..],
            &[
                "/opt/my servers/fs",
                "it's",
                "",
                "a\\b",
                "$HOME",
                "\"q\"",
                "tab\there",
            ],
        ] {
            let target = McpTarget::Command {
                program: words[0].to_owned(),
                args: words[1..].iter().map(|w| (*w).to_owned()).collect(),
                pass_env: vec![],
            };
            let line = target.to_command_line().unwrap();
            assert_eq!(McpTarget::command_line(&line).unwrap(), target, "{line}");
        }
    }

    #[test]
    fn bad_command_lines_are_clear_errors() {
        for line in ["", "   ", "a 'b", "a \"b", "a \\"] {
            let err = McpTarget::command_line(line).unwrap_err();
            assert!(err.to_string().contains("MCP command"), "{line:?}: {err}");
        }
    }

    #[test]
    fn a_child_inherits_only_the_base_and_the_named_variables() {
        let parent = [
            ("PATH", "/usr/bin"),
            ("HOME", "/home/a"),
            ("LC_ALL", "C.UTF-8"),
            ("TZ", "UTC"),
            ("RECOURSE_GATEWAY_TOKEN", "s3cret"),
            ("OPENAI_API_KEY", "sk-1"),
            ("MCP_ROOT", "/srv"),
            ("PATHX", "no"),
        ]
        .map(|(k, v)| (OsString::from(k), OsString::from(v)));
        let names = |env: Vec<(OsString, OsString)>| -> Vec<String> {
            env.into_iter()
                .map(|(k, _)| k.into_string().unwrap())
                .collect()
        };
        assert_eq!(
            names(child_env(parent.clone(), &[])),
            ["PATH", "HOME", "LC_ALL", "TZ"]
        );
        assert_eq!(
            names(child_env(parent, &["MCP_ROOT".to_owned()])),
            ["PATH", "HOME", "LC_ALL", "TZ", "MCP_ROOT"]
        );
    }

    #[test]
    fn urls_must_be_http_or_https() {
        assert_eq!(
            McpTarget::url("HTTP://127.1:80/mcp").unwrap(),
            McpTarget::Url("http://127.0.0.1/mcp".to_owned())
        );
        assert!(McpTarget::url("http://u:p@127.0.0.1/mcp").is_err());
        assert!(McpTarget::url("http://127.0.0.1:1/mcp").is_ok());
        assert!(McpTarget::url("http://").is_err());
        assert!(McpTarget::url("127.0.0.1/mcp").is_err());
        assert_eq!(
            McpTarget::url("HTTPS://Mcp.Example.com:443/mcp").unwrap(),
            McpTarget::Url("https://mcp.example.com/mcp".to_owned())
        );
        assert!(McpTarget::url("ftp://x/mcp").is_err());
    }
}
