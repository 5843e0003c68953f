//! JSON-aware redaction: a value under a secret's name is hidden whole.
//!
//! Text rules see a string, not where it sits: in `{"password": "hunter2"}`
//! the string `hunter2` looks like any other word. So [`redact_value`] reads
//! the key too, and hides whatever a secret-named key holds — a string, a
//! number, an object. Names match exactly (up to case and separators), so
//! `tokens`, `max_tokens`, `token_count` and `idempotency_key` stay readable.

use serde_json::Value;

use super::{REDACTED, redact};

/// Key names whose values are secrets, lower case, separators removed.
const SECRET_KEYS: [&str; 16] = [
    "password",
    "passwd",
    "secret",
    "clientsecret",
    "token",
    "accesstoken",
    "refreshtoken",
    "apikey",
    "xapikey",
    "authorization",
    "proxyauthorization",
    "cookie",
    "setcookie",
    "privatekey",
    "awssecretaccesskey",
    "secretaccesskey",
];

/// Whether a JSON key (or header name) names a secret, so its value must
/// never be shown.
///
/// Matches `password`, `passwd`, `secret`, `client_secret`, `token`,
/// `access_token`, `refresh_token`, `api_key`, `apikey`, `x_api_key`,
/// `authorization`, `proxy_authorization`, `cookie`, `set_cookie`,
/// `private_key`, `secret_access_key` and `aws_secret_access_key`, ignoring
/// case and the separators `_` and `-`: `Set-Cookie`, `API_KEY` and
/// `accessToken` count. Only whole names count.
///
/// ```
/// use recourse_protocol::is_secret_key;
///
/// assert!(is_secret_key("X-Api-Key"));
/// assert!(is_secret_key("refreshToken"));
/// assert!(!is_secret_key("max_tokens"));
/// assert!(!is_secret_key("idempotency_key"));
/// ```
pub fn is_secret_key(key: &str) -> bool {
    SECRET_KEYS.iter().any(|name| same_name(key, name))
}

/// `key` without `_`/`-`, compared case-insensitively with `name`.
fn same_name(key: &str, name: &str) -> bool {
    let mut letters = key.bytes().filter(|b| !matches!(b, b'_' | b'-'));
    name.bytes()
        .all(|n| letters.next().is_some_and(|b| b.eq_ignore_ascii_case(&n)))
        && letters.next().is_none()
}

/// Redacts a JSON value for display: a value under a secret-named key (see
/// [`is_secret_key`]) becomes `"[REDACTED]"` whatever its type, at any depth;
/// every other string passes [`redact`]. Keys themselves are kept.
///
/// ```
/// use recourse_protocol::redact_value;
/// use serde_json::json;
///
/// let v = json!({"user": "ana", "password": "hunter2", "note": "key sk-abcdefghijklmnopqrstu"});
/// assert_eq!(
///     redact_value(&v),
///     json!({"user": "ana", "password": "[REDACTED]", "note": "key [REDACTED]"})
/// );
/// ```
pub fn redact_value(value: &Value) -> Value {
    match value {
        Value::String(s) => Value::String(redact(s)),
        Value::Array(items) => Value::Array(items.iter().map(redact_value).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let v = if is_secret_key(k) {
                        Value::String(REDACTED.to_owned())
                    } else {
                        redact_value(v)
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secret_names_match_across_case_and_separators() {
        for key in [
            "password",
            "PASSWORD",
            "passwd",
            "secret",
            "client_secret",
            "client-secret",
            "clientSecret",
            "token",
            "access_token",
            "refresh-token",
            "api_key",
            "apikey",
            "API-KEY",
            "X-Api-Key",
            "Authorization",
            "cookie",
            "Set-Cookie",
            "set_cookie",
            "private_key",
            "AWS_SECRET_ACCESS_KEY",
        ] {
            assert!(is_secret_key(key), "{key}");
        }
    }

    #[test]
    fn names_that_only_contain_a_secret_word_are_not_secret() {
        for key in [
            "tokens",
            "max_tokens",
            "token_count",
            "idempotency_key",
            "key",
            "password_hint",
            "secrets_manager",
            "",
            "_",
        ] {
            assert!(!is_secret_key(key), "{key}");
        }
    }

    #[test]
    fn secret_values_are_hidden_whatever_their_type() {
        let v = json!({"token": 12345, "secret": {"a": 1}, "cookie": ["a", "b"], "password": null});
        assert_eq!(
            redact_value(&v),
            json!({"token": REDACTED, "secret": REDACTED, "cookie": REDACTED, "password": REDACTED})
        );
    }
}
