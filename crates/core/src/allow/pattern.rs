//! [`TargetPattern`]: one allowlist entry, parsed and matched by URL parts.

use std::fmt;
use std::net::IpAddr;

use url::Url;

use super::target::{HostRef, host_of};
use super::{TargetError, TargetErrorKind, TargetUrl, normalize_path, quote};

/// One allowlist entry; see [`TargetAllowlist`](crate::allow::TargetAllowlist) for the grammar.
///
/// ```
/// use recourse_core::allow::{TargetPattern, TargetUrl};
///
/// let p: TargetPattern = "http://127.0.0.1:*".parse().unwrap();
/// assert!(p.matches(&TargetUrl::parse("http://127.1:9101/x").unwrap()));
/// assert!(!p.matches(&TargetUrl::parse("https://127.0.0.1/x").unwrap()));
/// assert!("https://api.*.com".parse::<TargetPattern>().is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetPattern {
    text: String,
    /// `None`: http or https.
    scheme: Option<&'static str>,
    host: HostPattern,
    /// `None`: any port.
    port: Option<u16>,
    path: PathPattern,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum HostPattern {
    Any,
    Exact(ExactHost),
    /// Hosts ending in this suffix, which starts with a dot.
    Below(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum ExactHost {
    Domain(String),
    Ip(IpAddr),
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum PathPattern {
    Any,
    Exact(String),
    /// Paths starting with this prefix, which ends with a slash.
    Below(String),
}

const STAR_IN_HOST: &str =
    "`*` may stand only for a whole host (`*`) or its leading labels (`*.example.com`)";
const STAR_IN_PATH: &str = "`*` may stand only for the whole last path segment (`/v1/*`)";

impl TargetPattern {
    /// Parses a pattern.
    ///
    /// # Errors
    /// [`TargetErrorKind::Pattern`], saying what is wrong with it.
    pub fn parse(pattern: &str) -> Result<Self, TargetError> {
        Self::parse_parts(pattern).map_err(|why| {
            TargetError::new(
                TargetErrorKind::Pattern,
                format!("invalid target pattern {}: {why}", quote(pattern)),
            )
        })
    }

    fn parse_parts(pattern: &str) -> Result<Self, String> {
        if pattern.is_empty() {
            return Err("it is empty".to_owned());
        }
        let refused = |c: char| c.is_whitespace() || c.is_control() || "@?#\\".contains(c);
        if let Some(c) = pattern.chars().find(|&c| refused(c)) {
            return Err(format!(
                "{c:?} may not appear in a pattern (no user info, query, fragment, backslash or space)"
            ));
        }
        let (scheme, rest) = match pattern.split_once("://") {
            Some((s, rest)) => (Some(scheme(s)?), rest),
            None => (None, pattern),
        };
        let (authority, path) = rest
            .find('/')
            .map_or((rest, None), |i| (&rest[..i], Some(&rest[i..])));
        let (host, port) = split_port(authority)?;
        if scheme.is_none() && (port.is_some() || path.is_some()) {
            return Err(
                "a pattern with a port or a path needs a scheme (http://… or https://…)".to_owned(),
            );
        }
        let port = match port {
            None => scheme.map(|s| if s == "https" { 443 } else { 80 }),
            Some("*") => None,
            Some(p) => Some(parse_port(p)?),
        };
        Ok(Self {
            text: pattern.to_owned(),
            scheme,
            host: host_pattern(host)?,
            port,
            path: path.map_or(Ok(PathPattern::Any), path_pattern)?,
        })
    }

    /// Whether `target` matches.
    pub fn matches(&self, target: &TargetUrl) -> bool {
        self.matches_at(target, None)
    }

    /// Whether `target` matches, when its path may vary from `placeholder_at` on.
    pub(super) fn matches_at(&self, target: &TargetUrl, placeholder_at: Option<usize>) -> bool {
        let url = target.url();
        self.scheme.is_none_or(|s| s == url.scheme())
            && self
                .port
                .is_none_or(|p| Some(p) == url.port_or_known_default())
            && self.host_matches(host_of(url))
            && self.path_matches(url.path(), placeholder_at)
    }

    fn host_matches(&self, host: HostRef<'_>) -> bool {
        match (&self.host, host) {
            (HostPattern::Any, _) => true,
            (HostPattern::Exact(ExactHost::Domain(a)), HostRef::Domain(b)) => a == b,
            (HostPattern::Exact(ExactHost::Ip(a)), HostRef::Ip(b)) => *a == b,
            (HostPattern::Below(suffix), HostRef::Domain(d)) => {
                d.len() > suffix.len() && d.ends_with(suffix.as_str())
            }
            _ => false,
        }
    }

    fn path_matches(&self, path: &str, placeholder_at: Option<usize>) -> bool {
        match &self.path {
            PathPattern::Any => true,
            PathPattern::Exact(p) => placeholder_at.is_none() && path == p && is_plain_path(path),
            PathPattern::Below(prefix) => {
                (path.starts_with(prefix.as_str()) || path == &prefix[..prefix.len() - 1])
                    && placeholder_at.is_none_or(|at| at >= prefix.len())
                    && is_plain_path(path)
            }
        }
    }
}

impl std::str::FromStr for TargetPattern {
    type Err = TargetError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl fmt::Display for TargetPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

fn scheme(s: &str) -> Result<&'static str, String> {
    if s.eq_ignore_ascii_case("http") {
        Ok("http")
    } else if s.eq_ignore_ascii_case("https") {
        Ok("https")
    } else {
        Err(format!(
            "the scheme must be http or https, not {}",
            quote(s)
        ))
    }
}

/// Splits `host[:port]` (an IPv6 host in brackets).
fn split_port(authority: &str) -> Result<(&str, Option<&str>), String> {
    if authority.starts_with('[') {
        let end = authority.find(']').ok_or("an unclosed '[' in the host")? + 1;
        let port = match &authority[end..] {
            "" => None,
            rest => Some(
                rest.strip_prefix(':')
                    .ok_or("only ':port' may follow ']'")?,
            ),
        };
        return Ok((&authority[..end], port));
    }
    match authority.split_once(':') {
        Some((_, port)) if port.contains(':') => {
            Err("write an IPv6 address in brackets ([::1])".to_owned())
        }
        Some((host, port)) => Ok((host, Some(port))),
        None => Ok((authority, None)),
    }
}

fn parse_port(p: &str) -> Result<u16, String> {
    p.bytes()
        .all(|b| b.is_ascii_digit())
        .then(|| p.parse::<u16>().ok())
        .flatten()
        .filter(|&p| p != 0)
        .ok_or_else(|| format!("the port must be 1-65535 or *, not {}", quote(p)))
}

fn host_pattern(host: &str) -> Result<HostPattern, String> {
    if host == "*" {
        return Ok(HostPattern::Any);
    }
    if let Some(domain) = host.strip_prefix("*.") {
        if domain.contains('*') {
            return Err(STAR_IN_HOST.to_owned());
        }
        return match exact_host(domain)? {
            ExactHost::Domain(d) => Ok(HostPattern::Below(format!(".{d}"))),
            ExactHost::Ip(_) => Err("`*.` must be followed by a domain name".to_owned()),
        };
    }
    if host.contains('*') {
        return Err(STAR_IN_HOST.to_owned());
    }
    exact_host(host).map(HostPattern::Exact)
}

/// A pattern's host, normalised as a target's host is.
fn exact_host(host: &str) -> Result<ExactHost, String> {
    if host.is_empty() {
        return Err("the host is empty".to_owned());
    }
    let url = Url::parse(&format!("http://{host}/"))
        .map_err(|e| format!("{} is not a host: {e}", quote(host)))?;
    Ok(match host_of(&url) {
        HostRef::Domain(d) => ExactHost::Domain(d.to_owned()),
        HostRef::Ip(ip) => ExactHost::Ip(ip),
    })
}

fn path_pattern(path: &str) -> Result<PathPattern, String> {
    let (literal, below) = match path.strip_suffix('*') {
        Some(prefix) if prefix.ends_with('/') => (prefix, true),
        Some(_) => return Err(STAR_IN_PATH.to_owned()),
        None => (path, false),
    };
    if literal.contains('*') {
        return Err(STAR_IN_PATH.to_owned());
    }
    if literal.split('/').any(is_dot_segment) {
        return Err("a pattern's path may not have `.` or `..` segments".to_owned());
    }
    if below && literal == "/" {
        return Ok(PathPattern::Any);
    }
    let url = Url::parse(&format!("http://h{literal}"))
        .map_err(|e| format!("{} is not a path: {e}", quote(path)))?;
    // In the spelling targets are given ([`normalize_path`]): no trailing
    // slash; a prefix keeps one, so `/v1/*` is below `/v1/` (and `/v1`
    // itself), never `/v1x`.
    let normalised = normalize_path(url.path()).into_owned();
    Ok(if below {
        PathPattern::Below(format!("{}/", normalised.trim_end_matches('/')))
    } else {
        PathPattern::Exact(normalised)
    })
}

/// `.` or `..`, as the WHATWG rules spell them (`%2e` counts as a dot).
fn is_dot_segment(segment: &str) -> bool {
    let s = segment.to_ascii_lowercase();
    matches!(s.as_str(), "." | "%2e" | ".." | ".%2e" | "%2e." | "%2e%2e")
}

/// Whether a server that percent-decodes the path, or strips `;` parameters,
/// sees the segments that were checked: no `.` or `..` segment and no `\`
/// after decoding.
fn is_plain_path(path: &str) -> bool {
    let decoded = percent_decode(path.as_bytes());
    !decoded.contains(&b'\\')
        && decoded.split(|&b| b == b'/').all(|segment| {
            let name = segment.split(|&b| b == b';').next().unwrap_or(segment);
            name != b"." && name != b".."
        })
}

fn percent_decode(bytes: &[u8]) -> Vec<u8> {
    let hex = |b: u8| (b as char).to_digit(16);
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let pair = bytes
            .get(i + 1)
            .copied()
            .and_then(hex)
            .zip(bytes.get(i + 2).copied().and_then(hex));
        match (bytes[i], pair) {
            (b'%', Some((hi, lo))) => {
                // Two hex digits make at most 0xff.
                out.push(u8::try_from(hi * 16 + lo).unwrap_or(u8::MAX));
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    out
}
