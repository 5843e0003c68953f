//! Which targets a caller may reach: URLs parsed once, and an allowlist of
//! their parsed parts.
//!
//! ```
//! use recourse_core::allow::{TargetAllowlist, TargetErrorKind};
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
//! The grammar of patterns is on [`TargetAllowlist`].

mod error;
mod path;
mod pattern;
mod target;
#[cfg(test)]
mod tests;

pub use error::{TargetError, TargetErrorKind};
pub use path::normalize_path;
pub use pattern::TargetPattern;
pub use target::TargetUrl;
pub use target::{Template, validate_template};

use error::quote;

/// The targets a caller may reach: loopback, and whatever a pattern matches.
///
/// # Targets
///
/// Only `http` and `https` URLs with a host are targets. A user name or
/// password (`user:pass@`) is refused: credentials belong in a header, and
/// `@` in the authority is how an allowlisted-looking host is smuggled past a
/// reader. Loopback targets are always allowed: `127.0.0.0/8`, `::1`, an
/// IPv4-mapped loopback address (`[::ffff:127.0.0.1]`), and the name
/// `localhost` (no name is looked up; `foo.localhost` and `localhost.` are
/// not loopback here). With no patterns, only loopback targets pass.
///
/// # Patterns
///
/// ```text
/// pattern = scheme "://" host [":" port] [path]
///         | host                      a bare host: any scheme, any port, any path
/// scheme  = "http" | "https"
/// host    = "*"                       any host
///         | "*." domain               any host below domain (a.domain, a.b.domain; not domain)
///         | domain | IPv4 | "[" IPv6 "]"
///                                     exactly this host
/// port    = 1..65535 | "*"            absent: the scheme's default port (80 or 443)
/// path    = "/" segments              exactly this path
///         | "/" [segments "/"] "*"    everything below this prefix ("/v1/*": "/v1/" and under it)
/// ```
///
/// A pattern without a path allows any path. Hosts are compared after the
/// same normalisation the target gets (lower case, IDNA, `127.1` →
/// `127.0.0.1`, an IPv4-mapped IPv6 address as its IPv4 address), paths after
/// percent-encoding and with dot segments resolved. `*` is only ever a whole
/// host, a whole leading host label set, a whole port, or the whole last path
/// segment; anything else with `*` is refused, as are `@`, `?`, `#`, `\`,
/// whitespace and dot segments in a pattern. A target's query and fragment are
/// not checked.
///
/// Under a pattern with a path, a target whose path would read differently to
/// a server that percent-decodes it or honours `;` parameters (`%2e%2e%2f`,
/// `..;/`, an encoded `\`) is refused: such a server would not see the path
/// that was checked.
///
/// # Examples
///
/// ```
/// use recourse_core::allow::TargetAllowlist;
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
    /// use recourse_core::allow::TargetAllowlist;
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
    let url = target.url();
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
