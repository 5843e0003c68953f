//! Invariants of the wire protocol, checked on generated inputs:
//!
//! - the parser is total: no status, header or body makes it panic, and what
//!   it reports is consistent (success only on 2xx; a permission only from a
//!   convention that can carry one; `retryable` only in its one place);
//! - a `ToolResponse` survives serialising and parsing unchanged;
//! - the redactor is idempotent and never leaves a planted secret behind, in
//!   text or anywhere in a JSON value;
//! - a template's placeholders are never redacted, and its literal text is.

use std::time::{Duration, SystemTime};

use proptest::collection::{btree_map, vec};
use proptest::prelude::*;
use proptest::sample::select;
use recourse_protocol::{
    BodyFormat, ErrorCategory, ParsedResponse, REDACTED, RetryPermission, ToolError, ToolResponse,
    parse_response, parse_response_at, redact, redact_template, redact_template_value,
    redact_value,
};
use serde_json::{Map, Value};

/// 2026-01-01T00:00:00Z, so HTTP dates on either side of "now" are generated.
fn now() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_767_225_600)
}

// ------------------------------------------------------------ strategies

fn header_name() -> impl Strategy<Value = String> {
    prop_oneof![
        select(vec![
            "Retry-After",
            "retry-after",
            "RETRY-AFTER",
            "Content-Type",
            "content-type",
            "CONTENT-TYPE",
            "X-Request-Id",
        ])
        .prop_map(str::to_owned),
        any::<String>(),
    ]
}

fn header_value() -> impl Strategy<Value = String> {
    prop_oneof![
        select(vec![
            "0",
            "120",
            "-1",
            "1.5",
            "99999999999999999999999",
            "18446744073709551615",
            "Wed, 21 Oct 2015 07:28:00 GMT",
            "Thu, 01 Jan 2099 00:00:00 GMT",
            "Wednesday, 21-Oct-15 07:28:00 GMT",
            "Wed Oct 21 07:28:00 2015",
            "Fri, 31 Dec 9999 23:59:59 GMT",
            "application/json",
            "application/problem+json",
            "application/problem+json; charset=utf-8",
            "APPLICATION/PROBLEM+JSON;",
            "text/html; charset=iso-8859-1",
            "",
        ])
        .prop_map(str::to_owned),
        "[0-9]{1,25}",
        any::<String>(),
    ]
}

fn headers() -> impl Strategy<Value = Vec<(String, String)>> {
    vec((header_name(), header_value()), 0..5)
}

/// Keys the conventions look at, so generated objects hit their branches.
const KEYS: [&str; 28] = [
    "success",
    "Success",
    "data",
    "error",
    "code",
    "message",
    "category",
    "retryable",
    "Retryable",
    "details",
    "retry_after",
    "status",
    "error_category",
    "error_code",
    "suggested_action",
    "jsonrpc",
    "result",
    "id",
    "content",
    "type",
    "text",
    "isError",
    "structuredContent",
    "title",
    "detail",
    "instance",
    "suggestion",
    "field",
];

const STRINGS: [&str; 18] = [
    "error",
    "success",
    "INPUT_ERROR",
    "NOT_FOUND",
    "AUTH_ERROR",
    "PERMISSION_DENIED",
    "RATE_LIMIT",
    "SERVICE_ERROR",
    "POLICY_REJECTION",
    "UNKNOWN_OUTCOME",
    "user_error",
    "system_error",
    "policy_violation",
    "text",
    "2.0",
    "about:blank",
    "1500ms",
    "false",
];

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        (-32_768i64..=600).prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        select(STRINGS.to_vec()).prop_map(Value::from),
        any::<String>().prop_map(Value::String),
    ]
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => select(KEYS.to_vec()).prop_map(str::to_owned),
        1 => any::<String>(),
    ]
}

/// Arbitrary JSON whose objects mostly use the keys the parser reads.
fn json_value() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..4).prop_map(Value::Array),
            vec((key(), inner), 0..6).prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

/// A body shaped like one of the conventions, with arbitrary parts.
fn error_object() -> impl Strategy<Value = Value> {
    vec((key(), json_value()), 0..6)
        .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>()))
}

fn convention_like() -> impl Strategy<Value = Value> {
    prop_oneof![
        (leaf(), prop_oneof![error_object(), leaf()], json_value()).prop_map(
            |(success, error, data)| serde_json::json!({"success": success, "error": error, "data": data})
        ),
        (leaf(), error_object())
            .prop_map(|(s, e)| serde_json::json!({"success": s, "error": e, "retryable": true})),
        (leaf(), leaf(), leaf()).prop_map(|(cat, code, retry)| serde_json::json!({
            "status": "error", "error_category": cat, "error_code": code,
            "message": "m", "suggested_action": "s", "retryable": retry
        })),
        (leaf(), json_value()).prop_map(|(is_error, sc)| serde_json::json!({
            "content": [{"type": "text", "text": "t"}], "isError": is_error, "structuredContent": sc
        })),
        (json_value(), json_value())
            .prop_map(|(r, e)| serde_json::json!({"jsonrpc": "2.0", "id": 1, "result": r, "error": e})),
        error_object(),
    ]
}

// ------------------------------------------------------------ invariants

/// What every parse must satisfy, whatever went in.
fn assert_consistent(p: &ParsedResponse, status: u16) {
    assert_eq!(p.status, status);
    if p.success {
        assert!((200..300).contains(&status), "success on {status}");
        assert_eq!(p.to_tool_error(), None);
        assert_eq!(p.routing_status(), Some(status));
        assert_eq!(p.category, None);
        assert_eq!(p.permission, RetryPermission::Unspecified);
    } else {
        assert_eq!(p.data, None);
        let e = p.to_tool_error().expect("a failure has an error");
        assert_eq!(e.retryable, p.permission == RetryPermission::Allowed);
    }
    if !p.format.is_structured() {
        assert_eq!(p.permission, RetryPermission::Unspecified, "{:?}", p.format);
        assert_eq!(p.category, None);
        assert_eq!(p.code, None);
    }
}

/// protocol §1: the permission our envelope grants, computed independently.
fn envelope_permission(body: &Value) -> RetryPermission {
    let Some(obj) = body.as_object() else {
        return RetryPermission::Unspecified;
    };
    if obj.get("success") != Some(&Value::Bool(false)) {
        return RetryPermission::Unspecified;
    }
    match obj.get("error").and_then(|e| e.get("retryable")) {
        Some(Value::Bool(b)) => RetryPermission::from_flag(*b),
        _ => RetryPermission::Unspecified,
    }
}

proptest! {
    #[test]
    fn parser_never_panics_on_arbitrary_bytes_status_and_headers(
        status in 0u16..=999,
        headers in headers(),
        body in vec(any::<u8>(), 0..512),
    ) {
        let p = parse_response_at(status, headers.clone(), &body, now());
        assert_consistent(&p, status);
        let _ = parse_response(status, headers, &body);
    }

    #[test]
    fn parser_never_panics_on_arbitrary_text(
        status in 0u16..=999,
        headers in headers(),
        body in any::<String>(),
    ) {
        let p = parse_response_at(status, headers, body.as_bytes(), now());
        assert_consistent(&p, status);
    }

    #[test]
    fn parser_is_consistent_on_structured_json(
        status in 0u16..=999,
        headers in headers(),
        body in prop_oneof![json_value(), convention_like()],
    ) {
        let bytes = serde_json::to_vec(&body).unwrap();
        let p = parse_response_at(status, headers, &bytes, now());
        assert_consistent(&p, status);
        if p.format == BodyFormat::Envelope {
            prop_assert_eq!(p.permission, envelope_permission(&body));
        }
    }

    #[test]
    fn retryable_is_recognised_only_in_its_one_place(
        status in 0u16..=999,
        body in prop_oneof![json_value(), convention_like()],
    ) {
        let bytes = serde_json::to_vec(&body).unwrap();
        let p = parse_response_at(status, [("Content-Type", "application/json")], &bytes, now());
        let is_envelope = body
            .as_object()
            .is_some_and(|o| matches!(o.get("success"), Some(Value::Bool(_))));
        prop_assert_eq!(is_envelope, p.format == BodyFormat::Envelope);
        if is_envelope {
            prop_assert_eq!(p.permission, envelope_permission(&body));
        }
    }
}

// ------------------------------------------------------------ round trip

fn category() -> impl Strategy<Value = ErrorCategory> {
    prop_oneof![
        select(ErrorCategory::KNOWN.to_vec()),
        any::<String>().prop_map(|s| ErrorCategory::from_wire(&s)),
    ]
}

fn tool_error() -> impl Strategy<Value = ToolError> {
    (
        any::<String>(),
        any::<String>(),
        category(),
        any::<bool>(),
        btree_map(any::<String>(), any::<String>(), 0..4),
    )
        .prop_map(|(code, message, category, retryable, details)| {
            details.into_iter().fold(
                ToolError::new(category, code, message).retryable(retryable),
                |e, (k, v)| e.detail(k, v),
            )
        })
}

/// Non-null JSON without floats (whose text form need not round-trip exactly).
fn data() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<String>().prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 32, 5, |inner| {
        prop_oneof![
            vec(prop_oneof![inner.clone(), Just(Value::Null)], 0..4).prop_map(Value::Array),
            btree_map(any::<String>(), inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn tool_response() -> impl Strategy<Value = ToolResponse> {
    prop_oneof![
        tool_error().prop_map(ToolResponse::failure),
        proptest::option::of(data()).prop_map(|data| ToolResponse {
            success: true,
            data,
            error: None,
        }),
    ]
}

proptest! {
    #[test]
    fn tool_response_survives_serialise_then_deserialise(reply in tool_response()) {
        let bytes = reply.to_json_bytes();
        let back: ToolResponse = serde_json::from_slice(&bytes).unwrap();
        prop_assert_eq!(back, reply);
    }

    #[test]
    fn tool_response_survives_serialise_then_parse(reply in tool_response()) {
        let status = reply.http_status();
        let p = parse_response(status, [("content-type", "application/json")], &reply.to_json_bytes());
        prop_assert_eq!(p.format, BodyFormat::Envelope);
        prop_assert_eq!(p.success, reply.success);
        prop_assert_eq!(p.data.as_ref().map(|d| d.to_value()), reply.data.clone());
        match &reply.error {
            Some(e) => {
                prop_assert_eq!(p.to_tool_error(), Some(e.clone()));
                prop_assert_eq!(p.category.as_ref(), Some(&e.category));
                prop_assert_eq!(p.permission, RetryPermission::from_flag(e.retryable));
                prop_assert_eq!(p.routing_status(), Some(e.http_status()));
            }
            None => prop_assert_eq!(p.to_tool_error(), None),
        }
    }
}

// ------------------------------------------------------------ redaction

/// Text made of the pieces secrets are made of, so the rules interact.
fn secretish_text() -> impl Strategy<Value = String> {
    let piece = select(vec![
        "https://",
        "http://",
        "db://",
        "u",
        "user",
        ":",
        "p",
        "pass",
        "@",
        "/",
        "?",
        "&",
        ";",
        "=",
        "#",
        " ",
        "\n",
        "\"",
        "'",
        ",",
        "key",
        "api_key",
        "token",
        "access_token",
        "secret",
        "sig",
        "password",
        "Authorization",
        "authorization: ",
        "Bearer ",
        "Basic ",
        "token ",
        "sk-",
        "AKIA",
        "ghp_",
        "AIza",
        "xoxb-",
        "xoxe-",
        "sk_live_",
        "rk_test_",
        "glpat-",
        "npm_",
        "eyJ",
        "eyJhbGciOiJIUzI1NiJ9",
        "aws_secret_access_key",
        "X-Api-Key",
        "x_api_key",
        "Cookie: ",
        "Set-Cookie: ",
        "password: ",
        " = ",
        "\\\"",
        "redis://:",
        "{",
        "}",
        "ABCDEFGHIJKLMNOP",
        "abcdefghij0123456789",
        "[REDACTED]",
        "[",
        "]",
        "-",
        "_",
        ".",
        "é",
        "…",
    ]);
    vec(
        prop_oneof![piece.prop_map(str::to_owned), "[A-Za-z0-9]{1,12}"],
        0..24,
    )
    .prop_map(|pieces| pieces.concat())
}

/// URLs whose userinfo part holds what other rules redact: one rule's
/// replacement must not expose a secret for another on a second pass.
fn userinfo_with_embedded_secrets() -> impl Strategy<Value = String> {
    let piece = select(vec![
        "?token=",
        ";key=",
        "/",
        "a/b",
        "&",
        "x",
        "#",
        "[REDACTED]",
        "sk-abcdefghijklmnopqrstu",
    ]);
    (
        select(vec!["http", "https", "db"]),
        "[a-z]{1,4}",
        vec(piece, 1..8),
        select(vec!["@h", "@host/x", "x@h"]),
    )
        .prop_map(|(scheme, user, pieces, tail)| {
            format!("{scheme}://{user}:{}{tail}", pieces.concat())
        })
}

/// One planted secret: the text to plant, and the part that must not survive.
#[derive(Debug, Clone)]
struct Planted {
    text: String,
    secret: String,
}

fn planted(text: String, secret: String) -> Planted {
    Planted { text, secret }
}

fn query_param_secret() -> impl Strategy<Value = Planted> {
    let name = select(vec![
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
        "API_KEY",
        "Token",
    ]);
    (name, "[A-Za-z0-9%._~+-]{8,32}", any::<bool>()).prop_map(|(name, value, in_url)| {
        let text = if in_url {
            format!("https://api.example.com/v1/weather?q=Paris&{name}={value}&units=metric")
        } else {
            format!("{name}={value}")
        };
        planted(text, value)
    })
}

fn authorization_secret() -> impl Strategy<Value = Planted> {
    let scheme = select(vec!["Bearer ", "bearer ", "Basic ", "Token ", ""]);
    let header = select(vec![
        "Authorization: ",
        "authorization=",
        "\"Authorization\": \"",
    ]);
    (header, scheme, "[A-Za-z0-9._~+/-]{16,40}")
        .prop_map(|(h, s, token)| planted(format!("{h}{s}{token}"), token))
}

fn bearer_secret() -> impl Strategy<Value = Planted> {
    "[A-Za-z0-9._~+/-]{16,40}".prop_map(|token| planted(format!("Bearer {token}"), token))
}

fn userinfo_secret() -> impl Strategy<Value = Planted> {
    (
        select(vec![
            "https",
            "http",
            "postgres",
            "redis",
            "amqp",
            "mongodb+srv",
        ]),
        "[a-z][a-z0-9._-]{2,10}",
        "[A-Za-z0-9!$%*_.~-]{8,20}",
    )
        .prop_map(|(scheme, user, pass)| {
            let secret = format!("{user}:{pass}");
            planted(format!("{scheme}://{secret}@db.internal:5432/app"), secret)
        })
}

fn key_shape_secret() -> impl Strategy<Value = Planted> {
    prop_oneof![
        "sk-[A-Za-z0-9_-]{16,48}",
        "AKIA[0-9A-Z]{16}",
        "gh[pousr]_[A-Za-z0-9]{36}",
        "AIza[0-9A-Za-z_-]{35}",
        "xox[a-z]-[A-Za-z0-9-]{10,40}",
    ]
    .prop_map(|s| planted(s.clone(), s))
}

/// What an assignment may hold unquoted: no whitespace, quotes, `&` or `=`.
fn assigned_value() -> impl Strategy<Value = String> {
    "[A-Za-z0-9][A-Za-z0-9!$%*+,./;?@^_~#-]{7,23}"
}

fn jwt_secret() -> impl Strategy<Value = Planted> {
    (
        "eyJ[A-Za-z0-9_-]{10,40}",
        "eyJ[A-Za-z0-9_-]{4,60}",
        "[A-Za-z0-9_-]{0,43}",
    )
        .prop_map(|(header, payload, signature)| {
            let jwt = format!("{header}.{payload}.{signature}");
            planted(jwt.clone(), jwt)
        })
}

fn aws_secret() -> impl Strategy<Value = Planted> {
    let name = select(vec![
        "aws_secret_access_key=",
        "AWS_SECRET_ACCESS_KEY=",
        "aws_secret_access_key = ",
        "AWS_SECRET_ACCESS_KEY: ",
        "  aws_secret_access_key: ",
    ]);
    (name, "[A-Za-z0-9/+]{40}").prop_map(|(name, key)| planted(format!("{name}{key}"), key))
}

fn new_key_shape_secret() -> impl Strategy<Value = Planted> {
    prop_oneof![
        "[rs]k_(live|test)_[A-Za-z0-9]{10,99}",
        "glpat-[A-Za-z0-9_-]{20}",
        "npm_[A-Za-z0-9]{36}",
    ]
    .prop_map(|s| planted(s.clone(), s))
}

fn json_text_secret() -> impl Strategy<Value = Planted> {
    let name = select(vec![
        "api_key",
        "password",
        "token",
        "client_secret",
        "accessToken",
        "x-api-key",
        "cookie",
    ]);
    let value = "[A-Za-z0-9][A-Za-z0-9 !#$%&*+,./:;<=>?@^_~-]{6,22}[A-Za-z0-9]";
    (name, value, select(vec![": ", ":", " : "]), any::<bool>()).prop_map(
        |(name, value, colon, escaped)| {
            let text = if escaped {
                format!(r#"{{\"{name}\"{colon}\"{value}\",\"n\":1}}"#)
            } else {
                format!(r#"{{"{name}"{colon}"{value}", "n": 1}}"#)
            };
            planted(text, value)
        },
    )
}

fn password_assignment_secret() -> impl Strategy<Value = Planted> {
    let name = select(vec![
        "password: ",
        "password = ",
        "Password:",
        "db_password: ",
        "passwd=",
        "secret: ",
        "api_key: ",
        "auth_token = ",
    ]);
    (name, assigned_value(), select(vec!["", "\"", "'"]))
        .prop_map(|(name, value, q)| planted(format!("{name}{q}{value}{q}"), value))
}

fn empty_user_userinfo_secret() -> impl Strategy<Value = Planted> {
    (
        select(vec!["redis", "rediss", "amqp", "https"]),
        "[A-Za-z0-9!$%*_.~-]{8,20}",
    )
        .prop_map(|(scheme, pass)| {
            planted(format!("{scheme}://:{pass}@cache.internal:6379/0"), pass)
        })
}

fn header_secret() -> impl Strategy<Value = Planted> {
    let api_key = (
        select(vec![
            "X-Api-Key: ",
            "x-api-key:",
            "X-Goog-Api-Key: ",
            "X-Auth-Token: ",
        ]),
        assigned_value(),
    )
        .prop_map(|(h, v)| planted(format!("{h}{v}"), v));
    let cookie = (
        select(vec![
            "Cookie: session=",
            "Set-Cookie: sid=",
            "cookie:theme=dark; sid=",
        ]),
        "[A-Za-z0-9_.~%-]{12,40}",
        select(vec!["", "; Path=/; HttpOnly", "; csrftoken=abc"]),
    )
        .prop_map(|(h, v, tail)| planted(format!("{h}{v}{tail}"), v));
    prop_oneof![api_key, cookie]
}

fn prefixed_query_secret() -> impl Strategy<Value = Planted> {
    let name = select(vec![
        "x_api_key",
        "X-Api-Key",
        "client_api_key",
        "X-Amz-Signature",
        "X-Amz-Security-Token",
        "page_token",
        "db.password",
        "clientSecret",
    ]);
    (name, "[A-Za-z0-9%._~+-]{8,32}").prop_map(|(name, value)| {
        planted(
            format!("https://api.example.com/v1?q=Paris&{name}={value}&units=metric"),
            value,
        )
    })
}

fn any_planted() -> impl Strategy<Value = Planted> {
    prop_oneof![
        query_param_secret(),
        authorization_secret(),
        bearer_secret(),
        userinfo_secret(),
        key_shape_secret(),
        jwt_secret(),
        aws_secret(),
        new_key_shape_secret(),
        json_text_secret(),
        password_assignment_secret(),
        empty_user_userinfo_secret(),
        header_secret(),
        prefixed_query_secret(),
    ]
}

/// Key names whose value `redact_value` hides whole.
fn secret_key() -> impl Strategy<Value = String> {
    select(vec![
        "password",
        "PASSWORD",
        "passwd",
        "secret",
        "client_secret",
        "client-secret",
        "token",
        "access_token",
        "refreshToken",
        "api_key",
        "apikey",
        "X-Api-Key",
        "Authorization",
        "cookie",
        "Set-Cookie",
        "set_cookie",
        "private_key",
    ])
    .prop_map(str::to_owned)
}

/// A value for a secret key, of any JSON type, and the text that must not survive.
fn secret_key_value() -> impl Strategy<Value = (Value, String)> {
    prop_oneof![
        any_planted().prop_map(|p| (Value::String(p.text), p.secret)),
        "[A-Za-z0-9]{10,24}".prop_map(|s| (Value::String(s.clone()), s)),
        "[A-Za-z0-9]{10,24}".prop_map(|s| (serde_json::json!([s.clone()]), s)),
        "[A-Za-z0-9]{10,24}".prop_map(|s| (serde_json::json!({"value": s.clone()}), s)),
        (1_000_000_000u64..).prop_map(|n| (Value::from(n), n.to_string())),
    ]
}

/// A planted secret somewhere in a JSON tree, and the text that must not survive.
fn json_with_planted() -> impl Strategy<Value = (Value, String)> {
    let planted = prop_oneof![
        (secret_key(), secret_key_value()).prop_map(|(k, (v, secret))| {
            (Value::Object([(k, v)].into_iter().collect()), secret)
        }),
        (prose(), any_planted(), prose()).prop_map(|(before, p, after)| {
            (
                Value::String(format!("{before} {} {after}", p.text)),
                p.secret,
            )
        }),
    ];
    // Wrap it in arrays and objects, beside arbitrary siblings.
    let wrapper = (key(), json_value(), any::<bool>());
    (planted, vec(wrapper, 0..4)).prop_map(|((value, secret), wrappers)| {
        let value = wrappers
            .into_iter()
            .fold(value, |inner, (key, sibling, in_array)| {
                if in_array {
                    Value::Array(vec![sibling, inner])
                } else {
                    let mut map = Map::new();
                    map.insert(format!("{key}~"), sibling);
                    map.insert(key, inner);
                    Value::Object(map)
                }
            });
        (value, secret)
    })
}

/// Whether `secret` survives in any string or number of `value`.
fn leaks(value: &Value, secret: &str) -> bool {
    match value {
        Value::String(s) => s.contains(secret),
        Value::Number(n) => n.to_string().contains(secret),
        Value::Array(items) => items.iter().any(|v| leaks(v, secret)),
        Value::Object(map) => map.values().any(|v| leaks(v, secret)),
        Value::Null | Value::Bool(_) => false,
    }
}

/// JSON whose keys are often secret names and whose strings look like secrets.
fn json_for_redaction() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        leaf(),
        secretish_text().prop_map(Value::String),
        any_planted().prop_map(|p| Value::String(p.text)),
    ];
    let key = prop_oneof![key(), secret_key()];
    leaf.prop_recursive(4, 48, 6, move |inner| {
        prop_oneof![
            vec(inner.clone(), 0..4).prop_map(Value::Array),
            vec((key.clone(), inner), 0..6).prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

/// Random prose: any printable text, or words and punctuation.
fn prose() -> impl Strategy<Value = String> {
    prop_oneof!["\\PC{0,40}", "[a-zA-Z,.;:!?()' ]{0,60}"]
}

proptest! {
    #[test]
    fn redaction_is_idempotent_on_arbitrary_strings(text in any::<String>()) {
        let once = redact(&text);
        prop_assert_eq!(redact(&once), once);
    }

    #[test]
    fn redaction_is_idempotent_on_secret_shaped_text(text in secretish_text()) {
        let once = redact(&text);
        prop_assert_eq!(redact(&once), once);
    }

    #[test]
    fn redaction_is_idempotent_when_rules_overlap(text in userinfo_with_embedded_secrets()) {
        let once = redact(&text);
        prop_assert_eq!(redact(&once), once);
    }

    #[test]
    fn redaction_never_leaves_a_planted_secret(
        before in prose(),
        secret in any_planted(),
        after in prose(),
    ) {
        let text = format!("{before} {} {after}", secret.text);
        let once = redact(&text);
        prop_assert!(!once.contains(&secret.secret), "{:?} survived in {:?}", secret.secret, once);
        prop_assert!(once.contains(REDACTED));
        prop_assert_eq!(redact(&once), once);
    }

    #[test]
    fn redaction_never_leaves_any_of_several_planted_secrets(
        parts in vec((prose(), any_planted()), 1..5),
    ) {
        let text: String = parts.iter().map(|(p, s)| format!("{p} {} ", s.text)).collect();
        let once = redact(&text);
        for (_, s) in &parts {
            prop_assert!(!once.contains(&s.secret), "{:?} survived in {:?}", s.secret, once);
        }
        prop_assert_eq!(redact(&once), once);
    }
}

proptest! {
    #[test]
    fn redact_value_never_leaves_a_planted_secret((value, secret) in json_with_planted()) {
        let once = redact_value(&value);
        prop_assert!(!leaks(&once, &secret), "{:?} survived in {}", secret, once);
        prop_assert_eq!(redact_value(&once), once);
    }

    #[test]
    fn redact_value_is_idempotent(value in json_for_redaction()) {
        let once = redact_value(&value);
        prop_assert_eq!(redact_value(&once), once);
    }
}

/// A template's placeholder, as a settler fills it in.
fn placeholder() -> impl Strategy<Value = String> {
    prop_oneof![
        select(vec!["{key}", "{operation_id}"]).prop_map(str::to_owned),
        "[a-z_]{1,8}(\\.[a-z_]{1,8}){0,2}".prop_map(|path| format!("{{{{payload.{path}}}}}")),
    ]
}

/// A lookup or read template whose placeholders sit under any parameter
/// name (credential words too), beside harmless parameters.
fn lookup_template() -> impl Strategy<Value = String> {
    let name = select(vec![
        "key",
        "api_key",
        "token",
        "access_token",
        "secret",
        "sig",
        "password",
        "id",
        "q",
        "appid",
    ]);
    let harmless = select(vec!["", "format=json", "units=metric", "page=2"]);
    (
        "[a-z]{1,8}(/[a-z0-9]{1,6}){0,2}",
        vec((name, placeholder()), 1..4),
        harmless,
    )
        .prop_map(|(path, params, extra)| {
            let mut query: Vec<String> = params.iter().map(|(n, p)| format!("{n}={p}")).collect();
            if !extra.is_empty() {
                query.push(extra.to_owned());
            }
            format!("http://tool.internal/{path}?{}", query.join("&"))
        })
}

proptest! {
    /// Every placeholder of a template survives, whatever it is called.
    #[test]
    fn a_templates_placeholders_are_never_redacted(template in lookup_template()) {
        prop_assert_eq!(redact_template(&template), template);
    }

    /// A secret beside placeholders is hidden as it is anywhere else.
    #[test]
    fn a_template_never_leaves_a_planted_secret(
        before in vec(prop_oneof![placeholder(), prose()], 0..3),
        secret in any_planted(),
        after in vec(prop_oneof![placeholder(), prose()], 0..3),
    ) {
        let template = format!("{} {} {}", before.concat(), secret.text, after.concat());
        let once = redact_template(&template);
        prop_assert!(!once.contains(&secret.secret), "{:?} survived in {:?}", secret.secret, once);
        prop_assert_eq!(redact_template(&once), once);
    }

    #[test]
    fn template_redaction_is_idempotent(
        pieces in vec(prop_oneof![placeholder(), secretish_text()], 0..6),
    ) {
        let once = redact_template(&pieces.concat());
        prop_assert_eq!(redact_template(&once), once.clone());
        prop_assert!(!once.contains(['\u{E000}', '\u{E001}']), "a marker left in {:?}", once);
    }

    /// A JSON template keeps a placeholder under a secret's name, and hides
    /// what `redact_value` hides everywhere else.
    #[test]
    fn a_json_template_keeps_placeholders_and_hides_planted_secrets(
        (value, secret) in json_with_planted(),
        name in secret_key(),
        reference in placeholder(),
    ) {
        let mut args = Map::new();
        args.insert(name, Value::String(reference.clone()));
        args.insert("planted".into(), value);
        let once = redact_template_value(&Value::Object(args));
        prop_assert!(!leaks(&once, &secret), "{:?} survived in {}", secret, once);
        let kept = once.as_object().unwrap().values().any(|v| v.as_str() == Some(reference.as_str()));
        prop_assert!(kept, "{} lost in {}", reference, once);
    }
}

proptest! {
    /// A success envelope is read without building a tree of its data; the
    /// answer must be the one the full reading gives — whatever the layout,
    /// the extra fields, or a field sent twice (the full reading keeps the
    /// last; the quick one steps aside for it).
    #[test]
    fn a_success_envelope_reads_the_same_however_it_is_written(
        data in proptest::option::of(prop_oneof![data(), Just(Value::Null)]),
        extra in proptest::option::of(data()),
        pretty in any::<bool>(),
        twice in proptest::option::of(prop_oneof![Just("success"), Just("data")]),
        status in select(vec![200u16, 201, 204, 299]),
    ) {
        let mut body = Map::new();
        body.insert("success".into(), Value::Bool(true));
        if let Some(d) = &data {
            body.insert("data".into(), d.clone());
        }
        if let Some(x) = &extra {
            body.insert("note".into(), x.clone());
        }
        let mut text = if pretty {
            serde_json::to_string_pretty(&body).unwrap()
        } else {
            serde_json::to_string(&body).unwrap()
        };
        if let Some(field) = twice {
            // Appended after the last field: `{…, "success": false}` or `{…, "data": 7}`.
            let last = if field == "success" { "false" } else { "7" };
            text.truncate(text.len() - 1);
            text.push_str(&format!(",\"{field}\":{last}}}"));
            body.insert(field.into(), serde_json::from_str(last).unwrap());
        }
        let p = parse_response(status, [("content-type", "application/json")], text.as_bytes());
        let said_success = body.get("success") == Some(&Value::Bool(true));
        prop_assert_eq!(p.format, BodyFormat::Envelope);
        prop_assert_eq!(p.success, said_success);
        let expected = body.get("data").filter(|d| said_success && !d.is_null()).cloned();
        prop_assert_eq!(p.data.as_ref().map(|d| d.to_value()), expected);
        if let Some(d) = &p.data {
            // What the record will carry is one JSON value equal to the data.
            let reread: Value = serde_json::from_str(&d.raw()).unwrap();
            prop_assert_eq!(Some(reread), body.get("data").cloned());
        }
    }
}
