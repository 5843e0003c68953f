//! The gateway's bearer token — or, without one, the loopback `Host` rule
//! ([`recourse_tool::host`]) — checked before any route runs.
//!
//! A check for tower-http's `ValidateRequestHeaderLayer` rather than
//! `axum::middleware::from_fn`: the check is synchronous, so a request either
//! goes on to the router untouched (no clone of the stack, no boxed future)
//! or is answered at once.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::Request;
use axum::http::header::AUTHORIZATION;
use axum::response::{IntoResponse, Response};
use recourse_tool::ToolFailure;
use recourse_tool::host::names_a_loopback_host;

use crate::refusal::Refusal;
use tower_http::validate_request::{ValidateRequest, ValidateRequestHeaderLayer};

use crate::guard::token_matches;

/// Paths a load balancer asks without a token: status words only.
const OPEN_PATHS: [&str; 2] = ["/healthz", "/readyz"];

/// The layer that refuses, with a 401 envelope, a request without the
/// expected `Authorization: Bearer <token>` — every path but [`OPEN_PATHS`].
/// With no token configured, everything passes — but for a request naming a
/// host other than a loopback one when `loopback_hosts_only` (403
/// `HOST_NOT_ALLOWED`, every path).
pub(crate) fn layer(
    token: Option<&str>,
    loopback_hosts_only: bool,
) -> ValidateRequestHeaderLayer<Authorize> {
    ValidateRequestHeaderLayer::custom(Authorize {
        token: token.map(Arc::from),
        loopback_hosts_only,
    })
}

/// See [`layer`].
#[derive(Debug, Clone)]
pub(crate) struct Authorize {
    token: Option<Arc<str>>,
    loopback_hosts_only: bool,
}

impl ValidateRequest<Body> for Authorize {
    type ResponseBody = Body;

    fn validate(&mut self, request: &mut Request) -> Result<(), Response> {
        if self.loopback_hosts_only && !names_a_loopback_host(request) {
            let error = Refusal::HostNotAllowed.error(
                "this gateway runs without a token, so it answers only requests for a loopback \
                 host (localhost, 127.0.0.1, [::1]); set RECOURSE_GATEWAY_TOKEN to serve other names",
            );
            return Err(ToolFailure::from(error).into_response());
        }
        let Some(expected) = self
            .token
            .as_deref()
            .filter(|_| !OPEN_PATHS.contains(&request.uri().path()))
        else {
            return Ok(());
        };
        let presented = request
            .headers()
            .get(AUTHORIZATION)
            .and_then(|v| v.to_str().ok());
        if token_matches(presented, expected) {
            return Ok(());
        }
        let error =
            Refusal::Unauthorized.error("this gateway requires 'Authorization: Bearer <token>'");
        Err(ToolFailure::from(error).into_response())
    }
}
