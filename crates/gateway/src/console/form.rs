//! Reading the console's forms: URL-encoded, at most
//! [`FORM_LIMIT`](super::FORM_LIMIT) bytes, exactly the fields a form has;
//! anything else is a page that says what was wrong, never a panic.

use axum::extract::rejection::FormRejection;
use axum::response::Response;
use recourse_protocol::truncate_chars;

use super::html;

/// The page for a form that could not be read: too large, not a form, a
/// field missing or unknown.
pub(crate) fn unreadable(rejection: &FormRejection) -> Response {
    let why = truncate_chars(&rejection.body_text(), 300);
    html::error(
        rejection.status(),
        "The form could not be read",
        &format!("{why}. Reload the page and send the form again."),
    )
}

/// A form that carries the session's CSRF token (every form but the login's).
pub(crate) trait Guarded {
    /// The token the form was sent with.
    fn csrf(&self) -> &str;
}
