//! Cross-site request forgery: every form the console answers carries a
//! token another site cannot know, and every POST is checked for it — and
//! for where the browser says it came from.
//!
//! A session's forms carry the session's own random token (kept beside it
//! in memory); the login form, before there is a session, carries a random
//! token that is also set as a short-lived cookie, and the two must match
//! (another site can neither read that cookie nor, `SameSite=Strict`, have
//! the browser send it). Tokens are compared in constant time. On top, a
//! POST whose `Sec-Fetch-Site` says another site sent it, or whose `Origin`
//! is not the host it was sent to, is refused whatever it carries.

use axum::http::HeaderMap;
use axum::http::header::{HOST, ORIGIN};

use crate::sessions::same;

/// Why a POST was refused as forged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Forged {
    /// The form's token is missing or is not the expected one.
    Token,
    /// The browser says another site sent the form.
    CrossSite,
}

impl Forged {
    /// What the person sees.
    pub(crate) fn message(self) -> &'static str {
        match self {
            Self::Token => {
                "This form has expired or did not come from the console: reload the page and send it again."
            }
            Self::CrossSite => "This form was sent from another site; the console refuses it.",
        }
    }
}

/// Checks a POST: it came from the console's own pages (`Sec-Fetch-Site`,
/// `Origin`), and its form's `given` token is `expected`.
pub(crate) fn check(headers: &HeaderMap, expected: &str, given: &str) -> Result<(), Forged> {
    same_origin(headers)?;
    if expected.is_empty() || !same(expected, given) {
        return Err(Forged::Token);
    }
    Ok(())
}

/// Whether the browser says the request came from this origin. A request
/// without the headers (an older browser, `curl`) is judged by its token
/// alone, and so is an `Origin` of `null`: what Chromium sends for a form
/// of a page served with `Referrer-Policy: no-referrer`, as the console's
/// are (its `Sec-Fetch-Site`, which no page can set, says where it came
/// from). The gateway speaks HTTP/1.1: the host is the `Host` header.
fn same_origin(headers: &HeaderMap) -> Result<(), Forged> {
    if let Some(site) = header(headers, "sec-fetch-site")
        && !matches!(site, "same-origin" | "none")
    {
        return Err(Forged::CrossSite);
    }
    let Some(origin) = header(headers, ORIGIN.as_str()).filter(|o| *o != "null") else {
        return Ok(());
    };
    let host = header(headers, HOST.as_str());
    let origin_host = origin
        .strip_prefix("https://")
        .or_else(|| origin.strip_prefix("http://"));
    match (origin_host, host) {
        (Some(o), Some(h)) if o.eq_ignore_ascii_case(h) => Ok(()),
        _ => Err(Forged::CrossSite),
    }
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::Request;

    fn post(headers: &[(&str, &str)]) -> HeaderMap {
        let mut request =
            Request::post("/console/calls/c-1/settle").header("host", "127.0.0.1:8780");
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request.body(()).unwrap().into_parts().0.headers
    }

    const TOKEN: &str = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

    #[test]
    fn the_token_must_be_the_sessions() {
        let same_site = post(&[
            ("origin", "http://127.0.0.1:8780"),
            ("sec-fetch-site", "same-origin"),
        ]);
        assert_eq!(check(&same_site, TOKEN, TOKEN), Ok(()));
        assert_eq!(check(&same_site, TOKEN, ""), Err(Forged::Token));
        assert_eq!(check(&same_site, TOKEN, &TOKEN[1..]), Err(Forged::Token));
        assert_eq!(
            check(&same_site, "", ""),
            Err(Forged::Token),
            "no token is no match"
        );
        assert_eq!(
            check(&post(&[]), TOKEN, TOKEN),
            Ok(()),
            "no headers: the token decides"
        );
        let no_referrer = post(&[("origin", "null"), ("sec-fetch-site", "same-origin")]);
        assert_eq!(
            check(&no_referrer, TOKEN, TOKEN),
            Ok(()),
            "Chromium under no-referrer"
        );
        assert_eq!(check(&no_referrer, TOKEN, "x"), Err(Forged::Token));
    }

    #[test]
    fn another_site_is_refused_whatever_it_carries() {
        for headers in [
            &[("sec-fetch-site", "cross-site")][..],
            &[("sec-fetch-site", "same-site")],
            &[("origin", "http://evil.example")],
            &[("origin", "http://127.0.0.1:9999")],
            &[("origin", "null"), ("sec-fetch-site", "cross-site")],
            &[("origin", "http://127.0.0.1:8780.evil.example")],
        ] {
            assert_eq!(
                check(&post(headers), TOKEN, TOKEN),
                Err(Forged::CrossSite),
                "{headers:?}"
            );
        }
    }
}
