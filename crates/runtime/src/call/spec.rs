//! A call as a caller describes it, in one serde type: what the gateway's
//! request body, `recourse call`'s flags, a plan step, an evaluation
//! scenario's task and the demo's scenes all are, made into a
//! [`CallBuilder`] one way.

use std::sync::Arc;
use std::time::Duration;

use recourse_core::approval::ApprovalSpec;
use recourse_core::config::{CallField, ConfigError};
use recourse_core::method::Method;
use recourse_core::target::Target;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Call, CallBuilder};
use crate::config::ExecutorConfig;
use crate::reconcile::HttpReconciler;
use crate::target::TargetAllowlist;
use crate::verify::VerifySpec;

/// The longest deadline a caller may ask for, in seconds.
pub const MAX_DEADLINE_SECS: f64 = 3600.0;

/// What a caller says of one call, besides where it goes: the payload,
/// what must not change, whether resending is harmless, how an unknown
/// outcome is settled, and the limits it asks for — and, as text, where it
/// goes (`url`, or an `mcp` server's tool): the gateway's `POST /v1/calls`
/// body is this type. The door resolves where it goes (against its
/// allowlist, through an MCP session) and
/// [`into_builder`](Self::into_builder) aims the rest at that target.
///
/// ```
/// use recourse::call::CallSpec;
/// use recourse::{ExecutorConfig, Target};
///
/// let spec: CallSpec = serde_json::from_value(serde_json::json!({
///     "payload": {"order_id": "W7"},
///     "protect": ["/order_id"],
///     "idempotency_key": "cancel-W7",
///     "max_retries": 9,
/// })).unwrap();
/// let config = ExecutorConfig::default();
/// let target = Target::parse("http://127.0.0.1:8700/api/orders/cancel").unwrap();
/// let call = spec.into_builder(target, &config, None).unwrap().build().unwrap();
/// assert_eq!(call.idempotency_key(), Some("cancel-W7"));
/// assert_eq!(call.protected(), ["/order_id"]);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schema", schemars(rename = "CallRequest"))]
#[serde(deny_unknown_fields)]
pub struct CallSpec {
    /// The tool's URL (the payload is sent to it); give `url` or `mcp`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// An MCP tool: `{"command": "CMD ARGS" | "url": "…", "tool": "NAME"}`; give `url` or `mcp`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "Option<McpSpec>"))]
    pub mcp: Option<Value>,
    /// The tool's input: a JSON object.
    #[cfg_attr(feature = "schema", schemars(with = "serde_json::Map<String, Value>"))]
    pub payload: Value,
    /// Headers sent with every attempt, as `[name, value]` pairs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<(String, String)>,
    /// The capability's input JSON Schema (for coercion and to check corrections).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<Value>,
    /// JSON Pointers into the payload that no correction may change.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub protect: Vec<String>,
    /// Your word that resending is harmless; unset, the tool's manifest
    /// decides, then the HTTP method, else not idempotent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent: Option<bool>,
    /// At most one execution per key: a retry with the same key and request
    /// gets the first call's record (needs a journal).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(length(min = 1, max = 255)))]
    pub idempotency_key: Option<String>,
    /// The HTTP method: `POST` (the default), `PUT`, `PATCH`, `DELETE`, `GET`,
    /// `HEAD` or `OPTIONS`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "Option<Method>"))]
    pub method: Option<String>,
    /// A delegated orchestrator: dispatched exactly once, never resent.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub delegated: bool,
    /// A lookup URL template (`{key}`, `{operation_id}`) that settles an
    /// unknown outcome.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reconcile: Option<String>,
    /// A read-back verification: `{url | tool, method?, args, expect, after_only?, always?}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<VerifySpec>,
    /// The user's original request (enables contextual re-resolution, L4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intent: Option<String>,
    /// What the call may spend: resends, corrections, time (each lowered
    /// to the executor's own).
    #[serde(flatten)]
    pub limits: AskedLimits,
    /// Have a person approve the call before its first dispatch:
    /// `{"reason", "expires_in"?}`. It waits, sending nothing, until an
    /// approver decides (needs a journal).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<ApprovalSpec>,
}

/// What a call may spend, as its request asks: each never more than the
/// executor's own (larger values are lowered to it). Flattened into
/// [`CallSpec`]: its fields are the request's `max_retries`,
/// `max_corrections` and `deadline_secs`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct AskedLimits {
    /// Same-payload resends at most; never more than the executor's own
    /// (`RECOURSE_MAX_RETRIES`): larger values are lowered to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_retries: Option<u32>,
    /// Corrections at most; never more than the executor's own
    /// (`RECOURSE_MAX_CORRECTIONS`): larger values are lowered to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_corrections: Option<u32>,
    /// The call's deadline in seconds, in (0, 3600]; never longer than the
    /// executor's own (120 s by default): longer ones are shortened to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(range(max = 3600.0), extend("exclusiveMinimum" = 0)))]
    pub deadline_secs: Option<f64>,
}

/// An MCP tool to call (the schema of [`CallSpec::mcp`], read field by field).
#[cfg(feature = "schema")]
#[derive(schemars::JsonSchema)]
#[schemars(rename = "McpRequest")]
#[allow(dead_code)]
pub struct McpSpec {
    /// The MCP server's command line, started only when an
    /// `--allow-mcp-command` pattern matches it; give `command` or `url`.
    command: Option<String>,
    /// The MCP server's Streamable HTTP URL, allowlisted like a target;
    /// give `command` or `url`.
    url: Option<String>,
    /// The tool's name on that server.
    tool: String,
}

impl CallSpec {
    /// A call of `payload`, nothing else said (its target given to
    /// [`into_builder`](Self::into_builder)).
    pub fn new(payload: Value) -> Self {
        Self {
            payload,
            ..Self::default()
        }
    }

    /// The call aimed at `target`, not yet checked (a door may add what it
    /// knows besides: a tool's declaration, a compiled schema, an MCP tool's
    /// description). The limits it asks for may tighten `within`'s, never
    /// loosen them: whoever describes a call cannot buy more resends, model
    /// calls or time than the executor's operator configured. Its reconcile
    /// lookups, if any, are sent only where `allowlist` allows (anywhere,
    /// without one). The caller's key may arrive among the headers, under
    /// `within`'s idempotency header.
    ///
    /// A spec that asks for a person's approval is refused: only a door
    /// that asks for approvals (the gateway) may run it, and it takes the
    /// `approval` out once the call is approved — a door that does not
    /// never runs unapproved what was meant to wait.
    ///
    /// # Errors
    /// Named by [`CallField`]: the payload (not an object), the method (not
    /// one), the reconcile template (not a usable template), the deadline
    /// (not in (0, 3600]), an approval asked for.
    pub fn into_builder(
        self,
        target: Target,
        within: &ExecutorConfig,
        allowlist: Option<&Arc<TargetAllowlist>>,
    ) -> Result<CallBuilder, ConfigError> {
        if !self.payload.is_object() {
            return Err(ConfigError::new(
                CallField::Payload,
                "payload must be a JSON object",
            ));
        }
        if self.approval.is_some() {
            return Err(ConfigError::new(
                CallField::Approval,
                "this call asks for a person's approval, and nothing here asks one: send it \
                 through the gateway (POST /v1/calls), which holds it until an approver decides",
            ));
        }
        let mut call =
            Call::to(target, self.payload).idempotency_header(within.idempotency_header.clone());
        if let Some(idempotent) = self.idempotent {
            call = call.idempotent(idempotent);
        }
        if let Some(method) = &self.method {
            let method: Method = method.parse()?;
            call = call.method(method);
        }
        if let Some(key) = self.idempotency_key {
            call = call.idempotency_key(key);
        }
        for (name, value) in self.headers {
            call = call.header(name, value);
        }
        for pointer in self.protect {
            call = call.protect(pointer);
        }
        if self.delegated {
            call = call.delegated();
        }
        if let Some(schema) = self.schema {
            call = call.schema(schema);
        }
        if let Some(intent) = self.intent {
            call = call.intent(intent);
        }
        if let Some(template) = self.reconcile {
            let reconciler = HttpReconciler::new(template)
                .map_err(|e| ConfigError::new(CallField::Reconcile, e.problem()))?;
            call = call.http_reconciler(match allowlist {
                Some(allowlist) => reconciler.with_allowlist(Arc::clone(allowlist)),
                None => reconciler,
            });
        }
        // A door's verification comes with the request, for this call:
        // one its payload cannot fill makes it not applicable, not invalid.
        if let Some(spec) = self.verify {
            call = call.verify_if_applicable(spec);
        }
        if let Some(n) = self.limits.max_retries {
            call = call.max_retries(n.min(within.limits.max_retries));
        }
        if let Some(n) = self.limits.max_corrections {
            call = call.max_corrections(n.min(within.limits.max_corrections));
        }
        if let Some(secs) = self.limits.deadline_secs {
            if !(secs.is_finite() && secs > 0.0 && secs <= MAX_DEADLINE_SECS) {
                return Err(ConfigError::new(
                    CallField::Deadline,
                    "deadline_secs must be in (0, 3600]",
                ));
            }
            let asked = Duration::from_secs_f64(secs);
            call = call.deadline(within.deadline.map_or(asked, |d| asked.min(d)));
        }
        Ok(call)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn target() -> Target {
        Target::parse("http://127.0.0.1:1/x").unwrap()
    }

    #[test]
    fn a_spec_reads_and_writes_the_same_json() {
        let json = json!({
            "payload": {"a": 1}, "headers": [["X-Tenant", "acme"]], "protect": ["/a"],
            "idempotent": false, "idempotency_key": "k", "method": "PUT", "delegated": true,
            "reconcile": "http://127.0.0.1:1/x/{key}", "intent": "do it",
            "max_retries": 1, "max_corrections": 0, "deadline_secs": 2.5
        });
        let spec: CallSpec = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(serde_json::to_value(&spec).unwrap(), json);
        assert_eq!(
            serde_json::to_value(CallSpec::new(json!({}))).unwrap(),
            json!({"payload": {}})
        );
    }

    #[test]
    fn asked_limits_tighten_the_executors_never_loosen_them() {
        let config = ExecutorConfig::default();
        let spec = CallSpec {
            limits: AskedLimits {
                max_retries: Some(99),
                max_corrections: None,
                deadline_secs: Some(3600.0),
            },
            ..CallSpec::new(json!({}))
        };
        let call = spec
            .into_builder(target(), &config, None)
            .unwrap()
            .build()
            .unwrap();
        let debug = format!("{call:?}");
        assert!(debug.contains("Call"), "{debug}");
        let refused = CallSpec {
            limits: AskedLimits {
                deadline_secs: Some(0.0),
                ..AskedLimits::default()
            },
            ..CallSpec::new(json!({}))
        }
        .into_builder(target(), &config, None)
        .unwrap_err();
        assert_eq!(refused.field(), Some(CallField::Deadline));
    }

    #[test]
    fn each_refusal_names_its_field() {
        let config = ExecutorConfig::default();
        let refusal = |spec: CallSpec| {
            spec.into_builder(target(), &config, None)
                .unwrap_err()
                .field()
        };
        assert_eq!(refusal(CallSpec::new(json!([1]))), Some(CallField::Payload));
        let method = CallSpec {
            method: Some("BREW".into()),
            ..CallSpec::new(json!({}))
        };
        assert_eq!(refusal(method), Some(CallField::Method));
        let reconcile = CallSpec {
            reconcile: Some("http://h/no-placeholder".into()),
            ..CallSpec::new(json!({}))
        };
        assert_eq!(refusal(reconcile), Some(CallField::Reconcile));
        let approval = CallSpec {
            approval: Some(ApprovalSpec::new("moves money")),
            ..CallSpec::new(json!({}))
        };
        assert_eq!(refusal(approval), Some(CallField::Approval));
    }
}
