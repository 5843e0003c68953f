//! [`CallBuilder::build`]: every part checked once, by name.

use std::sync::Arc;

use serde_json::Value;

use super::{Aim, CallBuilder, CallParts, Pending, Unfilled};
use crate::call::{Call, DEFAULT_KEY_HEADER, Described, KeyScope, MAX_KEY_LEN, Settling};
use crate::header::check_header;
use crate::schema::Schema;
use crate::verify::{Fit, Verifier, VerifySpec};
use recourse_core::config::{CallField, ConfigError};
use recourse_core::idempotency::Idempotency;
use recourse_core::method::Method;
use recourse_core::protect::{leaf_pointers, validate_pointer};
use recourse_core::target::Target;
use recourse_core::transport::Transport;

impl CallBuilder {
    /// Checks everything and builds the call.
    ///
    /// # Errors
    /// Named by setting: `target` (empty, or a URL that does not parse),
    /// `protect` (not a JSON Pointer), `headers` (an invalid name or value,
    /// or a hop-by-hop or framing header such as `Host` or `Content-Length`),
    /// `idempotency_key` (not 1–255 visible ASCII characters, or a key header
    /// that disagrees with it), `method` (not `POST` for a tool that is not
    /// an HTTP URL), `schema` (not a usable JSON Schema), `deadline` (zero),
    /// `verify` (a malformed verification, a template naming a field the
    /// payload lacks — given with [`verify`](Self::verify), not
    /// [`verify_if_applicable`](Self::verify_if_applicable) — or a read the
    /// call's transport cannot send: an MCP
    /// tool for an HTTP call, a URL for a tool call, without a
    /// [`verify_transport`](Self::verify_transport)).
    pub fn build(self) -> Result<Call, ConfigError> {
        let mut c = self.call;
        if c.approved {
            c.protected.extend(leaf_pointers(&c.payload));
            c.protected.sort();
            c.protected.dedup();
        }
        let target = match self.target {
            Aim::Text(text) => Target::parse(&text)?,
            Aim::Parsed(target) => target,
        };
        for pointer in &c.protected {
            validate_pointer(pointer)
                .map_err(|e| ConfigError::new(CallField::Protect, e.to_string()))?;
        }
        for (name, value) in &c.headers {
            check_header(name, value)?;
        }
        let caller_key = match (caller_key(&mut c)?, &c.caller) {
            (Some(key), Some((name, KeyScope::PerCaller))) => Some(scoped(name, &key)?),
            (key, _) => key,
        };
        if c.limits.deadline.is_some_and(|d| d.is_zero()) {
            return Err(ConfigError::new(
                CallField::Deadline,
                "must be greater than zero",
            ));
        }
        if target.url().is_none() && c.method != Method::Post {
            return Err(ConfigError::new(
                CallField::Method,
                "only HTTP targets are sent with a method",
            ));
        }
        let http_method = target.url().map(|_| c.method);
        let idempotency = Idempotency::decide(c.caller_idempotent, c.tool_idempotent, http_method);
        let ask_manifest =
            c.caller_idempotent.is_none() && c.tool_idempotent.is_none() && http_method.is_some();
        let (verifier, verify_not_applicable) = match c.settling.verify {
            Some((spec, unfilled)) => {
                match verifier(spec, &c.payload, &target, &c.settling.verify_transport)? {
                    Fit::Applies(verifier) => (Some(Arc::new(verifier)), false),
                    Fit::NotApplicable(why) if unfilled == Unfilled::Refused => {
                        return Err(ConfigError::new(CallField::Verify, why));
                    }
                    Fit::NotApplicable(_) => (None, true),
                }
            }
            None => (None, false),
        };
        let schema = match c.described.schema {
            Some(Pending::Raw(raw)) => Some(Schema::compile(&raw)?),
            Some(Pending::Compiled(schema)) => Some(schema),
            None => None,
        };
        Ok(Call {
            target,
            payload: c.payload,
            headers: c.headers,
            protected: c.protected,
            delegated: c.delegated,
            method: c.method,
            idempotency,
            ask_manifest,
            caller_key,
            call_id: c.call_id,
            settling: Settling {
                reconciler: c.settling.reconciler,
                reconcile_template: c.settling.reconcile_template,
                verifier,
                verify_not_applicable,
                verify_transport: c.settling.verify_transport,
            },
            described: Described {
                schema,
                intent: c.described.intent,
                capability: c.described.capability,
            },
            limits: c.limits,
            caller: c.caller.map(|(name, _)| name),
            approved: c.approved,
        })
    }
}

/// `key` in `caller`'s own space: `CALLER:KEY`, within the length a key may have.
fn scoped(caller: &str, key: &str) -> Result<String, ConfigError> {
    let scoped = format!("{caller}:{key}");
    if scoped.len() > MAX_KEY_LEN {
        return Err(ConfigError::new(
            CallField::IdempotencyKey,
            format!(
                "a key is at most {} characters for caller {caller:?} (it reaches the tool as \"{caller}:KEY\", at most {MAX_KEY_LEN})",
                MAX_KEY_LEN - caller.len() - 1
            ),
        ));
    }
    Ok(scoped)
}

/// Checks a verification for a call of `payload` to `target`: its read
/// must be one the call's transport (or the one given for reads) can send,
/// and it may not apply to `payload`.
fn verifier(
    spec: VerifySpec,
    payload: &Value,
    target: &Target,
    transport: &Option<Arc<dyn Transport>>,
) -> Result<Fit, ConfigError> {
    let reads_tool = spec.tool.is_some();
    let fit = Verifier::fit(spec, payload)?;
    if transport.is_none() {
        match (reads_tool, target.url().is_some()) {
            (true, true) => {
                return Err(ConfigError::new(
                    CallField::Verify,
                    "tool names an MCP tool on the write's server, and this call is HTTP; use url",
                ));
            }
            (false, false) => {
                return Err(ConfigError::new(
                    CallField::Verify,
                    "url reads over HTTP, and this call goes to a tool: use tool, or give the reads an HTTP transport",
                ));
            }
            _ => {}
        }
    }
    Ok(fit)
}

/// The caller's key: given, or taken from its key header (which is then not
/// forwarded); the two must agree.
fn caller_key(c: &mut CallParts) -> Result<Option<String>, ConfigError> {
    let header = c
        .key
        .key_header
        .as_deref()
        .unwrap_or(DEFAULT_KEY_HEADER)
        .to_owned();
    let mut from_header: Option<String> = None;
    let mut kept = Vec::with_capacity(c.headers.len());
    for (name, value) in std::mem::take(&mut c.headers) {
        if name.eq_ignore_ascii_case(&header) || name.eq_ignore_ascii_case(DEFAULT_KEY_HEADER) {
            if from_header.as_ref().is_some_and(|k| *k != value) {
                return Err(ConfigError::new(
                    CallField::IdempotencyKey,
                    format!("two different {name} headers"),
                ));
            }
            from_header = Some(value);
        } else {
            kept.push((name, value));
        }
    }
    c.headers = kept;
    let key = match (c.key.caller_key.take(), from_header) {
        (Some(given), Some(header_key)) if given != header_key => {
            return Err(ConfigError::new(
                CallField::IdempotencyKey,
                format!("the {header} header disagrees with the idempotency key given"),
            ));
        }
        (Some(key), _) | (None, Some(key)) => Some(key),
        (None, None) => None,
    };
    if let Some(key) = &key
        && (key.is_empty() || key.len() > MAX_KEY_LEN || !key.bytes().all(|b| b.is_ascii_graphic()))
    {
        return Err(ConfigError::new(
            CallField::IdempotencyKey,
            format!("a key is 1–{MAX_KEY_LEN} visible ASCII characters (no spaces)"),
        ));
    }
    Ok(key)
}
