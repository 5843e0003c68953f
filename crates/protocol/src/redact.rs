//! The redactor: secrets never reach a model (SPEC §2).
//!
//! Tool error messages often quote the failing request, and requests carry
//! credentials: `?appid=…` in a weather URL, a `Bearer` header echoed back, a
//! `user:pass@` database URL. Anything shown to a model — or written into a
//! report a person may paste into a ticket — passes through [`redact`] first.
//! Raw text stays available to the code that produced it, for diagnostics that
//! never leave the process.
//!
//! The redactor is idempotent (`redact(redact(s)) == redact(s)`), which makes it
//! safe to apply at every boundary without tracking what was already cleaned.

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::{Captures, Regex, RegexSet};
use serde_json::Value;

/// What replaces a secret.
pub const REDACTED: &str = "[REDACTED]";

struct Rule {
    pattern: Regex,
    replace: fn(&Captures<'_>) -> String,
}

fn rule(pattern: &str, replace: fn(&Captures<'_>) -> String) -> Rule {
    Rule {
        pattern: Regex::new(pattern)
            .unwrap_or_else(|e| unreachable!("redaction pattern {pattern:?}: {e}")),
        replace,
    }
}

/// Every rule's pattern in one set, to tell in a single scan whether any applies.
static ANY_RULE: LazyLock<RegexSet> = LazyLock::new(|| {
    RegexSet::new(RULES.iter().map(|r| r.pattern.as_str()))
        .unwrap_or_else(|e| unreachable!("redaction patterns: {e}"))
});

static RULES: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    vec![
        // user:pass@ in a URL's authority.
        rule(
            r"(?i)\b([a-z][a-z0-9+.\-]*://)[^/\s:@\[\]]+:[^/\s@]+@",
            |c| format!("{}{REDACTED}@", &c[1]),
        ),
        // Credentials in query parameters (and form-encoded text).
        rule(
            r"(?i)(^|[?&;\s])((?:api[_-]?key|key|appid|app_id|token|access_token|refresh_token|client_secret|secret|password|passwd|pwd|sig|signature)=)[^&\s#]+",
            |c| format!("{}{}{REDACTED}", &c[1], &c[2]),
        ),
        // Authorization header values, whatever the scheme.
        rule(
            r#"(?i)(authorization["']?\s*[:=]\s*["']?)((?:bearer|basic|token|digest)\s+)?[^\s"',;]+"#,
            |c| format!("{}{}{REDACTED}", &c[1], c.get(2).map_or("", |m| m.as_str())),
        ),
        // Bearer/Basic tokens wherever they appear.
        rule(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9\-._~+/]{8,}=*", |c| {
            format!("{} {REDACTED}", &c[1])
        }),
        // Well-known key shapes.
        rule(r"\bsk-[A-Za-z0-9_\-]{16,}", |_| REDACTED.to_owned()),
        rule(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b", |_| REDACTED.to_owned()),
        rule(r"\bgh[pousr]_[A-Za-z0-9]{20,}", |_| REDACTED.to_owned()),
        rule(r"\bgithub_pat_[A-Za-z0-9_]{20,}", |_| REDACTED.to_owned()),
        rule(r"\bAIza[0-9A-Za-z_\-]{30,}", |_| REDACTED.to_owned()),
        // Slack: xoxb-, xoxp-, xoxa-, xoxe-, xoxc-, xoxd-, … (`xox?-`).
        rule(r"\bxox[a-z]-[A-Za-z0-9\-]{10,}", |_| REDACTED.to_owned()),
    ]
});

/// Replaces credentials in `text` with `[REDACTED]`.
///
/// Covers credentials in URL query parameters (`key`, `api_key`, `apikey`,
/// `appid`, `token`, `access_token`, `secret`, `password`, `sig`, `signature`, …),
/// `Authorization` and `Bearer` values, `user:pass@` in URLs, and well-known key
/// shapes (`sk-…`, `AKIA…`, `ghp_…`, `AIza…`, `xox?-…`).
///
/// ```
/// use recourse_protocol::redact;
///
/// let raw = "GET https://api.example.com/weather?q=Paris&appid=0123456789abcdef failed";
/// assert_eq!(redact(raw), "GET https://api.example.com/weather?q=Paris&appid=[REDACTED] failed");
/// assert_eq!(redact("Authorization: Bearer abc.def.ghi-123"), "Authorization: Bearer [REDACTED]");
/// ```
pub fn redact(text: &str) -> String {
    redact_cow(text).into_owned()
}

/// Like [`redact`], borrowing when there is nothing to hide.
pub fn redact_cow(text: &str) -> Cow<'_, str> {
    // Fast path: one scan for all rules at once; most text holds no secret.
    if !ANY_RULE.is_match(text) {
        return Cow::Borrowed(text);
    }
    let mut out = Cow::Borrowed(text);
    // One pass can expose a secret another rule hid (a query value swallowing
    // the `/` that kept `u:p…@` from reading as userinfo), so repeat until
    // nothing changes: that is what makes `redact` idempotent. Every change
    // replaces at least one character outside a `[REDACTED]` marker, so the
    // loop ends; the bound only guards against a future rule breaking that.
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
    let mut out = Cow::Borrowed(text);
    for rule in RULES.iter() {
        if rule.pattern.is_match(&out) {
            let replaced = rule.pattern.replace_all(&out, rule.replace).into_owned();
            out = Cow::Owned(replaced);
        }
    }
    match out {
        Cow::Owned(s) if s != text => Some(s),
        _ => None,
    }
}

/// Redacts every string (keys excluded) inside a JSON value.
pub fn redact_value(value: &Value) -> Value {
    match value {
        Value::String(s) => Value::String(redact(s)),
        Value::Array(items) => Value::Array(items.iter().map(redact_value).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), redact_value(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Renders a tool error as model-visible text: redacted, and cut to at most
/// `max_chars` characters (on a character boundary, marked with `…`).
///
/// ```
/// use recourse_protocol::{model_visible_error, ToolError};
///
/// let e = ToolError::auth_error("BAD_KEY", "rejected key sk-abcdefghijklmnopqrstuv");
/// let text = model_visible_error(&e, 200);
/// assert!(text.starts_with("[BAD_KEY] rejected key [REDACTED]"));
/// assert!(text.contains("AUTH_ERROR"));
/// ```
pub fn model_visible_error(error: &crate::ToolError, max_chars: usize) -> String {
    let safe = error.redacted();
    let mut text = format!(
        "{safe}\ncategory: {}\nretryable: {}",
        safe.category, safe.retryable
    );
    if !safe.details.is_null() {
        text.push_str("\ndetails: ");
        text.push_str(&safe.details.to_string());
    }
    truncate_chars(&text, max_chars)
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
