//! Who is calling over the Streamable HTTP front: the name a layer in
//! front of the router found for the request's token, and whether that
//! caller's idempotency keys are its own.
//!
//! The proxy checks no token itself (see [`McpProxy::streamable_http_router`](crate::McpProxy::streamable_http_router)):
//! the layer that does puts a [`Client`] in the request's extensions, and
//! each `tools/call` of that request is that caller's call — journaled
//! under its name, its key claimed in its own key space, so that two
//! callers' same key never names the same call. A request without one
//! (the stdio front, or a front with one token) is the proxy's own.

use recourse::call::KeyScope;

/// The caller of an HTTP request, as the authorizing layer names it.
///
/// ```
/// use recourse::call::KeyScope;
/// use recourse_mcp_proxy::Client;
///
/// let client = Client::new("agent-a", KeyScope::PerCaller);
/// assert_eq!(client.name(), "agent-a");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Client {
    name: String,
    keys: KeyScope,
}

impl Client {
    /// Caller `name`, whose keys are in `keys`' space.
    pub fn new(name: impl Into<String>, keys: KeyScope) -> Self {
        Self {
            name: name.into(),
            keys,
        }
    }

    /// The caller's name, as its calls are journaled.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whose key space the caller's idempotency keys are in.
    pub fn keys(&self) -> KeyScope {
        self.keys
    }
}
