//! The body of `POST /v1/calls`, and how it becomes a [`Call`].

use std::sync::Arc;
use std::time::Duration;

use recourse::{
    Call, CallBuilder, ExecutorConfig, HttpReconciler, Target, TargetAllowlist, VerifySpec,
};
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
    pub(crate) idempotency_key: Option<String>,
    pub(crate) method: Option<String>,
    #[serde(default)]
    pub(crate) delegated: bool,
    pub(crate) reconcile: Option<String>,
    /// A read-back verification: `{url | tool, method?, args, expect, after_only?, always?}`.
    pub(crate) verify: Option<VerifySpec>,
    pub(crate) intent: Option<String>,
    pub(crate) max_retries: Option<u32>,
    pub(crate) max_corrections: Option<u32>,
    pub(crate) deadline_secs: Option<f64>,
}

fn invalid(field: &str, message: impl Into<String>) -> ToolError {
    ToolError::input_error("INVALID_CALL", message).detail("field", field)
}

impl CallRequest {
    /// The call to run against `target` (an allowed URL, or an MCP tool's
    /// name), not yet checked: an MCP tool's description may still be added.
    /// Its reconcile lookups, if any, are sent only where `allowlist` allows.
    ///
    /// A caller's `max_retries`, `max_corrections` and `deadline_secs` may
    /// tighten the gateway's own configuration (`ceiling`), never loosen it:
    /// whoever can reach the gateway must not be able to buy more resends,
    /// model calls or time than its operator configured.
    pub(crate) fn call(
        &self,
        target: Target,
        allowlist: &Arc<TargetAllowlist>,
        ceiling: &ExecutorConfig,
    ) -> Result<CallBuilder, ToolError> {
        if !self.payload.is_object() {
            return Err(invalid("payload", "payload must be a JSON object"));
        }
        let mut call = Call::to(target, self.payload.clone())
            .idempotency_header(ceiling.idempotency_header.clone());
        if let Some(idempotent) = self.idempotent {
            call = call.idempotent(idempotent);
        }
        if let Some(method) = &self.method {
            let method = method
                .parse()
                .map_err(|e: recourse::ConfigError| invalid("method", e.to_string()))?;
            call = call.method(method);
        }
        if let Some(key) = &self.idempotency_key {
            call = call.idempotency_key(key.clone());
        }
        for (name, value) in &self.headers {
            call = call.header(name, value);
        }
        for pointer in &self.protect {
            call = call.protect(pointer);
        }
        if self.delegated {
            call = call.delegated();
        }
        if let Some(schema) = &self.schema {
            call = call.schema(schema.clone());
        }
        if let Some(intent) = &self.intent {
            call = call.intent(intent.clone());
        }
        if let Some(template) = &self.reconcile {
            let reconciler = HttpReconciler::new(template.clone())
                .map_err(|e| invalid("reconcile", e.to_string()))?
                .with_allowlist(Arc::clone(allowlist));
            call = call.http_reconciler(reconciler);
        }
        if let Some(spec) = &self.verify {
            call = call.verify(spec.clone());
        }
        if let Some(n) = self.max_retries {
            call = call.max_retries(n.min(ceiling.limits.max_retries));
        }
        if let Some(n) = self.max_corrections {
            call = call.max_corrections(n.min(ceiling.limits.max_corrections));
        }
        if let Some(secs) = self.deadline_secs {
            if !(secs.is_finite() && secs > 0.0 && secs <= 3600.0) {
                return Err(invalid(
                    "deadline_secs",
                    "deadline_secs must be in (0, 3600]",
                ));
            }
            let asked = Duration::from_secs_f64(secs);
            call = call.deadline(ceiling.deadline.map_or(asked, |d| asked.min(d)));
        }
        Ok(call)
    }
}

/// Checks a call, naming the field at fault.
pub(crate) fn build(call: CallBuilder) -> Result<Call, ToolError> {
    call.build().map_err(|e| {
        let field = match e.setting() {
            "protect" | "headers" | "schema" | "idempotency_key" | "method" | "verify" => {
                e.setting()
            }
            "deadline" => "deadline_secs",
            _ => "url",
        };
        invalid(field, e.to_string())
    })
}
