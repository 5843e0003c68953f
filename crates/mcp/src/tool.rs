//! What `tools/list` says about one tool, and how much of it a call may trust.
//!
//! # Why hints can only make a call more careful
//!
//! MCP tool annotations (`readOnlyHint`, `idempotentHint`, `destructiveHint`)
//! are written by the server, and the specification itself calls them
//! untrusted. Treating a call as idempotent lets the executor resend it after a
//! dropped connection, so a server that wrongly claimed `idempotentHint: true`
//! could make recourse repeat a write. The caller's declaration is therefore the
//! ceiling: a hint may downgrade an idempotent call to non-idempotent (a server
//! that says its tool is not idempotent, or destructive without being
//! idempotent, is believed), but nothing a server says can upgrade a call the
//! caller declared non-idempotent. Absent hints change nothing.

use recourse::{CallBuilder, Schema, Traits};
use serde_json::Value;

/// One MCP tool, as the server's `tools/list` described it.
#[derive(Debug, Clone, PartialEq)]
pub struct McpTool {
    /// The tool's name (what `tools/call` takes).
    pub name: String,
    /// What it does, as the server put it.
    pub description: Option<String>,
    /// Its input JSON Schema (feeds coercion, repair and correction).
    pub input_schema: Value,
    /// `annotations.idempotentHint`, if the server gave one.
    pub idempotent_hint: Option<bool>,
    /// `annotations.destructiveHint`, if the server gave one.
    pub destructive_hint: Option<bool>,
    /// `annotations.readOnlyHint`, if the server gave one.
    pub read_only_hint: Option<bool>,
}

impl McpTool {
    pub(crate) fn from_rmcp(tool: &rmcp::model::Tool) -> Self {
        let annotations = tool.annotations.as_ref();
        Self {
            name: tool.name.to_string(),
            description: tool.description.as_ref().map(|d| d.to_string()),
            input_schema: Value::Object((*tool.input_schema).clone()),
            idempotent_hint: annotations.and_then(|a| a.idempotent_hint),
            destructive_hint: annotations.and_then(|a| a.destructive_hint),
            read_only_hint: annotations.and_then(|a| a.read_only_hint),
        }
    }

    /// Whether the server's hints say repeating a call may not be harmless.
    ///
    /// Read-only tools never are; otherwise an explicit `idempotentHint: false`,
    /// or `destructiveHint: true` without `idempotentHint: true`, says so.
    pub fn hints_not_idempotent(&self) -> bool {
        if self.read_only_hint == Some(true) {
            return false;
        }
        self.idempotent_hint == Some(false)
            || (self.destructive_hint == Some(true) && self.idempotent_hint != Some(true))
    }

    /// `traits`, made more careful where the hints say so, never less.
    ///
    /// ```
    /// use recourse::Traits;
    /// use recourse_mcp::McpTool;
    /// use serde_json::json;
    ///
    /// let mut tool = McpTool { name: "write".into(), description: None, input_schema: json!({"type": "object"}),
    ///     idempotent_hint: Some(true), destructive_hint: None, read_only_hint: None };
    /// let declared_non_idempotent = Traits { idempotent: false, ..Traits::default() };
    /// assert!(!tool.tighten(declared_non_idempotent).idempotent); // a hint never loosens
    /// tool.idempotent_hint = Some(false);
    /// assert!(!tool.tighten(Traits::default()).idempotent); // but it may tighten
    /// ```
    #[must_use]
    pub fn tighten(&self, mut traits: Traits) -> Traits {
        if self.hints_not_idempotent() {
            traits.idempotent = false;
        }
        traits
    }

    /// `call` aimed at this tool: its name as the target, its input schema
    /// (unless the caller gave one; a schema the server sent that is not
    /// usable JSON Schema is left out, so the call runs without coercion or
    /// repair rather than not at all), and traits tightened by its hints.
    #[must_use]
    pub fn prepare(&self, call: CallBuilder) -> CallBuilder {
        let traits = self.tighten(call.declared_traits());
        let mut call = call.retarget(self.name.clone()).traits(traits);
        if !call.has_schema() {
            match Schema::compile(&self.input_schema) {
                Ok(schema) => call = call.compiled_schema(schema),
                Err(e) => {
                    tracing::warn!(tool = %self.name, error = %e, "ignoring the tool's input schema")
                }
            }
        }
        if !call.has_capability() {
            call = call.capability(self.name.clone());
        }
        call
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(idem: Option<bool>, destr: Option<bool>, ro: Option<bool>) -> McpTool {
        McpTool {
            name: "t".into(),
            description: None,
            input_schema: json!({"type": "object"}),
            idempotent_hint: idem,
            destructive_hint: destr,
            read_only_hint: ro,
        }
    }

    #[test]
    fn hints_never_loosen_and_only_explicit_ones_tighten() {
        let careful = Traits {
            idempotent: false,
            ..Traits::default()
        };
        let hints = [None, Some(false), Some(true)];
        for i in hints {
            for d in hints {
                for r in hints {
                    let t = tool(i, d, r);
                    assert!(
                        !t.tighten(careful).idempotent,
                        "{t:?} loosened a declaration"
                    );
                }
            }
        }
        let trusting = Traits::default();
        assert!(tool(None, None, None).tighten(trusting).idempotent);
        assert!(
            tool(Some(true), Some(true), None)
                .tighten(trusting)
                .idempotent
        );
        assert!(tool(None, None, Some(true)).tighten(trusting).idempotent);
        assert!(!tool(Some(false), None, None).tighten(trusting).idempotent);
        assert!(!tool(None, Some(true), None).tighten(trusting).idempotent);
    }

    #[test]
    fn prepare_sets_target_schema_and_keeps_delegation() {
        let call = recourse::Call::builder("ignored", json!({})).delegated();
        let prepared = tool(Some(false), None, None).prepare(call).build().unwrap();
        assert_eq!(prepared.target().as_str(), "t");
        assert_eq!(
            prepared.schema().map(Schema::raw),
            Some(&json!({"type": "object"}))
        );
        assert!(prepared.traits().delegated);
        assert!(!prepared.traits().idempotent);
        assert_eq!(prepared.capability(), Some("t"));
    }

    #[test]
    fn a_callers_schema_wins_and_a_broken_server_schema_is_left_out() {
        let mine = json!({"type": "object", "properties": {"a": {"type": "integer"}}});
        let call = recourse::Call::builder("x", json!({})).schema(mine.clone());
        let prepared = tool(None, None, None).prepare(call).build().unwrap();
        assert_eq!(prepared.schema().map(Schema::raw), Some(&mine));
        let mut broken = tool(None, None, None);
        broken.input_schema = json!({"type": 12});
        let prepared = broken
            .prepare(recourse::Call::builder("x", json!({})))
            .build()
            .unwrap();
        assert!(prepared.schema().is_none());
    }
}
