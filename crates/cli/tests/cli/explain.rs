//! `recourse explain`: JSON shape, exit codes, and the policy's verdicts.

use std::process::{Command, Output};

use serde_json::Value;

fn recourse(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_recourse"))
        .args(args)
        .env_remove("RECOURSE_MAX_RETRIES")
        .output()
        .expect("the binary runs")
}

fn explain_json(args: &[&str]) -> Value {
    let mut all = vec!["explain", "--json"];
    all.extend_from_slice(args);
    let out = recourse(&all);
    assert_eq!(
        out.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("one JSON object")
}

#[test]
fn json_has_the_documented_fields() {
    let v = explain_json(&[
        "--status",
        "404",
        "--body",
        r#"{"success":false,"error":{"code":"LOCATION_NOT_FOUND","message":"nope","category":"NOT_FOUND","retryable":true}}"#,
    ]);
    assert_eq!(v["success"], false);
    assert_eq!(v["category"], "NOT_FOUND");
    assert_eq!(v["code"], "LOCATION_NOT_FOUND");
    assert_eq!(v["message"], "nope");
    assert_eq!(v["retry_permission"], "allowed");
    assert_eq!(v["server_wait_ms"], Value::Null);
    assert_eq!(v["action"], "correct");
    assert_eq!(v["reason"], Value::Null);
}

#[test]
fn retry_after_header_becomes_server_wait_and_the_wait() {
    let v = explain_json(&["--status", "429", "--header", "Retry-After: 7"]);
    assert_eq!(v["server_wait_ms"], 7000);
    assert_eq!(v["action"], "retry_same");
    assert_eq!(v["wait_ms"], 7000);
    assert_eq!(
        v["category"],
        Value::Null,
        "a non-envelope body names no category"
    );
}

#[test]
fn refused_503_stops_with_a_reason() {
    let v = explain_json(&[
        "--status",
        "503",
        "--body",
        r#"{"success":false,"error":{"code":"DOWN","message":"m","category":"SERVICE_ERROR","retryable":false}}"#,
    ]);
    assert_eq!(v["action"], "stop");
    assert_eq!(v["reason"], "retry_refused");
}

#[test]
fn transport_failures_depend_on_idempotency() {
    assert_eq!(
        explain_json(&["--transport", "sent-timeout", "--non-idempotent"])["action"],
        "reconcile"
    );
    assert_eq!(
        explain_json(&["--transport", "sent-timeout", "--idempotent"])["action"],
        "retry_same"
    );
    // Without --idempotent, as `call` without evidence: not idempotent.
    assert_eq!(
        explain_json(&["--transport", "sent-timeout"])["action"],
        "reconcile"
    );
    assert_eq!(
        explain_json(&["--transport", "connect", "--non-idempotent"])["action"],
        "retry_same"
    );
}

#[test]
fn delegated_attempt_and_corrector_flags_change_the_verdict() {
    assert_eq!(
        explain_json(&["--status", "503", "--delegated"])["reason"],
        "delegated_single_dispatch"
    );
    assert_eq!(
        explain_json(&["--status", "503", "--attempt", "4"])["reason"],
        "retries_exhausted"
    );
    assert_eq!(
        explain_json(&["--status", "400", "--no-corrector"])["reason"],
        "no_corrector"
    );
}

#[test]
fn secrets_in_the_body_are_redacted_in_the_output() {
    let out = recourse(&[
        "explain",
        "--status",
        "401",
        "--body",
        r#"{"success":false,"error":{"code":"BAD_KEY","message":"key sk-abcdefghijklmnopqrstuvwx rejected","category":"AUTH_ERROR"}}"#,
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("sk-abcdefghijklmnopqrstuvwx"), "{text}");
    assert!(text.contains("[REDACTED]"));
}

#[test]
fn human_output_names_the_action() {
    let out = recourse(&[
        "explain",
        "--status",
        "403",
        "--body",
        "<html><title>Forbidden</title></html>",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Action:     stop"), "{text}");
    assert!(text.contains("never switches identity"), "{text}");
}

#[test]
fn bad_input_exits_2_with_a_message_not_a_panic() {
    for args in [
        vec!["explain", "--status", "99"],
        vec!["explain", "--status", "abc"],
        vec!["explain"],
        vec![
            "explain",
            "--status",
            "200",
            "--body",
            "@/definitely/not/here",
        ],
        vec!["explain", "--status", "200", "--header", "no-colon"],
    ] {
        let out = recourse(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked"), "{err}");
        assert!(!err.is_empty());
    }
}

#[test]
fn bad_environment_is_a_configuration_error() {
    let out = Command::new(env!("CARGO_BIN_EXE_recourse"))
        .args(["explain", "--status", "503"])
        .env("RECOURSE_MAX_RETRIES", "lots")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("RECOURSE_MAX_RETRIES"));
}
