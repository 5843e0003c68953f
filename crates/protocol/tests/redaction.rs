//! The redactor, one test per supported secret shape, and the prose it leaves alone.

use std::borrow::Cow;

use recourse_protocol::{
    REDACTED, ToolError, is_secret_key, model_visible_error, redact, redact_cow, redact_value,
};
use serde_json::json;

#[test]
fn redacts_credentials_in_every_named_query_parameter() {
    for name in [
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
        let raw = format!("GET https://api.example.com/v1?q=Paris&{name}=s3cr3tVALUE#top failed");
        assert_eq!(
            redact(&raw),
            format!("GET https://api.example.com/v1?q=Paris&{name}={REDACTED}#top failed"),
            "{name}"
        );
    }
}

#[test]
fn redacts_query_parameters_case_insensitively_and_as_first_parameter() {
    assert_eq!(
        redact("https://h.io/x?APIKEY=abc&Token=def"),
        format!("https://h.io/x?APIKEY={REDACTED}&Token={REDACTED}")
    );
}

#[test]
fn keeps_parameters_that_only_end_in_a_secret_name() {
    let raw = "https://h.io/x?monkey=banana&tokens_left=3&keyboard=qwerty";
    assert_eq!(redact(raw), raw);
}

#[test]
fn redacts_authorization_header_values() {
    assert_eq!(
        redact("Authorization: Bearer abc.def.ghi"),
        format!("Authorization: Bearer {REDACTED}")
    );
    assert_eq!(
        redact("authorization: Basic dXNlcjpwYXNz"),
        format!("authorization: Basic {REDACTED}")
    );
    assert_eq!(
        redact(r#"{"Authorization":"rawtoken123"}"#),
        format!(r#"{{"Authorization":"{REDACTED}"}}"#)
    );
}

#[test]
fn redacts_bearer_tokens_anywhere() {
    assert_eq!(
        redact("sent bearer eyJhbGciOi.payload.sig to upstream"),
        format!("sent bearer {REDACTED} to upstream")
    );
}

#[test]
fn redacts_userinfo_in_urls() {
    assert_eq!(
        redact("connect postgres://admin:hunter2@db.internal:5432/app failed"),
        format!("connect postgres://{REDACTED}@db.internal:5432/app failed")
    );
}

#[test]
fn redacts_well_known_key_shapes() {
    for secret in [
        "sk-proj-abcdefghijklmnopqrstu",
        "sk-ant-api03-abcdefghijklmnop",
        "AKIAIOSFODNN7EXAMPLE",
        "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
        "gho_abcdefghijklmnopqrstuvwxyz0123456789",
        "AIzaSyA-abcdefghijklmnopqrstuvwxyz01234",
        "xoxb-123456789012-abcdefghij",
        "xoxp-123456789012-abcdefghij",
        "xoxe-1-abcdefghijklmnop",
        "xoxc-123456789012-abcdefghij",
    ] {
        assert_eq!(
            redact(&format!("rejected key {secret} today")),
            format!("rejected key {REDACTED} today"),
            "{secret}"
        );
    }
}

#[test]
fn leaves_ordinary_prose_alone() {
    let raw =
        "Location 'Flower Mound, TX' not found; try 'Flower Mound, Texas, US'. Skip the task-list.";
    assert_eq!(redact(raw), raw);
}

#[test]
fn redaction_is_idempotent_when_a_query_value_hid_a_userinfo_separator() {
    // The query value swallowed the `/` that kept `u:p…@` from looking like
    // userinfo; a second pass must not find anything new.
    let raw = "http://u:p?token=a/b&x@h";
    let once = redact(raw);
    assert_eq!(redact(&once), once);
    assert!(!once.contains("u:p"), "{once}");
}

#[test]
fn redacts_every_string_inside_json_values() {
    let v = json!({"url": "https://h.io?key=zzz", "list": ["Bearer abcdefghijk"], "n": 1});
    assert_eq!(
        redact_value(&v),
        json!({"url": format!("https://h.io?key={REDACTED}"), "list": [format!("Bearer {REDACTED}")], "n": 1})
    );
}

#[test]
fn model_visible_error_is_redacted_and_bounded() {
    let e = ToolError::auth_error("BAD_KEY", "rejected sk-abcdefghijklmnopqrstuv")
        .detail("url", "https://h.io?appid=123456");
    let text = model_visible_error(&e, 1000);
    assert_eq!(
        text,
        format!(
            "[BAD_KEY] rejected {REDACTED}\ncategory: AUTH_ERROR\nretryable: false\ndetails: {{\"url\":\"https://h.io?appid={REDACTED}\"}}"
        )
    );
    assert_eq!(model_visible_error(&e, 10), "[BAD_KEY]…");
}

#[test]
fn redacts_bare_jwts() {
    let jwt = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U";
    assert_eq!(
        redact(&format!("session {jwt} expired.")),
        format!("session {REDACTED} expired.")
    );
    // An unsigned JWT has an empty third segment.
    assert_eq!(
        redact("got eyJhbGciOiJub25lIn0.eyJzdWIiOiIxIn0. back"),
        format!("got {REDACTED} back")
    );
}

#[test]
fn redacts_aws_secret_access_keys() {
    let key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
    assert_eq!(
        redact(&format!("env aws_secret_access_key={key} region=eu-west-1")),
        format!("env aws_secret_access_key={REDACTED} region=eu-west-1")
    );
    assert_eq!(
        redact(&format!(
            "  AWS_SECRET_ACCESS_KEY: {key}\n  region: eu-west-1"
        )),
        format!("  AWS_SECRET_ACCESS_KEY: {REDACTED}\n  region: eu-west-1")
    );
}

#[test]
fn redacts_stripe_secret_and_restricted_keys() {
    for key in [
        "sk_live_51HxYzAbCdEfGhIjKlMnOpQr",
        "rk_live_51HxYzAbCdEfGhIjKlMnOpQr",
        "sk_test_4eC39HqLyjWDarjtT1zdp7dc",
        "rk_test_4eC39HqLyjWDarjtT1zdp7dc",
    ] {
        assert_eq!(
            redact(&format!("Invalid API Key provided: {key}")),
            format!("Invalid API Key provided: {REDACTED}"),
            "{key}"
        );
    }
}

#[test]
fn redacts_gitlab_personal_access_tokens() {
    assert_eq!(
        redact("PRIVATE-TOKEN glpat-xYz0123456789abcdEFGH rejected."),
        format!("PRIVATE-TOKEN {REDACTED} rejected.")
    );
}

#[test]
fn redacts_npm_tokens() {
    assert_eq!(
        redact("//registry.npmjs.org/ npm_abcdefghijklmnopqrstuvwxyz0123456789 401"),
        format!("//registry.npmjs.org/ {REDACTED} 401")
    );
    // npm's own environment variables are not tokens.
    assert_eq!(redact("npm_config_cache unset"), "npm_config_cache unset");
}

#[test]
fn redacts_secret_fields_in_json_text() {
    assert_eq!(
        redact(r#"upstream echoed {"api_key": "abc123xyz", "password": "p\"w d", "n": 1}"#),
        format!(r#"upstream echoed {{"api_key": "{REDACTED}", "password": "{REDACTED}", "n": 1}}"#)
    );
    // JSON text quoted inside JSON text.
    assert_eq!(
        redact(r#"body: {\"password\":\"hunter2\",\"user\":\"ana\"}"#),
        format!(r#"body: {{\"password\":\"{REDACTED}\",\"user\":\"ana\"}}"#)
    );
}

#[test]
fn redacts_password_assignments_in_prose_and_yaml() {
    assert_eq!(
        redact("login failed with password: hunter2 for ana"),
        format!("login failed with password: {REDACTED} for ana")
    );
    assert_eq!(
        redact("db:\n  password = 'correct horse'\n  passwd: \"battery staple\"\n  host: db"),
        format!("db:\n  password = '{REDACTED}'\n  passwd: \"{REDACTED}\"\n  host: db")
    );
    assert_eq!(
        redact("User { name: \"ana\", db_password: s3cr3t#1 }"),
        format!("User {{ name: \"ana\", db_password: {REDACTED} }}")
    );
}

#[test]
fn redacts_userinfo_with_an_empty_user_name() {
    assert_eq!(
        redact("connect redis://:s3cr3tpw@cache.internal:6379/0 refused"),
        format!("connect redis://{REDACTED}@cache.internal:6379/0 refused")
    );
}

#[test]
fn redacts_api_key_headers() {
    assert_eq!(
        redact("X-Api-Key: abcdef123456\nAccept: */*"),
        format!("X-Api-Key: {REDACTED}\nAccept: */*")
    );
    assert_eq!(
        redact("x-goog-api-key:AIzaNotQuiteAKey"),
        format!("x-goog-api-key:{REDACTED}")
    );
}

#[test]
fn redacts_whole_cookie_header_lines() {
    assert_eq!(
        redact("Cookie: session=abc123; csrftoken=def456\nAccept: */*"),
        format!("Cookie: {REDACTED}\nAccept: */*")
    );
}

#[test]
fn redacts_whole_set_cookie_header_lines() {
    assert_eq!(
        redact("HTTP/1.1 200 OK\r\nSet-Cookie: sid=xyz789; Path=/; HttpOnly\r\n"),
        format!("HTTP/1.1 200 OK\r\nSet-Cookie: {REDACTED}\r\n")
    );
}

#[test]
fn redacts_query_parameters_with_prefixed_names() {
    assert_eq!(
        redact("GET /v1?q=Paris&x_api_key=abc&X-Amz-Signature=def&sort_key=name#top"),
        format!(
            "GET /v1?q=Paris&x_api_key={REDACTED}&X-Amz-Signature={REDACTED}&sort_key=name#top"
        )
    );
}

#[test]
fn keeps_prose_that_mentions_secrets_without_assigning_one() {
    for raw in [
        "the password field is required",
        "token count 12",
        "Password is too short; use a longer passphrase.",
        "POST /v1/users/reset-password: 404 Not Found",
        "assertion failed: token == expected",
        "see password::hash and secret-manager docs",
        "max_tokens: 300, token_count: 12, tokens: 4, idempotency_key: k-1",
        r#"schema {"password":{"type":"string"},"token":{"type":"string"}}"#,
        r#"{"password": ""}"#,
    ] {
        assert_eq!(redact(raw), raw);
        assert!(matches!(redact_cow(raw), Cow::Borrowed(_)), "{raw}");
    }
}

#[test]
fn keeps_ids_and_timestamps() {
    for raw in [
        "request 550e8400-e29b-41d4-a716-446655440000 failed",
        "operation op-5e41ab087439611e is still running",
        "at 2026-01-01T00:00:00Z, retry after 2026-01-01T00:05:00.250+01:00",
        "Wed, 21 Oct 2015 07:28:00 GMT",
        "export exp_20260101_0001 sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    ] {
        assert_eq!(redact(raw), raw);
    }
}

#[test]
fn redact_value_hides_whatever_a_secret_key_holds_at_any_depth() {
    let v = json!({
        "request": {"headers": {"X-Api-Key": "k-123", "Cookie": "a=b", "Accept": "*/*"},
                    "body": [{"user": "ana", "password": "hunter2"}, {"client_secret": 42}]},
        "Authorization": {"scheme": "Bearer", "value": "abc"},
        "refreshToken": ["r1", "r2"],
        "set-cookie": null,
        "note": "retry with key sk-abcdefghijklmnopqrstu",
    });
    assert_eq!(
        redact_value(&v),
        json!({
            "request": {"headers": {"X-Api-Key": REDACTED, "Cookie": REDACTED, "Accept": "*/*"},
                        "body": [{"user": "ana", "password": REDACTED}, {"client_secret": REDACTED}]},
            "Authorization": REDACTED,
            "refreshToken": REDACTED,
            "set-cookie": REDACTED,
            "note": format!("retry with key {REDACTED}"),
        })
    );
}

#[test]
fn redact_value_keeps_keys_that_only_contain_a_secret_word() {
    let v = json!({"tokens": 4, "max_tokens": 300, "token_count": 12,
                   "idempotency_key": "k-1", "key": "units", "password_hint": "pet"});
    assert_eq!(redact_value(&v), v);
    assert!(!is_secret_key("max_tokens"));
    assert!(is_secret_key("Set-Cookie"));
}

#[test]
fn redact_value_is_idempotent() {
    let v = json!({"token": "t", "msg": "password: x", "list": [{"secret": {"a": 1}}]});
    let once = redact_value(&v);
    assert_eq!(redact_value(&once), once);
}

#[test]
fn model_visible_error_hides_secret_details() {
    let e = ToolError::auth_error("BAD_KEY", "rejected")
        .detail("api_key", "plainvalue123")
        .detail("field", "password");
    let text = model_visible_error(&e, 1000);
    assert!(!text.contains("plainvalue123"), "{text}");
    assert!(text.contains(r#""field":"password""#), "{text}");
}

#[test]
fn redacts_quoted_parameter_values_to_the_closing_quote() {
    assert_eq!(
        redact(r#"sent key="abc def" and sig='xyz 123' and clientSecret="s e c""#),
        format!(r#"sent key="{REDACTED}" and sig='{REDACTED}' and clientSecret="{REDACTED}""#)
    );
}

#[test]
fn redacts_secrets_next_to_non_ascii_text() {
    assert_eq!(
        redact("clé«sk_live_51HxYzAbCdEfGhIjKlMn» mot de passe: hunter2 — ok"),
        format!("clé«{REDACTED}» mot de passe: hunter2 — ok")
    );
    assert_eq!(
        redact("Schlüssel → password: hunter2"),
        format!("Schlüssel → password: {REDACTED}")
    );
}
