//! The gateway's defences: a bearer token, and an allowlist of targets.
//!
//! Secure by default: with no `--allow-target`, only loopback targets
//! (`127.0.0.0/8`, `::1`, `localhost`) may be called, so a gateway exposed by
//! mistake cannot be used to reach the network behind it.

use std::net::IpAddr;

use recourse_tool::protocol::ToolError;

use crate::glob::Glob;

/// Target patterns allowed besides loopback: shell-style globs, matched
/// case-insensitively against the whole URL and against its host.
#[derive(Debug, Clone, Default)]
pub(crate) struct Allowlist {
    patterns: Vec<Glob>,
}

impl Allowlist {
    /// Parses the patterns.
    ///
    /// # Errors
    /// A malformed pattern, named.
    pub(crate) fn new(patterns: &[String]) -> Result<Self, String> {
        let patterns = patterns
            .iter()
            .map(|p| {
                Glob::new(&p.to_ascii_lowercase()).map_err(|e| format!("--allow-target {p:?}: {e}"))
            })
            .collect::<Result<_, _>>()?;
        Ok(Self { patterns })
    }

    /// Checks a target URL.
    pub(crate) fn check(&self, url: &str) -> Result<(), ToolError> {
        let Some(host) = host_of(url) else {
            return Err(ToolError::input_error(
                "INVALID_TARGET",
                format!("{url:?} is not an http(s) URL"),
            )
            .detail("field", "url"));
        };
        let url = url.to_ascii_lowercase();
        if is_loopback(&host)
            || self
                .patterns
                .iter()
                .any(|p| p.matches(&url) || p.matches(&host))
        {
            return Ok(());
        }
        Err(ToolError::permission_denied(
            "TARGET_NOT_ALLOWED",
            format!(
                "target host {host:?} is not allowed: this gateway calls only loopback targets unless started \
                 with --allow-target PATTERN (e.g. --allow-target '{host}' or --allow-target 'https://{host}/*')"
            ),
        ))
    }
}

/// The host of an http(s) URL, lower-cased, without brackets or port.
fn host_of(url: &str) -> Option<String> {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))?;
    let authority = rest.split(['/', '?', '#']).next()?;
    let authority = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = if let Some(v6) = authority.strip_prefix('[') {
        v6.split(']').next()?
    } else {
        authority.split(':').next()?
    };
    (!host.is_empty()).then(|| host.to_ascii_lowercase())
}

fn is_loopback(host: &str) -> bool {
    host == "localhost" || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Compares a presented bearer token with the expected one in constant time.
pub(crate) fn token_matches(presented: Option<&str>, expected: &str) -> bool {
    let Some(token) = presented.and_then(|h| h.strip_prefix("Bearer ")) else {
        return false;
    };
    let (a, b) = (token.as_bytes(), expected.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_is_allowed_by_default() {
        let a = Allowlist::default();
        for url in [
            "http://127.0.0.1:8700/x",
            "http://localhost/x",
            "http://[::1]:80/x",
            "http://127.9.9.9/",
        ] {
            assert!(a.check(url).is_ok(), "{url}");
        }
        for url in [
            "http://example.com/x",
            "http://10.0.0.1/",
            "http://127.0.0.1.evil.com/",
            "http://u:p@evil.com/",
        ] {
            assert!(a.check(url).is_err(), "{url}");
        }
        assert_eq!(a.check("ftp://x").unwrap_err().code, "INVALID_TARGET");
    }

    #[test]
    fn patterns_match_url_or_host() {
        let a =
            Allowlist::new(&["*.example.com".into(), "https://API.other.io/v1/*".into()]).unwrap();
        assert!(a.check("https://tools.example.com/api").is_ok());
        assert!(a.check("https://api.other.io/v1/quote").is_ok());
        assert!(a.check("https://api.other.io/v2/quote").is_err());
        assert!(
            Allowlist::new(&["[oops".into()]).is_err(),
            "a malformed pattern is refused"
        );
        assert!(a.check("https://example.org/").is_err());
    }

    #[test]
    fn tokens_compare_exactly() {
        assert!(token_matches(Some("Bearer s3cret"), "s3cret"));
        assert!(!token_matches(Some("Bearer s3cre"), "s3cret"));
        assert!(!token_matches(Some("s3cret"), "s3cret"));
        assert!(!token_matches(None, "s3cret"));
    }
}
