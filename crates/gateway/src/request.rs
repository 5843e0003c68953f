//! The body of `POST /v1/calls` — a [`CallSpec`] — and how it becomes a
//! [`Call`]: the spec's own checks, with each refused field named as the
//! body names it; and what tells one request from another (its [`hash`]).

use std::sync::Arc;

use recourse::call::CallSpec;
use recourse::config::{CallField, ConfigError};
use recourse::keyed::request_hash;
use recourse::target::TargetAllowlist;
use recourse::{Call, CallBuilder, ExecutorConfig, Target};
use recourse_tool::protocol::ToolError;
use serde_json::Value;

use crate::refusal::Refusal;

/// What a client asks the gateway to call.
pub(crate) type CallRequest = CallSpec;

/// Fields that do not make a request another request.
pub(crate) const NOT_HASHED: [&str; 4] = [
    "idempotency_key",
    "deadline_secs",
    "max_retries",
    "max_corrections",
];

/// The request's digest ([`request_hash`]), without the key and the
/// execution limits, which may differ between retries of one request.
pub(crate) fn hash(request: Value) -> String {
    request_hash(&without(request, &NOT_HASHED))
}

/// `body` without the fields in `names`.
pub(crate) fn without(mut body: Value, names: &[&str]) -> Value {
    if let Value::Object(map) = &mut body {
        for name in names {
            map.remove(*name);
        }
    }
    body
}

/// `spec` aimed at `target` (an allowed URL, or an MCP tool's name), not
/// yet checked: an MCP tool's description may still be added. Its limits
/// may tighten the gateway's (`ceiling`), never loosen them; its reconcile
/// lookups are sent only where `allowlist` allows.
pub(crate) fn call(
    spec: CallSpec,
    target: Target,
    allowlist: &Arc<TargetAllowlist>,
    ceiling: &ExecutorConfig,
) -> Result<CallBuilder, ToolError> {
    spec.into_builder(target, ceiling, Some(allowlist))
        .map_err(|e| refused(&e))
}

/// Checks a call, naming the field at fault.
pub(crate) fn build(call: CallBuilder) -> Result<Call, ToolError> {
    call.build().map_err(|e| refused(&e))
}

/// `INVALID_CALL`, the field at fault named as the request names it.
fn refused(e: &ConfigError) -> ToolError {
    let (field, message) = match e.field() {
        Some(CallField::Payload) => ("payload", e.problem().to_owned()),
        Some(CallField::Deadline) => ("deadline_secs", e.problem().to_owned()),
        Some(CallField::Reconcile) => ("reconcile", e.problem().to_owned()),
        Some(
            field @ (CallField::Protect
            | CallField::Headers
            | CallField::Schema
            | CallField::IdempotencyKey
            | CallField::Method
            | CallField::Verify),
        ) => (field.as_str(), e.to_string()),
        _ => ("url", e.to_string()),
    };
    Refusal::InvalidCall.error(message).detail("field", field)
}
