//! A logical call: where, what, and what must not change — checked once, when built.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::{ConfigError, Reconciler, Schema, Target, Traits, validate_pointer};

/// Headers a caller may not set: they frame the request or belong to one hop.
const RESERVED_HEADERS: [&str; 9] = [
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "proxy-connection",
    "te",
    "trailer",
    "upgrade",
];

/// One logical call to a tool, however many attempts it takes.
///
/// Built with [`Call::builder`], which checks everything once — the target
/// is parsed, pointers and headers are validated, the schema is compiled —
/// so a `Call` that exists is one the executor can run. Cheap to clone.
///
/// ```
/// use recourse::Call;
/// use serde_json::json;
///
/// let call = Call::builder("http://127.0.0.1:8700/api/exports", json!({"source_id": "doc-7", "format": "pdf"}))
///     .non_idempotent()
///     .protect("/source_id")
///     .header("X-Tenant", "acme")
///     .build()
///     .unwrap();
/// assert!(!call.traits().idempotent);
/// assert_eq!(call.target().endpoint(), "http://127.0.0.1:8700/api/exports");
///
/// let err = Call::builder("http://127.0.0.1:8700/x", json!({})).header("Host", "evil").build().unwrap_err();
/// assert_eq!(err.setting(), "headers");
/// ```
#[derive(Clone)]
pub struct Call {
    pub(crate) target: Target,
    pub(crate) payload: Value,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) protected: Vec<String>,
    pub(crate) traits: Traits,
    pub(crate) schema: Option<Schema>,
    pub(crate) intent: Option<String>,
    pub(crate) reconciler: Option<Arc<dyn Reconciler>>,
    pub(crate) reconcile_template: Option<String>,
    pub(crate) capability: Option<String>,
    pub(crate) limits: CallLimits,
}

/// Per-call overrides of the executor's limits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct CallLimits {
    pub(crate) max_retries: Option<u32>,
    pub(crate) max_corrections: Option<u32>,
    pub(crate) deadline: Option<Duration>,
}

impl std::fmt::Debug for Call {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Call")
            .field("target", &self.target.to_string())
            .field("protected", &self.protected)
            .field("traits", &self.traits)
            .finish_non_exhaustive()
    }
}

impl Call {
    /// Starts a call of `payload` to `target` (an http(s) URL, or a tool name
    /// for MCP and in-process transports): idempotent, not delegated, nothing
    /// protected.
    pub fn builder(target: impl Into<String>, payload: Value) -> CallBuilder {
        Self::starting(Aim::Text(target.into()), payload)
    }

    /// Starts a call to a target parsed (and checked) already — say, by a
    /// [`TargetAllowlist`](crate::TargetAllowlist): exactly that is sent.
    pub fn to(target: Target, payload: Value) -> CallBuilder {
        Self::starting(Aim::Parsed(target), payload)
    }

    fn starting(target: Aim, payload: Value) -> CallBuilder {
        CallBuilder {
            target,
            call: CallParts {
                payload,
                headers: Vec::new(),
                protected: Vec::new(),
                traits: Traits::default(),
                schema: None,
                intent: None,
                reconciler: None,
                reconcile_template: None,
                capability: None,
                limits: CallLimits::default(),
            },
        }
    }

    /// Where the call goes.
    pub fn target(&self) -> &Target {
        &self.target
    }

    /// The caller's payload.
    pub fn payload(&self) -> &Value {
        &self.payload
    }

    /// Extra headers, sent on every attempt. No corrector can change them.
    pub fn headers(&self) -> &[(String, String)] {
        &self.headers
    }

    /// JSON Pointers to values no layer may change.
    pub fn protected(&self) -> &[String] {
        &self.protected
    }

    /// The capability's traits.
    pub fn traits(&self) -> Traits {
        self.traits
    }

    /// The capability's compiled input schema, if known.
    pub fn schema(&self) -> Option<&Schema> {
        self.schema.as_ref()
    }

    /// The user's original request, if known.
    pub fn intent(&self) -> Option<&str> {
        self.intent.as_deref()
    }

    /// The capability's name, when the call came from a catalogue.
    pub fn capability(&self) -> Option<&str> {
        self.capability.as_deref()
    }

    /// The reconcile URL template, when the call has one.
    pub fn reconcile_template(&self) -> Option<&str> {
        self.reconcile_template.as_deref()
    }

    /// Turns the call back into a builder, to change it and check it again.
    pub fn into_builder(self) -> CallBuilder {
        CallBuilder {
            target: Aim::Parsed(self.target),
            call: CallParts {
                payload: self.payload,
                headers: self.headers,
                protected: self.protected,
                traits: self.traits,
                schema: self.schema.map(Pending::Compiled),
                intent: self.intent,
                reconciler: self.reconciler,
                reconcile_template: self.reconcile_template,
                capability: self.capability,
                limits: self.limits,
            },
        }
    }
}

/// Builds a [`Call`]; [`build`](Self::build) checks it.
#[derive(Clone)]
pub struct CallBuilder {
    target: Aim,
    call: CallParts,
}

/// A target as given: text to parse at `build`, or parsed already.
#[derive(Clone)]
enum Aim {
    Text(String),
    Parsed(Target),
}

#[derive(Clone)]
struct CallParts {
    payload: Value,
    headers: Vec<(String, String)>,
    protected: Vec<String>,
    traits: Traits,
    schema: Option<Pending>,
    intent: Option<String>,
    reconciler: Option<Arc<dyn Reconciler>>,
    reconcile_template: Option<String>,
    capability: Option<String>,
    limits: CallLimits,
}

/// A schema as given: compiled already, or to compile at `build`.
#[derive(Clone)]
enum Pending {
    Raw(Value),
    Compiled(Schema),
}

impl std::fmt::Debug for CallBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallBuilder").finish_non_exhaustive()
    }
}

impl CallBuilder {
    /// Aims the call at another target (an MCP tool's name, say).
    #[must_use]
    pub fn retarget(mut self, target: impl Into<String>) -> Self {
        self.target = Aim::Text(target.into());
        self
    }

    /// The traits declared so far.
    pub fn declared_traits(&self) -> Traits {
        self.call.traits
    }

    /// Whether a schema has been given.
    pub fn has_schema(&self) -> bool {
        self.call.schema.is_some()
    }

    /// Whether a capability name has been given.
    pub fn has_capability(&self) -> bool {
        self.call.capability.is_some()
    }

    /// Marks the capability non-idempotent: an idempotency key is sent, and a
    /// failure after sending is an unknown outcome.
    #[must_use]
    pub fn non_idempotent(mut self) -> Self {
        self.call.traits.idempotent = false;
        self
    }

    /// Sets whether the capability is idempotent.
    #[must_use]
    pub fn idempotent(mut self, idempotent: bool) -> Self {
        self.call.traits.idempotent = idempotent;
        self
    }

    /// Marks the capability a delegated orchestrator: one dispatch, never corrected.
    #[must_use]
    pub fn delegated(mut self) -> Self {
        self.call.traits.delegated = true;
        self
    }

    /// Sets all of the capability's traits.
    #[must_use]
    pub fn traits(mut self, traits: Traits) -> Self {
        self.call.traits = traits;
        self
    }

    /// Protects the value at `pointer` (a JSON Pointer such as `/amount`).
    #[must_use]
    pub fn protect(mut self, pointer: impl Into<String>) -> Self {
        self.call.protected.push(pointer.into());
        self
    }

    /// Adds a header sent on every attempt.
    #[must_use]
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.call.headers.push((name.into(), value.into()));
        self
    }

    /// Sets the input schema (compiled by [`build`](Self::build)).
    #[must_use]
    pub fn schema(mut self, schema: Value) -> Self {
        self.call.schema = Some(Pending::Raw(schema));
        self
    }

    /// Sets an input schema compiled already (shared across calls).
    #[must_use]
    pub fn compiled_schema(mut self, schema: Schema) -> Self {
        self.call.schema = Some(Pending::Compiled(schema));
        self
    }

    /// Sets the user's original request (ignored when blank).
    #[must_use]
    pub fn intent(mut self, intent: impl Into<String>) -> Self {
        let intent = intent.into();
        self.call.intent = (!intent.trim().is_empty()).then_some(intent);
        self
    }

    /// Sets a reconciler for this call, overriding the executor's.
    #[must_use]
    pub fn reconciler(mut self, reconciler: Arc<dyn Reconciler>) -> Self {
        self.call.reconciler = Some(reconciler);
        self
    }

    /// Reconciles unknown outcomes by GETting `template` (see
    /// [`HttpReconciler`](crate::HttpReconciler)); the template is journaled
    /// with the call so a later `journal reconcile` can look it up.
    ///
    /// # Errors
    /// When the template is not a usable URL template.
    pub fn reconcile_url(self, template: impl Into<String>) -> Result<Self, ConfigError> {
        Ok(self.http_reconciler(crate::HttpReconciler::new(template)?))
    }

    /// Reconciles unknown outcomes through `reconciler`, journaling its
    /// template with the call.
    #[must_use]
    pub fn http_reconciler(mut self, reconciler: crate::HttpReconciler) -> Self {
        self.call.reconcile_template = Some(reconciler.template().to_owned());
        self.call.reconciler = Some(Arc::new(reconciler));
        self
    }

    /// Names the capability (recorded in the journal).
    #[must_use]
    pub fn capability(mut self, name: impl Into<String>) -> Self {
        self.call.capability = Some(name.into());
        self
    }

    /// Overrides the executor's same-payload resend limit for this call.
    #[must_use]
    pub fn max_retries(mut self, n: u32) -> Self {
        self.call.limits.max_retries = Some(n);
        self
    }

    /// Overrides the executor's correction limit for this call.
    #[must_use]
    pub fn max_corrections(mut self, n: u32) -> Self {
        self.call.limits.max_corrections = Some(n);
        self
    }

    /// Overrides the executor's deadline for this call.
    #[must_use]
    pub fn deadline(mut self, deadline: Duration) -> Self {
        self.call.limits.deadline = Some(deadline);
        self
    }

    /// Checks everything and builds the call.
    ///
    /// # Errors
    /// Named by setting: `target` (empty, or a URL that does not parse),
    /// `protect` (not a JSON Pointer), `headers` (an invalid name or value,
    /// or a hop-by-hop or framing header such as `Host` or `Content-Length`),
    /// `schema` (not a usable JSON Schema), `deadline` (zero).
    pub fn build(self) -> Result<Call, ConfigError> {
        let c = self.call;
        let target = match self.target {
            Aim::Text(text) => Target::parse(&text)?,
            Aim::Parsed(target) => target,
        };
        for pointer in &c.protected {
            validate_pointer(pointer).map_err(|e| ConfigError::new("protect", e.to_string()))?;
        }
        for (name, value) in &c.headers {
            check_header(name, value)?;
        }
        if c.limits.deadline.is_some_and(|d| d.is_zero()) {
            return Err(ConfigError::new("deadline", "must be greater than zero"));
        }
        let schema = match c.schema {
            Some(Pending::Raw(raw)) => Some(Schema::compile(&raw)?),
            Some(Pending::Compiled(schema)) => Some(schema),
            None => None,
        };
        Ok(Call {
            target,
            payload: c.payload,
            headers: c.headers,
            protected: c.protected,
            traits: c.traits,
            schema,
            intent: c.intent,
            reconciler: c.reconciler,
            reconcile_template: c.reconcile_template,
            capability: c.capability,
            limits: c.limits,
        })
    }
}

/// Checks a caller's header: a valid name, a value without control
/// characters, and not one that frames the request or belongs to one hop.
///
/// # Errors
/// For the setting `headers`, naming the header.
pub fn check_header(name: &str, value: &str) -> Result<(), ConfigError> {
    let invalid = |why: String| ConfigError::new("headers", why);
    if reqwest::header::HeaderName::from_bytes(name.as_bytes()).is_err() {
        return Err(invalid(format!("{name:?} is not a valid header name")));
    }
    if RESERVED_HEADERS
        .iter()
        .any(|r| r.eq_ignore_ascii_case(name))
    {
        return Err(invalid(format!(
            "{name} frames the request or belongs to one hop; recourse sets it itself"
        )));
    }
    if reqwest::header::HeaderValue::from_str(value).is_err() {
        return Err(invalid(format!(
            "header {name} has a control or non-ASCII character in its value"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn build(target: &str) -> CallBuilder {
        Call::builder(target, json!({"a": 1}))
    }

    #[test]
    fn every_part_is_checked_once_by_name() {
        let setting = |b: CallBuilder| b.build().unwrap_err().setting().to_owned();
        assert_eq!(setting(build("")), "target");
        assert_eq!(setting(build("http://h/").protect("a")), "protect");
        assert_eq!(
            setting(build("http://h/").header("Bad Name", "x")),
            "headers"
        );
        assert_eq!(
            setting(build("http://h/").header("X-A", "a\r\nb")),
            "headers"
        );
        assert_eq!(
            setting(build("http://h/").schema(json!({"type": 12}))),
            "schema"
        );
        assert_eq!(
            setting(build("http://h/").deadline(Duration::ZERO)),
            "deadline"
        );
        for framing in [
            "Host",
            "content-length",
            "Transfer-Encoding",
            "Connection",
            "TE",
            "Upgrade",
        ] {
            assert_eq!(
                setting(build("http://h/").header(framing, "1")),
                "headers",
                "{framing}"
            );
        }
        assert!(
            build("http://h/")
                .header("X-Tenant", "acme")
                .build()
                .is_ok()
        );
    }

    #[test]
    fn a_built_call_round_trips_through_its_builder() {
        let call = build("http://h/x")
            .non_idempotent()
            .protect("/a")
            .build()
            .unwrap();
        let again = call.clone().into_builder().build().unwrap();
        assert_eq!(again.target(), call.target());
        assert_eq!(again.protected(), call.protected());
        assert!(!again.traits().idempotent);
    }
}
