//! The body of `POST /v1/calls` — a [`CallSpec`] — and how it becomes a
//! [`Call`]: the spec's own checks, with each refused field named as the
//! body names it.

use std::sync::Arc;

use recourse::call::CallSpec;
use recourse::config::{CallField, ConfigError};
use recourse::target::TargetAllowlist;
use recourse::{Call, CallBuilder, ExecutorConfig, Target};
use recourse_tool::protocol::ToolError;

use recourse_door::Refusal;

/// What a client asks the gateway to call.
pub(crate) type CallRequest = CallSpec;

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
