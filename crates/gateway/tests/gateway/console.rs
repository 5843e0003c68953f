//! The console (`/console`) as a browser uses it, through the router: a
//! login that makes a session cookie good under `/console` only, CSRF
//! tokens on every form, pages that show a caller what the API would, tool
//! text that stays text, and settlement by hand through the same code as
//! `POST /v1/calls/{call_id}/settle`. (`tests/console/` drives a real
//! Chromium against the binary.)

use crate::support;

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, header};
use recourse::journal::open_journal;
use recourse_gateway::{Callers, GatewayConfig};
use recourse_test_support::{export, keyed, tools, tools_without_lookups};
use regex::Regex;
use serde_json::json;
use support::{Answer, TestGateway, config, journal_path};

const OPS: &str = "ops-token-0123456789";
const LEAD: &str = "lead-token-0123456789";
const AGENT: &str = "agent-token-0123456789";
const OTHER: &str = "other-token-0123456789";

/// A gateway with four callers — `ops` (admin), `lead` (approver), `agent`
/// and `other` — journaling under `dir`; answered without a bearer token.
async fn gateway(dir: &std::path::Path) -> TestGateway {
    let callers = Callers::parse(&format!(
        r#"{{"callers": [
            {{"name": "ops", "token": "{OPS}", "admin": true}},
            {{"name": "lead", "token": "{LEAD}", "approver": true}},
            {{"name": "agent", "token": "{AGENT}"}},
            {{"name": "other", "token": "{OTHER}"}}
        ]}}"#
    ))
    .unwrap();
    let journal = open_journal(&journal_path(dir)).await.unwrap();
    TestGateway::new(
        GatewayConfig::new(config())
            .with_journal(journal)
            .with_callers(callers),
        None,
    )
}

/// The same gateway, asked with `token` as a bearer (an API client).
fn api(gw: &TestGateway, token: &str) -> TestGateway {
    TestGateway {
        gateway: Arc::clone(&gw.gateway),
        token: Some(token.to_owned()),
    }
}

/// A browser: the cookies it was given, sent back under `/console`.
struct Browser {
    gw: TestGateway,
    cookies: Vec<(String, String)>,
}

impl Browser {
    fn new(gw: &TestGateway) -> Self {
        Self {
            gw: gw.clone(),
            cookies: Vec::new(),
        }
    }

    async fn send(&mut self, mut request: Request<Body>) -> Answer {
        if !self.cookies.is_empty() {
            let line: Vec<String> = self
                .cookies
                .iter()
                .map(|(n, v)| format!("{n}={v}"))
                .collect();
            request
                .headers_mut()
                .insert(header::COOKIE, line.join("; ").parse().unwrap());
        }
        let answer = self.gw.send(request).await;
        for set in answer.headers.get_all(header::SET_COOKIE) {
            let set = set.to_str().unwrap();
            let (pair, _) = set.split_once(';').unwrap();
            let (name, value) = pair.split_once('=').unwrap();
            self.cookies.retain(|(n, _)| n != name);
            if !set.contains("Max-Age=0") {
                self.cookies.push((name.to_owned(), value.to_owned()));
            }
        }
        answer
    }

    async fn get(&mut self, path: &str) -> Answer {
        self.send(Request::get(path).body(Body::empty()).unwrap())
            .await
    }

    async fn post(&mut self, path: &str, form: &[(&str, &str)]) -> Answer {
        let body = form
            .iter()
            .map(|(k, v)| format!("{k}={}", encode(v)))
            .collect::<Vec<_>>()
            .join("&");
        let request = Request::post(path)
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(Body::from(body))
            .unwrap();
        self.send(request).await
    }

    /// Logs in with `token`: the answer to the login form.
    async fn log_in(&mut self, token: &str) -> Answer {
        let form = self.get("/console/login").await;
        assert_eq!(form.status, 200, "{}", form.text);
        let csrf = csrf_of(&form.text);
        self.post("/console/login", &[("csrf", &csrf), ("token", token)])
            .await
    }

    fn session(&self) -> Option<&str> {
        self.cookies
            .iter()
            .find(|(n, _)| n == "recourse_console")
            .map(|(_, v)| v.as_str())
    }
}

fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => {
                char::from(b).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn csrf_of(page: &str) -> String {
    Regex::new(r#"name="csrf" value="([0-9a-f]{64})""#)
        .unwrap()
        .captures(page)
        .unwrap_or_else(|| panic!("no CSRF token in {page}"))[1]
        .to_owned()
}

#[tokio::test]
async fn the_console_asks_for_a_token_and_a_session_cookie_opens_it() {
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(dir.path()).await;
    let mut browser = Browser::new(&gw);

    let first = browser.get("/console").await;
    assert_eq!(first.status, 303);
    assert_eq!(first.header("location"), Some("/console/login"));

    let wrong = browser.log_in("not-a-token-0123456789").await;
    assert_eq!(wrong.status, 401, "{}", wrong.text);
    assert!(wrong.text.contains("not one of this gateway's callers"));
    assert!(
        !wrong.text.contains("not-a-token"),
        "a token is never shown"
    );
    assert!(browser.session().is_none());

    let ok = browser.log_in(LEAD).await;
    assert_eq!(ok.status, 303, "{}", ok.text);
    assert_eq!(
        ok.header("location"),
        Some("/console"),
        "never where the request says"
    );
    let cookie = ok
        .headers
        .get_all(header::SET_COOKIE)
        .iter()
        .map(|v| v.to_str().unwrap())
        .find(|c| c.starts_with("recourse_console="))
        .unwrap();
    for part in ["HttpOnly", "SameSite=Strict", "Path=/console"] {
        assert!(cookie.contains(part), "{cookie}");
    }
    assert!(
        !cookie.contains("Secure"),
        "loopback http keeps no Secure cookie: {cookie}"
    );
    let id = browser.session().unwrap().to_owned();
    assert_eq!(id.len(), 64);

    let home = browser.get("/console").await;
    assert_eq!(home.status, 200, "{}", home.text);
    assert!(home.text.contains("Signed in as <strong>lead</strong>"));
    assert!(!home.text.contains(LEAD), "a token is never shown");

    // Logging out ends the session on the gateway, not only in the browser.
    let csrf = csrf_of(&home.text);
    let out = browser.post("/console/logout", &[("csrf", &csrf)]).await;
    assert_eq!(out.status, 303);
    let mut replay = Browser::new(&gw);
    replay.cookies.push(("recourse_console".into(), id));
    assert_eq!(
        replay.get("/console").await.status,
        303,
        "the old id is dead"
    );
}

#[tokio::test]
async fn a_console_cookie_opens_nothing_under_v1_and_a_token_nothing_under_console() {
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(dir.path()).await;
    let mut browser = Browser::new(&gw);
    assert_eq!(browser.log_in(OPS).await.status, 303);
    for path in ["/v1/calls", "/metrics", "/openapi.json"] {
        let a = browser.get(path).await;
        assert_eq!(a.status, 401, "{path}: a console cookie is no bearer token");
        assert_eq!(a.body["error"]["code"], "UNAUTHORIZED");
    }
    let with_bearer = api(&gw, OPS).get("/console").await;
    assert_eq!(
        with_bearer.0, 303,
        "a bearer token is no session: {}",
        with_bearer.1
    );
}

#[tokio::test]
async fn a_planted_session_id_is_worth_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(dir.path()).await;
    let mut victim = Browser::new(&gw);
    let planted = "a".repeat(64);
    victim
        .cookies
        .push(("recourse_console".into(), planted.clone()));
    assert_eq!(
        victim.get("/console").await.status,
        303,
        "an unknown id is no session"
    );
    assert_eq!(victim.log_in(LEAD).await.status, 303);
    let made = victim.session().unwrap().to_owned();
    assert_ne!(made, planted, "a login makes its own id");

    // An attacker's own live session, planted in the victim's browser
    // before the victim logs in, ends at the victim's login.
    let mut attacker = Browser::new(&gw);
    assert_eq!(attacker.log_in(OPS).await.status, 303);
    let theirs = attacker.session().unwrap().to_owned();
    let mut victim = Browser::new(&gw);
    let form = victim.get("/console/login").await;
    let csrf = csrf_of(&form.text);
    victim.cookies.push(("recourse_console".into(), theirs));
    let login = victim
        .post("/console/login", &[("csrf", &csrf), ("token", LEAD)])
        .await;
    assert_eq!(login.status, 303, "{}", login.text);
    assert_ne!(victim.session(), attacker.session());
    assert_eq!(
        attacker.get("/console").await.status,
        303,
        "the planted session ended"
    );
    let home = victim.get("/console").await;
    assert!(home.text.contains("Signed in as <strong>lead</strong>"));
}

#[tokio::test]
async fn every_form_needs_its_token_from_the_console_itself() {
    let t = tools_without_lookups(&["exports:crash_after_commit:1.0"]).await;
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(dir.path()).await;
    let (_, unknown) = api(&gw, AGENT).post(&keyed(export(&t), "forged-1")).await;
    let id = unknown["call_id"].as_str().unwrap().to_owned();
    let settle = format!("/console/calls/{id}/settle");

    // The login form's token is its cookie's other half.
    let mut stranger = Browser::new(&gw);
    let forged_login = stranger
        .post(
            "/console/login",
            &[("csrf", &"0".repeat(64)), ("token", LEAD)],
        )
        .await;
    assert_eq!(forged_login.status, 403, "{}", forged_login.text);
    assert!(stranger.session().is_none());

    let mut lead = Browser::new(&gw);
    assert_eq!(lead.log_in(LEAD).await.status, 303);
    let page = lead.get(&format!("/console/calls/{id}")).await;
    let csrf = csrf_of(&page.text);
    let note = ("note", "checked the tool's admin page");
    let zeros = "0".repeat(64);

    for (form, status) in [
        (vec![("state", "succeeded"), note], 422),
        (
            vec![("csrf", zeros.as_str()), ("state", "succeeded"), note],
            403,
        ),
        (
            vec![("csrf", &csrf[..63]), ("state", "succeeded"), note],
            403,
        ),
        (vec![("csrf", &csrf), ("state", "unknown"), note], 422),
        (
            vec![
                ("csrf", &csrf),
                ("state", "succeeded"),
                note,
                ("who", "someone"),
            ],
            422,
        ),
        (
            vec![("csrf", &csrf), ("state", "succeeded"), ("note", "  ")],
            400,
        ),
    ] {
        let answer = lead.post(&settle, &form).await;
        assert_eq!(answer.status, status, "{form:?}: {}", answer.text);
        assert!(
            answer
                .header("content-type")
                .unwrap()
                .starts_with("text/html")
        );
    }
    let huge = "n".repeat(64 * 1024);
    let answer = lead
        .post(
            &settle,
            &[("csrf", &csrf), ("state", "succeeded"), ("note", &huge)],
        )
        .await;
    assert_eq!(answer.status, 413, "{}", answer.text);

    // From another site, the right token is refused too.
    let mut request = Request::post(settle.as_str())
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .header("origin", "http://evil.example")
        .body(Body::from(format!("csrf={csrf}&state=succeeded&note=n")))
        .unwrap();
    request
        .headers_mut()
        .insert("sec-fetch-site", "cross-site".parse().unwrap());
    assert_eq!(lead.send(request).await.status, 403);

    let (_, still) = api(&gw, OPS).get(&format!("/v1/calls/{id}")).await;
    assert_eq!(still["state"], "unknown", "nothing forged was settled");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approver_settles_an_unknown_call_from_its_page() {
    let t = tools_without_lookups(&["exports:crash_after_commit:1.0"]).await;
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(dir.path()).await;
    let body = keyed(export(&t), "console-1");
    let (_, unknown) = api(&gw, AGENT).post(&body).await;
    assert_eq!(unknown["outcome"], "unknown", "{unknown}");
    let id = unknown["call_id"].as_str().unwrap().to_owned();

    let mut lead = Browser::new(&gw);
    assert_eq!(lead.log_in(LEAD).await.status, 303);
    let home = lead.get("/console").await;
    assert!(home.text.contains(&id), "{}", home.text);
    assert!(
        home.text
            .contains(r#"<span class="count" id="in-doubt-count">1</span>"#),
        "{}",
        home.text
    );

    let page = lead.get(&format!("/console/calls/{id}")).await;
    assert_eq!(page.status, 200, "{}", page.text);
    for shown in [
        "Attempt 1",
        "failed_after_send",
        "Settle by hand",
        "Journal: <code>unknown</code>",
    ] {
        assert!(page.text.contains(shown), "{shown}: {}", page.text);
    }
    let csrf = csrf_of(&page.text);
    let settled = lead
        .post(
            &format!("/console/calls/{id}/settle"),
            &[
                ("csrf", &csrf),
                ("state", "succeeded"),
                ("note", "the tool lists sales-2024-v3.pdf"),
            ],
        )
        .await;
    assert_eq!(settled.status, 303, "{}", settled.text);
    assert_eq!(
        settled.header("location"),
        Some("/console"),
        "no longer the approver's to see"
    );

    let home = lead.get("/console").await;
    assert!(home.text.contains("Nothing is in doubt."), "{}", home.text);
    let (_, record) = api(&gw, AGENT).post(&body).await;
    assert_eq!(record["replayed"], true);
    assert_eq!(record["settlement"]["by"], "person");
    assert_eq!(record["settlement"]["who"], "lead");
    assert_eq!(t.exports_committed(), 1, "settling sends nothing");

    // An admin sees the settled call, with who settled it and why.
    let mut ops = Browser::new(&gw);
    assert_eq!(ops.log_in(OPS).await.status, 303);
    let page = ops.get(&format!("/console/calls/{id}")).await;
    assert!(page.text.contains("Settled by person"), "{}", page.text);
    assert!(page.text.contains("the tool lists sales-2024-v3.pdf"));
    assert!(!page.text.contains("Settle by hand"), "not open any more");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caller_sees_in_the_console_what_the_api_shows_it() {
    let t = tools_without_lookups(&["exports:crash_after_commit:1.0"]).await;
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(dir.path()).await;
    let (_, unknown) = api(&gw, AGENT).post(&keyed(export(&t), "seen-1")).await;
    let id = unknown["call_id"].as_str().unwrap().to_owned();

    let mut other = Browser::new(&gw);
    assert_eq!(other.log_in(OTHER).await.status, 303);
    let home = other.get("/console").await;
    assert!(!home.text.contains(&id));
    assert!(home.text.contains("Nothing is in doubt."));
    let page = other.get(&format!("/console/calls/{id}")).await;
    assert_eq!(page.status, 404, "another's call is as absent as none");
    let journal = other.get("/console/journal").await;
    assert!(
        journal.text.contains(r#"<th class="n">0</th>"#),
        "{}",
        journal.text
    );

    let mut agent = Browser::new(&gw);
    assert_eq!(agent.log_in(AGENT).await.status, 303);
    let page = agent.get(&format!("/console/calls/{id}")).await;
    assert_eq!(page.status, 200);
    assert!(
        page.text
            .contains("Settling a call needs the approver role")
    );
    assert!(!page.text.contains("<form class=\"settle\""));
    let csrf = csrf_of(&page.text);
    let refused = agent
        .post(
            &format!("/console/calls/{id}/settle"),
            &[("csrf", &csrf), ("state", "failed"), ("note", "n")],
        )
        .await;
    assert_eq!(refused.status, 403, "{}", refused.text);
    assert!(refused.text.contains("approver role"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tools_script_is_shown_as_text() {
    let t = tools(&[], std::time::Duration::ZERO).await;
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(dir.path()).await;
    let script = "<script>document.title='pwned'</script>";
    let mut body = keyed(export(&t), "script-1");
    body["payload"]["format"] = json!(script);
    let (_, failed) = api(&gw, OPS).post(&body).await;
    assert_eq!(failed["outcome"], "failed", "{failed}");
    let id = failed["call_id"].as_str().unwrap();

    let mut ops = Browser::new(&gw);
    assert_eq!(ops.log_in(OPS).await.status, 303);
    for path in [
        format!("/console/calls/{id}"),
        "/console/journal".to_owned(),
    ] {
        let page = ops.get(&path).await;
        assert_eq!(page.status, 200, "{}", page.text);
        assert!(!page.text.contains("<script"), "{path}: {}", page.text);
    }
    let page = ops.get(&format!("/console/calls/{id}")).await;
    assert!(
        page.text.contains(
            "Format '&lt;script&gt;document.title='pwned'&lt;/script&gt;' is not supported"
        ),
        "{}",
        page.text
    );
}

#[tokio::test]
async fn every_page_is_guarded_and_bad_input_is_a_page() {
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(dir.path()).await;
    let mut ops = Browser::new(&gw);
    assert_eq!(ops.log_in(OPS).await.status, 303);
    let long = format!("/console/calls/{}", "c".repeat(5000));
    for (path, status) in [
        ("/console", 200),
        ("/console/journal", 200),
        ("/console/journal?state=unknown", 200),
        ("/console/breakers", 200),
        ("/console/journal?state=bogus", 400),
        ("/console/journal?limit=5", 400),
        ("/console/calls/c-never-was", 404),
        (long.as_str(), 404),
        ("/console/calls/%3Cscript%3E", 404),
        ("/console/nothing-here", 404),
        ("/console/login", 303),
    ] {
        let page = ops.get(path).await;
        assert_eq!(page.status, status, "{path}: {}", page.text);
        let csp = page.header("content-security-policy").unwrap();
        assert!(csp.contains("default-src 'none'") && csp.contains("frame-ancestors 'none'"));
        assert!(csp.contains("form-action 'self'"));
        assert_eq!(page.header("x-content-type-options"), Some("nosniff"));
        assert_eq!(page.header("referrer-policy"), Some("no-referrer"));
        assert_eq!(page.header("cache-control"), Some("no-store"));
        assert_eq!(page.header("x-frame-options"), Some("DENY"));
        assert!(!page.text.contains("<script"), "{path}");
    }
    let css = ops.get("/console/style.css").await;
    assert_eq!(css.header("content-type"), Some("text/css; charset=utf-8"));
    let breakers = ops.get("/console/breakers").await;
    assert!(
        breakers.text.contains("Resends allowed now"),
        "{}",
        breakers.text
    );
}

#[tokio::test]
async fn without_a_token_the_console_needs_no_login_on_loopback() {
    let dir = tempfile::tempdir().unwrap();
    let gw = TestGateway::journaled(&journal_path(dir.path())).await;
    let mut browser = Browser::new(&gw);
    let home = browser.get("/console").await;
    assert_eq!(home.status, 200, "{}", home.text);
    assert!(home.text.contains("Signed in as <strong>default</strong>"));
    assert!(!home.text.contains("Log out"));
    assert!(
        browser.session().is_some(),
        "a session, for the forms' token"
    );
    assert_eq!(browser.get("/console/login").await.status, 303);

    let rebound = Request::get("/console")
        .header(header::HOST, "evil.example:8780")
        .body(Body::empty())
        .unwrap();
    let refused = gw.send(rebound).await;
    assert_eq!(refused.status, 403);
    assert_eq!(refused.body["error"]["code"], "HOST_NOT_ALLOWED");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anonymous_loads_cannot_end_another_visitors_session() {
    let dir = tempfile::tempdir().unwrap();
    let gw = TestGateway::journaled(&journal_path(dir.path())).await;
    let mut visitor = Browser::new(&gw);
    assert_eq!(visitor.get("/console").await.status, 200);
    let session = visitor.session().unwrap().to_owned();
    // Others load the console, each without a cookie: many more than one
    // caller's sessions a table would keep.
    for _ in 0..40 {
        let mut other = Browser::new(&gw);
        assert_eq!(other.get("/console").await.status, 200);
    }
    let again = visitor.get("/console").await;
    assert_eq!(again.status, 200);
    assert!(
        again.headers.get(header::SET_COOKIE).is_none(),
        "no new session"
    );
    assert_eq!(visitor.session(), Some(session.as_str()));
}

/// `export` under `key`, needing a person's approval, asked as the agent:
/// its body, the call's id, the approval's id and its hash.
async fn awaiting_export(
    gw: &TestGateway,
    export: serde_json::Value,
    key: &str,
) -> (serde_json::Value, String, String, String) {
    let mut body = keyed(export, key);
    body["approval"] = json!({"reason": "exports leave the building"});
    let (status, asked) = api(gw, AGENT).post(&body).await;
    assert_eq!(status, 202, "{asked}");
    let approval = &asked["approval"];
    (
        body.clone(),
        asked["call_id"].as_str().unwrap().to_owned(),
        approval["id"].as_str().unwrap().to_owned(),
        approval["request_sha256"].as_str().unwrap().to_owned(),
    )
}

/// The call `id` once it has left `awaiting_approval` and `in_flight`.
async fn settled_call(gw: &TestGateway, id: &str) -> serde_json::Value {
    let started = std::time::Instant::now();
    loop {
        let (_, call) = api(gw, OPS).get(&format!("/v1/calls/{id}")).await;
        if !matches!(
            call["state"].as_str(),
            Some("awaiting_approval" | "in_flight")
        ) {
            return call;
        }
        assert!(started.elapsed().as_secs() < 10, "never ended: {call}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approver_approves_from_the_console_and_the_tool_writes_once() {
    let t = tools(&[], std::time::Duration::ZERO).await;
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(dir.path()).await;
    let (body, id, approval_id, hash) = awaiting_export(&gw, export(&t), "approve-1").await;

    let mut lead = Browser::new(&gw);
    assert_eq!(lead.log_in(LEAD).await.status, 303);
    let home = lead.get("/console").await;
    assert!(home.text.contains(&id), "{}", home.text);
    assert!(home.text.contains("exports leave the building"));
    assert!(
        home.text
            .contains(r#"<span class="count" id="awaiting-total">1</span>"#),
        "{}",
        home.text
    );
    // The list decides nothing: the call's page shows the request whole,
    // and has the form.
    let action = format!("/console/approvals/{approval_id}");
    assert!(!home.text.contains(&format!(r#"action="{action}""#)));
    assert!(home.text.contains("Review the request and decide"));
    let page = lead.get(&format!("/console/calls/{id}")).await;
    assert!(page.text.contains(&format!(r#"action="{action}""#)));
    assert!(page.text.contains(&format!(r#"value="{hash}""#)));
    assert!(
        page.text.contains(r#"id="request-payload""#),
        "{}",
        page.text
    );
    assert!(
        page.text.contains("sales-2024"),
        "the payload: {}",
        page.text
    );
    assert!(
        page.text.contains("The requester&#39;s words")
            || page.text.contains("The requester's words"),
        "{}",
        page.text
    );
    let csrf = csrf_of(&page.text);

    // Without the session's token, nothing is decided and nothing is sent.
    let zeros = "0".repeat(64);
    for (form, status) in [
        (
            vec![("decision", "approve"), ("request_sha256", &hash)],
            422,
        ),
        (
            vec![
                ("csrf", &zeros),
                ("decision", "approve"),
                ("request_sha256", &hash),
            ],
            403,
        ),
        (
            vec![
                ("csrf", &csrf[..63]),
                ("decision", "approve"),
                ("request_sha256", &hash),
            ],
            403,
        ),
        (
            vec![
                ("csrf", &csrf),
                ("decision", "Approve"),
                ("request_sha256", &hash),
            ],
            422,
        ),
    ] {
        let answer = lead.post(&action, &form).await;
        assert_eq!(answer.status, status, "{form:?}: {}", answer.text);
    }
    let mut request = Request::post(action.as_str())
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .header("origin", "http://evil.example")
        .body(Body::from(format!(
            "csrf={csrf}&decision=approve&request_sha256={hash}"
        )))
        .unwrap();
    request
        .headers_mut()
        .insert("sec-fetch-site", "cross-site".parse().unwrap());
    assert_eq!(lead.send(request).await.status, 403);
    let (_, still) = api(&gw, OPS).get(&format!("/v1/calls/{id}")).await;
    assert_eq!(still["state"], "awaiting_approval", "{still}");
    assert_eq!(t.exports_committed(), 0, "nothing forged was sent");

    let approved = lead
        .post(
            &action,
            &[
                ("csrf", &csrf),
                ("decision", "approve"),
                ("request_sha256", &hash),
                ("note", "checked with finance"),
            ],
        )
        .await;
    assert_eq!(approved.status, 303, "{}", approved.text);
    // Whoever decided sees the call afterwards: its page, not the list.
    assert_eq!(
        approved.header("location"),
        Some(format!("/console/calls/{id}").as_str())
    );
    let done = settled_call(&gw, &id).await;
    let page = lead.get(&format!("/console/calls/{id}")).await;
    assert_eq!(page.status, 200, "{}", page.text);
    assert_eq!(done["state"], "succeeded", "{done}");
    let record = &done["record"];
    let attempts = record["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 1, "{record}");
    assert_eq!(
        attempts[0]["payload"], body["payload"],
        "exactly the approved payload"
    );
    assert_eq!(record["approval"]["state"], "approved");
    assert_eq!(record["approval"]["decided_by"], "lead");
    assert_eq!(record["approval"]["note"], "checked with finance");
    assert_eq!(t.exports_committed(), 1, "one write");

    // Decided once: the form again is a page saying so, and sends nothing.
    let twice = lead
        .post(
            &action,
            &[
                ("csrf", &csrf),
                ("decision", "approve"),
                ("request_sha256", &hash),
            ],
        )
        .await;
    assert_eq!(twice.status, 409, "{}", twice.text);
    assert!(
        twice.text.contains("Not decided: decided already"),
        "{}",
        twice.text
    );
    assert!(twice.text.contains("approved already"), "{}", twice.text);
    let home = lead.get("/console").await;
    assert!(home.text.contains("No call is waiting"), "{}", home.text);
    assert_eq!(t.exports_committed(), 1, "never a second write");

    // The call's page says who approved it, when and why.
    let mut ops = Browser::new(&gw);
    assert_eq!(ops.log_in(OPS).await.status, 303);
    let page = ops.get(&format!("/console/calls/{id}")).await;
    assert!(
        page.text.contains(r#"class="state approved">approved<"#),
        "{}",
        page.text
    );
    assert!(page.text.contains(r#"id="approval-by">lead<"#));
    assert!(page.text.contains("checked with finance"));
    assert!(!page.text.contains(r#"class="decide""#));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caller_without_the_role_sees_the_wait_but_may_not_decide() {
    let t = tools(&[], std::time::Duration::ZERO).await;
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(dir.path()).await;
    let (_, id, approval_id, hash) = awaiting_export(&gw, export(&t), "forged-approval").await;

    let mut agent = Browser::new(&gw);
    assert_eq!(agent.log_in(AGENT).await.status, 303);
    let home = agent.get("/console").await;
    assert!(home.text.contains(&id), "its own call: {}", home.text);
    assert!(home.text.contains("Deciding needs the approver role."));
    assert!(!home.text.contains(r#"class="decide""#), "{}", home.text);
    let page = agent.get(&format!("/console/calls/{id}")).await;
    // A call waiting for a person has not ended.
    assert!(
        page.text.contains("<h2>Where it stands</h2>"),
        "{}",
        page.text
    );
    assert!(!page.text.contains("How it ended"), "{}", page.text);
    // What a person is asked has its own line.
    assert!(
        page.text
            .contains("<dt>The user is asked</dt><dd id=\"question\">"),
        "{}",
        page.text
    );
    assert!(
        page.text.contains(r#"class="state pending">pending<"#),
        "{}",
        page.text
    );
    assert!(
        page.text
            .contains("Deciding needs the approver role; you are agent.")
    );
    assert!(!page.text.contains(r#"class="decide""#));

    let csrf = csrf_of(&home.text);
    let forged = agent
        .post(
            &format!("/console/approvals/{approval_id}"),
            &[
                ("csrf", &csrf),
                ("decision", "approve"),
                ("request_sha256", &hash),
            ],
        )
        .await;
    assert_eq!(forged.status, 403, "{}", forged.text);
    assert!(forged.text.contains("approver role"), "{}", forged.text);
    let (_, still) = api(&gw, OPS).get(&format!("/v1/calls/{id}")).await;
    assert_eq!(still["state"], "awaiting_approval", "{still}");
    assert_eq!(t.exports_committed(), 0, "nothing dispatched");

    // Another caller sees nothing of it.
    let mut other = Browser::new(&gw);
    assert_eq!(other.log_in(OTHER).await.status, 303);
    let home = other.get("/console").await;
    assert!(!home.text.contains(&id));
    assert!(home.text.contains("No call is waiting"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_hash_is_a_page_and_a_rejection_fails_the_call_unsent() {
    let t = tools(&[], std::time::Duration::ZERO).await;
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(dir.path()).await;
    let (_, id, approval_id, hash) = awaiting_export(&gw, export(&t), "reject-1").await;
    let action = format!("/console/approvals/{approval_id}");

    let mut lead = Browser::new(&gw);
    assert_eq!(lead.log_in(LEAD).await.status, 303);
    let page = lead.get(&format!("/console/calls/{id}")).await;
    assert!(
        page.text.contains(&format!(r#"action="{action}""#)),
        "{}",
        page.text
    );
    let csrf = csrf_of(&page.text);

    let stale = lead
        .post(
            &action,
            &[
                ("csrf", &csrf),
                ("decision", "approve"),
                ("request_sha256", &"0".repeat(64)),
            ],
        )
        .await;
    assert_eq!(stale.status, 409, "{}", stale.text);
    assert!(
        stale
            .header("content-type")
            .unwrap()
            .starts_with("text/html")
    );
    assert!(
        stale.text.contains("Not decided: the request changed"),
        "{}",
        stale.text
    );
    assert!(
        stale.text.contains("read it again before deciding"),
        "{}",
        stale.text
    );
    let (_, still) = api(&gw, OPS).get(&format!("/v1/calls/{id}")).await;
    assert_eq!(still["state"], "awaiting_approval", "{still}");

    let rejected = lead
        .post(
            &action,
            &[
                ("csrf", &csrf),
                ("decision", "reject"),
                ("request_sha256", &hash),
                ("note", "not this quarter"),
            ],
        )
        .await;
    assert_eq!(rejected.status, 303, "{}", rejected.text);
    let (_, call) = api(&gw, OPS).get(&format!("/v1/calls/{id}")).await;
    assert_eq!(call["state"], "failed", "{call}");
    assert_eq!(call["record"]["reason"], "approval_rejected");
    assert_eq!(call["record"]["approval"]["note"], "not this quarter");
    assert_eq!(call["record"]["http_calls"], 0);
    assert_eq!(t.exports_committed(), 0, "nothing dispatched");

    let unknown = lead
        .post(
            "/console/approvals/no-such-approval",
            &[
                ("csrf", &csrf),
                ("decision", "approve"),
                ("request_sha256", &hash),
            ],
        )
        .await;
    assert_eq!(unknown.status, 404, "{}", unknown.text);
    assert!(unknown.text.contains("No such approval"));
}
