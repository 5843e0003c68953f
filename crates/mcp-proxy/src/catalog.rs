//! The tools a proxy offers: each upstream's, by the name the client calls
//! it (its own with one upstream, `NAME__TOOL` with several), with the
//! policy the operator declared for it.

use std::collections::HashMap;

use recourse_mcp::McpTool;
use serde_json::Value;

use crate::error::ProxyError;
use crate::policy::ToolPolicy;
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
            self.index.insert(name.clone(), self.tools.len());
            self.tools.push(Offered {
                name,
                upstream,
                tool: tool.clone(),
                listed: entry,
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
}
