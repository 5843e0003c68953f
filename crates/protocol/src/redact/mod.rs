//! The redactor: secrets never reach a model.
//!
//! Tool error messages often quote the failing request, and requests carry
//! credentials: `?appid=…` in a weather URL, a `Bearer` header echoed back, a
//! `user:pass@` database URL, a config file's `password: …`. Anything shown to
//! a model — or written into a report a person may paste into a ticket —
//! passes through [`redact`] (text) or [`redact_value`] (JSON) first. Raw text
//! stays available to the code that produced it, for diagnostics that never
//! leave the process.
//!
//! [`redact`] lists what counts as a secret in text; [`redact_value`] also
//! hides the whole value under a secret-named JSON key ([`is_secret_key`]).
//! A template kept for later ([`redact_template`], [`redact_template_value`])
//! keeps its placeholders, whatever the parameter around them is called.
//!
//! # Idempotent and fast
//!
//! `redact(redact(s)) == redact(s)` (and likewise for values), which makes it
//! safe to apply at every boundary without tracking what was already cleaned.
//! Most text holds no secret, so one scan of every pattern at once decides
//! whether any rule needs to run; the regex engine is linear in the input.

mod keys;
mod rules;
mod template;

use std::borrow::Cow;

pub use keys::{is_secret_key, redact_value};
pub use template::{redact_template, redact_template_value};

/// What replaces a secret.
pub const REDACTED: &str = "[REDACTED]";

/// Replaces credentials in `text` with `[REDACTED]`.
///
/// # What is hidden
///
/// - credentials in query parameters and form text: `key`, `api_key`,
///   `apikey`, `appid`, `token`, `access_token`, `secret`, `password`, `sig`,
///   `signature`, …, also with a prefix (`x_api_key`, `X-Amz-Signature`);
/// - assignments to a secret's name in prose, YAML, `.env` files, headers and
///   JSON text: `password: …`, `password = …`, `AWS_SECRET_ACCESS_KEY=…`,
///   `X-Api-Key: …`, `{"api_key": "…"}` — any name ending in `token`,
///   `secret`, `password`, `passwd`, `passphrase`, `api_key`, `secret_key`,
///   `private_key`, `access_key` or `cookie`;
/// - `Authorization` values and `Bearer`/`Basic` tokens; whole `Cookie:` and
///   `Set-Cookie:` header lines;
/// - `user:pass@` and `:pass@` in URLs (`redis://:pw@host`);
/// - well-known key shapes: OpenAI/Anthropic `sk-…`, AWS `AKIA…`/`ASIA…`,
///   GitHub `ghp_…`/`github_pat_…`, Google `AIza…`, Slack `xox?-…`, Stripe
///   `sk_live_…`/`rk_live_…`/`sk_test_…`/`rk_test_…`, GitLab `glpat-…`, npm
///   `npm_…`, and JWTs (`eyJ…` in three base64url segments).
///
/// Ordinary prose stays: "the password field is required", "token count 12",
/// ids, UUIDs and timestamps are not secrets. A value is what follows a
/// secret's name and `:` or `=`, so a validation message such as
/// `password: too short` loses its first word: the rule cannot tell it from
/// `password: hunter2`, and a leak costs more than a word.
///
/// # Examples
///
/// ```
/// use recourse_protocol::redact;
///
/// let raw = "GET https://api.example.com/weather?q=Paris&appid=0123456789abcdef failed";
/// assert_eq!(redact(raw), "GET https://api.example.com/weather?q=Paris&appid=[REDACTED] failed");
/// assert_eq!(redact("Authorization: Bearer abc.def.ghi-123"), "Authorization: Bearer [REDACTED]");
/// assert_eq!(redact(r#"{"password": "hunter2"}"#), r#"{"password": "[REDACTED]"}"#);
/// assert_eq!(redact("the password field is required"), "the password field is required");
/// ```
pub fn redact(text: &str) -> String {
    redact_cow(text).into_owned()
}

/// Like [`redact`], borrowing when there is nothing to hide.
pub fn redact_cow(text: &str) -> Cow<'_, str> {
    // Fast path: one scan for all rules at once; most text holds no secret.
    if !rules::ANY_RULE.is_match(text) {
        return Cow::Borrowed(text);
    }
    let mut out = Cow::Borrowed(text);
    // One pass can expose a secret another rule hid (a query value swallowing
    // the `/` that kept `u:p…@` from reading as userinfo), so repeat until
    // nothing changes: that is what makes `redact` idempotent. No rule
    // changes its own output again (a `[REDACTED]` value rewrites to itself),
    // so the loop ends after a pass or two; the bound only guards against a
    // future rule breaking that.
    for _ in 0..MAX_PASSES {
        match redact_pass(&out) {
            Some(next) => out = Cow::Owned(next),
            None => break,
        }
    }
    out
}

const MAX_PASSES: usize = 16;

/// One pass of every rule; `None` when no rule changed anything.
fn redact_pass(text: &str) -> Option<String> {
    // Only the rules that match at the start of the pass run: one scan
    // instead of one per rule. A match an earlier rewrite creates is left to
    // the next pass, which the loop above runs whenever this one changed.
    let matching = rules::ANY_RULE.matches(text);
    let mut out = Cow::Borrowed(text);
    for i in matching.iter() {
        let rule = &rules::rules()[i];
        if let Cow::Owned(replaced) = rule.pattern.replace_all(&out, rule.replace) {
            out = Cow::Owned(replaced);
        }
    }
    match out {
        Cow::Owned(s) if s != text => Some(s),
        _ => None,
    }
}

/// Cuts `text` to at most `max_chars` characters, ending with `…` when cut.
pub fn truncate_chars(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        None => text.to_owned(),
        Some(_) if max_chars == 0 => String::new(),
        Some(_) => {
            let keep = text
                .char_indices()
                .nth(max_chars - 1)
                .map_or(text.len(), |(i, _)| i);
            format!("{}…", &text[..keep])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_parameter_credentials() {
        for p in [
            "key",
            "api_key",
            "apikey",
            "appid",
            "token",
            "access_token",
            "secret",
            "password",
            "sig",
            "signature",
        ] {
            let raw = format!("https://h.io/x?a=1&{p}=s3cr3tVALUE&b=2");
            let out = redact(&raw);
            assert_eq!(out, format!("https://h.io/x?a=1&{p}={REDACTED}&b=2"), "{p}");
        }
    }

    #[test]
    fn parameter_names_are_case_insensitive() {
        assert_eq!(redact("?API_KEY=abc"), format!("?API_KEY={REDACTED}"));
    }

    #[test]
    fn harmless_parameters_stay() {
        let raw = "https://h.io/x?q=Paris&units=metric&monkey=banana";
        assert_eq!(redact(raw), raw);
    }

    #[test]
    fn userinfo_in_urls() {
        assert_eq!(
            redact("postgres://admin:hunter2@db.internal:5432/app"),
            format!("postgres://{REDACTED}@db.internal:5432/app")
        );
    }

    #[test]
    fn authorization_and_bearer_values() {
        assert_eq!(
            redact("authorization=Basic dXNlcjpwYXNz"),
            format!("authorization=Basic {REDACTED}")
        );
        assert_eq!(
            redact(r#"{"Authorization": "abcdef123456"}"#),
            format!(r#"{{"Authorization": "{REDACTED}"}}"#)
        );
        assert_eq!(
            redact("sent bearer eyJhbGciOi.payload.sig"),
            format!("sent bearer {REDACTED}")
        );
    }

    #[test]
    fn well_known_key_shapes() {
        let secrets = [
            "sk-proj-abcdefghijklmnopqrstu",
            "AKIAIOSFODNN7EXAMPLE",
            "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
            "AIzaSyA-abcdefghijklmnopqrstuvwxyz01234",
            "xoxb-123456789012-abcdefghij",
        ];
        for s in secrets {
            let out = redact(&format!("key was {s}, sorry"));
            assert!(!out.contains(s), "{s} survived: {out}");
            assert!(out.contains(REDACTED));
        }
    }

    #[test]
    fn ordinary_prose_is_untouched() {
        let raw = "Location 'Flower Mound, TX' not found; try 'Flower Mound, Texas, US'. The risk-assessment is due.";
        assert_eq!(redact(raw), raw);
        assert!(matches!(redact_cow(raw), Cow::Borrowed(_)));
    }

    #[test]
    fn redaction_is_idempotent_on_examples() {
        let raw = "https://u:p@h.io/?token=abc&x=1 Authorization: Bearer abcdefghij sk-abcdefghijklmnopqrstuvwx";
        let once = redact(raw);
        assert_eq!(redact(&once), once);
    }

    #[test]
    fn json_values_are_redacted_deeply() {
        let v = serde_json::json!({"url": "https://h.io?key=zzz", "list": ["Bearer abcdefghijk"], "n": 1});
        let r = redact_value(&v);
        assert_eq!(r["url"], format!("https://h.io?key={REDACTED}"));
        assert_eq!(r["list"][0], format!("Bearer {REDACTED}"));
        assert_eq!(r["n"], 1);
    }
}
