//! The one check that reads message text: does a failure show a stack trace
//! or a secret?
//!
//! Every other verdict reads parsed types. This one cannot, because a leak
//! *is* text: a server that pastes its traceback or its upstream's API key
//! into an error message hands both to every model that reads the message
//! (and to whoever reads the logs). The heuristics look for the shapes the
//! common runtimes print, so a miss is possible and a match is near certain:
//!
//! | runtime | shape matched |
//! |---|---|
//! | Python | `Traceback (most recent call last)`, `File "…", line N` |
//! | Rust | `panicked at`, `stack backtrace:` |
//! | Node.js | `at fn (/path/file.js:L:C)`, `at /path/file.js:L:C`, `at node:internal/…:L:C` |
//! | JVM | `at com.example.Class.method(Class.java:NN)` (also `.kt`, `.scala`, `Native Method`, `Unknown Source`) |
//! | Go | `goroutine N [running]:`, `file.go:NN +0x…` |
//! | .NET | `at Namespace.Type.Method(…) in File.cs:line NN` |
//! | PHP | `Stack trace:` followed by `#0` |
//! | Ruby | `file.rb:NN:in` |
//!
//! Secrets are what recourse's own redactor hides (`recourse_protocol::redact`
//! for text, `redact_value` for a value under a secret-named key): a message
//! the redactor would change holds a secret. The redactor errs towards hiding,
//! so a message that reads like an assignment to a secret's name
//! (`password: too short`) counts too.

use std::sync::LazyLock;

use recourse_protocol::{redact_cow, redact_value, truncate_chars};
use regex::Regex;
use serde_json::Value;

/// How much of a match a verdict quotes.
const EXCERPT_CHARS: usize = 80;
/// How many strings of one body are scanned.
const MAX_STRINGS: usize = 10_000;

static STACK_TRACES: LazyLock<Vec<(&'static str, Regex)>> = LazyLock::new(|| {
    [
        ("a Python traceback", r"Traceback \(most recent call last\)"),
        ("a Python traceback", r#"File "[^"\n]+", line \d+"#),
        ("a Rust panic", r"panicked at |stack backtrace:"),
        (
            "a Node.js stack trace",
            r"\bat (?:[\w$.<>\[\] ]+ \()?(?:/|[A-Za-z]:\\|file://|node:)[^\s()]*:\d+:\d+\)?",
        ),
        (
            "a JVM stack trace",
            r"\bat (?:[\w.$@]+/)?[\w$]+(?:\.[\w$<>]+)+\((?:[\w$]+\.(?:java|kt|scala)(?::\d+)?|Native Method|Unknown Source)\)",
        ),
        ("a Go stack trace", r"goroutine \d+ \[[a-z ]+\]:|\.go:\d+ \+0x[0-9a-f]+"),
        ("a .NET stack trace", r"\bat [\w.`<>]+\([^)\n]*\) in [^\n]+:line \d+"),
        ("a PHP stack trace", r"Stack trace:\s*#0 "),
        ("a Ruby backtrace", r"\.rb:\d+:in [`']"),
    ]
    .into_iter()
    .map(|(what, pattern)| (what, Regex::new(pattern).expect("a valid pattern")))
    .collect()
});

/// What a failure's text gave away, for a verdict's detail (redacted).
pub(crate) fn find(body: Option<&Value>, text: &str) -> Option<String> {
    match body {
        Some(value) => {
            let mut strings = Vec::new();
            collect_strings(value, &mut strings);
            strings.iter().find_map(|s| in_text(s)).or_else(|| {
                (redact_value(value) != *value)
                    .then(|| "a value under a secret-named key".to_owned())
            })
        }
        None => in_text(text),
    }
}

fn in_text(text: &str) -> Option<String> {
    for (what, pattern) in STACK_TRACES.iter() {
        if let Some(m) = pattern.find(text) {
            let excerpt = truncate_chars(&redact_cow(m.as_str()), EXCERPT_CHARS);
            return Some(format!("{what} ({excerpt:?})"));
        }
    }
    if let std::borrow::Cow::Owned(redacted) = redact_cow(text) {
        return Some(format!(
            "a secret ({:?})",
            truncate_chars(&redacted, EXCERPT_CHARS)
        ));
    }
    None
}

fn collect_strings<'a>(value: &'a Value, out: &mut Vec<&'a str>) {
    if out.len() >= MAX_STRINGS {
        return;
    }
    match value {
        Value::String(s) => out.push(s),
        Value::Array(items) => items.iter().for_each(|v| collect_strings(v, out)),
        Value::Object(map) => map.values().for_each(|v| collect_strings(v, out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn text(t: &str) -> Option<String> {
        find(None, t)
    }

    #[test]
    fn each_runtime_shape_is_found() {
        let traces = [
            "Traceback (most recent call last):\n  File \"/srv/app.py\", line 12, in h",
            "  File \"/srv/app.py\", line 12, in h",
            "thread 'main' panicked at src/main.rs:4:5:",
            "TypeError: x is undefined\n    at Object.handler (/srv/app.js:42:13)",
            "    at /srv/app.js:42:13",
            "    at process.processTicksAndRejections (node:internal/process/task_queues:95:5)",
            "java.lang.NullPointerException\n\tat com.acme.Api.get(Api.java:88)",
            "\tat java.base/jdk.internal.reflect.NativeMethodAccessorImpl.invoke0(Native Method)",
            "goroutine 1 [running]:\nmain.main()",
            "   at Acme.Api.Get(String id) in /src/Api.cs:line 42",
            "Stack trace:\n#0 /var/www/index.php(12): f()",
            "/app/models/order.rb:12:in `refund'",
        ];
        for trace in traces {
            assert!(text(trace).is_some(), "{trace:?} was not found");
        }
        let in_json = json!({"success": false, "error": {"details": {"stack": traces[3]}}});
        assert!(find(Some(&in_json), "").unwrap().contains("Node.js"));
    }

    #[test]
    fn ordinary_messages_pass() {
        for message in [
            "Missing required field `location`",
            "No place called 'probe'; try 'City, Region, Country'",
            "Field `amount` has an invalid value: invalid type: string \"x\", expected f64",
            "the token field is required",
            "Invalid timezone: 'probe' at line 3",
            "Look it up at /api/exports/op-1",
        ] {
            assert_eq!(text(message), None, "{message:?}");
        }
        let clean = json!({"error": {"message": "bad", "details": {"field": "q"}}});
        assert_eq!(find(Some(&clean), ""), None);
    }

    #[test]
    fn secrets_are_found_and_never_quoted() {
        let leak =
            text("upstream refused https://api.example.com/v1?api_key=abcdef0123456789").unwrap();
        assert!(
            leak.starts_with("a secret") && !leak.contains("abcdef"),
            "{leak}"
        );
        let keyed = json!({"error": {"details": {"api_key": 42}}});
        assert_eq!(
            find(Some(&keyed), "").as_deref(),
            Some("a value under a secret-named key")
        );
    }
}
