//! A server's bearer tokens — or, without one, the loopback `Host` rule
//! ([`recourse_tool::host`]) — checked before any route runs: the request
//! goes on carrying its [`Caller`]. The gateway and `recourse mcp proxy
//! --http` both take it.
//!
//! A check for tower-http's `ValidateRequestHeaderLayer` rather than
//! `axum::middleware::from_fn`: the check is synchronous, so a request either
//! goes on to the router untouched (no clone of the stack, no boxed future)
//! or is answered at once.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Instant;

use axum::body::Body;
use axum::extract::{ConnectInfo, Request};
use axum::http::HeaderValue;
use axum::http::header::{AUTHORIZATION, RETRY_AFTER};
use axum::response::{IntoResponse, Response};
use recourse_tool::ToolFailure;
use recourse_tool::host::names_a_loopback_host;

use tower_http::validate_request::{ValidateRequest, ValidateRequestHeaderLayer};

use crate::caller::{Caller, Callers};
use crate::refusal::Refusal;

/// Paths a load balancer asks without a token: status words only.
const OPEN_PATHS: [&str; 2] = ["/healthz", "/readyz"];

/// The layer that refuses, with a 401 envelope, a request without a
/// caller's `Authorization: Bearer <token>` — every path but `/healthz`,
/// `/readyz` and those under `sessions` (a prefix whose pages log a browser
/// in themselves: the gateway's console) — and hands the caller on as a
/// request extension. With no callers configured, everyone is
/// [`Caller::default_caller`] — but for a request naming a host other than
/// a loopback one when `loopback_hosts_only` (403 `HOST_NOT_ALLOWED`, every
/// path). A peer whose tokens fail too often is refused 429
/// `AUTH_RATE_LIMITED` for a while ([`throttle`](crate::throttle)), and
/// each failure is logged with the peer's address.
///
/// The gateway's router has it; another server that takes the gateway's
/// token rule (`recourse mcp proxy --http`) layers it on its own routes.
pub fn authorize(
    callers: Option<Arc<Callers>>,
    loopback_hosts_only: bool,
    sessions: Option<&'static str>,
) -> ValidateRequestHeaderLayer<Authorize> {
    ValidateRequestHeaderLayer::custom(Authorize {
        callers,
        anyone: Arc::new(Caller::default_caller()),
        loopback_hosts_only,
        sessions,
    })
}

/// The check [`authorize`] layers on a router.
#[derive(Debug, Clone)]
pub struct Authorize {
    callers: Option<Arc<Callers>>,
    /// Who a request is on a server without tokens.
    anyone: Arc<Caller>,
    loopback_hosts_only: bool,
    /// Where pages check their own sessions, not bearer tokens.
    sessions: Option<&'static str>,
}

/// Whether `path` is `root` or under it.
fn is_under(path: &str, root: &str) -> bool {
    path == root || path.strip_prefix(root).is_some_and(|p| p.starts_with('/'))
}

impl ValidateRequest<Body> for Authorize {
    type ResponseBody = Body;

    fn validate(&mut self, request: &mut Request) -> Result<(), Response> {
        if self.loopback_hosts_only && !names_a_loopback_host(request) {
            let error = Refusal::HostNotAllowed.error(
                "this server runs without a token, so it answers only requests for a loopback \
                 host (localhost, 127.0.0.1, [::1]); set RECOURSE_GATEWAY_TOKEN to serve other names",
            );
            return Err(ToolFailure::from(error).into_response());
        }
        let Some(callers) = self.callers.as_deref() else {
            request.extensions_mut().insert(Arc::clone(&self.anyone));
            return Ok(());
        };
        let path = request.uri().path();
        // The console's pages check their own session cookie; a bearer token
        // opens nothing there, and a session cookie nothing here.
        if OPEN_PATHS.contains(&path) || self.sessions.is_some_and(|root| is_under(path, root)) {
            return Ok(());
        }
        let peer = peer(request);
        let now = Instant::now();
        let mut failed = callers
            .failed_logins()
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if let Some(wait) = failed.refused_for(peer, now) {
            return Err(throttled(wait.as_secs().max(1)));
        }
        let caller = request
            .headers()
            .get(AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .and_then(|token| callers.identify(token));
        if let Some(caller) = caller {
            request.extensions_mut().insert(caller);
            return Ok(());
        }
        failed.failed(peer, now);
        drop(failed);
        tracing::warn!(%peer, path = %request.uri().path(), "authentication failed");
        let error =
            Refusal::Unauthorized.error("this server requires 'Authorization: Bearer <token>'");
        Err(ToolFailure::from(error).into_response())
    }
}

/// The peer's address; a request served without one (in-process, through
/// the router alone) counts as one unnamed peer.
fn peer(request: &Request) -> IpAddr {
    request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), |info| info.0.ip())
}

/// 429 `AUTH_RATE_LIMITED`, to be asked again after `secs`.
fn throttled(secs: u64) -> Response {
    let error = Refusal::AuthRateLimited.error(format!(
        "too many requests from this address failed authentication; try again in {secs} s"
    ));
    let mut response = ToolFailure::from(error)
        .with_status(Refusal::AuthRateLimited.status())
        .into_response();
    response
        .headers_mut()
        .insert(RETRY_AFTER, HeaderValue::from(secs));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_prefix_is_itself_and_what_is_under_it() {
        for path in ["/console", "/console/", "/console/calls/c-1"] {
            assert!(is_under(path, "/console"), "{path}");
        }
        for path in ["/consoles", "/console.css", "/v1/calls", "/", "/v1/console"] {
            assert!(!is_under(path, "/console"), "{path}");
        }
    }
}
