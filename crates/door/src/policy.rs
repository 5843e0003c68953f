//! The operator's word on each MCP tool: [`ToolPolicies`], read from a
//! policy file — `recourse mcp proxy --tools FILE`, and the gateway's
//! `serve --mcp-policy 'PATTERN=FILE'` for the servers it may start, so a
//! tool that waits for a person is held at both doors.
//!
//! # Why a file, and why it is strict
//!
//! Whether a tool may be called twice is the fact every decision about a
//! failed write turns on, and the tool's own annotations are often missing
//! (MCP's default is then "not idempotent", so a read that lacks them is
//! never resent) or wrong. The person who configures the proxy knows their
//! tools; the file is where they say so, and how to read a write back when
//! its answer is lost. A typo there would silently change what is resent,
//! so every unknown key, every tool no upstream offers, and every
//! verification that could never run is an error at startup, named.

use std::path::Path;

use recourse::VerifySpec;
use recourse::approval::ApprovalSpec;
use serde::Deserialize;
use serde_json::Value;

/// A policy file that cannot be used, and where in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyError(String);

impl PolicyError {
    fn config(message: impl Into<String>) -> Self {
        Self(message.into())
    }

    fn caused_by(self, source: impl std::fmt::Display) -> Self {
        Self(format!("{}: {source}", self.0))
    }
}

impl std::fmt::Display for PolicyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PolicyError {}

/// What the policy file declares for one tool.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolPolicy {
    /// Whether a call may be sent twice; unset, the tool's annotations decide.
    #[serde(default)]
    pub idempotent: Option<bool>,
    /// How to read a write back (an MCP tool of the same upstream).
    #[serde(default)]
    pub verify: Option<VerifySpec>,
    /// JSON Pointers into the arguments no correction may change.
    #[serde(default)]
    pub protect: Vec<String>,
    /// Same-payload resends at most, for this tool.
    #[serde(default)]
    pub max_retries: Option<u32>,
    /// A person approves each call before it is sent (on a gateway sharing
    /// the journal): why, and how long they have.
    #[serde(default)]
    pub approval: Option<ApprovalSpec>,
}

/// The policy file: `{"tools": {"NAME": {"idempotent", "verify", "protect",
/// "max_retries", "approval"}}}`, each key optional, NAME as the proxy
/// offers the tool. `approval` (`{"reason", "expires_in"?}`) holds each call
/// for a person's decision on a gateway sharing the journal (see `ask`).
///
/// ```
/// use recourse_door::ToolPolicies;
///
/// let file = br#"{"tools": {
///     "exports_create": {
///         "idempotent": false,
///         "verify": {"tool": "exports_lookup",
///                    "args": {"source_id": "{{payload.source_id}}", "format": "{{payload.format}}"},
///                    "expect": ["/latest exists"]},
///         "protect": ["/source_id"],
///         "max_retries": 1
///     },
///     "get_current_time": {"idempotent": true},
///     "orders_refund": {"approval": {"reason": "moves money", "expires_in": "4h"}}
/// }}"#;
/// let policies = ToolPolicies::from_json(file).unwrap();
/// assert_eq!(policies.names(), ["exports_create", "get_current_time", "orders_refund"]);
/// assert_eq!(policies.needing_approval(), ["orders_refund"]);
///
/// let typo = br#"{"tools": {"exports_create": {"idempotnt": false}}}"#;
/// let err = ToolPolicies::from_json(typo).unwrap_err().to_string();
/// assert!(err.contains("exports_create") && err.contains("idempotnt"), "{err}");
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolPolicies {
    tools: Vec<(String, ToolPolicy)>,
}

impl ToolPolicies {
    /// The keys a tool's entry may have, as the file spells them.
    pub const KEYS: [&'static str; 5] =
        ["idempotent", "verify", "protect", "max_retries", "approval"];

    /// Reads the policy file at `path`.
    ///
    /// # Errors
    /// The file cannot be read, or as [`from_json`](Self::from_json), each
    /// naming the file.
    pub fn read(path: &Path) -> Result<Self, PolicyError> {
        let bytes = std::fs::read(path)
            .map_err(|e| PolicyError::config(path.display().to_string()).caused_by(e))?;
        Self::from_json(&bytes).map_err(|e| PolicyError::config(format!("{}: {e}", path.display())))
    }

    /// Reads a policy file's bytes.
    ///
    /// # Errors
    /// Not JSON; not `{"tools": {…}}`; a key no policy has (named, with its
    /// tool); a value of the wrong type; a protected pointer that is not a
    /// JSON Pointer; a verification that reads a URL rather than a tool, or
    /// that could never run (no expectation, a malformed one, a template
    /// that reads anything but `{{payload.…}}`).
    pub fn from_json(bytes: &[u8]) -> Result<Self, PolicyError> {
        let file: Value = serde_json::from_slice(bytes)
            .map_err(|e| PolicyError::config("the policy file is not JSON").caused_by(e))?;
        let Value::Object(mut top) = file else {
            return Err(PolicyError::config(
                "the policy file must be an object: {\"tools\": {\"NAME\": {…}}}",
            ));
        };
        if let Some(unknown) = top.keys().find(|k| *k != "tools") {
            return Err(PolicyError::config(format!(
                "the policy file has an unknown key {unknown:?} (it holds only \"tools\")"
            )));
        }
        let tools = match top.remove("tools") {
            Some(Value::Object(tools)) => tools,
            None => serde_json::Map::new(),
            Some(_) => {
                return Err(PolicyError::config(
                    "\"tools\" must be an object: {\"NAME\": {…}}",
                ));
            }
        };
        let tools = tools
            .into_iter()
            .map(|(name, policy)| {
                let policy = read_policy(&name, policy)?;
                Ok((name, policy))
            })
            .collect::<Result<_, PolicyError>>()?;
        Ok(Self { tools })
    }

    /// The tools it names, in the file's order.
    pub fn names(&self) -> Vec<&str> {
        self.tools.iter().map(|(name, _)| name.as_str()).collect()
    }

    /// The tools whose calls wait for a person's approval.
    pub fn needing_approval(&self) -> Vec<&str> {
        self.tools
            .iter()
            .filter(|(_, policy)| policy.approval.is_some())
            .map(|(name, _)| name.as_str())
            .collect()
    }

    /// Each tool's policy, by the name the file gives it.
    pub fn tools(&self) -> &[(String, ToolPolicy)] {
        &self.tools
    }

    /// The policy of the tool named `name`, if the file names it.
    pub fn get(&self, name: &str) -> Option<&ToolPolicy> {
        self.tools.iter().find(|(n, _)| n == name).map(|(_, p)| p)
    }
}

/// One tool's policy, checked as far as it can be without the upstreams.
fn read_policy(name: &str, value: Value) -> Result<ToolPolicy, PolicyError> {
    let policy: ToolPolicy = serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let at = if path == "." {
            String::new()
        } else {
            format!(".{path}")
        };
        PolicyError::config(format!("tools.{name}{at}: {}", e.into_inner()))
    })?;
    for pointer in &policy.protect {
        recourse::protect::validate_pointer(pointer).map_err(|e| {
            PolicyError::config(format!(
                "tools.{name}.protect: {pointer:?}: {}",
                e.problem()
            ))
        })?;
    }
    if let Some(approval) = &policy.approval {
        approval
            .required()
            .map_err(|e| PolicyError::config(format!("tools.{name}.{e}")))?;
    }
    if let Some(verify) = &policy.verify {
        if verify.url.is_some() || verify.tool.is_none() {
            return Err(PolicyError::config(format!(
                "tools.{name}.verify: the proxy reads a write back through a tool of the same \
                 upstream: give \"tool\" (not \"url\")"
            )));
        }
        verify
            .check()
            .map_err(|e| PolicyError::config(format!("tools.{name}.verify: {}", e.problem())))?;
    }
    Ok(policy)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem(text: &str) -> String {
        ToolPolicies::from_json(text.as_bytes())
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn every_mistake_is_named_where_it_is() {
        for (file, says) in [
            ("", "not JSON"),
            ("[]", "must be an object"),
            (r#"{"tool": {}}"#, "\"tool\""),
            (r#"{"tools": []}"#, "\"tools\" must be an object"),
            (
                r#"{"tools": {"w": {"idempotent": "yes"}}}"#,
                "tools.w.idempotent",
            ),
            (r#"{"tools": {"w": {"idempotnt": true}}}"#, "idempotnt"),
            (
                r#"{"tools": {"w": {"max_retries": -1}}}"#,
                "tools.w.max_retries",
            ),
            (
                r#"{"tools": {"w": {"protect": ["amount"]}}}"#,
                "tools.w.protect: \"amount\"",
            ),
            (
                r#"{"tools": {"w": {"verify": {"tool": "r", "expect": [], "tol": 1}}}}"#,
                "tol",
            ),
            (
                r#"{"tools": {"w": {"verify": {"tool": "r", "expect": []}}}}"#,
                "tools.w.verify",
            ),
            (
                r#"{"tools": {"w": {"verify": {"url": "http://127.0.0.1/r", "expect": ["/a exists"]}}}}"#,
                "give \"tool\"",
            ),
            (
                r#"{"tools": {"w": {"verify": {"tool": "r", "args": {"id": "{{steps.x}}"}, "expect": ["/a exists"]}}}}"#,
                "tools.w.verify",
            ),
        ] {
            let text = problem(file);
            assert!(text.contains(says), "{file}: {text}");
        }
        for (file, says) in [
            (
                r#"{"tools": {"w": {"approval": {"reason": "r", "expires_in": "soon"}}}}"#,
                "tools.w.approval.expires_in",
            ),
            (
                r#"{"tools": {"w": {"approval": {"reason": "  "}}}}"#,
                "tools.w.approval.reason",
            ),
            (
                r#"{"tools": {"w": {"approval": {"reason": "r", "expires_in": "90d"}}}}"#,
                "tools.w.approval.expires_in",
            ),
            (
                r#"{"tools": {"w": {"approval": {"reason": "r", "why": "x"}}}}"#,
                "why",
            ),
            (r#"{"tools": {"w": {"approval": {}}}}"#, "tools.w.approval"),
        ] {
            let text = problem(file);
            assert!(text.contains(says), "{file}: {text}");
        }
        let typo = problem(r#"{"tools": {"w": {"idempotnt": true}}}"#);
        assert!(typo.starts_with("tools.w"), "{typo}");
    }

    #[test]
    fn the_keys_are_every_key_of_a_tools_entry() {
        let typo = problem(r#"{"tools": {"w": {"idempotnt": true}}}"#);
        let expected = typo.split("expected one of").nth(1).unwrap_or_default();
        let named: Vec<&str> = expected.split('`').skip(1).step_by(2).collect();
        assert_eq!(named, ToolPolicies::KEYS, "{typo}");
    }

    #[test]
    fn an_empty_file_declares_nothing() {
        assert!(ToolPolicies::from_json(b"{}").unwrap().names().is_empty());
        let p = ToolPolicies::from_json(br#"{"tools": {"w": {}}}"#).unwrap();
        assert_eq!(p.tools[0].1, ToolPolicy::default());
    }
}
