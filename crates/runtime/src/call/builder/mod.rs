//! Building a call: every part given, nothing checked until [`build`](CallBuilder::build).

mod build;

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::{Call, CallLimits, KeyScope};
use crate::schema::Schema;
use crate::verify::VerifySpec;
use recourse_core::config::ConfigError;
use recourse_core::idempotency::Evidence;
use recourse_core::method::Method;
use recourse_core::reconcile::Reconciler;
use recourse_core::target::Target;
use recourse_core::transport::Transport;

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
                key: KeyParts::default(),
                call_id: None,
                described: DescribedParts::default(),
                settling: SettlingParts::default(),
                limits: CallLimits::default(),
                caller: None,
                approved: false,
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
    caller_idempotent: Option<bool>,
    tool_idempotent: Option<(bool, Evidence)>,
    delegated: bool,
    method: Method,
    key: KeyParts,
    call_id: Option<String>,
    described: DescribedParts,
    settling: SettlingParts,
    limits: CallLimits,
    caller: Option<(String, KeyScope)>,
    approved: bool,
}

/// The caller's own idempotency key, and the header it may arrive in.
#[derive(Clone, Default)]
struct KeyParts {
    caller_key: Option<String>,
    key_header: Option<String>,
}

/// The schema, intent and capability, as given.
#[derive(Clone, Default)]
struct DescribedParts {
    schema: Option<Pending>,
    intent: Option<String>,
    capability: Option<String>,
}

/// How an unknown outcome is to be settled, as given.
#[derive(Clone, Default)]
struct SettlingParts {
    reconciler: Option<Arc<dyn Reconciler>>,
    reconcile_template: Option<String>,
    verify: Option<(VerifySpec, Unfilled)>,
    verify_transport: Option<Arc<dyn Transport>>,
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
        self.call.described.schema.is_some()
    }

    /// Whether a capability name has been given.
    pub fn has_capability(&self) -> bool {
        self.call.described.capability.is_some()
    }

    /// The caller says the capability is not idempotent: an idempotency key
    /// is sent, and a failure after sending is an unknown outcome.
    #[must_use]
    pub fn non_idempotent(self) -> Self {
        self.idempotent(false)
    }

    /// The caller says whether the capability is idempotent; this outranks
    /// every other evidence. Without it the tool's declaration, then the
    /// method, decide (see [`Idempotency`](recourse_core::idempotency::Idempotency)).
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
        self.call.key.caller_key = Some(key.into());
        self
    }

    /// The header name a caller's key may arrive in among [`header`](Self::header)s
    /// (default `Idempotency-Key`; set it to the executor's
    /// `idempotency_header`). Such a header is taken as the caller's key,
    /// never forwarded as written.
    #[must_use]
    pub fn idempotency_header(mut self, name: impl Into<String>) -> Self {
        self.call.key.key_header = Some(name.into());
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
        self.call.described.schema = Some(Pending::Raw(schema));
        self
    }

    /// Sets an input schema compiled already (shared across calls).
    #[must_use]
    pub fn compiled_schema(mut self, schema: Schema) -> Self {
        self.call.described.schema = Some(Pending::Compiled(schema));
        self
    }

    /// Sets the user's original request (ignored when blank).
    #[must_use]
    pub fn intent(mut self, intent: impl Into<String>) -> Self {
        let intent = intent.into();
        self.call.described.intent = (!intent.trim().is_empty()).then_some(intent);
        self
    }

    /// Sets a reconciler for this call, overriding the executor's.
    #[must_use]
    pub fn reconciler(mut self, reconciler: Arc<dyn Reconciler>) -> Self {
        self.call.settling.reconciler = Some(reconciler);
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
        self.call.settling.reconcile_template = Some(reconciler.template().to_owned());
        self.call.settling.reconciler = Some(Arc::new(reconciler));
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
        self.call.settling.verify = Some((spec, Unfilled::Refused));
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
        self.call.settling.verify = Some((spec, Unfilled::NotApplicable));
        self
    }

    /// Sends the verification's reads through `transport` rather than the
    /// executor's (an HTTP read endpoint for a write over MCP, say).
    #[must_use]
    pub fn verify_transport(mut self, transport: Arc<dyn Transport>) -> Self {
        self.call.settling.verify_transport = Some(transport);
        self
    }

    /// Names the capability (recorded in the journal).
    #[must_use]
    pub fn capability(mut self, name: impl Into<String>) -> Self {
        self.call.described.capability = Some(name.into());
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
}
