//! Who is looking at a console page: the caller its session belongs to.
//! A page's handler takes a [`Viewer`]; without a live session the browser
//! is sent to the login form — or, on a gateway without a token (loopback
//! only, everyone caller `default`, as in the API), given a session at once.

use std::sync::Arc;
use std::time::Instant;

use axum::Form;
use axum::extract::FromRequestParts;
use axum::extract::rejection::FormRejection;
use axum::http::header::SET_COOKIE;
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use maud::Markup;

use super::cookie::{self, CookieRule};
use super::csrf::{self, Forged};
use super::form::{self, Guarded};
use super::html::{self, Signed};
use crate::gateway::Gateway;
use crate::sessions::{LIFETIME, Refused};
use recourse_door::Caller;

/// The caller a console request is made for, by its session.
#[derive(Debug)]
pub(crate) struct Viewer {
    caller: Arc<Caller>,
    csrf: String,
    /// The session's id, as its cookie gave it (to log out).
    session: String,
    /// The cookie of a session made for this request (a gateway without a token).
    fresh: Option<HeaderValue>,
    /// Whether logging out means anything: not without a token.
    can_log_out: bool,
}

impl FromRequestParts<Arc<Gateway>> for Viewer {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, g: &Arc<Gateway>) -> Result<Self, Response> {
        let now = Instant::now();
        let can_log_out = g.callers.known.is_some();
        if !can_log_out {
            // Everyone is `default`; the session is kept in the cookie alone.
            let made = g
                .sessions
                .anonymous(cookie::values(&parts.headers, cookie::SESSION))
                .map_err(no_session)?;
            return Ok(Self {
                caller: Arc::new(Caller::default_caller()),
                fresh: made
                    .fresh
                    .then(|| CookieRule::of(parts).set(cookie::SESSION, &made.id, LIFETIME)),
                csrf: made.csrf,
                session: made.id,
                can_log_out,
            });
        }
        for id in cookie::values(&parts.headers, cookie::SESSION) {
            if let Some(opened) = g.sessions.open(id, now) {
                return Ok(Self {
                    caller: opened.caller,
                    csrf: opened.csrf,
                    session: id.to_owned(),
                    fresh: None,
                    can_log_out,
                });
            }
        }
        Err(html::see_other("/console/login"))
    }
}

impl Viewer {
    /// The caller the session belongs to.
    pub(crate) fn caller(&self) -> &Caller {
        &self.caller
    }

    /// The token this viewer's forms carry.
    pub(crate) fn csrf(&self) -> &str {
        &self.csrf
    }

    /// The session's id.
    pub(crate) fn session(&self) -> &str {
        &self.session
    }

    /// Checks a POST of this viewer's: sent from the console, with the
    /// session's token as `given`.
    pub(crate) fn check(&self, headers: &HeaderMap, given: &str) -> Result<(), Response> {
        csrf::check(headers, &self.csrf, given).map_err(|forged| self.forged(forged))
    }

    /// The form `sent`, read and its token checked against this session;
    /// else the page that says why not (unreadable, or forged).
    pub(crate) fn accept<T: Guarded>(
        &self,
        headers: &HeaderMap,
        sent: Result<Form<T>, FormRejection>,
    ) -> Result<T, Response> {
        let Form(sent) = sent.map_err(|rejection| form::unreadable(&rejection))?;
        self.check(headers, sent.csrf())?;
        Ok(sent)
    }

    fn forged(&self, forged: Forged) -> Response {
        self.error(StatusCode::FORBIDDEN, "Refused", forged.message())
    }

    /// A page for this viewer: the console's header, `title`, `body`.
    pub(crate) fn page(&self, title: &str, body: Markup) -> Response {
        self.answer(StatusCode::OK, title, body)
    }

    /// A page saying what went wrong, with the console's header.
    pub(crate) fn error(&self, status: StatusCode, title: &str, message: &str) -> Response {
        self.answer(status, title, html::problem(message))
    }

    fn answer(&self, status: StatusCode, title: &str, body: Markup) -> Response {
        let signed = Signed {
            who: self.caller.name(),
            csrf: &self.csrf,
            can_log_out: self.can_log_out,
        };
        let mut response = html::respond(status, html::document(title, Some(signed), body));
        if let Some(cookie) = &self.fresh {
            response.headers_mut().append(SET_COOKIE, cookie.clone());
        }
        response
    }
}

/// The page of a session that could not be made.
pub(crate) fn no_session(refused: Refused) -> Response {
    let message = match refused {
        Refused::NoRandomness => {
            "The console could not make a session: the operating system's random source failed."
        }
        Refused::Full => {
            "The console has as many sessions as it keeps; try again when one has ended (30 minutes idle)."
        }
    };
    html::error(StatusCode::SERVICE_UNAVAILABLE, "No session", message)
}
