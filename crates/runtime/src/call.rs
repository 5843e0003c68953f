//! A logical call: where, what, and what must not change.

use std::sync::Arc;

use serde_json::Value;

use crate::{ConfigError, Reconciler, Traits, validate_pointer};

/// One logical call to a tool, however many attempts it takes.
///
/// ```
/// use recourse::Call;
/// use serde_json::json;
///
/// let call = Call::new("http://127.0.0.1:8700/api/exports", json!({"source_id": "doc-7", "format": "pdf"}))
///     .non_idempotent()
///     .protect("/source_id")
///     .header("X-Tenant", "acme");
/// assert!(!call.traits.idempotent);
/// ```
#[derive(Clone)]
pub struct Call {
    /// Where to send it (a URL for HTTP transports).
    pub target: String,
    /// The caller's payload.
    pub payload: Value,
    /// Extra headers, sent on every attempt. No corrector can change them.
    pub headers: Vec<(String, String)>,
    /// JSON Pointers to values no layer may change.
    pub protected: Vec<String>,
    /// The capability's traits.
    pub traits: Traits,
    /// The capability's input JSON Schema, if known.
    pub schema: Option<Value>,
    /// The user's original request, if known.
    pub intent: Option<String>,
    /// A reconciler for this call, overriding the executor's.
    pub reconciler: Option<Arc<dyn Reconciler>>,
    /// The reconcile URL template, when the reconciler is an [`HttpReconciler`](crate::HttpReconciler)
    /// (kept in the journal so a later `journal reconcile` can look the call up).
    pub reconcile_template: Option<String>,
    /// The capability's name, when the call came from a catalogue (for the journal).
    pub capability: Option<String>,
}

impl std::fmt::Debug for Call {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Call")
            .field("target", &self.target)
            .field("payload", &self.payload)
            .field("protected", &self.protected)
            .field("traits", &self.traits)
            .finish_non_exhaustive()
    }
}

impl Call {
    /// A call of `payload` to `target`: idempotent, not delegated, nothing protected.
    pub fn new(target: impl Into<String>, payload: Value) -> Self {
        Self {
            target: target.into(),
            payload,
            headers: Vec::new(),
            protected: Vec::new(),
            traits: Traits::default(),
            schema: None,
            intent: None,
            reconciler: None,
            reconcile_template: None,
            capability: None,
        }
    }

    /// Marks the capability non-idempotent: an idempotency key is sent, and a
    /// failure after sending is an unknown outcome.
    #[must_use]
    pub fn non_idempotent(mut self) -> Self {
        self.traits.idempotent = false;
        self
    }

    /// Marks the capability a delegated orchestrator: one dispatch, never corrected.
    #[must_use]
    pub fn delegated(mut self) -> Self {
        self.traits.delegated = true;
        self
    }

    /// Protects the value at `pointer` (a JSON Pointer such as `/amount`).
    #[must_use]
    pub fn protect(mut self, pointer: impl Into<String>) -> Self {
        self.protected.push(pointer.into());
        self
    }

    /// Adds a header sent on every attempt.
    #[must_use]
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Sets the input schema.
    #[must_use]
    pub fn with_schema(mut self, schema: Value) -> Self {
        self.schema = Some(schema);
        self
    }

    /// Sets the user's original request.
    #[must_use]
    pub fn with_intent(mut self, intent: impl Into<String>) -> Self {
        self.intent = Some(intent.into());
        self
    }

    /// Sets a reconciler for this call.
    #[must_use]
    pub fn with_reconciler(mut self, reconciler: Arc<dyn Reconciler>) -> Self {
        self.reconciler = Some(reconciler);
        self
    }

    /// Reconciles unknown outcomes by GETting `template` (see [`HttpReconciler`](crate::HttpReconciler)).
    ///
    /// # Errors
    /// When the template is not a usable URL template.
    pub fn with_reconcile_url(mut self, template: impl Into<String>) -> Result<Self, ConfigError> {
        let reconciler = crate::HttpReconciler::new(template)?;
        self.reconcile_template = Some(reconciler.template().to_owned());
        self.reconciler = Some(Arc::new(reconciler));
        Ok(self)
    }

    /// Checks the call before it runs.
    ///
    /// # Errors
    /// A protected pointer that is not a JSON Pointer, or an empty target.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.target.trim().is_empty() {
            return Err(ConfigError::new("target", "empty"));
        }
        self.protected.iter().try_for_each(|p| validate_pointer(p))
    }
}
