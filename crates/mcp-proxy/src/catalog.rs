//! The tools a proxy offers: each upstream's, by the name the client calls
//! it (its own with one upstream, `NAME__TOOL` with several), with the
//! policy the operator declared for it.

use std::collections::HashMap;

use recourse::correction::Schema;
use recourse_mcp::McpTool;
use serde_json::Value;

use crate::error::ProxyError;
use crate::policy::{ToolPolicies, ToolPolicy};
use crate::upstream::offered_name;

/// One tool as offered to the client.
#[derive(Debug, Clone)]
pub(crate) struct Offered {
    /// The name the client calls it by.
    pub(crate) name: String,
    /// Which upstream has it (an index into the proxy's upstreams).
    pub(crate) upstream: usize,
    /// The tool as its upstream describes it, by the upstream's name for it.
    pub(crate) tool: McpTool,
    /// The tool as its upstream listed it, every field kept, renamed to `name`.
    pub(crate) listed: Value,
    /// Its `outputSchema`, when it declares a usable one.
    pub(crate) output: Option<Schema>,
    /// What the operator's policy file says of it.
    pub(crate) policy: Option<ToolPolicy>,
}

/// Every offered tool, in the upstreams' order and each upstream's.
#[derive(Debug, Default)]
pub(crate) struct Catalog {
    tools: Vec<Offered>,
    index: HashMap<String, usize>,
}

impl Catalog {
    /// Adds the tools upstream `upstream` (named `prefix`, when tools are
    /// offered under their upstream's name) listed, and described.
    pub(crate) fn add(
        &mut self,
        upstream: usize,
        prefix: Option<&str>,
        listed: Vec<Value>,
        described: &[McpTool],
    ) -> Result<(), ProxyError> {
        for mut entry in listed {
            let own = entry["name"].as_str().unwrap_or_default().to_owned();
            let Some(tool) = described.iter().find(|t| t.name == own) else {
                return Err(ProxyError::unreachable(format!(
                    "the tool {own:?} changed while it was being listed; start again"
                )));
            };
            let name = offered_name(prefix, &own);
            if self.index.contains_key(&name) {
                return Err(ProxyError::config(format!(
                    "two tools would be offered as {name:?}: an upstream lists it twice"
                )));
            }
            entry["name"] = Value::String(name.clone());
            let output = entry
                .get("outputSchema")
                .filter(|schema| schema.is_object())
                .and_then(|schema| Schema::compile(schema).ok());
            self.index.insert(name.clone(), self.tools.len());
            self.tools.push(Offered {
                name,
                upstream,
                tool: tool.clone(),
                listed: entry,
                output,
                policy: None,
            });
        }
        Ok(())
    }

    /// The tool offered as `name`.
    pub(crate) fn find(&self, name: &str) -> Option<&Offered> {
        self.index.get(name).map(|&i| &self.tools[i])
    }

    /// The tool offered as `name`, to give it a policy.
    pub(crate) fn find_mut(&mut self, name: &str) -> Option<&mut Offered> {
        self.index.get(name).map(|&i| &mut self.tools[i])
    }

    /// Every offered tool.
    pub(crate) fn tools(&self) -> &[Offered] {
        &self.tools
    }

    /// Gives each tool its policy; a verification's read is aimed at the
    /// upstream's own name for it.
    ///
    /// # Errors
    /// A tool no upstream offers, or a verification reading a tool that is
    /// not offered, is on another upstream, or is the write itself.
    pub(crate) fn apply(&mut self, policies: ToolPolicies) -> Result<(), ProxyError> {
        for (name, mut policy) in policies.into_tools() {
            let Some(offered) = self.find(&name) else {
                return Err(ProxyError::config(format!(
                    "the policy file names the tool {name:?}, which no upstream offers (offered: {})",
                    self.names().join(", ")
                )));
            };
            if let Some(verify) = &mut policy.verify {
                let read = verify.tool.clone().unwrap_or_default();
                let upstream = offered.upstream;
                let Some(reader) = self.find(&read) else {
                    return Err(ProxyError::config(format!(
                        "tools.{name}.verify: the tool {read:?} is not offered (offered: {})",
                        self.names().join(", ")
                    )));
                };
                if reader.upstream != upstream || reader.name == name {
                    return Err(ProxyError::config(format!(
                        "tools.{name}.verify: the read {read:?} must be another tool of the same upstream"
                    )));
                }
                verify.tool = Some(reader.tool.name.clone());
            }
            if let Some(offered) = self.find_mut(&name) {
                offered.policy = Some(policy);
            }
        }
        Ok(())
    }

    /// The offered names, for messages.
    pub(crate) fn names(&self) -> Vec<&str> {
        self.tools.iter().map(|t| t.name.as_str()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn described(name: &str) -> McpTool {
        McpTool {
            name: name.into(),
            description: None,
            input_schema: json!({"type": "object"}),
            idempotent_hint: None,
            destructive_hint: None,
            read_only_hint: None,
        }
    }

    #[test]
    fn tools_keep_every_field_and_take_their_offered_name() {
        let mut catalog = Catalog::default();
        let listed = json!({"name": "read", "title": "Read", "inputSchema": {"type": "object"},
                            "outputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true},
                            "_meta": {"x": 1}});
        catalog
            .add(1, Some("fs"), vec![listed.clone()], &[described("read")])
            .unwrap();
        let offered = catalog.find("fs__read").unwrap();
        assert_eq!(offered.upstream, 1);
        assert_eq!(offered.tool.name, "read");
        let mut expected = listed;
        expected["name"] = json!("fs__read");
        assert_eq!(offered.listed, expected);
        assert!(catalog.find("read").is_none());
    }

    #[test]
    fn a_name_offered_twice_is_refused() {
        let mut catalog = Catalog::default();
        let tool = json!({"name": "t", "inputSchema": {"type": "object"}});
        let err = catalog
            .add(0, None, vec![tool.clone(), tool], &[described("t")])
            .unwrap_err();
        assert!(err.to_string().contains("\"t\""), "{err}");
    }

    #[test]
    fn a_policy_names_offered_tools_and_reads_on_the_same_upstream() {
        let mut catalog = Catalog::default();
        let listed = |name: &str| json!({"name": name, "inputSchema": {"type": "object"}});
        let both = [described("write"), described("read")];
        for (i, prefix) in [(0, "a"), (1, "b")] {
            catalog
                .add(
                    i,
                    Some(prefix),
                    vec![listed("write"), listed("read")],
                    &both,
                )
                .unwrap();
        }
        let policy = |text: &str| ToolPolicies::from_json(text.as_bytes()).unwrap();
        let verify = |write: &str, read: &str| {
            policy(&format!(
                r#"{{"tools": {{"{write}": {{"verify": {{"tool": "{read}", "expect": ["/x exists"]}}}}}}}}"#
            ))
        };
        let err = catalog
            .apply(policy(r#"{"tools": {"write": {}}}"#))
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("\"write\", which no upstream offers"),
            "{err}"
        );
        for (write, read, says) in [
            ("a__write", "b__read", "same upstream"),
            ("a__write", "a__write", "another tool"),
            ("a__write", "a__nope", "\"a__nope\" is not offered"),
        ] {
            let err = catalog.apply(verify(write, read)).unwrap_err();
            assert!(err.to_string().contains(says), "{write} {read}: {err}");
        }
        catalog.apply(verify("a__write", "a__read")).unwrap();
        let policy = catalog.find("a__write").unwrap().policy.as_ref().unwrap();
        let read = policy.verify.as_ref().unwrap().tool.as_deref();
        assert_eq!(read, Some("read"), "the upstream's own name is called");
    }
}
