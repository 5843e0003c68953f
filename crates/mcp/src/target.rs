//! Where an MCP server lives: a child process speaking over stdio, or a
//! streamable HTTP endpoint.

use std::fmt;

use crate::McpSetupError;

/// An MCP server to call.
///
/// ```
/// use recourse_mcp::McpTarget;
///
/// let target = McpTarget::command_line("uvx 'mcp-server-time' --local-timezone \"America/New_York\"").unwrap();
/// assert_eq!(
///     target,
///     McpTarget::Command { program: "uvx".into(), args: vec!["mcp-server-time".into(), "--local-timezone".into(), "America/New_York".into()] }
/// );
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
    },
    /// A streamable HTTP endpoint (`http://…/mcp`).
    Url(String),
}

impl McpTarget {
    /// A child process from one command line, split like a POSIX shell splits
    /// words (single quotes, double quotes, backslash escapes) but never run
    /// through a shell: no variables, globs, pipes or redirections.
    ///
    /// # Errors
    /// An empty command line or an unclosed quote.
    pub fn command_line(line: &str) -> Result<Self, McpSetupError> {
        let mut words = split_words(line)?.into_iter();
        let program = words
            .next()
            .ok_or_else(|| McpSetupError::config("the MCP command is empty"))?;
        Ok(Self::Command {
            program,
            args: words.collect(),
        })
    }

    /// A streamable HTTP endpoint.
    ///
    /// # Errors
    /// A URL that is not `http://` (TLS endpoints are not supported yet).
    pub fn url(url: &str) -> Result<Self, McpSetupError> {
        if url.starts_with("https://") {
            return Err(McpSetupError::config(format!(
                "{url:?}: https MCP endpoints are not supported yet; use http:// (e.g. through a local TLS proxy) or --mcp-command"
            )));
        }
        if !url.starts_with("http://") || url.len() <= "http://".len() {
            return Err(McpSetupError::config(format!(
                "the MCP URL must start with http://, not {url:?}"
            )));
        }
        Ok(Self::Url(url.to_owned()))
    }
}

impl fmt::Display for McpTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Command { program, args } => {
                write!(f, "{program}")?;
                args.iter().try_for_each(|a| write!(f, " {a}"))
            }
            Self::Url(url) => f.write_str(url),
        }
    }
}

/// Splits `line` into words the way a POSIX shell would, without expanding anything.
fn split_words(line: &str) -> Result<Vec<String>, McpSetupError> {
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
                        return Err(McpSetupError::config(
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

fn unclosed(kind: &str) -> McpSetupError {
    McpSetupError::config(format!("the MCP command has an unclosed {kind} quote"))
}

#[cfg(test)]
mod tests {
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
    fn bad_command_lines_are_clear_errors() {
        for line in ["", "   ", "a 'b", "a \"b", "a \\"] {
            let err = McpTarget::command_line(line).unwrap_err();
            assert!(err.to_string().contains("MCP command"), "{line:?}: {err}");
        }
    }

    #[test]
    fn urls_must_be_http() {
        assert!(McpTarget::url("http://127.0.0.1:1/mcp").is_ok());
        assert!(McpTarget::url("http://").is_err());
        assert!(McpTarget::url("127.0.0.1/mcp").is_err());
        assert!(
            McpTarget::url("https://x/mcp")
                .unwrap_err()
                .to_string()
                .contains("https")
        );
    }
}
