//! Logging in and out: a caller's token, typed into a form, makes a
//! session; logging out ends it.
//!
//! The login form carries a CSRF token whose other half is a cookie of its
//! own (there is no session yet to keep it), so another site cannot log a
//! browser in as someone else. A login always makes a new session id, ends
//! the one the browser had, and goes to `/console` — never to a place the
//! request names. The token is never written back into a page, a URL or a log.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Form;
use axum::extract::State;
use axum::extract::rejection::FormRejection;
use axum::http::header::SET_COOKIE;
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use maud::{Markup, html};
use serde::Deserialize;

use super::cookie::{self, CookieRule};
use super::csrf::{self, Forged};
use super::form::{self, Guarded};
use super::html;
use super::viewer::{Viewer, no_session};
use crate::gateway::Gateway;
use crate::sessions::{LIFETIME, random_token};

/// How long a login form may be left open before it is sent.
const FORM_LIFETIME: Duration = Duration::from_secs(10 * 60);

/// The login form's fields.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct LoginForm {
    csrf: String,
    token: String,
}

/// The fields of a form that only carries its CSRF token (logging out).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TokenOnly {
    csrf: String,
}

impl Guarded for TokenOnly {
    fn csrf(&self) -> &str {
        &self.csrf
    }
}

/// `GET /console/login`: the form, or the console for someone already in.
pub(crate) async fn form(State(g): State<Arc<Gateway>>, parts: Parts) -> Response {
    if g.callers.known.is_none() || signed_in(&g, &parts.headers) {
        return html::see_other("/console");
    }
    login_page(&parts, StatusCode::OK, None)
}

/// `POST /console/login`: a session for the caller whose token was typed.
pub(crate) async fn submit(
    State(g): State<Arc<Gateway>>,
    parts: Parts,
    sent: Result<Form<LoginForm>, FormRejection>,
) -> Response {
    let Some(callers) = g.callers.known.as_deref() else {
        return html::see_other("/console");
    };
    let Form(sent) = match sent {
        Ok(sent) => sent,
        Err(rejection) => return form::unreadable(&rejection),
    };
    if let Err(forged) = check_login(&parts.headers, &sent.csrf) {
        return login_page(&parts, StatusCode::FORBIDDEN, Some(forged.message()));
    }
    let Some(caller) = callers.identify(sent.token.trim()) else {
        let wrong = "That token is not one of this gateway's callers.";
        return login_page(&parts, StatusCode::UNAUTHORIZED, Some(wrong));
    };
    for old in cookie::values(&parts.headers, cookie::SESSION) {
        g.sessions.close(old);
    }
    let made = match g.sessions.create(caller, Instant::now()) {
        Ok(made) => made,
        Err(refused) => return no_session(refused),
    };
    let rule = CookieRule::of(&parts);
    let mut response = html::see_other("/console");
    let headers = response.headers_mut();
    headers.append(SET_COOKIE, rule.set(cookie::SESSION, &made.id, LIFETIME));
    headers.append(SET_COOKIE, rule.clear(cookie::LOGIN));
    response
}

/// `POST /console/logout`: ends the session.
pub(crate) async fn logout(
    State(g): State<Arc<Gateway>>,
    viewer: Viewer,
    parts: Parts,
    sent: Result<Form<TokenOnly>, FormRejection>,
) -> Response {
    if let Err(refused) = viewer.accept(&parts.headers, sent) {
        return refused;
    }
    g.sessions.close(viewer.session());
    let mut response = html::see_other("/console/login");
    response
        .headers_mut()
        .append(SET_COOKIE, CookieRule::of(&parts).clear(cookie::SESSION));
    response
}

/// The login form's token is the other half of its cookie (of one of them:
/// a browser may hold two), and the form came from the console.
fn check_login(headers: &HeaderMap, given: &str) -> Result<(), Forged> {
    // Without the cookie, no token matches.
    let mut verdict = csrf::check(headers, "", given);
    for half in cookie::values(headers, cookie::LOGIN) {
        verdict = csrf::check(headers, half, given);
        if verdict.is_ok() {
            break;
        }
    }
    verdict
}

fn signed_in(g: &Gateway, headers: &HeaderMap) -> bool {
    let now = Instant::now();
    cookie::values(headers, cookie::SESSION).any(|id| g.sessions.open(id, now).is_some())
}

/// The login page, with a fresh CSRF token (and its cookie), saying `problem`.
fn login_page(parts: &Parts, status: StatusCode, problem: Option<&str>) -> Response {
    let Ok(token) = random_token() else {
        return no_session(crate::sessions::Refused::NoRandomness);
    };
    let page = html::document("Log in", None, login_form(&token, problem));
    let mut response = html::respond(status, page);
    response.headers_mut().append(
        SET_COOKIE,
        CookieRule::of(parts).set(cookie::LOGIN, &token, FORM_LIFETIME),
    );
    response
}

fn login_form(csrf: &str, problem: Option<&str>) -> Markup {
    html! {
        @if let Some(problem) = problem {
            p.problem { (problem) }
        }
        form.login method="post" action="/console/login" {
            input type="hidden" name="csrf" value=(csrf);
            label for="token" { "Your gateway token" }
            input #token type="password" name="token" autocomplete="current-password" required autofocus;
            button type="submit" { "Log in" }
        }
        p.hint {
            "The token is one of the gateway's (" code { "RECOURSE_GATEWAY_TOKEN" } ", or a caller's in "
            code { "--tokens" } "). Off loopback the session cookie is " code { "Secure" }
            ": open the console over HTTPS."
        }
    }
}
