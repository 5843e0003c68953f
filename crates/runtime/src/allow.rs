//! Which targets a caller may reach: URLs parsed once, and an allowlist of
//! their parsed parts.
//!
//! ```
//! use recourse::{TargetAllowlist, TargetErrorKind};
//!
//! let allow = TargetAllowlist::new(["https://*.example.com/v1/*"]).unwrap();
//! assert!(allow.check("https://api.example.com/v1/quote").is_ok());
//! assert!(allow.check("http://127.0.0.1:8700/api").is_ok(), "loopback is always allowed");
//!
//! // By the WHATWG rules `\` ends the host: this is 192.0.2.2, not 127.0.0.1.
//! let err = allow.check(r"http://192.0.2.2:9101\@127.0.0.1:9101/ok").unwrap_err();
//! assert_eq!(err.kind(), TargetErrorKind::NotAllowed);
//! // A host pattern is matched against the host, never the path.
//! assert!(allow.check("https://192.0.2.2/v1/.example.com").is_err());
//! // `..` is resolved before the path is matched.
//! assert!(allow.check("https://api.example.com/v1/../admin").is_err());
//! ```
//!
//! # Why parse once, and match parts
//!
//! A check that reads a URL differently from the client that sends it checks
//! nothing. Splitting the text by hand disagrees with the WHATWG URL rules,
//! which HTTP clients follow, in many places: `\` is a path separator, tabs
//! and newlines are dropped, `127.1` and `0x7f000001` are IPv4 addresses,
//! `%2e%2e` is `..`. And a glob over the whole string lets a path or a query
//! that ends in `.example.com` pass for a host. So a target is parsed once, by
//! the [`url`] crate (the parser reqwest uses), into a [`TargetUrl`]; the
//! allowlist compares its normalised parts; and the parsed URL, not the text
//! the caller gave, is what gets sent. Each comparison is an equality or a
//! prefix or suffix test, so a check is linear in the length of the URL.
//!
//! # Targets
//!
//! Only `http` and `https` URLs with a host are targets. A user name or
//! password (`user:pass@`) is refused: credentials belong in a header, and
//! `@` in the authority is how an allowlisted-looking host is smuggled past a
//! reader. Loopback targets are always allowed: `127.0.0.0/8`, `::1`, an
//! IPv4-mapped loopback address (`[::ffff:127.0.0.1]`), and the name
//! `localhost` (no name is looked up; `foo.localhost` and `localhost.` are
//! not loopback here). With no patterns, only loopback targets pass.
//!
//! # Patterns
//!
//! ```text
//! pattern = scheme "://" host [":" port] [path]
//!         | host                      a bare host: any scheme, any port, any path
//! scheme  = "http" | "https"
//! host    = "*"                       any host
//!         | "*." domain               any host below domain (a.domain, a.b.domain; not domain)
//!         | domain | IPv4 | "[" IPv6 "]"
//!                                     exactly this host
//! port    = 1..65535 | "*"            absent: the scheme's default port (80 or 443)
//! path    = "/" segments              exactly this path
//!         | "/" [segments "/"] "*"    everything below this prefix ("/v1/*": "/v1/" and under it)
//! ```
//!
//! A pattern without a path allows any path. Hosts are compared after the
//! same normalisation the target gets (lower case, IDNA, `127.1` →
//! `127.0.0.1`, an IPv4-mapped IPv6 address as its IPv4 address), paths after
//! percent-encoding and with dot segments resolved. `*` is only ever a whole
//! host, a whole leading host label set, a whole port, or the whole last path
//! segment; anything else with `*` is refused, as are `@`, `?`, `#`, `\`,
//! whitespace and dot segments in a pattern. A target's query and fragment are
//! not checked.
//!
//! Under a pattern with a path, a target whose path would read differently to
//! a server that percent-decodes it or honours `;` parameters (`%2e%2e%2f`,
//! `..;/`, an encoded `\`) is refused: such a server would not see the path
//! that was checked.

use std::fmt;
use std::net::IpAddr;

use recourse_protocol::ToolError;
use url::{Host, Url};

/// The most of a caller's text an error message quotes.
const QUOTE_LIMIT: usize = 120;

/// The placeholders of a reconcile URL template, as written and as the URL
/// parser percent-encodes them in a path.
const PLACEHOLDERS: [(&str, &str); 2] = [
    ("{key}", "%7Bkey%7D"),
    ("{operation_id}", "%7Boperation_id%7D"),
];

/// A target URL: parsed by the WHATWG rules, `http` or `https`, with a host
/// and without user info. Send [`url`](Self::url), the URL that was checked.
///
/// ```
/// use recourse::TargetUrl;
///
/// let t = TargetUrl::parse("HTTP://0x7f000001:80/a/./b/../c").unwrap();
/// assert_eq!(t.as_str(), "http://127.0.0.1/a/c");
/// assert!(t.is_loopback());
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
    /// [`TargetErrorKind::Invalid`]: not a URL, not `http`/`https`, or with a
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
struct Template {
    target: TargetUrl,
    /// Where the first placeholder starts in the parsed path, if there is one.
    placeholder_at: Option<usize>,
}

impl Template {
    fn parse(template: &str) -> Result<Self, TargetError> {
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

/// Checks that `template` is a usable reconcile URL template: an http(s) URL
/// without user info, with `{key}` or `{operation_id}` placeholders only in
/// its path or query.
pub(crate) fn validate_template(template: &str) -> Result<(), TargetError> {
    Template::parse(template).map(|_| ())
}

/// A host as the parser normalised it; an IPv4-mapped IPv6 address as IPv4.
#[derive(Debug, Clone, Copy)]
enum HostRef<'a> {
    Domain(&'a str),
    Ip(IpAddr),
}

fn host_of(url: &Url) -> HostRef<'_> {
    match url.host() {
        Some(Host::Domain(d)) => HostRef::Domain(d),
        Some(Host::Ipv4(ip)) => HostRef::Ip(IpAddr::V4(ip)),
        Some(Host::Ipv6(ip)) => HostRef::Ip(ip.to_ipv4_mapped().map_or(IpAddr::V6(ip), IpAddr::V4)),
        // `TargetUrl::parse` refuses URLs without a host.
        None => HostRef::Domain(""),
    }
}

/// One allowlist entry; see the [module docs](self) for the grammar.
///
/// ```
/// use recourse::{TargetPattern, TargetUrl};
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
    fn matches_at(&self, target: &TargetUrl, placeholder_at: Option<usize>) -> bool {
        let url = &target.url;
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
                path.starts_with(prefix.as_str())
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
    let normalised = url.path().to_owned();
    Ok(if below {
        PathPattern::Below(normalised)
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

/// The targets a caller may reach: loopback, and whatever a pattern matches.
///
/// ```
/// use recourse::TargetAllowlist;
///
/// let allow = TargetAllowlist::loopback_only();
/// assert!(allow.check("http://[::ffff:127.0.0.1]:8700/x").is_ok());
/// assert_eq!(allow.check("http://192.0.2.1/x").unwrap_err().code(), "TARGET_NOT_ALLOWED");
/// assert_eq!(allow.check("not a url").unwrap_err().code(), "INVALID_TARGET");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TargetAllowlist {
    patterns: Vec<TargetPattern>,
}

impl TargetAllowlist {
    /// Loopback targets only.
    pub fn loopback_only() -> Self {
        Self::default()
    }

    /// Loopback targets and those matching any of `patterns`.
    ///
    /// # Errors
    /// The first malformed pattern ([`TargetErrorKind::Pattern`]).
    pub fn new<I>(patterns: I) -> Result<Self, TargetError>
    where
        I: IntoIterator,
        I::Item: AsRef<str>,
    {
        let patterns = patterns
            .into_iter()
            .map(|p| TargetPattern::parse(p.as_ref()))
            .collect::<Result<_, _>>()?;
        Ok(Self { patterns })
    }

    /// The patterns, besides loopback.
    pub fn patterns(&self) -> &[TargetPattern] {
        &self.patterns
    }

    /// Whether `target` may be called.
    pub fn allows(&self, target: &TargetUrl) -> bool {
        self.allows_at(target, None)
    }

    fn allows_at(&self, target: &TargetUrl, placeholder_at: Option<usize>) -> bool {
        target.is_loopback()
            || self
                .patterns
                .iter()
                .any(|p| p.matches_at(target, placeholder_at))
    }

    /// Parses `target` and checks it; the parsed URL is what to send.
    ///
    /// # Errors
    /// [`TargetErrorKind::Invalid`] when it does not parse (see
    /// [`TargetUrl::parse`]), [`TargetErrorKind::NotAllowed`] when no pattern allows it.
    pub fn check(&self, target: &str) -> Result<TargetUrl, TargetError> {
        let target = TargetUrl::parse(target)?;
        self.check_url(&target)?;
        Ok(target)
    }

    /// Checks a parsed target.
    ///
    /// # Errors
    /// [`TargetErrorKind::NotAllowed`] when no pattern allows it.
    pub fn check_url(&self, target: &TargetUrl) -> Result<(), TargetError> {
        if self.allows(target) {
            Ok(())
        } else {
            Err(not_allowed(target))
        }
    }

    /// Checks a reconcile URL template (`{key}`, `{operation_id}`): every URL
    /// it can produce must be allowed, so a placeholder may stand only where a
    /// pattern's `*` does (a path pattern never matches a placeholder with a
    /// literal segment).
    ///
    /// ```
    /// use recourse::TargetAllowlist;
    ///
    /// let allow = TargetAllowlist::new(["https://api.example.com/exports/*"]).unwrap();
    /// assert!(allow.check_template("https://api.example.com/exports/{operation_id}").is_ok());
    /// assert!(allow.check_template("https://api.example.com/{key}").is_err());
    /// assert!(allow.check_template("https://{key}.example.com/").is_err());
    /// ```
    ///
    /// # Errors
    /// [`TargetErrorKind::Invalid`] for a template that does not parse, has no
    /// placeholder or has one outside its path and query;
    /// [`TargetErrorKind::NotAllowed`] when no pattern allows it.
    pub fn check_template(&self, template: &str) -> Result<(), TargetError> {
        let template = Template::parse(template)?;
        if self.allows_at(&template.target, template.placeholder_at) {
            Ok(())
        } else {
            Err(not_allowed(&template.target))
        }
    }
}

fn not_allowed(target: &TargetUrl) -> TargetError {
    let url = &target.url;
    let port = url.port().map(|p| format!(":{p}")).unwrap_or_default();
    let origin = format!("{}://{}{port}", url.scheme(), target.host());
    TargetError::new(
        TargetErrorKind::NotAllowed,
        format!(
            "target {} is not allowed: only loopback targets are, unless a pattern allows it",
            quote(&origin)
        ),
    )
}

/// What kind of [`TargetError`] this is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TargetErrorKind {
    /// The target is not an http(s) URL one may call (an input error).
    Invalid,
    /// The target is valid but no pattern allows it (permission denied).
    NotAllowed,
    /// An allowlist pattern is malformed (a configuration error).
    Pattern,
}

/// Why a target, template or pattern was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetError {
    kind: TargetErrorKind,
    message: String,
}

impl TargetError {
    fn new(kind: TargetErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }

    fn invalid(message: impl Into<String>) -> Self {
        Self::new(TargetErrorKind::Invalid, message)
    }

    /// What kind of refusal this is.
    pub fn kind(&self) -> TargetErrorKind {
        self.kind
    }

    /// The envelope code: `INVALID_TARGET`, `TARGET_NOT_ALLOWED` or `INVALID_TARGET_PATTERN`.
    pub fn code(&self) -> &'static str {
        match self.kind {
            TargetErrorKind::Invalid => "INVALID_TARGET",
            TargetErrorKind::NotAllowed => "TARGET_NOT_ALLOWED",
            TargetErrorKind::Pattern => "INVALID_TARGET_PATTERN",
        }
    }

    /// The refusal as an envelope: `PERMISSION_DENIED` for a target not
    /// allowed, `INPUT_ERROR` otherwise.
    pub fn to_tool_error(&self) -> ToolError {
        match self.kind {
            TargetErrorKind::NotAllowed => ToolError::permission_denied(self.code(), &self.message),
            TargetErrorKind::Invalid | TargetErrorKind::Pattern => {
                ToolError::input_error(self.code(), &self.message)
            }
        }
    }
}

impl fmt::Display for TargetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for TargetError {}

/// `text` quoted for a message, cut short when long.
fn quote(text: &str) -> String {
    match text.char_indices().nth(QUOTE_LIMIT) {
        Some((end, _)) => format!("{:?}…", &text[..end]),
        None => format!("{text:?}"),
    }
}

#[cfg(test)]
mod tests;
