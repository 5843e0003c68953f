//! A logical call: where, what, and what must not change — checked once, when built.

mod spec;

pub use crate::header::check_header;
#[cfg(feature = "schema")]
pub use spec::McpSpec;
pub use spec::{CallSpec, MAX_DEADLINE_SECS};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::schema::Schema;
use crate::verify::VerifySpec;
use crate::verify::{Fit, Verifier};
use recourse_core::config::{CallField, ConfigError};
use recourse_core::idempotency::{Evidence, Idempotency};
use recourse_core::method::Method;
use recourse_core::policy::Traits;
use recourse_core::protect::{leaf_pointers, validate_pointer};
use recourse_core::reconcile::Reconciler;
use recourse_core::target::Target;
use recourse_core::transport::Transport;

/// The header a caller's own idempotency key arrives in, unless told otherwise.
const DEFAULT_KEY_HEADER: &str = "Idempotency-Key";
/// The longest idempotency key accepted.
const MAX_KEY_LEN: usize = 255;

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
///     .idempotency_key("order-7-export")
///     .build()
///     .unwrap();
/// assert!(!call.traits().idempotent);
/// assert_eq!(call.idempotency().from, recourse::idempotency::Evidence::Caller);
/// assert_eq!(call.target().endpoint(), "http://127.0.0.1:8700/api/exports");
/// assert_eq!(call.idempotency_key(), Some("order-7-export"));
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
    pub(crate) delegated: bool,
    pub(crate) method: Method,
    /// Decided from the caller, the tool and the method; the executor may
    /// still ask the tool's manifest when `ask_manifest` is set.
    pub(crate) idempotency: Idempotency,
    pub(crate) ask_manifest: bool,
    pub(crate) caller_key: Option<String>,
    pub(crate) call_id: Option<String>,
    pub(crate) schema: Option<Schema>,
    pub(crate) intent: Option<String>,
    pub(crate) reconciler: Option<Arc<dyn Reconciler>>,
    pub(crate) reconcile_template: Option<String>,
    pub(crate) verifier: Option<Arc<Verifier>>,
    /// A verification was declared, and did not apply to the payload.
    pub(crate) verify_not_applicable: bool,
    pub(crate) verify_transport: Option<Arc<dyn Transport>>,
    pub(crate) capability: Option<String>,
    pub(crate) limits: CallLimits,
    pub(crate) caller: Option<String>,
    /// A person approved the payload: the whole of it is protected, and the
    /// call is journaled whatever its idempotency.
    pub(crate) approved: bool,
}

/// Whose idempotency keys a caller's key shares a space with: see
/// [`CallBuilder::caller`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyScope {
    /// One space for every call: the key is claimed and sent as given (a
    /// gateway with one caller).
    Shared,
    /// The caller's own space: its key is claimed and sent as `NAME:KEY`,
    /// so two callers may use the same key without meeting each other's
    /// call — in the journal or at the tool.
    PerCaller,
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
            .field("idempotency", &self.idempotency)
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
    /// [`TargetAllowlist`](recourse_core::allow::TargetAllowlist): exactly that is sent.
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
                caller_idempotent: None,
                tool_idempotent: None,
                delegated: false,
                method: Method::Post,
                caller_key: None,
                key_header: None,
                call_id: None,
                schema: None,
                intent: None,
                reconciler: None,
                reconcile_template: None,
                verify: None,
                verify_transport: None,
                capability: None,
                limits: CallLimits::default(),
                caller: None,
                approved: false,
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

    /// The capability's traits (idempotency as decided so far: the executor
    /// may still learn it from the tool's manifest).
    pub fn traits(&self) -> Traits {
        Traits {
            idempotent: self.idempotency.idempotent,
            delegated: self.delegated,
        }
    }

    /// Whether the call is idempotent, and which evidence said so (before any
    /// manifest lookup).
    pub fn idempotency(&self) -> Idempotency {
        self.idempotency
    }

    /// The HTTP method the call is sent with.
    pub fn method(&self) -> Method {
        self.method
    }

    /// The caller's own idempotency key, if it gave one.
    pub fn idempotency_key(&self) -> Option<&str> {
        self.caller_key.as_deref()
    }

    /// The call's id, when its maker chose one (else the executor makes one).
    pub fn call_id(&self) -> Option<&str> {
        self.call_id.as_deref()
    }

    /// Whether the call may write, as far as is known before it runs: not
    /// known idempotent (its manifest may still be asked), or keyed — a
    /// keyed call is journaled as its key's call whatever it does. Such a
    /// call is finished even when its client stops waiting.
    pub fn may_write(&self) -> bool {
        !self.idempotency.idempotent || self.ask_manifest || self.caller_key.is_some()
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

    /// The declared verification, when the call has one that applies to it.
    pub fn verification(&self) -> Option<&VerifySpec> {
        self.verifier.as_deref().map(Verifier::spec)
    }

    /// Whether a verification was declared that does not apply to this
    /// call's payload (see [`CallBuilder::verify_if_applicable`]): it runs
    /// as a call without one.
    pub fn is_verification_not_applicable(&self) -> bool {
        self.verify_not_applicable
    }

    /// Who the call is made for (see [`CallBuilder::caller`]), if anyone in particular.
    pub fn caller(&self) -> Option<&str> {
        self.caller.as_deref()
    }

    /// Whether a person approved its payload (see [`CallBuilder::approved`]).
    pub fn is_approved(&self) -> bool {
        self.approved
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
    caller_idempotent: Option<bool>,
    tool_idempotent: Option<(bool, Evidence)>,
    delegated: bool,
    method: Method,
    caller_key: Option<String>,
    key_header: Option<String>,
    call_id: Option<String>,
    schema: Option<Pending>,
    intent: Option<String>,
    reconciler: Option<Arc<dyn Reconciler>>,
    reconcile_template: Option<String>,
    verify: Option<(VerifySpec, Unfilled)>,
    verify_transport: Option<Arc<dyn Transport>>,
    capability: Option<String>,
    limits: CallLimits,
    caller: Option<(String, KeyScope)>,
    approved: bool,
}

/// What a verification that the payload cannot fill makes of the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unfilled {
    /// It is refused, a configuration error (a verification typed for this call).
    Refused,
    /// It runs as a call without one (a verification declared for every call of a tool).
    NotApplicable,
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

    /// Makes the call for `name` (a gateway's caller): the journal records
    /// the call as theirs; with [`KeyScope::PerCaller`] their idempotency
    /// key is claimed and sent as `NAME:KEY`.
    ///
    /// ```
    /// use recourse::Call;
    /// use recourse::call::KeyScope;
    ///
    /// let call = Call::builder("http://127.0.0.1:8700/api/exports", serde_json::json!({}))
    ///     .idempotency_key("order-7")
    ///     .caller("agent", KeyScope::PerCaller)
    ///     .build()
    ///     .unwrap();
    /// assert_eq!(call.idempotency_key(), Some("agent:order-7"));
    /// assert_eq!(call.caller(), Some("agent"));
    /// ```
    #[must_use]
    pub fn caller(mut self, name: impl Into<String>, keys: KeyScope) -> Self {
        self.call.caller = Some((name.into(), keys));
        self
    }

    /// Whether a schema has been given.
    pub fn has_schema(&self) -> bool {
        self.call.schema.is_some()
    }

    /// Whether a capability name has been given.
    pub fn has_capability(&self) -> bool {
        self.call.capability.is_some()
    }

    /// The caller says the capability is not idempotent: an idempotency key
    /// is sent, and a failure after sending is an unknown outcome.
    #[must_use]
    pub fn non_idempotent(self) -> Self {
        self.idempotent(false)
    }

    /// The caller says whether the capability is idempotent; this outranks
    /// every other evidence. Without it the tool's declaration, then the
    /// method, decide (see [`Idempotency`]).
    #[must_use]
    pub fn idempotent(mut self, idempotent: bool) -> Self {
        self.call.caller_idempotent = Some(idempotent);
        self
    }

    /// The tool declares whether the capability is idempotent (its MCP
    /// annotations, a catalogue entry from its manifest): used when the
    /// caller said nothing.
    #[must_use]
    pub fn declared_by_tool(mut self, idempotent: bool, from: Evidence) -> Self {
        self.call.tool_idempotent = Some((idempotent, from));
        self
    }

    /// Sends the call with `method` (default `POST`); `GET`, `HEAD`,
    /// `OPTIONS` and `DELETE` carry the payload as query parameters.
    #[must_use]
    pub fn method(mut self, method: Method) -> Self {
        self.call.method = method;
        self
    }

    /// Uses the caller's own idempotency key (1–255 visible ASCII
    /// characters) for every attempt, instead of a generated one.
    #[must_use]
    pub fn idempotency_key(mut self, key: impl Into<String>) -> Self {
        self.call.caller_key = Some(key.into());
        self
    }

    /// The header name a caller's key may arrive in among [`header`](Self::header)s
    /// (default `Idempotency-Key`; set it to the executor's
    /// `idempotency_header`). Such a header is taken as the caller's key,
    /// never forwarded as written.
    #[must_use]
    pub fn idempotency_header(mut self, name: impl Into<String>) -> Self {
        self.call.key_header = Some(name.into());
        self
    }

    /// Gives the call its id (the journal's key) instead of a generated one.
    #[must_use]
    pub fn call_id(mut self, id: impl Into<String>) -> Self {
        self.call.call_id = Some(id.into());
        self
    }

    /// The payload as a person approved it: every value of it is protected
    /// — no coercion, repair or model may change, remove or retype what
    /// they agreed to; a tool that refuses it stops the call — and the call
    /// is journaled whatever its idempotency, as the call the approval held
    /// back (give it that call's [`call_id`](Self::call_id)).
    ///
    /// ```
    /// use recourse::Call;
    /// use serde_json::json;
    ///
    /// let call = Call::builder("http://127.0.0.1:8700/api/orders/refund", json!({"order_id": "ORD-7", "amount": 500}))
    ///     .approved()
    ///     .build()
    ///     .unwrap();
    /// assert_eq!(call.protected(), ["/amount", "/order_id"]);
    /// assert!(call.is_approved());
    /// ```
    #[must_use]
    pub fn approved(mut self) -> Self {
        self.call.approved = true;
        self
    }

    /// Marks the capability a delegated orchestrator: one dispatch, never corrected.
    #[must_use]
    pub fn delegated(mut self) -> Self {
        self.call.delegated = true;
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
    /// [`HttpReconciler`](crate::reconcile::HttpReconciler)); the template is journaled
    /// with the call so a later `journal reconcile` can look it up.
    ///
    /// # Errors
    /// When the template is not a usable URL template.
    pub fn reconcile_url(self, template: impl Into<String>) -> Result<Self, ConfigError> {
        Ok(self.http_reconciler(crate::reconcile::HttpReconciler::new(template)?))
    }

    /// Reconciles unknown outcomes through `reconciler`, journaling its
    /// template with the call.
    #[must_use]
    pub fn http_reconciler(mut self, reconciler: crate::reconcile::HttpReconciler) -> Self {
        self.call.reconcile_template = Some(reconciler.template().to_owned());
        self.call.reconciler = Some(Arc::new(reconciler));
        self
    }

    /// Settles unknown outcomes (and, with [`VerifySpec::always`], checks
    /// successes) by reading the write's effect back (see
    /// [`VerifySpec`]); checked against the payload when the call is built,
    /// and journaled with it. It takes the place of any reconciler. A
    /// payload that does not fill a template it requires is refused by
    /// [`build`](Self::build).
    #[must_use]
    pub fn verify(mut self, spec: VerifySpec) -> Self {
        self.call.verify = Some((spec, Unfilled::Refused));
        self
    }

    /// As [`verify`](Self::verify), for a verification declared for every
    /// call of a tool (a policy file's, a manifest's, a door's): a payload
    /// that does not fill a template it requires runs as a call without
    /// one, and its record says `verification: not_applicable`. A malformed
    /// verification is still refused.
    ///
    /// ```
    /// use recourse::{Call, VerifySpec};
    /// use serde_json::json;
    ///
    /// let cat = VerifySpec::tool("cat")
    ///     .args(json!({"file_name": "{{payload.file_name}}"}))
    ///     .expect("/content exists");
    /// let touch = Call::builder("touch", json!({"file_name": "a.txt"}))
    ///     .verify_if_applicable(cat.clone())
    ///     .build()
    ///     .unwrap();
    /// assert!(touch.verification().is_some());
    /// let other = Call::builder("touch", json!({"path": "/tmp"}))
    ///     .verify_if_applicable(cat)
    ///     .build()
    ///     .unwrap();
    /// assert!(other.verification().is_none() && other.is_verification_not_applicable());
    /// ```
    #[must_use]
    pub fn verify_if_applicable(mut self, spec: VerifySpec) -> Self {
        self.call.verify = Some((spec, Unfilled::NotApplicable));
        self
    }

    /// Sends the verification's reads through `transport` rather than the
    /// executor's (an HTTP read endpoint for a write over MCP, say).
    #[must_use]
    pub fn verify_transport(mut self, transport: Arc<dyn Transport>) -> Self {
        self.call.verify_transport = Some(transport);
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
        let (verifier, verify_not_applicable) = match c.verify {
            Some((spec, unfilled)) => {
                match verifier(spec, &c.payload, &target, &c.verify_transport)? {
                    Fit::Applies(verifier) => (Some(Arc::new(verifier)), false),
                    Fit::NotApplicable(why) if unfilled == Unfilled::Refused => {
                        return Err(ConfigError::new(CallField::Verify, why));
                    }
                    Fit::NotApplicable(_) => (None, true),
                }
            }
            None => (None, false),
        };
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
            delegated: c.delegated,
            method: c.method,
            idempotency,
            ask_manifest,
            caller_key,
            call_id: c.call_id,
            schema,
            intent: c.intent,
            reconciler: c.reconciler,
            reconcile_template: c.reconcile_template,
            verifier,
            verify_not_applicable,
            verify_transport: c.verify_transport,
            capability: c.capability,
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
    let key = match (c.caller_key.take(), from_header) {
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

/// A fresh id (a call's, an idempotency key): a UUIDv7, hyphenated, written
/// straight into its string rather than through `Display`'s formatter.
pub(crate) fn new_id() -> String {
    let mut buf = uuid::Uuid::encode_buffer();
    uuid::Uuid::now_v7()
        .hyphenated()
        .encode_lower(&mut buf)
        .to_owned()
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
    fn a_callers_key_header_is_taken_as_its_key_never_forwarded() {
        let call = build("http://h/x")
            .header("idempotency-key", "k-1")
            .header("X-Tenant", "acme")
            .build()
            .unwrap();
        assert_eq!(call.idempotency_key(), Some("k-1"));
        assert_eq!(call.headers(), [("X-Tenant".to_owned(), "acme".to_owned())]);
        let custom = build("http://h/x")
            .idempotency_header("X-Op-Key")
            .header("X-Op-Key", "k-2")
            .build()
            .unwrap();
        assert_eq!(custom.idempotency_key(), Some("k-2"));
        assert!(custom.headers().is_empty());
        let setting = |b: CallBuilder| b.build().unwrap_err().setting().to_owned();
        assert_eq!(
            setting(
                build("http://h/x")
                    .idempotency_key("a")
                    .header("Idempotency-Key", "b")
            ),
            "idempotency_key"
        );
        let long = "k".repeat(256);
        for bad in ["", "has space", "é", long.as_str()] {
            assert_eq!(
                setting(build("http://h/x").idempotency_key(bad)),
                "idempotency_key",
                "{bad:?}"
            );
        }
        assert!(
            build("http://h/x")
                .idempotency_key("a")
                .header("Idempotency-Key", "a")
                .build()
                .is_ok()
        );
    }

    #[test]
    fn idempotency_follows_the_evidence_order() {
        let post = build("http://h/x").build().unwrap();
        assert_eq!(post.idempotency().from, Evidence::Default);
        assert!(!post.idempotency().idempotent && post.ask_manifest);
        let get = build("http://h/x").method(Method::Get).build().unwrap();
        assert_eq!(get.idempotency().from, Evidence::Method);
        assert!(get.ask_manifest, "the manifest outranks the method");
        let tool = build("read_file")
            .declared_by_tool(true, Evidence::McpAnnotation)
            .build()
            .unwrap();
        assert!(tool.idempotency().idempotent && !tool.ask_manifest);
        let caller = build("http://h/x").idempotent(true).build().unwrap();
        assert!(!caller.ask_manifest);
        assert_eq!(
            build("tool")
                .method(Method::Get)
                .build()
                .unwrap_err()
                .setting(),
            "method"
        );
    }
}

#[cfg(test)]
mod id_tests {
    #[test]
    fn a_new_id_is_a_hyphenated_lowercase_uuid_v7() {
        let id = super::new_id();
        let parsed = uuid::Uuid::parse_str(&id).unwrap();
        assert_eq!(parsed.get_version_num(), 7);
        assert_eq!(id, parsed.to_string());
        assert_ne!(id, super::new_id());
    }
}
