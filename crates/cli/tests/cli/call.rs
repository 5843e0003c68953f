//! `recourse call` against the reference tools: JSON report shape and exit codes.

use std::process::{Command, Output};

use recourse_reference_tools::{RunningTools, ToolsConfig, spawn};
use recourse_test_support::tools_without_lookups;
use serde_json::Value;

async fn tools(faults: &[&str]) -> RunningTools {
    let mut config = ToolsConfig::default();
    for f in faults {
        config = config.with_fault(f.parse().unwrap());
    }
    spawn(config).await.unwrap()
}

fn call(url: &str, payload: &str, extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_recourse"))
        .args(["call", url, "--payload", payload, "--backoff-ms", "0"])
        .args(extra)
        .env_remove("RECOURSE_JOURNAL")
        .output()
        .unwrap()
}

fn report(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn success_exits_0_with_the_documented_report() {
    let t = tools(&[]).await;
    let out = call(
        &format!("{}/api/stock/quote", t.base_url()),
        r#"{"symbol":"TSLA"}"#,
        &["--json"],
    );
    assert_eq!(out.status.code(), Some(0));
    let r = report(&out);
    assert_eq!(r["outcome"], "succeeded");
    assert_eq!(r["data"]["price"], 468.285);
    assert_eq!(r["error"], Value::Null);
    assert_eq!(r["reason"], Value::Null);
    assert_eq!(r["http_calls"], 1);
    assert_eq!(r["llm_calls"], 0);
    let a = &r["attempts"][0];
    for field in [
        "n",
        "payload",
        "status",
        "transport_error",
        "category",
        "retry_permission",
        "action",
        "wait_ms",
        "source",
    ] {
        assert!(a.get(field).is_some(), "attempt lacks {field}");
    }
    assert_eq!(a["source"], "caller");
    assert_eq!(a["action"], "succeed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_policy_rejection_exits_1_after_one_call() {
    let t = tools(&[]).await;
    let out = call(
        &format!("{}/api/orders/refund", t.base_url()),
        r#"{"order_id":"ORD-2002"}"#,
        &["--json"],
    );
    assert_eq!(out.status.code(), Some(1));
    let r = report(&out);
    assert_eq!(r["outcome"], "failed");
    assert_eq!(r["reason"], "retry_refused");
    assert_eq!(r["error"]["category"], "POLICY_REJECTION");
    assert_eq!(r["stop_kind"], "policy");
    assert_eq!(r["next"]["step"], "explain_refusal");
    assert_eq!(r["http_calls"], 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_outage_is_resent_with_the_same_payload() {
    let t = tools(&["stock:unavailable:0.5"]).await;
    let out = call(
        &format!("{}/api/stock/quote", t.base_url()),
        r#"{"symbol":"TSLA"}"#,
        &["--json", "--max-retries", "8"],
    );
    let r = report(&out);
    let attempts = r["attempts"].as_array().unwrap();
    assert!(
        attempts
            .iter()
            .all(|a| a["payload"] == attempts[0]["payload"])
    );
    assert!(
        attempts
            .iter()
            .filter(|a| a["status"] == 503)
            .all(|a| a["action"] == "retry_same")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_auth_failure_stops_at_once_and_never_prints_the_key() {
    let t = tools(&["weather:auth"]).await;
    let out = call(
        &format!("{}/api/weather/current", t.base_url()),
        r#"{"location":"Paris, France"}"#,
        &[],
    );
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    // The tool refuses retries, so rule 4 stops the call before rule 5 would.
    assert!(
        text.contains("401 AUTH_ERROR") && text.contains("⇒ stop"),
        "{text}"
    );
    assert!(text.contains("1 HTTP call"), "{text}");
    assert!(
        text.contains("api_key=[REDACTED]") && !text.contains("rk_live_"),
        "{text}"
    );
    assert!(
        text.contains("next: fix_configuration (stop kind auth)"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_outcome_exits_3_with_key_and_operation_id() {
    let t = tools_without_lookups(&["exports:unknown_outcome"]).await;
    let out = call(
        &format!("{}/api/exports", t.base_url()),
        r#"{"source_id":"sales-2024","format":"pdf"}"#,
        &["--json", "--non-idempotent"],
    );
    assert_eq!(out.status.code(), Some(3));
    let r = report(&out);
    assert_eq!(r["outcome"], "unknown");
    assert!(r["idempotency_key"].is_string());
    assert!(r["operation_id"].is_string());
    assert_eq!(t.exports_committed(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_misleading_403_is_not_followed() {
    let t = tools(&["exports:misleading"]).await;
    let out = call(
        &format!("{}/api/exports", t.base_url()),
        r#"{"source_id":"sales-2024","format":"pdf"}"#,
        &["--json", "--non-idempotent"],
    );
    let r = report(&out);
    assert_eq!(r["reason"], "permission_denied");
    assert_eq!(r["http_calls"], 1);
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        vec!["call", "http://127.0.0.1:1/x", "--payload", "{not json"],
        vec!["call", "http://127.0.0.1:1/x", "--payload", "[1]"],
        vec!["call", "ftp://x", "--payload", "{}"],
        vec![
            "call",
            "http://127.0.0.1:1/x",
            "--payload",
            "{}",
            "--protect",
            "amount",
        ],
        vec![
            "call",
            "http://127.0.0.1:1/x",
            "--payload",
            "{}",
            "--deadline",
            "-3",
        ],
        vec![
            "call",
            "http://127.0.0.1:1/x",
            "--payload",
            "{}",
            "--reconcile",
            "http://h/no-placeholder",
        ],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_recourse"))
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_flag_the_tools_manifest_decides_and_settles_a_lost_export() {
    let t = tools(&["exports:crash_after_commit:1.0"]).await;
    let url = format!("{}/api/exports", t.base_url());
    let out = call(
        &url,
        r#"{"source_id":"sales-2024","format":"pdf"}"#,
        &["--json"],
    );
    let r = report(&out);
    assert_eq!(out.status.code(), Some(0), "{r:#}");
    assert_eq!(
        r["outcome"], "succeeded",
        "the lookup the manifest names found the write"
    );
    assert_eq!(
        r["idempotency"],
        serde_json::json!({"idempotent": false, "from": "manifest"})
    );
    assert_eq!(t.exports_committed(), 1, "never resent");
    // A manifest that names no lookup: the lost export stays unknown.
    let silent = tools_without_lookups(&["exports:crash_after_commit:1.0"]).await;
    let out = call(
        &format!("{}/api/exports", silent.base_url()),
        r#"{"source_id":"sales-2024","format":"pdf"}"#,
        &["--json"],
    );
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(report(&out)["outcome"], "unknown");
    assert_eq!(silent.exports_committed(), 1, "never resent");
    // A read the manifest declares idempotent; the caller's word outranks it.
    let quote = format!("{}/api/stock/quote", t.base_url());
    let r = report(&call(&quote, r#"{"symbol":"TSLA"}"#, &["--json"]));
    assert_eq!(r["idempotency"]["from"], "manifest");
    assert_eq!(r["idempotency"]["idempotent"], true);
    let r = report(&call(
        &quote,
        r#"{"symbol":"TSLA"}"#,
        &["--json", "--non-idempotent"],
    ));
    assert_eq!(
        r["idempotency"],
        serde_json::json!({"idempotent": false, "from": "caller"})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_callers_key_is_the_one_key_sent() {
    let t = tools(&[]).await;
    let url = format!("{}/api/exports", t.base_url());
    let out = call(
        &url,
        r#"{"source_id":"sales-2024","format":"pdf"}"#,
        &[
            "--json",
            "--idempotency-key",
            "agent-run-7",
            "--header",
            "Idempotency-Key: agent-run-7",
        ],
    );
    let r = report(&out);
    assert_eq!(out.status.code(), Some(0), "{r:#}");
    assert_eq!(r["idempotency_key"], "agent-run-7");
    let clash = call(
        &url,
        "{}",
        &["--idempotency-key", "a", "--header", "Idempotency-Key: b"],
    );
    assert_eq!(clash.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&clash.stderr).contains("idempotency_key"));
    for bad in ["", "with space"] {
        let out = call(&url, "{}", &["--idempotency-key", bad]);
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_version_tells_the_model_to_ask_the_user() {
    let t = tools(&[]).await;
    let url = format!("{}/api/exports", t.base_url());
    let payload = r#"{"source_id":"sales-2024","version":4,"format":"pdf"}"#;
    let question = "The tool has no version 4; the latest is 3. Should I use 3 instead?";
    let out = call(
        &url,
        payload,
        &["--non-idempotent", "--protect", "/version"],
    );
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("next: ask_user (stop kind input)"), "{text}");
    assert!(
        text.contains(&format!("ask the user: {question}")),
        "{text}"
    );
    assert!(
        text.contains("tell the model: The call failed (NOT_FOUND, HTTP 404"),
        "{text}"
    );
    let r = report(&call(
        &url,
        payload,
        &["--non-idempotent", "--protect", "/version", "--json"],
    ));
    assert_eq!(r["reason"], "retry_refused");
    assert_eq!(r["stop_kind"], "input");
    assert_eq!(r["next"]["step"], "ask_user");
    assert_eq!(r["next"]["question"], question);
    assert_eq!(t.exports_committed(), 0);
}

/// A proxy named in the environment is never asked for this machine: a
/// write to a loopback tool — its manifest read, its call, its idempotency
/// key — goes straight to it, even when the proxy is dead (here, a port
/// nothing listens on) or would read every header.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_loopback_tool_is_never_reached_through_the_environments_proxy() {
    let t = tools(&[]).await;
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let proxy = format!("http://{}", dead.local_addr().unwrap());
    drop(dead);
    let out = Command::new(env!("CARGO_BIN_EXE_recourse"))
        .args(["call", &format!("{}/api/exports", t.base_url())])
        .args([
            "--payload",
            r#"{"source_id":"sales-2024","format":"pdf"}"#,
            "--json",
        ])
        .env_remove("RECOURSE_JOURNAL")
        .env("HTTP_PROXY", &proxy)
        .env("http_proxy", &proxy)
        .env("HTTPS_PROXY", &proxy)
        .env("ALL_PROXY", &proxy)
        .env_remove("NO_PROXY")
        .env_remove("no_proxy")
        .output()
        .unwrap();
    let r = report(&out);
    assert_eq!(r["outcome"], "succeeded", "{r}");
    assert_eq!(
        r["idempotency"]["from"], "manifest",
        "the manifest was read: {r}"
    );
    assert_eq!(t.exports_committed(), 1);
}
