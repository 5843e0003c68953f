//! The console's cookies: written `HttpOnly`, `SameSite=Strict`, for
//! `/console` only, `Secure` off loopback; read from `Cookie` headers.

use std::time::Duration;

use axum::http::header::COOKIE;
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, Request};
use recourse_tool::host::names_a_loopback_host;

use super::ROOT;

/// The session's cookie.
pub(crate) const SESSION: &str = "recourse_console";
/// The login form's cookie: the other half of its CSRF token.
pub(crate) const LOGIN: &str = "recourse_console_login";

/// How a cookie is written for the request in `parts`: `Secure` unless the
/// request named a loopback host. A browser sends a `Secure` cookie back
/// over HTTPS only, so a console served over plain HTTP on another name
/// cannot log anyone in — rather than send a session id in clear over a
/// network.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CookieRule {
    secure: bool,
}

impl CookieRule {
    /// The rule for the request in `parts`.
    pub(crate) fn of(parts: &Parts) -> Self {
        let mut named = Request::new(());
        *named.uri_mut() = parts.uri.clone();
        if let Some(host) = parts.headers.get(axum::http::header::HOST) {
            named
                .headers_mut()
                .insert(axum::http::header::HOST, host.clone());
        }
        Self {
            secure: !names_a_loopback_host(&named),
        }
    }

    /// `name=value`, kept for `max_age`.
    pub(crate) fn set(self, name: &str, value: &str, max_age: Duration) -> HeaderValue {
        self.written(name, value, max_age.as_secs())
    }

    /// `name` removed.
    pub(crate) fn clear(self, name: &str) -> HeaderValue {
        self.written(name, "", 0)
    }

    fn written(self, name: &str, value: &str, max_age: u64) -> HeaderValue {
        let secure = if self.secure { "; Secure" } else { "" };
        let text = format!(
            "{name}={value}; Path={ROOT}; Max-Age={max_age}; HttpOnly; SameSite=Strict{secure}"
        );
        // Names are ours and values are hex digits: always a header value.
        HeaderValue::from_str(&text).unwrap_or_else(|_| HeaderValue::from_static(""))
    }
}

/// Every value of the cookie `name` the request sent (a browser may send
/// two of one name, set for different paths).
pub(crate) fn values<'a>(headers: &'a HeaderMap, name: &'a str) -> impl Iterator<Item = &'a str> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|line| line.split(';'))
        .filter_map(move |pair| {
            let (key, value) = pair.trim().split_once('=')?;
            (key == name).then_some(value)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(host: &str) -> Parts {
        Request::get("/console")
            .header("host", host)
            .body(())
            .unwrap()
            .into_parts()
            .0
    }

    #[test]
    fn cookies_are_secure_off_loopback() {
        let local = CookieRule::of(&parts("127.0.0.1:8780"));
        let set = local.set(SESSION, "ab12", Duration::from_secs(60));
        assert_eq!(
            set,
            "recourse_console=ab12; Path=/console; Max-Age=60; HttpOnly; SameSite=Strict"
        );
        let remote = CookieRule::of(&parts("gateway.example.com"));
        let set = remote.set(SESSION, "ab12", Duration::from_secs(60));
        assert!(set.to_str().unwrap().ends_with("; Secure"), "{set:?}");
        assert_eq!(
            remote.clear(LOGIN),
            "recourse_console_login=; Path=/console; Max-Age=0; HttpOnly; SameSite=Strict; Secure"
        );
    }

    #[test]
    fn every_value_of_a_name_is_read() {
        let mut headers = HeaderMap::new();
        headers.append(COOKIE, HeaderValue::from_static("a=1; recourse_console=x"));
        headers.append(COOKIE, HeaderValue::from_static("recourse_console=y;b"));
        headers.append(COOKIE, HeaderValue::from_static("recourse_console_login=z"));
        let found: Vec<&str> = values(&headers, SESSION).collect();
        assert_eq!(found, ["x", "y"]);
        assert_eq!(values(&headers, LOGIN).collect::<Vec<_>>(), ["z"]);
        assert_eq!(values(&HeaderMap::new(), SESSION).count(), 0);
    }
}
