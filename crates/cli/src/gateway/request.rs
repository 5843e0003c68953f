//! The body of `POST /v1/calls`, and how it becomes a [`Call`].

use std::sync::Arc;
use std::time::Duration;

use recourse::{Call, ExecutorConfig, HttpReconciler, TargetAllowlist, validate_pointer};
use recourse_tool::protocol::ToolError;
use serde::Deserialize;
use serde_json::Value;

/// What a client asks the gateway to call.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CallRequest {
    pub(crate) url: Option<String>,
    pub(crate) mcp: Option<Value>,
    pub(crate) payload: Value,
    #[serde(default)]
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) schema: Option<Value>,
    #[serde(default)]
    pub(crate) protect: Vec<String>,
    pub(crate) idempotent: Option<bool>,
    #[serde(default)]
    pub(crate) delegated: bool,
    pub(crate) reconcile: Option<String>,
    pub(crate) intent: Option<String>,
    pub(crate) max_retries: Option<u32>,
    pub(crate) max_corrections: Option<u32>,
    pub(crate) deadline_secs: Option<f64>,
}

fn invalid(field: &str, message: impl Into<String>) -> ToolError {
    ToolError::input_error("INVALID_CALL", message).detail("field", field)
}

impl CallRequest {
    /// The executor configuration for this request: the gateway's, with the
    /// request's own limits.
    pub(crate) fn config(&self, base: &ExecutorConfig) -> Result<ExecutorConfig, ToolError> {
        let mut config = base.clone();
        if let Some(n) = self.max_retries {
            config.limits.max_retries = n;
        }
        if let Some(n) = self.max_corrections {
            config.limits.max_corrections = n;
        }
        if let Some(secs) = self.deadline_secs {
            if !(secs.is_finite() && secs > 0.0 && secs <= 3600.0) {
                return Err(invalid(
                    "deadline_secs",
                    "deadline_secs must be in (0, 3600]",
                ));
            }
            config.deadline = Some(Duration::from_secs_f64(secs));
        }
        Ok(config)
    }

    /// The call to run against `target` (a URL, or an MCP tool's name);
    /// its reconcile lookups, if any, are sent only where `allowlist` allows.
    pub(crate) fn call(
        &self,
        target: &str,
        allowlist: &Arc<TargetAllowlist>,
    ) -> Result<Call, ToolError> {
        if !self.payload.is_object() {
            return Err(invalid("payload", "payload must be a JSON object"));
        }
        let mut call = Call::new(target, self.payload.clone());
        for (name, value) in &self.headers {
            recourse::parse_header_name("headers", name)
                .map_err(|e| invalid("headers", e.to_string()))?;
            if value.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
                return Err(invalid(
                    "headers",
                    format!("header {name} has a control character"),
                ));
            }
            call = call.header(name, value);
        }
        for pointer in &self.protect {
            validate_pointer(pointer).map_err(|e| invalid("protect", e.to_string()))?;
            call = call.protect(pointer);
        }
        if let Some(schema) = &self.schema {
            recourse::Schema::compile(schema).map_err(|e| invalid("schema", e.to_string()))?;
            call = call.with_schema(schema.clone());
        }
        if let Some(intent) = self.intent.as_deref().filter(|i| !i.trim().is_empty()) {
            call = call.with_intent(intent);
        }
        if let Some(template) = &self.reconcile {
            let reconciler = HttpReconciler::new(template.clone())
                .map_err(|e| invalid("reconcile", e.to_string()))?
                .with_allowlist(Arc::clone(allowlist));
            call = call.with_reconciler(Arc::new(reconciler));
            call.reconcile_template = Some(template.clone());
        }
        call.traits.idempotent = self.idempotent.unwrap_or(true);
        call.traits.delegated = self.delegated;
        Ok(call)
    }
}
