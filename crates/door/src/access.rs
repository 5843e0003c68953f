//! Who may call a server that takes the gateway's rule — the gateway
//! itself, and `recourse mcp proxy --http`: the named callers of a tokens
//! file, one token (`RECOURSE_GATEWAY_TOKEN`), both, or neither; and,
//! without a token, requests naming a loopback host only, unless the
//! server was exposed without one on purpose.

use std::sync::Arc;

use recourse::call::KeyScope;
#[cfg(feature = "http")]
use tower_http::validate_request::ValidateRequestHeaderLayer;

#[cfg(feature = "http")]
use crate::authorize::{Authorize, authorize};
use crate::caller::{Callers, CallersError};

/// Who may call a server, checked by the [`layer`](Self::layer) in front of
/// its routes.
///
/// ```
/// use recourse_door::{Access, Callers};
///
/// // One token: caller `default`, its keys shared.
/// let one = Access::new(None, Some("a-long-operator-token")).unwrap();
/// assert_eq!(one.callers().map(Callers::len), Some(1));
/// // Neither: anyone — on a loopback host name only, unless told otherwise.
/// let open = Access::new(None, None).unwrap();
/// assert!(open.callers().is_none() && open.loopback_hosts_only());
/// assert!(!open.serve_any_host().loopback_hosts_only());
/// ```
#[derive(Debug, Clone, Default)]
pub struct Access {
    callers: Option<Arc<Callers>>,
    any_host: bool,
}

impl Access {
    /// The callers of a tokens file, and `token` beside them as caller
    /// `default` ([`Callers::with_default`]); the one token's caller
    /// ([`Callers::single`]); or, with neither, anyone.
    ///
    /// # Errors
    /// The tokens file names a `default` caller, or holds `token` too.
    pub fn new(callers: Option<Callers>, token: Option<&str>) -> Result<Self, CallersError> {
        let callers = match (callers, token) {
            (Some(callers), Some(token)) => Some(callers.with_default(token)?),
            (Some(callers), None) => Some(callers),
            (None, Some(token)) => Some(Callers::single(token)),
            (None, None) => None,
        };
        Ok(Self {
            callers: callers.map(Arc::new),
            any_host: false,
        })
    }

    /// Without a token, serves requests for any `Host` — what a server
    /// exposed beyond loopback without one (`--insecure-no-auth`) needs,
    /// since its clients name it by its address. With a token, no change.
    #[must_use]
    pub fn serve_any_host(mut self) -> Self {
        self.any_host = true;
        self
    }

    /// Checks the tokens of a server reachable beyond loopback
    /// ([`Callers::check_exposed`]); without a token there is nothing to check.
    ///
    /// # Errors
    /// A token given as itself that is shorter than 32 characters.
    pub fn check_exposed(&self) -> Result<(), CallersError> {
        self.callers().map_or(Ok(()), Callers::check_exposed)
    }

    /// The callers, when a token is needed.
    pub fn callers(&self) -> Option<&Callers> {
        self.callers.as_deref()
    }

    /// Whose key space a caller's idempotency key is in, when there are callers.
    pub fn key_scope(&self) -> Option<KeyScope> {
        self.callers().map(Callers::key_scope)
    }

    /// Whether only requests naming a loopback host are served: without a
    /// token, unless told to serve any host.
    pub fn loopback_hosts_only(&self) -> bool {
        self.callers.is_none() && !self.any_host
    }

    /// The layer that checks it ([`authorize`]), handing each request on
    /// with its caller.
    #[cfg(feature = "http")]
    pub fn layer(&self) -> ValidateRequestHeaderLayer<Authorize> {
        authorize(self.callers.clone(), self.loopback_hosts_only(), None)
    }

    /// The callers, and whether only loopback host names are served.
    pub fn into_parts(self) -> (Option<Arc<Callers>>, bool) {
        let loopback_hosts_only = self.loopback_hosts_only();
        (self.callers, loopback_hosts_only)
    }
}
