//! The body of `POST /v1/calls`, and how it becomes a [`Call`].

use std::sync::Arc;
use std::time::Duration;

use recourse::config::CallField;
use recourse::target::TargetAllowlist;
use recourse::{Call, CallBuilder, ExecutorConfig, HttpReconciler, Target, VerifySpec};
use recourse_tool::protocol::ToolError;

use crate::refusal::Refusal;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

/// What a client asks the gateway to call: `POST /v1/calls`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct CallRequest {
    /// The tool's URL (the payload is sent to it); give `url` or `mcp`.
    pub(crate) url: Option<String>,
    /// An MCP tool: `{"command": "CMD ARGS" | "url": "…", "tool": "NAME"}`; give `url` or `mcp`.
    #[schemars(with = "Option<McpRequest>")]
    pub(crate) mcp: Option<Value>,
    /// The tool's input: a JSON object.
    #[schemars(with = "serde_json::Map<String, Value>")]
    pub(crate) payload: Value,
    /// Headers sent with every attempt, as `[name, value]` pairs.
    #[serde(default)]
    pub(crate) headers: Vec<(String, String)>,
    /// The capability's input JSON Schema (for coercion and to check corrections).
    pub(crate) schema: Option<Value>,
    /// JSON Pointers into the payload that no correction may change.
    #[serde(default)]
    pub(crate) protect: Vec<String>,
    /// Your word that resending is harmless; unset, the tool's manifest
    /// decides, then the HTTP method, else not idempotent.
    pub(crate) idempotent: Option<bool>,
    /// At most one execution per key: a retry with the same key and request
    /// gets the first call's record (needs the gateway's journal). The same
    /// as an `Idempotency-Key` header; they must agree when both are given.
    #[schemars(length(min = 1, max = 255))]
    pub(crate) idempotency_key: Option<String>,
    /// The HTTP method: `POST` (the default), `PUT`, `PATCH`, `DELETE`, `GET`,
    /// `HEAD` or `OPTIONS`.
    #[schemars(with = "Option<recourse::Method>")]
    pub(crate) method: Option<String>,
    /// A delegated orchestrator: dispatched exactly once, never resent.
    #[serde(default)]
    pub(crate) delegated: bool,
    /// A lookup URL template (`{key}`, `{operation_id}`) that settles an
    /// unknown outcome; allowlisted like the call.
    pub(crate) reconcile: Option<String>,
    /// A read-back verification: `{url | tool, method?, args, expect, after_only?, always?}`.
    pub(crate) verify: Option<VerifySpec>,
    /// The user's original request (enables contextual re-resolution, L4).
    pub(crate) intent: Option<String>,
    /// Same-payload resends at most; no more than the gateway's own
    /// (`RECOURSE_MAX_RETRIES`): larger values are lowered to it.
    pub(crate) max_retries: Option<u32>,
    /// Corrections at most; no more than the gateway's own
    /// (`RECOURSE_MAX_CORRECTIONS`): larger values are lowered to it.
    pub(crate) max_corrections: Option<u32>,
    /// The call's deadline in seconds, in (0, 3600]; no longer than the
    /// gateway's own (120 s by default): longer ones are shortened to it.
    #[schemars(range(max = 3600.0), extend("exclusiveMinimum" = 0))]
    pub(crate) deadline_secs: Option<f64>,
}

/// An MCP tool to call (the schema of [`CallRequest::mcp`], read field by field).
#[derive(JsonSchema)]
#[allow(dead_code)]
pub(crate) struct McpRequest {
    /// The MCP server's command line, started only when an
    /// `--allow-mcp-command` pattern matches it; give `command` or `url`.
    command: Option<String>,
    /// The MCP server's Streamable HTTP URL, allowlisted like a target;
    /// give `command` or `url`.
    url: Option<String>,
    /// The tool's name on that server.
    tool: String,
}

fn invalid(field: &str, message: impl Into<String>) -> ToolError {
    Refusal::InvalidCall.error(message).detail("field", field)
}

impl CallRequest {
    /// The call to run against `target` (an allowed URL, or an MCP tool's
    /// name) with `payload` (this request's, taken out of it), not yet
    /// checked: an MCP tool's description may still be added.
    /// Its reconcile lookups, if any, are sent only where `allowlist` allows.
    ///
    /// A caller's `max_retries`, `max_corrections` and `deadline_secs` may
    /// tighten the gateway's own configuration (`ceiling`), never loosen it:
    /// whoever can reach the gateway must not be able to buy more resends,
    /// model calls or time than its operator configured.
    pub(crate) fn call(
        &self,
        target: Target,
        payload: Value,
        allowlist: &Arc<TargetAllowlist>,
        ceiling: &ExecutorConfig,
    ) -> Result<CallBuilder, ToolError> {
        if !payload.is_object() {
            return Err(invalid("payload", "payload must be a JSON object"));
        }
        let mut call =
            Call::to(target, payload).idempotency_header(ceiling.idempotency_header.clone());
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
        let field = match e.field() {
            Some(
                field @ (CallField::Protect
                | CallField::Headers
                | CallField::Schema
                | CallField::IdempotencyKey
                | CallField::Method
                | CallField::Verify),
            ) => field.as_str(),
            Some(CallField::Deadline) => "deadline_secs",
            _ => "url",
        };
        invalid(field, e.to_string())
    })
}
