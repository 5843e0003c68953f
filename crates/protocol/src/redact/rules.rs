//! The text rules: one regular expression per shape of secret, and a set of
//! them all for the one-scan fast path.
//!
//! Names are matched loosely where a miss would leak: an assignment counts
//! whatever its prefix (`x_api_key`, `db.password`, `accessToken`,
//! `AWS_SECRET_ACCESS_KEY`), because credentials hide under many names. Values
//! are matched tightly: a value follows the `=` or `:` (and any spaces) on the
//! same line and never starts with `=`, `:`, `>`, `{` or `[`, so `token == x`,
//! `password::hash`, a nested JSON object and an existing `[REDACTED]` marker
//! are not values.
//!
//! Word boundaries are ASCII (`(?-u:\b)`): a Unicode one makes the regex
//! engine leave its fast automaton on any non-ASCII text, which made scanning
//! a clean French sentence a hundred times slower than an English one.

use std::sync::LazyLock;

use regex::{Captures, Regex, RegexSet};

use super::REDACTED;
use super::template::is_marker;

/// One shape of secret and how to rewrite a match of it.
pub(super) struct Rule {
    pub(super) pattern: Regex,
    pub(super) replace: fn(&Captures<'_>) -> String,
}

fn rule(pattern: &str, replace: fn(&Captures<'_>) -> String) -> Rule {
    Rule {
        pattern: Regex::new(pattern)
            .unwrap_or_else(|e| unreachable!("redaction pattern {pattern:?}: {e}")),
        replace,
    }
}

/// Every rule's pattern in one set, to tell in a single scan whether any applies.
pub(super) static ANY_RULE: LazyLock<RegexSet> = LazyLock::new(|| {
    RegexSet::new(RULES.iter().map(|r| r.pattern.as_str()))
        .unwrap_or_else(|e| unreachable!("redaction patterns: {e}"))
});

/// The final word of a name whose value is a secret, after any prefix.
const SECRET_WORD: &str =
    r"(?:api[_\-]?key|(?:secret|private|access)[_\-]?key|token|secret|password|passwd|passphrase)";

/// Any prefix a secret's name may carry: `x_`, `db.`, `X-Goog-`, `access`.
const NAME_PREFIX: &str = r"[a-z0-9_.\-]*";

/// What may precede an assigned name: the start, white space, or ASCII
/// punctuation other than `/`, `.`, `-`, `_`, `:` and `=`, so a URL path
/// (`/reset-password: 404`) is not an assignment. It is a small positive set
/// without the separators because either would cost the fast path its
/// literal search for `:` and `=`, making every scan several times slower.
const BEFORE_NAME: &str = r#"(^|[\s"'`{}()\[\]<>,;|&?#!*+$%^~@\\])"#;

/// A quoted value: JSON text escaped once more (`\"…\"`), a JSON or YAML
/// double-quoted string (escapes honoured), or a single-quoted one; never
/// empty. An unterminated quote runs to the end of the line.
const QUOTED: &str = r#"\\"[^"\r\n]+"?|"(?:[^"\\\r\n]|\\.)+"?|'[^'\r\n]+'?"#;

static RULES: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    // A parameter whose value is a secret. The weak names (`key`, `sig`, …)
    // count only alone: `sort_key` is no secret, `x_api_key` is.
    let parameter =
        format!("(?:{NAME_PREFIX}(?:{SECRET_WORD}|signature)|key|appid|app_id|sig|pwd)");
    // A name assigned a secret in prose, YAML, headers or JSON text.
    let name = format!("{NAME_PREFIX}(?:{SECRET_WORD}|cookie)");
    vec![
        // user:pass@ (or :pass@, as in redis://:pw@host) in a URL's authority.
        rule(
            r"(?i)(?-u:\b)([a-z][a-z0-9+.\-]*://)[^/\s:@\[\]]*:[^/\s@]+@",
            |c| format!("{}{REDACTED}@", &c[1]),
        ),
        // Credentials in query parameters: the value ends at `&`, or at `#`
        // where the fragment starts.
        rule(
            &format!(r#"(?i)([?&;])({parameter}=)({QUOTED}|[^&\s#"'][^&\s#]*)"#),
            parameter_value,
        ),
        // The same names in form-encoded text and `.env` lines, where `#`
        // may be part of the value.
        rule(
            &format!(r#"(?i)(^|\s)({parameter}=)({QUOTED}|[^&\s"'][^&\s]*)"#),
            parameter_value,
        ),
        // Authorization header values, whatever the scheme.
        rule(
            r#"(?i)(authorization["']?\s*[:=]\s*["']?)((?:bearer|basic|token|digest)\s+)?[^\s"',;]+"#,
            |c| format!("{}{}{REDACTED}", &c[1], c.get(2).map_or("", |m| m.as_str())),
        ),
        // Bearer/Basic tokens wherever they appear.
        rule(
            r"(?i)(?-u:\b)(bearer|basic)\s+[A-Za-z0-9\-._~+/]{8,}=*",
            |c| format!("{} {REDACTED}", &c[1]),
        ),
        // `Cookie:` / `Set-Cookie:` header lines: every pair, to the end of the line.
        rule(
            &format!(r"(?i){BEFORE_NAME}((?:set[_\-])?cookie[ \t]*:[ \t]*)\S[^\r\n]*"),
            |c| format!("{}{}{REDACTED}", &c[1], &c[2]),
        ),
        // `password: …`, `"api_key": "…"`, `X-Api-Key: …` (YAML, JSON text, headers, prose).
        rule(
            &format!(
                r#"(?i){BEFORE_NAME}({name})(\\?["']?[ \t]*:[ \t]*)({QUOTED}|[^\s"'=:>{{\[][^\s"']*)"#
            ),
            assignment,
        ),
        // `password = …`, `AWS_SECRET_ACCESS_KEY=…` (env files, properties, `Debug` output).
        rule(
            &format!(
                r#"(?i){BEFORE_NAME}({name})(\\?["']?[ \t]*=[ \t]*)({QUOTED}|[^\s"'=:>{{\[&][^\s"'&]*)"#
            ),
            assignment,
        ),
        // Well-known key shapes.
        rule(r"(?-u:\b)sk-[A-Za-z0-9_\-]{16,}", |_| REDACTED.to_owned()),
        rule(r"(?-u:\b)(?:AKIA|ASIA)[0-9A-Z]{16}(?-u:\b)", |_| {
            REDACTED.to_owned()
        }),
        rule(r"(?-u:\b)gh[pousr]_[A-Za-z0-9]{20,}", |_| {
            REDACTED.to_owned()
        }),
        rule(r"(?-u:\b)github_pat_[A-Za-z0-9_]{20,}", |_| {
            REDACTED.to_owned()
        }),
        rule(r"(?-u:\b)AIza[0-9A-Za-z_\-]{30,}", |_| REDACTED.to_owned()),
        // Slack: xoxb-, xoxp-, xoxa-, xoxe-, xoxc-, xoxd-, … (`xox?-`).
        rule(r"(?-u:\b)xox[a-z]-[A-Za-z0-9\-]{10,}", |_| {
            REDACTED.to_owned()
        }),
        // Stripe secret and restricted keys, live and test.
        rule(r"(?-u:\b)[rs]k_(?:live|test)_[A-Za-z0-9]{10,}", |_| {
            REDACTED.to_owned()
        }),
        // GitLab personal access tokens.
        rule(
            r"(?-u:\b)glpat-[A-Za-z0-9_\-]{20,}(?:\.[A-Za-z0-9_\-]+)*",
            |_| REDACTED.to_owned(),
        ),
        // npm access tokens.
        rule(r"(?-u:\b)npm_[A-Za-z0-9]{36,}", |_| REDACTED.to_owned()),
        // A JWT: base64url JSON header (`eyJ` is `{"`), payload, signature.
        rule(
            r"(?-u:\b)eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]*",
            |_| REDACTED.to_owned(),
        ),
    ]
});

/// Rewrites `(before)(name=)(value)`.
fn parameter_value(c: &Captures<'_>) -> String {
    format!("{}{}{}", &c[1], &c[2], hide(&c[3]))
}

/// Rewrites `(before)(name)(separator)(value)`.
fn assignment(c: &Captures<'_>) -> String {
    format!("{}{}{}{}", &c[1], &c[2], &c[3], hide(&c[4]))
}

/// `[REDACTED]` in the quotes `value` opened with, so JSON text stays JSON;
/// a value that is only a template's placeholder marker is kept (see
/// `template.rs`): it holds no secret.
fn hide(value: &str) -> String {
    if is_marker(value.trim_matches(['"', '\'', '\\'])) {
        value.to_owned()
    } else if value.starts_with("\\\"") {
        format!("\\\"{REDACTED}\\\"")
    } else if value.starts_with('"') {
        format!("\"{REDACTED}\"")
    } else if value.starts_with('\'') {
        format!("'{REDACTED}'")
    } else {
        REDACTED.to_owned()
    }
}

/// The rules, in the order a pass applies them.
pub(super) fn rules() -> &'static [Rule] {
    &RULES
}
