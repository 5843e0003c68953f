//! What `tools/list` says about one tool, and how much of it a call may trust.
//!
//! # What the annotations are evidence of
//!
//! MCP tool annotations (`readOnlyHint`, `idempotentHint`, `destructiveHint`)
//! are the tool's own declaration of whether a call may be repeated. They
//! rank below the caller's word and above the default (see
//! [`recourse::idempotency::Idempotency`]): `readOnlyHint: true` or `idempotentHint: true`
//! declare a call idempotent; `idempotentHint: false`, or `destructiveHint:
//! true` without `idempotentHint: true`, declare it not; a tool without these
//! hints declares nothing, and an undeclared MCP call is not idempotent — as
//! the specification's own defaults say. A caller who knows better says so,
//! and wins either way.

use recourse::CallBuilder;
use recourse::correction::Schema;
use recourse::idempotency::Evidence;
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

    /// What the tool's hints declare about repeating a call: `Some(true)`
    /// for `readOnlyHint: true` or `idempotentHint: true`, `Some(false)` for
    /// `idempotentHint: false` or `destructiveHint: true` without
    /// `idempotentHint: true`, `None` without hints.
    ///
    /// ```
    /// use recourse_mcp::McpTool;
    /// use serde_json::json;
    ///
    /// let mut tool = McpTool { name: "write".into(), description: None, input_schema: json!({"type": "object"}),
    ///     idempotent_hint: None, destructive_hint: None, read_only_hint: None };
    /// assert_eq!(tool.declared_idempotent(), None);
    /// tool.destructive_hint = Some(true);
    /// assert_eq!(tool.declared_idempotent(), Some(false));
    /// tool.read_only_hint = Some(true);
    /// assert_eq!(tool.declared_idempotent(), Some(true));
    /// ```
    pub fn declared_idempotent(&self) -> Option<bool> {
        if self.read_only_hint == Some(true) || self.idempotent_hint == Some(true) {
            return Some(true);
        }
        if self.idempotent_hint == Some(false) || self.destructive_hint == Some(true) {
            return Some(false);
        }
        None
    }

    /// `call` aimed at this tool: its name as the target, its input schema
    /// (unless the caller gave one; a schema the server sent that is not
    /// usable JSON Schema is left out, so the call runs without coercion or
    /// repair rather than not at all), and what its hints declare about
    /// repeating it.
    #[must_use]
    pub fn prepare(&self, call: CallBuilder) -> CallBuilder {
        let mut call = call.retarget(self.name.clone());
        if let Some(idempotent) = self.declared_idempotent() {
            call = call.declared_by_tool(idempotent, Evidence::McpAnnotation);
        }
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
    fn hints_declare_only_when_given_and_the_caller_outranks_them() {
        assert_eq!(tool(None, None, None).declared_idempotent(), None);
        assert_eq!(tool(None, Some(false), None).declared_idempotent(), None);
        assert_eq!(
            tool(Some(true), Some(true), None).declared_idempotent(),
            Some(true)
        );
        assert_eq!(
            tool(None, None, Some(true)).declared_idempotent(),
            Some(true)
        );
        assert_eq!(
            tool(Some(false), None, None).declared_idempotent(),
            Some(false)
        );
        assert_eq!(
            tool(None, Some(true), None).declared_idempotent(),
            Some(false)
        );
        let unannotated = tool(None, None, None)
            .prepare(recourse::Call::builder("x", json!({})))
            .build()
            .unwrap();
        assert_eq!(
            unannotated.idempotency(),
            recourse::idempotency::Idempotency {
                idempotent: false,
                from: Evidence::Default
            }
        );
        let annotated = tool(None, None, Some(true))
            .prepare(recourse::Call::builder("x", json!({})))
            .build()
            .unwrap();
        assert_eq!(annotated.idempotency().from, Evidence::McpAnnotation);
        let caller = tool(None, None, Some(true))
            .prepare(recourse::Call::builder("x", json!({})).non_idempotent())
            .build()
            .unwrap();
        assert_eq!(caller.idempotency().from, Evidence::Caller);
        assert!(!caller.traits().idempotent);
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
