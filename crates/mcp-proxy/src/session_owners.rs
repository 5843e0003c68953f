//! Whose each Streamable HTTP session is, how many there may be, and which
//! web pages may open one.
//!
//! # Why
//!
//! rmcp's session manager knows a session by its id alone: any caller that
//! holds another's id could use or end it, and every `initialize` makes a
//! session (a worker and a proxy clone) that lasts until it has been idle
//! for rmcp's keep-alive — 3,000 of them took 311 MB. So the proxy keeps,
//! beside rmcp's table, who opened each session: a request naming a
//! session another caller opened is answered as an unknown one (404,
//! nothing done); a new session past the cap is refused (503) until one
//! ends; and a session idle past [`IDLE`] is forgotten here and closed in
//! rmcp. A browser page of another site sends an `Origin` that names it:
//! a present `Origin` whose host is neither loopback nor the host the
//! request names is refused (403), so a page a user visits cannot drive a
//! proxy on their machine.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::header::{HOST, ORIGIN};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use recourse_door::Caller;
use rmcp::transport::streamable_http_server::session::SessionManager;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;

/// The header a session travels in.
const SESSION_HEADER: &str = "mcp-session-id";

/// How many sessions the HTTP front keeps open at once by default.
pub const DEFAULT_MAX_SESSIONS: usize = 1000;

/// A session idle this long is closed: rmcp's own keep-alive.
pub(crate) const IDLE: Duration = Duration::from_secs(300);

/// The sessions of one HTTP front, by id: who opened each, and when it was
/// last used.
pub(crate) struct SessionOwners {
    by_id: Mutex<HashMap<String, Owned>>,
    max: usize,
    manager: Arc<LocalSessionManager>,
}

struct Owned {
    caller: Option<String>,
    seen: Instant,
}

impl SessionOwners {
    /// At most `max` sessions of `manager`'s.
    pub(crate) fn new(manager: Arc<LocalSessionManager>, max: usize) -> Self {
        Self {
            by_id: Mutex::default(),
            max: max.max(1),
            manager,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Owned>> {
        self.by_id.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Forgets the sessions idle past [`IDLE`] at `now`, closing them in rmcp.
    fn forget_idle(&self, now: Instant) {
        let idle: Vec<String> = {
            let mut table = self.lock();
            let idle: Vec<String> = table
                .iter()
                .filter(|(_, o)| now.saturating_duration_since(o.seen) >= IDLE)
                .map(|(id, _)| id.clone())
                .collect();
            for id in &idle {
                table.remove(id);
            }
            idle
        };
        for id in idle {
            let manager = Arc::clone(&self.manager);
            tokio::spawn(async move {
                let _ = manager.close_session(&id.into()).await;
            });
        }
    }
}

/// The layer (`axum::middleware::from_fn_with_state`): checks `Origin`,
/// the session's owner, and the cap on sessions; records who opens one.
pub(crate) async fn guard(
    State(owners): State<Arc<SessionOwners>>,
    request: Request,
    next: Next,
) -> Response {
    if let Some(refused) = cross_site(request.headers()) {
        return refused;
    }
    let caller = request
        .extensions()
        .get::<Arc<Caller>>()
        .map(|c| c.name().to_owned());
    let now = Instant::now();
    let session = request
        .headers()
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let Some(id) = session else {
        if request.method() != Method::POST {
            return next.run(request).await;
        }
        owners.forget_idle(now);
        if owners.lock().len() >= owners.max {
            return refuse(
                StatusCode::SERVICE_UNAVAILABLE,
                "too many open sessions: end one (DELETE) or try again later",
            );
        }
        let response = next.run(request).await;
        if let Some(id) = response
            .headers()
            .get(SESSION_HEADER)
            .and_then(|v| v.to_str().ok())
        {
            owners
                .lock()
                .insert(id.to_owned(), Owned { caller, seen: now });
        }
        return response;
    };
    {
        let mut table = owners.lock();
        if let Some(owned) = table.get_mut(&id) {
            if owned.caller != caller {
                // Another caller's session is, to this one, no session.
                return refuse(StatusCode::NOT_FOUND, "Session not found");
            }
            owned.seen = now;
        }
    }
    let ending = request.method() == Method::DELETE;
    let response = next.run(request).await;
    if ending && response.status().is_success() {
        owners.lock().remove(&id);
    }
    response
}

/// The refusal for a present `Origin` naming another site than the request
/// does (or than loopback): `None` when there is no `Origin`, or it is fine.
fn cross_site(headers: &HeaderMap) -> Option<Response> {
    let origin = headers.get(ORIGIN)?;
    let host = headers
        .get(HOST)
        .and_then(|v| v.to_str().ok())
        .map(host_name);
    let allowed = origin
        .to_str()
        .ok()
        .and_then(|o| recourse::target::Url::parse(o).ok())
        .and_then(|u| u.host_str().map(str::to_owned))
        .is_some_and(|name| {
            is_loopback(&name) || host.is_some_and(|h| h.eq_ignore_ascii_case(&name))
        });
    (!allowed).then(|| {
        refuse(
            StatusCode::FORBIDDEN,
            "a web page of another site may not use this MCP server (its Origin is neither this \
             host nor loopback)",
        )
    })
}

/// The host of a `Host` header's `name[:port]` (`[::1]:8790` is `[::1]`).
fn host_name(host: &str) -> &str {
    if host.starts_with('[') {
        return host.split_inclusive(']').next().unwrap_or(host);
    }
    host.rsplit_once(':').map_or(host, |(name, _)| name)
}

fn is_loopback(name: &str) -> bool {
    name == "localhost"
        || name
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

fn refuse(status: StatusCode, message: &str) -> Response {
    (
        status,
        [("content-type", "text/plain")],
        Body::from(message.to_owned()),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(origin: &str, host: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(ORIGIN, HeaderValue::from_str(origin).unwrap());
        h.insert(HOST, HeaderValue::from_str(host).unwrap());
        h
    }

    #[test]
    fn an_origin_is_fine_on_loopback_or_the_requests_own_host() {
        for (origin, host) in [
            ("http://localhost:6274", "127.0.0.1:8790"),
            ("http://127.0.0.1:3000", "proxy.internal:8790"),
            ("http://[::1]:3000", "proxy.internal"),
            ("https://proxy.internal", "proxy.internal:8790"),
            ("https://PROXY.internal", "proxy.internal"),
        ] {
            assert!(
                cross_site(&headers(origin, host)).is_none(),
                "{origin} {host}"
            );
        }
        for (origin, host) in [
            ("https://evil.example", "127.0.0.1:8790"),
            ("https://evil.example", "proxy.internal:8790"),
            ("null", "127.0.0.1:8790"),
            ("http://127.0.0.1.evil.example", "127.0.0.1"),
        ] {
            assert!(
                cross_site(&headers(origin, host)).is_some(),
                "{origin} {host}"
            );
        }
        assert!(
            cross_site(&HeaderMap::new()).is_none(),
            "no Origin: not a browser page"
        );
    }

    #[test]
    fn a_host_header_names_its_host() {
        assert_eq!(host_name("a.example:80"), "a.example");
        assert_eq!(host_name("a.example"), "a.example");
        assert_eq!(host_name("[::1]:8790"), "[::1]");
    }
}
