//! [`TargetUrl`]: a target parsed once; and reconcile templates.

use std::borrow::Cow;
use std::fmt;
use std::net::IpAddr;

use url::{Host, Url};

use super::{TargetError, normalize_path, quote};

/// The placeholders of a reconcile URL template, as written and as the URL
/// parser percent-encodes them in a path.
const PLACEHOLDERS: [(&str, &str); 2] = [
    ("{key}", "%7Bkey%7D"),
    ("{operation_id}", "%7Boperation_id%7D"),
];

/// A target URL: parsed by the WHATWG rules, `http` or `https`, with a host
/// and without user info, its path in one spelling ([`normalize_path`]:
/// `//api/pay`, `/api/pay/` and `/api/%70ay` are `/api/pay`). Send
/// [`url`](Self::url), the URL that was checked.
///
/// ```
/// use recourse_core::allow::TargetUrl;
///
/// let t = TargetUrl::parse("HTTP://0x7f000001:80/a/./b/../c").unwrap();
/// assert_eq!(t.as_str(), "http://127.0.0.1/a/c");
/// assert!(t.is_loopback());
/// assert_eq!(TargetUrl::parse("http://127.0.0.1//api/%70ay/").unwrap().as_str(), "http://127.0.0.1/api/pay");
/// assert!(TargetUrl::parse("http://user:pw@127.0.0.1/").is_err());
/// assert!(TargetUrl::parse("file:///etc/passwd").is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TargetUrl {
    url: Url,
}

impl TargetUrl {
    /// Parses a target.
    ///
    /// # Errors
    /// [`TargetErrorKind::Invalid`](super::TargetErrorKind::Invalid): not a URL, not `http`/`https`, or with a
    /// user name or password.
    pub fn parse(input: &str) -> Result<Self, TargetError> {
        let url = Url::parse(input)
            .map_err(|e| TargetError::invalid(format!("{} is not a URL: {e}", quote(input))))?;
        if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
            return Err(TargetError::invalid(format!(
                "{} is not an http(s) URL",
                quote(input)
            )));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(TargetError::invalid(
                "a target URL may not carry a user name or password (user:pass@); send credentials in a header",
            ));
        }
        // One spelling of the path: what is matched is what is sent.
        let mut url = url;
        if let Cow::Owned(path) = normalize_path(url.path()) {
            url.set_path(&path);
        }
        Ok(Self { url })
    }

    /// The parsed URL: what was checked, and what to send.
    pub fn url(&self) -> &Url {
        &self.url
    }

    /// The parsed URL, owned.
    pub fn into_url(self) -> Url {
        self.url
    }

    /// The URL as the parser serialises it (normalised: `HTTP://Ex.com:80/a/../b` is `http://ex.com/b`).
    pub fn as_str(&self) -> &str {
        self.url.as_str()
    }

    /// Whether the host is a loopback address or `localhost`.
    pub fn is_loopback(&self) -> bool {
        match host_of(&self.url) {
            HostRef::Domain(d) => d == "localhost",
            HostRef::Ip(ip) => ip.is_loopback(),
        }
    }

    /// The host as written in the normalised URL (`[::1]` with brackets).
    pub fn host(&self) -> &str {
        self.url.host_str().unwrap_or_default()
    }
}

impl fmt::Display for TargetUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A reconcile URL template, parsed with its placeholders in place.
#[derive(Debug, Clone)]
pub struct Template {
    pub(super) target: TargetUrl,
    /// Where the first placeholder starts in the parsed path, if there is one.
    pub(super) placeholder_at: Option<usize>,
}

impl Template {
    pub(super) fn parse(template: &str) -> Result<Self, TargetError> {
        let target = TargetUrl::parse(template)?;
        let written: usize = PLACEHOLDERS
            .iter()
            .map(|(p, _)| template.matches(p).count())
            .sum();
        if written == 0 {
            return Err(TargetError::invalid(
                "a reconcile template needs a {key} or {operation_id} placeholder",
            ));
        }
        let (path, query) = (target.url.path(), target.url.query().unwrap_or_default());
        let in_path_or_query: usize = PLACEHOLDERS
            .iter()
            .map(|(plain, encoded)| path.matches(encoded).count() + query.matches(plain).count())
            .sum();
        if in_path_or_query != written {
            return Err(TargetError::invalid(
                "placeholders may appear only in a reconcile template's path or query",
            ));
        }
        let placeholder_at = PLACEHOLDERS
            .iter()
            .filter_map(|(_, encoded)| path.find(encoded))
            .min();
        Ok(Self {
            target,
            placeholder_at,
        })
    }
}

impl Template {
    /// Whether `lookup`, the template with its placeholders filled in, stays
    /// where the template points: on its origin, and below its path up to
    /// the first placeholder (a value must not complete a dot segment the
    /// template began, as an empty one does after `/..{key}`).
    pub fn contains(&self, lookup: &TargetUrl) -> bool {
        let path = self.target.url.path();
        let fixed = &path[..self.placeholder_at.unwrap_or(path.len())];
        lookup.url.origin() == self.target.url.origin() && lookup.url.path().starts_with(fixed)
    }
}

/// Checks that `template` is a usable reconcile URL template: an http(s) URL
/// without user info, with `{key}` or `{operation_id}` placeholders only in
/// its path or query; the template, parsed.
pub fn validate_template(template: &str) -> Result<Template, TargetError> {
    Template::parse(template)
}

/// A host as the parser normalised it; an IPv4-mapped IPv6 address as IPv4.
#[derive(Debug, Clone, Copy)]
pub(super) enum HostRef<'a> {
    Domain(&'a str),
    Ip(IpAddr),
}

pub(super) fn host_of(url: &Url) -> HostRef<'_> {
    match url.host() {
        Some(Host::Domain(d)) => HostRef::Domain(d),
        Some(Host::Ipv4(ip)) => HostRef::Ip(IpAddr::V4(ip)),
        Some(Host::Ipv6(ip)) => HostRef::Ip(ip.to_ipv4_mapped().map_or(IpAddr::V6(ip), IpAddr::V4)),
        // `TargetUrl::parse` refuses URLs without a host.
        None => HostRef::Domain(""),
    }
}
