//! SPEC §2: the redactor, one test per supported secret shape.

use recourse_protocol::{REDACTED, ToolError, model_visible_error, redact, redact_value};
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
