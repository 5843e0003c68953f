//! The console: `GET /console`, HTML pages on the journal for the people
//! who settle what recourse cannot — the calls in doubt and those awaiting
//! approval, one call's record as a timeline, the forms that approve or
//! reject a call and settle one by hand, the breakers and the retry
//! budget, the journal's size.
//!
//! # Why it looks the way it does
//!
//! The pages are plain HTML forms. Nothing is built, no script runs (the
//! `Content-Security-Policy` allows none, inline or not), the one style
//! sheet is served by the gateway itself, and every page reads with
//! JavaScript off. What a page shows is what the JSON API would answer the
//! same caller ([`Seen`](recourse::journal::Seen)): the console reads the
//! journal through the same rules, settles through the same code as
//! `POST /v1/calls/{call_id}/settle` and decides approvals through the
//! same code as `POST /v1/approvals/{approval_id}`.
//!
//! Text from tools — an error's message, a payload, a lookup's detail — is
//! shown, never interpreted: every page is written with `maud`, whose
//! interpolations are escaped by construction (there is no way to splice
//! unescaped text but `PreEscaped`, which the console never uses). Hand
//! written escaping would be one forgotten call away from a stored XSS in a
//! page an approver opens with the power to settle writes.
//!
//! # Who is logged in
//!
//! The API's bearer tokens are for programs; a browser gets a session. The
//! login form takes a caller's token (POSTed, never in a URL, never shown
//! again, never logged) and answers a session cookie: a random 256-bit id,
//! `HttpOnly`, `SameSite=Strict`, `Path=/console`, and `Secure` unless the
//! page was asked for by a loopback name (browsers keep a `Secure` cookie
//! only over HTTPS; off loopback, put TLS in front of the gateway). The id
//! is accepted under `/console` only: `/v1/*` reads bearer tokens and
//! nothing else. A login always makes a new id (a cookie planted before it
//! is worth nothing), sessions live in memory — idle for 30 minutes or
//! 8 hours old, they end; a restart ends them all — and there are at most
//! 1,024 of them, 16 per caller (a caller's oldest goes first).
//!
//! Every form carries a CSRF token: the session's own random token (the
//! login form's is tied to a short-lived cookie of its own), compared in
//! constant time, with `Origin` and `Sec-Fetch-Site` checked besides. After
//! logging in the console always goes to `/console`, never to a place the
//! request names. Pages are `no-store`, may not be framed, and send no
//! referrer.
//!
//! A gateway without a token answers loopback names only and treats
//! everyone as caller `default`: so does its console, without a login — the
//! first page opens a session for `default`, so that forms still carry a
//! CSRF token.

mod approvals;
mod breakers;
mod call;
mod cookie;
mod csrf;
mod form;
mod html;
mod in_doubt;
mod journal;
mod login;
mod timeline;
mod viewer;

use std::sync::Arc;

use axum::extract::DefaultBodyLimit;
use axum::routing::{MethodRouter, get, post};

use crate::gateway::Gateway;

/// Where the console is served; the session cookie's `Path`.
pub(crate) const ROOT: &str = "/console";

/// The largest form the console reads: a note of 2,000 characters, escaped.
const FORM_LIMIT: usize = 16 * 1024;

/// The console's routes, each with its path.
pub(crate) fn routes() -> Vec<(&'static str, MethodRouter<Arc<Gateway>>)> {
    let limited = DefaultBodyLimit::max(FORM_LIMIT);
    vec![
        ("/console", get(in_doubt::page)),
        ("/console/", get(in_doubt::page)),
        ("/console/style.css", get(html::style_sheet)),
        (
            "/console/login",
            get(login::form).post(login::submit).layer(limited),
        ),
        ("/console/logout", post(login::logout).layer(limited)),
        ("/console/journal", get(journal::page)),
        ("/console/breakers", get(breakers::page)),
        ("/console/calls/{call_id}", get(call::page)),
        (
            "/console/calls/{call_id}/settle",
            post(call::settle).layer(limited),
        ),
        (
            "/console/approvals/{approval_id}",
            post(approvals::decide).layer(limited),
        ),
        (
            "/console/{*rest}",
            get(html::not_found).post(html::not_found),
        ),
    ]
}
