//! A logical call: where, what, and what must not change — checked once, when built.

mod builder;
mod spec;

pub use crate::header::check_header;
pub use builder::CallBuilder;
#[cfg(feature = "schema")]
pub use spec::McpSpec;
pub use spec::{AskedLimits, CallSpec, MAX_DEADLINE_SECS};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::schema::Schema;
use crate::verify::Verifier;
use crate::verify::VerifySpec;
use recourse_core::idempotency::Idempotency;
use recourse_core::method::Method;
use recourse_core::policy::Traits;
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
    /// How an unknown outcome is settled.
    pub(crate) settling: Settling,
    /// What the call is described by: its schema, the caller's intent, its
    /// capability's name.
    pub(crate) described: Described,
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

/// What describes a call beyond its payload: the schema it must meet,
/// what the caller meant (for a corrector), the capability it came from.
#[derive(Clone, Default)]
pub(crate) struct Described {
    pub(crate) schema: Option<Schema>,
    pub(crate) intent: Option<String>,
    pub(crate) capability: Option<String>,
}

/// How a call whose outcome is unknown is settled: a lookup, or a read of
/// its effect (and what sends that read).
#[derive(Clone, Default)]
pub(crate) struct Settling {
    pub(crate) reconciler: Option<Arc<dyn Reconciler>>,
    pub(crate) reconcile_template: Option<String>,
    pub(crate) verifier: Option<Arc<Verifier>>,
    /// A verification was declared, and did not apply to the payload.
    pub(crate) verify_not_applicable: bool,
    pub(crate) verify_transport: Option<Arc<dyn Transport>>,
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
        self.described.schema.as_ref()
    }

    /// The user's original request, if known.
    pub fn intent(&self) -> Option<&str> {
        self.described.intent.as_deref()
    }

    /// The capability's name, when the call came from a catalogue.
    pub fn capability(&self) -> Option<&str> {
        self.described.capability.as_deref()
    }

    /// The reconcile URL template, when the call has one.
    pub fn reconcile_template(&self) -> Option<&str> {
        self.settling.reconcile_template.as_deref()
    }

    /// The declared verification, when the call has one that applies to it.
    pub fn verification(&self) -> Option<&VerifySpec> {
        self.settling.verifier.as_deref().map(Verifier::spec)
    }

    /// Whether a verification was declared that does not apply to this
    /// call's payload (see [`CallBuilder::verify_if_applicable`]): it runs
    /// as a call without one.
    pub fn is_verification_not_applicable(&self) -> bool {
        self.settling.verify_not_applicable
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
    use recourse_core::idempotency::Evidence;
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
