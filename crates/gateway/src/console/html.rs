//! How a console page is written and answered: one layout, text escaped
//! by construction, and the headers that keep a browser from running,
//! framing, caching or leaking anything.
//!
//! Pages are `maud` markup. In `html! { (value) }` every value is escaped
//! (`&`, `<`, `>`, `"`), in text and in attribute values alike; the console
//! never wraps anything in `PreEscaped`, so a tool's `<script>` is text on
//! the page. The `Content-Security-Policy` is the second wall: no script
//! may run at all, styles come from `/console/style.css` only, forms post
//! to the console only, and no other page may frame it.

use axum::http::header::{
    CACHE_CONTROL, CONTENT_SECURITY_POLICY, CONTENT_TYPE, LOCATION, REFERRER_POLICY,
    X_CONTENT_TYPE_OPTIONS, X_FRAME_OPTIONS,
};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use maud::{DOCTYPE, Markup, html};

/// Nothing runs, nothing loads but the style sheet, forms post home, no
/// frame may hold a page.
pub(crate) const CSP: &str = "default-src 'none'; style-src 'self'; form-action 'self'; \
     frame-ancestors 'none'; base-uri 'none'";

/// The console's style sheet, served as `/console/style.css`.
const STYLE: &str = include_str!("style.css");

/// Who is logged in, for a page's header: the name and the logout form's token.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Signed<'a> {
    pub(crate) who: &'a str,
    pub(crate) csrf: &'a str,
    /// Whether logging out means anything (not on a gateway without tokens).
    pub(crate) can_log_out: bool,
}

/// A whole page: the header (with the console's links when someone is
/// signed in), the title, and `body`.
pub(crate) fn document(title: &str, signed: Option<Signed<'_>>, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="referrer" content="no-referrer";
                title { (title) " · recourse console" }
                link rel="stylesheet" href="/console/style.css";
            }
            body {
                header {
                    a.brand href="/console" { "recourse console" }
                    @if let Some(signed) = signed {
                        nav {
                            a href="/console" { "In doubt" }
                            a href="/console/journal" { "Journal" }
                            a href="/console/breakers" { "Breakers & budget" }
                        }
                        div.who {
                            "Signed in as " strong { (signed.who) }
                            @if signed.can_log_out {
                                form method="post" action="/console/logout" {
                                    input type="hidden" name="csrf" value=(signed.csrf);
                                    button type="submit" { "Log out" }
                                }
                            }
                        }
                    }
                }
                main {
                    h1 { (title) }
                    (body)
                }
            }
        }
    }
}

/// `markup` answered with `status`, as HTML, with the console's headers.
pub(crate) fn respond(status: StatusCode, markup: Markup) -> Response {
    let mut response = (status, markup.into_string()).into_response();
    let headers = response.headers_mut();
    headers.insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    guard(headers);
    response
}

/// The headers every console answer carries, pages and redirects alike.
pub(crate) fn guard(headers: &mut HeaderMap) {
    headers.insert(CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    headers.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    headers.insert(X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        HeaderName::from_static("cross-origin-opener-policy"),
        HeaderValue::from_static("same-origin"),
    );
    headers.insert(
        HeaderName::from_static("cross-origin-resource-policy"),
        HeaderValue::from_static("same-origin"),
    );
}

/// `303 See Other` to `location` — always one of the console's own paths.
pub(crate) fn see_other(location: &str) -> Response {
    let mut response = StatusCode::SEE_OTHER.into_response();
    if let Ok(value) = HeaderValue::from_str(location) {
        response.headers_mut().insert(LOCATION, value);
    }
    guard(response.headers_mut());
    response
}

/// A page saying what went wrong, for someone not (or no longer) signed in.
pub(crate) fn error(status: StatusCode, title: &str, message: &str) -> Response {
    respond(status, document(title, None, problem(message)))
}

/// What went wrong, and the way back.
pub(crate) fn problem(message: &str) -> Markup {
    html! {
        p.problem { (message) }
        p { a href="/console" { "Back to the console" } }
    }
}

/// The page of call `call_id`.
pub(crate) fn call_href(call_id: &str) -> String {
    format!("/console/calls/{}", segment(call_id))
}

/// `text` percent-encoded but for unreserved characters: one path segment
/// or query value, whatever characters a journal shared with other
/// programs holds.
pub(crate) fn segment(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// `GET /console/style.css`.
pub(crate) async fn style_sheet() -> Response {
    let mut response = STYLE.into_response();
    let headers = response.headers_mut();
    headers.insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/css; charset=utf-8"),
    );
    guard(headers);
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// Any other path under `/console`.
pub(crate) async fn not_found() -> Response {
    error(
        StatusCode::NOT_FOUND,
        "Not found",
        "The console has no such page.",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const ATTACK: &str = r#"<script>document.title="pwned"</script><img src=x onerror="alert(1)">"#;

    #[test]
    fn tool_text_is_escaped_in_text_and_attributes() {
        let signed = Signed {
            who: ATTACK,
            csrf: "\"><script>alert(1)</script>",
            can_log_out: true,
        };
        let page = document(ATTACK, Some(signed), problem(ATTACK)).into_string();
        assert!(!page.contains("<script"), "{page}");
        assert!(!page.contains("<img"), "{page}");
        assert!(page.contains("&lt;script&gt;document.title=&quot;pwned&quot;&lt;/script&gt;"));
        assert!(
            page.contains(r#"value="&quot;&gt;&lt;script&gt;"#),
            "{page}"
        );
    }

    #[test]
    fn a_call_id_is_one_path_segment() {
        assert_eq!(call_href("0196a1b2-c3d4"), "/console/calls/0196a1b2-c3d4");
        assert_eq!(
            call_href("../v1/calls?x=\"<"),
            "/console/calls/..%2Fv1%2Fcalls%3Fx%3D%22%3C"
        );
    }

    #[test]
    fn every_answer_is_guarded() {
        for response in [
            respond(StatusCode::OK, html! { "x" }),
            see_other("/console"),
            error(StatusCode::BAD_REQUEST, "t", "m"),
        ] {
            let headers = response.headers();
            assert_eq!(headers[CONTENT_SECURITY_POLICY], CSP);
            assert_eq!(headers[X_CONTENT_TYPE_OPTIONS], "nosniff");
            assert_eq!(headers[REFERRER_POLICY], "no-referrer");
            assert_eq!(headers[X_FRAME_OPTIONS], "DENY");
            assert_eq!(headers[CACHE_CONTROL], "no-store");
        }
        assert!(CSP.contains("default-src 'none'") && !CSP.contains("script-src"));
    }
}
