//! Loopback `Host` names only, for a server that answers without a token.
//!
//! A server on a loopback port without a token trusts whoever can reach the
//! port — and a web page can, by DNS rebinding: its own name, resolved again
//! to 127.0.0.1, makes the browser send the page's requests (and show it the
//! answers) to the local server. What gives such a request away is its
//! `Host`: the page's name, never a loopback one. So a server without a token
//! serves only requests that name a loopback host (`localhost`, a name under
//! `.localhost`, a loopback address), or none (no browser sends none).
//!
//! ```
//! use axum::http::Request;
//! use recourse_tool::host::names_a_loopback_host;
//!
//! let local = Request::get("/v1/calls").header("host", "127.0.0.1:8780").body(()).unwrap();
//! let rebound = Request::get("/v1/calls").header("host", "evil.example:8780").body(()).unwrap();
//! assert!(names_a_loopback_host(&local));
//! assert!(!names_a_loopback_host(&rebound));
//! ```

use std::net::IpAddr;

use axum::body::Body;
use axum::http::Request;
use axum::http::header::HOST;
use axum::response::{IntoResponse, Response};
use recourse_protocol::ToolError;
use tower_http::validate_request::{ValidateRequest, ValidateRequestHeaderLayer};

use crate::ToolFailure;

/// The `error.code` of a request refused for the host it names.
pub const HOST_NOT_ALLOWED: &str = "HOST_NOT_ALLOWED";

/// Whether `request` names a loopback host, or none: its URI's authority
/// (HTTP/2, absolute-form), else its `Host` header.
pub fn names_a_loopback_host<B>(request: &Request<B>) -> bool {
    let named = match request.uri().authority() {
        Some(authority) => Some(authority.host()),
        None => match request.headers().get(HOST) {
            // A `Host` that is not text names no host we serve.
            Some(value) => match value.to_str() {
                Ok(text) => Some(host_of(text)),
                Err(_) => return false,
            },
            None => None,
        },
    };
    named.is_none_or(is_loopback_name)
}

/// The host of a `Host` value: without its port, an IPv6 literal without brackets.
fn host_of(value: &str) -> &str {
    if let Some(rest) = value.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    match value.rsplit_once(':') {
        Some((host, port)) if port.bytes().all(|b| b.is_ascii_digit()) => host,
        _ => value,
    }
}

/// `localhost`, a name under `.localhost` (RFC 6761: browsers resolve
/// these to loopback themselves), or a loopback address.
fn is_loopback_name(host: &str) -> bool {
    let host = host.trim_end_matches('.');
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    if let Ok(ip) = bare.parse::<IpAddr>() {
        return ip.is_loopback();
    }
    let lower = host.to_ascii_lowercase();
    lower == "localhost" || lower.ends_with(".localhost")
}

/// The refusal of a request that names another host.
pub fn host_not_allowed() -> ToolError {
    ToolError::permission_denied(
        HOST_NOT_ALLOWED,
        "this server answers without a token, so only to requests for a loopback host \
         (localhost, 127.0.0.1, [::1]); set a token to serve other names",
    )
}

/// A layer that answers 403 `HOST_NOT_ALLOWED` to any request that names a
/// host other than a loopback one ([`names_a_loopback_host`]).
pub fn loopback_hosts_only() -> ValidateRequestHeaderLayer<LoopbackHosts> {
    ValidateRequestHeaderLayer::custom(LoopbackHosts)
}

/// See [`loopback_hosts_only`].
#[derive(Debug, Clone, Copy)]
pub struct LoopbackHosts;

impl ValidateRequest<Body> for LoopbackHosts {
    type ResponseBody = Body;

    fn validate(&mut self, request: &mut Request<Body>) -> Result<(), Response> {
        if names_a_loopback_host(request) {
            Ok(())
        } else {
            Err(ToolFailure::from(host_not_allowed()).into_response())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_host(host: &str) -> Request<()> {
        Request::get("/").header(HOST, host).body(()).unwrap()
    }

    #[test]
    fn loopback_names_and_addresses_pass() {
        for host in [
            "localhost",
            "localhost:8780",
            "LOCALHOST.",
            "api.localhost:1",
            "127.0.0.1",
            "127.0.0.1:8780",
            "127.8.9.10:1",
            "[::1]",
            "[::1]:8780",
        ] {
            assert!(names_a_loopback_host(&with_host(host)), "{host}");
        }
        assert!(names_a_loopback_host(&Request::get("/").body(()).unwrap()));
    }

    #[test]
    fn every_other_name_is_refused() {
        for host in [
            "evil.example",
            "evil.example:8780",
            "localhost.evil.example",
            "127.0.0.1.nip.io",
            "0.0.0.0:8780",
            "10.0.0.1",
            "[::ffff:7f00:1]:1",
            "[2001:db8::1]:8780",
            "",
            ":8780",
        ] {
            assert!(!names_a_loopback_host(&with_host(host)), "{host}");
        }
        let absolute = Request::get("http://evil.example:8780/v1/calls")
            .header(HOST, "127.0.0.1")
            .body(())
            .unwrap();
        assert!(
            !names_a_loopback_host(&absolute),
            "the URI's authority wins"
        );
        let binary = Request::get("/")
            .header(HOST, axum::http::HeaderValue::from_bytes(b"\xff").unwrap())
            .body(())
            .unwrap();
        assert!(!names_a_loopback_host(&binary));
    }
}
