//! The gateway's defences: a bearer token, an allowlist of targets, and an
//! allowlist of MCP server command lines.
//!
//! Secure by default: with no `--allow-target`, only loopback targets may be
//! called (see [`TargetAllowlist`] for the pattern grammar), so a gateway
//! exposed by mistake cannot be used to reach the network behind it; with no
//! `--allow-mcp-command`, no process is started.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use recourse::Target;
use recourse::target::{TargetAllowlist, TargetUrl};
use recourse_mcp::McpTarget;
use recourse_tool::protocol::ToolError;

/// How many allowed targets are remembered, parsed (then the memory starts over).
const REMEMBERED_TARGETS: usize = 256;
/// Longer target URLs are parsed every time, never remembered.
const REMEMBERED_URL_BYTES: usize = 2048;

/// The targets this gateway may call: loopback, and `--allow-target` patterns.
#[derive(Debug, Clone, Default)]
pub(crate) struct Targets {
    allow: Arc<TargetAllowlist>,
    /// Call targets already parsed and allowed, by the text a request gave.
    /// Parsing a URL (WHATWG rules, IDNA) costs more than the rest of a
    /// check, and a gateway calls a handful of URLs; the allowlist never
    /// changes while it runs, so an allowed text stays allowed.
    allowed: Arc<Mutex<HashMap<Box<str>, Target>>>,
}

impl Targets {
    /// Parses the `--allow-target` patterns.
    ///
    /// # Errors
    /// A malformed pattern, named.
    pub(crate) fn new(patterns: &[String]) -> Result<Self, String> {
        let allow = TargetAllowlist::new(patterns).map_err(|e| format!("--allow-target: {e}"))?;
        Ok(Self {
            allow: Arc::new(allow),
            allowed: Arc::default(),
        })
    }

    /// The call target in request field `field`: [`check`](Self::check)ed
    /// the first time a text is seen, remembered after.
    pub(crate) fn call_target(&self, field: &str, url: &str) -> Result<Target, ToolError> {
        let remembered = |allowed: &HashMap<Box<str>, Target>| allowed.get(url).cloned();
        if let Some(target) = remembered(&self.lock()) {
            return Ok(target);
        }
        let target = Target::from(self.check(field, url)?);
        if url.len() <= REMEMBERED_URL_BYTES {
            let mut allowed = self.lock();
            if allowed.len() >= REMEMBERED_TARGETS {
                allowed.clear();
            }
            allowed.insert(url.into(), target.clone());
        }
        Ok(target)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Box<str>, Target>> {
        self.allowed.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The allowlist, for checks made later (reconcile lookups).
    pub(crate) fn allowlist(&self) -> Arc<TargetAllowlist> {
        Arc::clone(&self.allow)
    }

    /// Parses and checks the target in request field `field`; the parsed URL
    /// is the one to call.
    pub(crate) fn check(&self, field: &str, url: &str) -> Result<TargetUrl, ToolError> {
        let target = TargetUrl::parse(url).map_err(|e| e.to_tool_error().detail("field", field))?;
        self.allow.check_url(&target).map_err(|e| {
            let host = target.host();
            let hint = format!(
                "; start the gateway with --allow-target PATTERN to allow it \
                 (e.g. --allow-target '{host}' or --allow-target 'https://{host}/*')"
            );
            refusal(&e, &hint).detail("field", field)
        })?;
        Ok(target)
    }

    /// Checks a reconcile URL template: every lookup it can produce must be allowed.
    pub(crate) fn check_template(&self, template: &str) -> Result<(), ToolError> {
        self.allow.check_template(template).map_err(|e| {
            let hint = "; a placeholder may stand only where an --allow-target pattern has `*`";
            refusal(&e, hint).detail("field", "reconcile")
        })
    }
}

/// `error`'s envelope, its message extended with `hint` when the target was not allowed.
fn refusal(error: &recourse::target::TargetError, hint: &str) -> ToolError {
    let mut envelope = error.to_tool_error();
    if error.kind() == recourse::target::TargetErrorKind::NotAllowed {
        envelope.message.push_str(hint);
    }
    envelope
}

/// One `--allow-mcp-command` pattern: a program, named exactly, and argument
/// patterns: a literal argument, `*` for exactly one argument, and a trailing
/// `**` for any remaining ones. Words split as a POSIX shell splits them
/// (quotes, backslashes), so `'*'` is a wildcard too: an argument that is
/// literally `*` cannot be allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CommandPattern {
    program: String,
    args: Vec<ArgPattern>,
    /// A trailing `**`: any further arguments.
    rest: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum ArgPattern {
    Exact(String),
    One,
}

impl CommandPattern {
    /// Parses a pattern.
    ///
    /// # Errors
    /// An empty or unclosed command line, a program with `*`, `**` before
    /// the end, or `*` inside an argument.
    pub(crate) fn new(pattern: &str) -> Result<Self, String> {
        let bad = |why: &str| format!("--allow-mcp-command {pattern:?}: {why}");
        let McpTarget::Command { program, args, .. } =
            McpTarget::command_line(pattern).map_err(|e| bad(&e.to_string()))?
        else {
            return Err(bad("not a command line"));
        };
        if program.contains('*') {
            return Err(bad("the program must be named exactly"));
        }
        let rest = args.last().is_some_and(|a| a == "**");
        let fixed = &args[..args.len() - usize::from(rest)];
        let args = fixed
            .iter()
            .map(|a| match a.as_str() {
                "*" => Ok(ArgPattern::One),
                "**" => Err(bad("`**` may only be the last word")),
                a if a.contains('*') => Err(bad(&format!(
                    "`*` stands for a whole argument, so {a:?} cannot be matched"
                ))),
                a => Ok(ArgPattern::Exact(a.to_owned())),
            })
            .collect::<Result<_, _>>()?;
        Ok(Self {
            program,
            args,
            rest,
        })
    }

    /// Whether a command line of `program` and `args` matches.
    pub(crate) fn matches(&self, program: &str, args: &[String]) -> bool {
        let count_ok = if self.rest {
            args.len() >= self.args.len()
        } else {
            args.len() == self.args.len()
        };
        program == self.program
            && count_ok
            && self.args.iter().zip(args).all(|(p, a)| match p {
                ArgPattern::One => true,
                ArgPattern::Exact(e) => e == a,
            })
    }
}

/// Checks the `--mcp-env` names: real variable names, and never the
/// gateway's own token.
pub(crate) fn check_mcp_env(names: &[String]) -> Result<(), String> {
    if names.iter().any(|n| n == "RECOURSE_GATEWAY_TOKEN") {
        return Err(
            "--mcp-env RECOURSE_GATEWAY_TOKEN: the gateway's token is never passed to MCP servers"
                .to_owned(),
        );
    }
    McpTarget::command_line("x")
        .and_then(|t| t.with_pass_env(names.iter().cloned()))
        .map(|_| ())
        .map_err(|e| format!("--mcp-env: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> (String, Vec<String>) {
        match McpTarget::command_line(line).unwrap() {
            McpTarget::Command { program, args, .. } => (program, args),
            McpTarget::Url(_) => unreachable!(),
        }
    }

    fn allows(pattern: &str, line: &str) -> bool {
        let (program, args) = words(line);
        CommandPattern::new(pattern)
            .unwrap()
            .matches(&program, &args)
    }

    #[test]
    fn command_patterns_match_whole_command_lines() {
        let fs = "node /opt/servers/fs.js *";
        assert!(allows(fs, "node /opt/servers/fs.js /srv/data"));
        assert!(!allows(fs, "node /opt/servers/fs.js"));
        assert!(!allows(fs, "node /opt/servers/fs.js /srv /etc"));
        assert!(!allows(
            fs,
            "node -e 'require(\"fs\").writeFileSync(\"x\", \"\")'"
        ));
        assert!(!allows(fs, "/usr/bin/node /opt/servers/fs.js /srv"));
        let rest = "uvx mcp-server-time **";
        assert!(allows(rest, "uvx mcp-server-time"));
        assert!(allows(rest, "uvx mcp-server-time --local-timezone UTC"));
        assert!(!allows(rest, "uvx other"));
        assert!(allows(
            "'/opt/my server' * --ro **",
            "'/opt/my server' a --ro"
        ));
        assert!(!allows(
            "'/opt/my server' * --ro **",
            "'/opt/my server' a --rw"
        ));
    }

    #[test]
    fn a_bare_program_allows_it_only_without_arguments() {
        assert!(allows("mcp-server-time", "mcp-server-time"));
        assert!(!allows(
            "mcp-server-time",
            "mcp-server-time --local-timezone UTC"
        ));
        assert!(!allows("node", "node -e 'process.exit(0)'"));
    }

    #[test]
    fn ambiguous_command_patterns_are_refused() {
        for (bad, why) in [
            ("", "empty"),
            ("node 'x", "unclosed"),
            ("no*de x", "named exactly"),
            ("node ** x", "last word"),
            ("node --root=*", "whole argument"),
        ] {
            let err = CommandPattern::new(bad).unwrap_err();
            assert!(err.contains(why), "{bad:?}: {err}");
        }
    }

    #[test]
    fn mcp_env_names_are_checked() {
        assert!(check_mcp_env(&["MCP_ROOT".into()]).is_ok());
        assert!(check_mcp_env(&["A=B".into()]).is_err());
        assert!(check_mcp_env(&["RECOURSE_GATEWAY_TOKEN".into()]).is_err());
    }

    #[test]
    fn refusals_name_the_field_and_the_flag() {
        let targets = Targets::new(&["*.example.invalid".into()]).unwrap();
        let err = targets
            .check("url", r"http://192.0.2.2:9101\@127.0.0.1:9101/ok")
            .unwrap_err();
        assert_eq!(err.code, "TARGET_NOT_ALLOWED");
        assert!(err.message.contains("--allow-target"), "{}", err.message);
        assert_eq!(err.detail_str("field"), Some("url"));
        let err = targets.check("mcp", "gopher://x").unwrap_err();
        assert_eq!(
            (err.code.as_str(), err.http_status()),
            ("INVALID_TARGET", 400)
        );
        assert!(Targets::new(&["api.*.invalid".into()]).is_err());
        assert!(targets.check("url", "http://a.example.invalid/x").is_ok());
    }

    #[test]
    fn remembered_targets_are_the_checked_ones() {
        let targets = Targets::new(&["*.example.invalid".into()]).unwrap();
        let bypass = r"http://192.0.2.2:9101\@127.0.0.1:9101/ok";
        for _ in 0..2 {
            let err = targets.call_target("url", bypass).unwrap_err();
            assert_eq!(err.code, "TARGET_NOT_ALLOWED");
        }
        let first = targets
            .call_target("url", "HTTP://a.example.invalid:80/x/../y")
            .unwrap();
        let again = targets
            .call_target("url", "HTTP://a.example.invalid:80/x/../y")
            .unwrap();
        assert_eq!(first, again);
        assert_eq!(again.as_str(), "http://a.example.invalid/y");
        for i in 0..(REMEMBERED_TARGETS + 10) {
            let url = format!("http://a.example.invalid/{i}");
            assert_eq!(targets.call_target("url", &url).unwrap().as_str(), url);
        }
        assert!(targets.lock().len() <= REMEMBERED_TARGETS);
    }
}
