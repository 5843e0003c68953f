//! What a probe is pointed at, and how it goes: the target (a manifest, one
//! endpoint, or an MCP server) and the options (writes allowed or not,
//! headers, the timeout, which tools, their valid payloads).

use std::fmt;
use std::time::Duration;

use recourse::target::{TargetUrl, Url};
use recourse_mcp::McpTarget;
use serde_json::Value;

use crate::error::ProbeError;
use crate::subject::EndpointClaims;

/// Where the battery goes.
///
/// ```
/// use recourse_probe::{EndpointClaims, ProbeTarget};
/// use serde_json::json;
///
/// let manifest = ProbeTarget::manifest("http://127.0.0.1:8700").unwrap();
/// let schema = json!({"type": "object", "properties": {"q": {"type": "string"}}});
/// let one = ProbeTarget::endpoint("http://127.0.0.1:8700/api/q", schema, EndpointClaims::default());
/// assert!(one.is_ok());
/// assert!(ProbeTarget::endpoint("http://127.0.0.1:8700/api/q", json!(3), EndpointClaims::default()).is_err());
/// # let _ = manifest;
/// ```
#[derive(Debug, Clone)]
pub struct ProbeTarget(pub(crate) Aim);

/// The three kinds of target.
#[derive(Debug, Clone)]
pub(crate) enum Aim {
    /// A tool server's base URL; its manifest is read from `URL/api/capabilities`.
    Manifest(Url),
    /// One endpoint, POSTed, with its input schema.
    Endpoint {
        url: Url,
        schema: Value,
        claims: EndpointClaims,
    },
    /// The tools an MCP server lists.
    Mcp(McpTarget),
}

impl ProbeTarget {
    /// The tools of the server at `base_url`, as its manifest
    /// (`base_url/api/capabilities`) lists them.
    ///
    /// # Errors
    /// A URL recourse would not call (not http(s), with user info, …).
    pub fn manifest(base_url: &str) -> Result<Self, ProbeError> {
        Ok(Self(Aim::Manifest(parse_url("the URL", base_url)?)))
    }

    /// One endpoint, `POST`ed, taking JSON that `schema` describes; a write
    /// unless `claims` say it only reads.
    ///
    /// # Errors
    /// A URL recourse would not call, or a schema that is not a JSON Schema
    /// (an object or a boolean).
    pub fn endpoint(url: &str, schema: Value, claims: EndpointClaims) -> Result<Self, ProbeError> {
        let url = parse_url("the endpoint", url)?;
        if !(schema.is_object() || schema.is_boolean()) {
            return Err(ProbeError::new(
                "the schema is not a JSON Schema (an object)",
            ));
        }
        Ok(Self(Aim::Endpoint {
            url,
            schema,
            claims,
        }))
    }

    /// The tools of an MCP server: started over stdio, or at a Streamable
    /// HTTP endpoint.
    pub fn mcp(target: McpTarget) -> Self {
        Self(Aim::Mcp(target))
    }
}

fn parse_url(what: &str, text: &str) -> Result<Url, ProbeError> {
    let url = TargetUrl::parse(text).map_err(|e| ProbeError::new(format!("{what}: {e}")))?;
    Ok(url.url().clone())
}

/// Which tools by name a probe keeps.
pub(crate) type ToolFilter = dyn Fn(&str) -> bool + Send + Sync;

/// How a probe goes: read-only unless writes are allowed, a 10 s timeout per
/// request, every tool the target lists, payloads derived from schemas.
///
/// ```
/// use std::time::Duration;
/// use recourse_probe::ProbeOptions;
/// use serde_json::json;
///
/// let options = ProbeOptions::new()
///     .allow_writes()
///     .with_timeout(Duration::from_secs(5))
///     .with_header("Authorization", "Bearer t")
///     .only(|tool| tool.starts_with("exports_"))
///     .with_payload(Some("exports_create"), json!({"source_id": "s", "format": "pdf"}));
/// # let _ = options;
/// ```
pub struct ProbeOptions {
    pub(crate) allow_writes: bool,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) timeout: Duration,
    pub(crate) only: Option<Box<ToolFilter>>,
    pub(crate) payloads: Vec<(Option<String>, Value)>,
}

impl ProbeOptions {
    /// Read-only tools only, no headers, 10 s per request, every tool.
    pub fn new() -> Self {
        Self {
            allow_writes: false,
            headers: Vec::new(),
            timeout: Duration::from_secs(10),
            only: None,
            payloads: Vec::new(),
        }
    }

    /// Also probes tools that may write (every one not declared read-only),
    /// with the idempotency replay check for those not declared idempotent.
    #[must_use]
    pub fn allow_writes(mut self) -> Self {
        self.allow_writes = true;
        self
    }

    /// Sends `name: value` with every HTTP request (never shown in the scorecard).
    #[must_use]
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Each request's timeout.
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Probes only the tools whose name `keep` accepts.
    #[must_use]
    pub fn only(mut self, keep: impl Fn(&str) -> bool + Send + Sync + 'static) -> Self {
        self.only = Some(Box::new(keep));
        self
    }

    /// The valid payload (a JSON object) the battery varies for tool `name`
    /// instead of one derived from its schema; without a name, for the one
    /// tool probed.
    #[must_use]
    pub fn with_payload(mut self, name: Option<&str>, payload: Value) -> Self {
        self.payloads.push((name.map(str::to_owned), payload));
        self
    }
}

impl Default for ProbeOptions {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for ProbeOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Header values may be credentials: their names only.
        f.debug_struct("ProbeOptions")
            .field("allow_writes", &self.allow_writes)
            .field(
                "headers",
                &self.headers.iter().map(|(n, _)| n).collect::<Vec<_>>(),
            )
            .field("timeout", &self.timeout)
            .field("only", &self.only.is_some())
            .field("payloads", &self.payloads)
            .finish()
    }
}
